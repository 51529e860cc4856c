// Decoding of one Whisper segment as one sequence, as faster-whisper does it with beam_size=1
// (CTranslate2's greedy search, src/models/whisper.cc and src/decoding.cc): the best token at
// temperature 0, or a token sampled at a higher temperature. Pure C++, no ONNX Runtime, fed one
// logits vector per step by whoever runs the decoder. Beam search and best-of sampling, which
// decode one segment as several sequences, are in whisper_beam.h on top of this.
//
// Per sequence (WhisperSequence), step by step:
//   1. The prompt is fed one token per step: with a prompt or hotwords (faster-whisper's
//      get_prompt) first <|startofprev|> and their tokens, then <|startoftranscript|>, then for multilingual models
//      the language and the task token, then <|notimestamps|> unless timestamps are on. The
//      logits after <|startoftranscript|> give the no-speech probability: softmax over the raw
//      logits at <|nospeech|> (<|nocaptions|>), as Whisper computes it. When no language is
//      given, the same logits detect it: softmax over the language tokens' logits alone, the most
//      probable one fed next (CTranslate2's Whisper::detect_language, which faster-whisper calls
//      on the window's encoder output; the decoder is causal, so detecting in the first step of
//      the decode equals a separate detection run). The logits after the last prompt token give
//      the first sampled token.
//   2. Each sampled step: the suppressed tokens get -inf (suppress_tokens, -1 = the model's
//      default list; at the first sampled token also " " and <|endoftext|> when suppress_blank;
//      with timestamps, CTranslate2's ApplyTimestampRules: no <|notimestamps|>, a timestamp
//      first and at most max_initial_timestamp_s, timestamps in pairs and non-decreasing, and a
//      timestamp forced when their total probability beats every text token), then the token
//      with the highest logit is taken (the lowest id on a tie) and its log-probability under
//      the suppressed distribution is added to the sum.
//   3. The sequence ends at <|endoftext|> or after max_new_tokens sampled steps (the limit;
//      hit_token_limit() then says so and the tokens are kept).
// Results: avg_logprob = sum of the sampled log-probabilities (the final <|endoftext|>'s
// included) / (text tokens + 1), faster-whisper's formula; no_speech() is faster-whisper's
// skip rule: no_speech_prob > no_speech_threshold and avg_logprob <= log_prob_threshold
// (thresholds 0.6 and -1.0 by default), for which a transcriber gives empty text.
//
// WhisperSearch holds what every sequence with the same options shares (prompt, suppress
// lists); it is immutable and may be shared between threads. A WhisperSequence preallocates its
// token buffer: reset() and consume() never allocate. One thread at a time per sequence.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisvox/models/stt/whisper_config.h"

namespace brisvox {

class WhisperVocabulary;

enum class WhisperTask { kTranscribe, kTranslate };

// When the language is detected: on the first window of a recording (the first segment of a
// stream) and kept for the rest, as faster-whisper's transcribe does (language_detection_segments
// = 1), or on each window (segment) for itself: callers who switch languages mid-call.
enum class WhisperLanguageDetection { kFirst, kEach };
std::string_view to_string(WhisperLanguageDetection d) noexcept;
// "first" or "each"; nullopt otherwise.
std::optional<WhisperLanguageDetection> parse_language_detection(std::string_view name) noexcept;

struct WhisperDecodeOptions {
  // Multilingual models: the language code ("en", "de", ...), or "" (also "auto") to detect it
  // from the audio. English-only models accept "en", "" or "auto" and report "en" with
  // probability 1 (as faster-whisper does).
  std::string language;
  WhisperTask task = WhisperTask::kTranscribe;
  bool timestamps = false;  // faster-whisper's without_timestamps = !timestamps
  bool suppress_blank = true;
  // Token ids to suppress; -1 stands for the model's default list (WhisperConfig).
  std::vector<int> suppress_tokens = {-1};
  // Sampled steps at most (the final <|endoftext|> counts); 0 = faster-whisper's default,
  // min(n_text_ctx / 2, n_text_ctx - prompt length + 1) = 224 for Whisper.
  int max_new_tokens = 0;
  float max_initial_timestamp_s = 1.0f;
  float no_speech_threshold = 0.6f;   // faster-whisper's defaults
  float log_prob_threshold = -1.0f;
  // 0: the most probable token; > 0: sampled at this temperature (at most 10).
  float temperature = 0.0f;
  // Beam search (whisper_beam.h) when > 1 at temperature 0: the beams kept per step (1..16).
  int beam_size = 1;
  // Sampling at temperature > 0: independent samples, the best one kept (faster-whisper's
  // best_of, 1..16). Ignored at temperature 0.
  int best_of = 1;
  // Beam search's patience: it ends once round(beam_size * patience) hypotheses have finished.
  float patience = 1.0f;
  // Hypotheses are ranked by sum_logprob / length^length_penalty (CTranslate2's, faster-whisper's
  // default 1: the mean). 0 ranks by the sum.
  float length_penalty = 1.0f;

