// One Whisper segment decoded as several sequences: beam search at temperature 0 (CTranslate2's
// BeamSearch, which faster-whisper runs with beam_size 5) or best-of sampling above it
// (CTranslate2's sampling with num_hypotheses = best_of, faster-whisper's fallback). Pure C++,
// fed the logits of each live sequence per step by whoever runs the decoder.
//
// A search uses `slots()` decoder lanes (options().width()). The prompt is decoded in slot 0 alone
// (`width()` 1): no-speech probability and language detection as WhisperSequence does them. From
// the first sampled step on, every slot holds a live hypothesis:
//   Beam search, per step: each live hypothesis's logits masked as WhisperSequence masks them, then
//     log-softmax (float, as CTranslate2), plus the hypothesis's sum; the 2 x beam_size best
//     (hypothesis, token) pairs over all of them (on the first step, over slot 0's alone); of the
//     first beam_size, one that is <|endoftext|> (or any at the token limit) finishes a hypothesis
//     and its place goes to the next candidate beyond beam_size that is not <|endoftext|>. The
//     search ends when round(beam_size x patience) hypotheses have finished, or at the limit.
//   Sampling: at the first sampled step best_of tokens are drawn from slot 0's distribution, one
//     per slot; from then on each slot samples its own (its own generator, seeded with its slot
//     number), until every one has finished.
// The result is the finished hypothesis with the best sum_logprob / length^length_penalty.
//
// A new hypothesis may continue another slot's: its lane must then become a copy of that lane
// before the next decoder step. copies() lists those copies (from a slot whose lane stays as it
// is to a slot whose hypothesis was dropped, so their order does not matter); `audio` says that
// the target lane does not hold the segment's encoder output yet (the first expansion).
//
// One thread at a time per object. consume() does not allocate.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "brisvox/models/stt/whisper_search.h"

namespace brisvox {

struct WhisperLaneCopy {
  int from = 0;       // slot whose lane is copied
  int to = 0;         // slot whose lane becomes that copy
  bool audio = false; // the encoder output too, not only the tokens fed so far
};

class WhisperBeamSearch {
 public:
  // `search` must outlive this object; its options give beam_size or best_of.
  explicit WhisperBeamSearch(const WhisperSearch& search);

  // Back to the start of the prompt, in slot 0.
  void reset();

  const WhisperSearch& search() const { return *search_; }
  int slots() const { return static_cast<int>(live_.size()); }
  // Slots that hold a live hypothesis: 1 during the prompt, slots() after it.
  int width() const { return width_; }
  bool done() const { return done_; }
  // The token slot `slot` (< width()) feeds next.
  int next_token(int slot) const { return live_[static_cast<std::size_t>(slot)].next_token(); }

  // The prompt's sequence (slot 0): language, no-speech probability.
  const WhisperSequence& first() const { return live_.front(); }
  // As WhisperSequence::rewind: lane 0 must go back to position 0 before the next step.
  bool rewind() const { return width_ == 1 && live_.front().rewind(); }
  // As WhisperSequence::set_language, while in the prompt.
  void set_language(int token, float probability) { live_.front().set_language(token, probability); }
  // As WhisperSequence::force, for every hypothesis (greedy and sampling; a beam's hypotheses
  // choose among candidates and are not forced).
  void force(std::span<const int> tokens) {
    for (auto& s : live_) s.force(tokens);
    for (auto& s : next_) s.force(tokens);
  }

  // The decoder's logits for each live slot ([width()][n_vocab]); entries are overwritten.
  // Throws as WhisperSequence::consume.
  void consume(std::span<const std::span<float>> logits);
  // The lane copies to make before the next step (empty when none).
  std::span<const WhisperLaneCopy> copies() const { return copies_; }

  // The best finished hypothesis (valid once done()).
  std::span<const int> tokens() const { return best().tokens; }
  double sum_logprob() const { return best().sum_logprob; }
  double avg_logprob() const;
  bool hit_token_limit() const { return best().hit_limit; }
  float no_speech_prob() const { return first().no_speech_prob(); }
  // faster-whisper's skip rule, on the best hypothesis.
  bool no_speech() const;
  std::string_view language() const { return first().language(); }
  float language_probability() const { return first().language_probability(); }
  int language_token() const { return first().language_token(); }

 private:
  struct Hypothesis {
    std::vector<int> tokens;  // capacity max_new_tokens
    double sum_logprob = 0.0;
    double score = 0.0;       // sum_logprob / length^length_penalty
    bool hit_limit = false;
  };
  struct Candidate {
    float score = 0.0f;  // the hypothesis's sum plus the token's log-probability
    int slot = 0;
    int token = 0;
  };

  const Hypothesis& best() const { return finished_[static_cast<std::size_t>(best_)]; }
  void beam_step(std::span<const std::span<float>> logits, bool first_step);
  void sample_step(std::span<const std::span<float>> logits, bool first_step);
  void finish(const WhisperSequence& parent, int token, double sum_logprob, bool hit_limit);
  // Moves the chosen continuations into the slots (a parent keeps its own slot for its first
  // child), listing the lane copies.
  void place(std::span<const Candidate> chosen);
  void conclude();

  const WhisperSearch* search_;
  bool sampling_ = false;
  int max_finished_ = 0;  // hypotheses after which a beam search ends
  std::vector<WhisperSequence> live_;   // [slots]
  std::vector<WhisperSequence> next_;   // scratch, [slots]
  std::vector<std::uint8_t> holds_audio_;
  std::vector<std::uint8_t> claimed_;
  std::vector<Hypothesis> finished_;    // capacity max_finished_ + slots
  std::size_t finished_count_ = 0;
  std::vector<Candidate> candidates_;   // capacity 2 x slots
  std::vector<WhisperLaneCopy> copies_;
  int width_ = 1;
  int steps_ = 0;                       // sampled steps taken
  bool done_ = false;
  int best_ = 0;
};

}  // namespace brisvox