  // faster-whisper's initial_prompt: text the speech is taken to follow (names, spellings, a
  // style), and its hotwords: words likely to be said. Both go before <|startoftranscript|>,
  // after <|startofprev|> (hotwords first), each encoded as " " + the text stripped; at most 223
  // tokens each, no control characters but tab and newline. Every window (segment) gets them:
  // brisvox decodes each on its own, as faster-whisper does with condition_on_previous_text off,
  // except that faster-whisper gives the initial prompt to the first window only.
  std::string prompt;
  std::string hotwords;

  // Sequences a segment is decoded as: beam_size at temperature 0, best_of above it.
  int width() const { return temperature > 0.0f ? best_of : beam_size; }
};

// faster-whisper's skip rule: no speech when no_speech_prob is above the options'
// no_speech_threshold, unless avg_logprob is above their log_prob_threshold.
bool whisper_no_speech(float no_speech_prob, double avg_logprob, const WhisperDecodeOptions& options) noexcept;

class WhisperSearch {
 public:
  // Throws Error(kInvalidArgument) for an unknown language (listing the model's codes), a
  // language other than "en" for an English-only model, a token id outside the vocabulary, a
  // max_new_tokens that the model's n_text_ctx cannot hold, or a temperature, beam size, best_of,
  // patience or length penalty out of range, a prompt or hotwords too long or holding control
  // characters (or given without `vocabulary`, which encodes them).
  WhisperSearch(const WhisperConfig& config, const WhisperDecodeOptions& options,
                const WhisperVocabulary* vocabulary = nullptr);

  const WhisperConfig& config() const { return config_; }
  const WhisperDecodeOptions& options() const { return options_; }
  // A multilingual model without a given language: each sequence detects its own.
  bool detects_language() const { return detect_; }
  std::span<const int> prompt() const { return prompt_; }
  int max_new_tokens() const { return max_new_tokens_; }
  // Positions a sequence feeds at most: prompt length + max_new_tokens - 1 (the last sampled
  // token is never fed). A decoder lane must hold that many (WhisperDecoderConfig::max_tokens).
  int max_positions() const { return static_cast<int>(prompt_.size()) + max_new_tokens_ - 1; }

 private:
  friend class WhisperSequence;
  void add_context(const WhisperVocabulary* vocabulary);  // <|startofprev|>, hotwords, prompt

  WhisperConfig config_;
  WhisperDecodeOptions options_;
  std::vector<int> prompt_;
  std::vector<int> suppress_;        // always suppressed, sorted, unique
  std::vector<int> suppress_first_;  // at the first sampled token (suppress_blank)
  int max_new_tokens_ = 0;
  int max_initial_timestamp_ = 0;    // last timestamp id allowed first
  bool detect_ = false;              // prompt_[1] is a placeholder: the sequence detects it
  int language_ = -1;                // the given language's token (-1: English-only or detect_)
  int sot_index_ = 0;                // where <|startoftranscript|> is in prompt_
  int language_index_ = -1;          // where the language token is (-1: English-only)
};

class WhisperSequence {
 public:
  // `search` must outlive the sequence.
  explicit WhisperSequence(const WhisperSearch& search);

  // Back to the start of the prompt, results cleared.
  void reset();

  bool done() const { return done_; }
  // The token to feed at this step (a prompt token, then the last sampled one).
  int next_token() const { return next_; }
  // Tokens fed so far (the decoder position of the next step).
  int position() const { return position_; }
  // The last step was a language detection on <|startoftranscript|> alone (a prompt or hotwords
  // come before it): the lane must go back to position 0 (WhisperDecoder::rewind) before the next
  // step, which starts the prompt.
  bool rewind() const { return rewind_; }

  // The language decoded in: the given one, or once the first step is consumed the detected
  // one. English-only models: "en". Empty while still to be detected.
  std::string_view language() const;
  // Its detection probability (softmax over the language tokens); 1 when given or English-only.
  float language_probability() const { return language_probability_; }
  // Every language's detection probability, in the config's language order; empty unless
  // detected.
  std::span<const float> language_probabilities() const { return language_probs_; }
  // Decode in this language instead of detecting one (a recording's later windows in the first
  // window's language; a stream's later segments in its first one's). Valid until the language
  // token is fed; `probability` is what language_probability() then reports. Throws
  // Error(kInvalidArgument) for a token that is not one of the model's languages, Error(kClosed)
  // once the language was fed.
  void set_language(int token, float probability);
  int language_token() const { return language_token_; }

  // The decoder's logits ([n_vocab]) for next_token(); suppressed entries are overwritten with
  // -inf. Advances the sequence; a no-op once done(). Throws Error(kInvalidArgument) if
  // logits.size() != n_vocab.
  void consume(std::span<float> logits);

  // The generator of sampled tokens (temperature > 0); a sequence starts seeded with 0. Kept
  // across reset().
  void seed(std::uint64_t seed) { rng_.seed(seed); }
  // Text tokens the sequence must begin with (a partial transcript's agreed words): its first
  // sampled steps take them, each scored as if chosen (its log-probability is added), and choose
  // from then on. A token the step's rules forbid ends the forcing there. `tokens` must outlive the
  // decode; kept across reset(); empty: none.
  void force(std::span<const int> tokens) { forced_ = tokens; }

  // Sampled tokens without the final <|endoftext|> (text and, with timestamps, timestamp ids).
  std::span<const int> tokens() const { return tokens_; }
  bool hit_token_limit() const { return hit_limit_; }
  double sum_logprob() const { return sum_logprob_; }
  double avg_logprob() const;
  float no_speech_prob() const { return no_speech_prob_; }
  bool no_speech() const;

 private:
  friend class WhisperBeamSearch;
  // The prompt's bookkeeping for the step whose logits these are (no-speech probability,
  // language detection, position). True while more prompt tokens follow: nothing to sample yet.
  bool advance(std::span<const float> logits);
  // The rules on the next sampled token: suppressed tokens and timestamp rules set to -inf.
  void mask(std::span<float> logits) const;
  // Continues `parent`'s hypothesis with `token`, its sum of log-probabilities now `sum_logprob`
  // (a beam's new member). No allocation.
  void extend(const WhisperSequence& parent, int token, double sum_logprob);
  // Appends a chosen token; ends at <|endoftext|> or the limit.
  void append(int token);
  void sample(std::span<float> logits);
  // The next token from masked logits: the most probable, or one drawn at the temperature from
  // this sequence's generator; `logprob` its log-probability at temperature 1.
  int choose(std::span<const float> logits, double& logprob);
  void detect_language(std::span<const float> logits);
  void apply_timestamp_rules(std::span<float> logits) const;

  const WhisperSearch* search_;
  std::vector<int> tokens_;  // capacity max_new_tokens
  int prompt_index_ = 0;     // index of next_ in the prompt while in it
  bool detect_step_ = false; // next_ is <|startoftranscript|> fed to detect the language alone
  bool rewind_ = false;
  int next_ = 0;
  int position_ = 0;
  bool done_ = false;
  bool hit_limit_ = false;
  double sum_logprob_ = 0.0;
  float no_speech_prob_ = 0.0f;
  int language_token_ = -1;
  float language_probability_ = 1.0f;
  std::vector<float> language_probs_;  // capacity: the model's languages (when detecting)
  std::mt19937_64 rng_{0};
  std::span<const int> forced_;
};

}  // namespace brisvox
