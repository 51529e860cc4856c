// Word timestamps, as faster-whisper computes them with word_timestamps=True (its
// add_word_timestamps and find_alignment, on CTranslate2's Whisper::align). Pure C++, no ONNX
// Runtime: whoever runs the decoder feeds a WhisperAligner one step at a time.
//
// For one window whose text is decoded:
//   1. The alignment pass (WhisperAligner): the decoder is fed <|startoftranscript|> (language,
//      task), <|notimestamps|>, the text tokens and <|endoftext|>, one per step, on the window's
//      encoder output, without any prompt. Each step gives the alignment heads' cross-attention
//      scores (WhisperDecoder::alignment) and the logits, from which the probability of the next
//      forced token is taken (softmax over the text tokens alone).
//   2. The path (WhisperAligner::finish): the scores cut to the window's content (frames / 2
//      encoder positions) and softmaxed per head and token; each (head, position) column
//      standardised over the tokens (mean 0, variance 1); a median filter of width 7 along the
//      positions (mirrored at the ends); the heads averaged; the rows from <|notimestamps|> to the
//      last text token aligned to the positions by dynamic time warping on the negated matrix
//      (CTranslate2's negative_dtw, its tie order).
//   3. Words (whisper_word_timings): the tokens grouped into words (at spaces and punctuation; for
//      zh, ja, th, lo, my and yue at every complete UTF-8 character), each word starting at the
//      position where the path first reaches its first token (50 positions per second) and
//      ending where the next word starts; its probability the mean of its tokens'.
//   4. Placement (whisper_place_words): faster-whisper's corrections (a word at a sentence end
//      longer than twice the median word, capped at 0.7 s; punctuation merged into the
//      neighbouring word; the first words after a pause; the segment's own bounds preferred for
//      a first or last word that overruns them), times offset to the recording and rounded to
//      10 ms.
// Exact to faster-whisper for one window. What differs: faster-whisper with word timestamps
// starts its next window at the last word's end; brisvox keeps its consecutive 30 s windows.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brisvox/models/stt/whisper_config.h"

namespace brisvox {

class WhisperVocabulary;

struct WhisperWord {
  double start_s = 0.0;  // in the recording (the stream)
  double end_s = 0.0;
  std::string text;      // as faster-whisper's Word.word: a leading space, punctuation merged in
  float probability = 0.0f;
};

struct WhisperWordOptions {
  // faster-whisper's defaults: merged into the following word, and into the preceding one.
  std::string prepend_punctuations = "\"'\u201c\u00bf([{-";
  std::string append_punctuations = "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001";
};

// One word before placement (faster-whisper's find_alignment entries): times within the window.
struct WhisperWordTiming {
  std::string text;
  std::vector<int> tokens;
  double start_s = 0.0;
  double end_s = 0.0;
  float probability = 0.0f;
};

class WhisperAligner {
 public:
  // `sot_sequence`: <|startoftranscript|> (, language, task) as decoded; `text`: the window's
  // text tokens (ids < eot; others are dropped, as faster-whisper does); `content_frames`: the
  // window's mel frames of audio (not padding). Allocates its buffers here.
  WhisperAligner(const WhisperConfig& config, std::span<const int> sot_sequence, std::span<const int> text,
                 int content_frames, int alignment_heads);

  bool done() const { return position_ == static_cast<int>(input_.size()); }
  int next_token() const { return input_[static_cast<std::size_t>(position_)]; }
  int position() const { return position_; }
  // Steps a lane needs for the pass (sot sequence + <|notimestamps|> + text + <|endoftext|>).
  int steps() const { return static_cast<int>(input_.size()); }
  std::span<const int> text() const { return text_; }

  // The decoder's logits ([n_vocab]) and alignment scores ([heads][stride], stride >= the
  // window's positions) for next_token(). Throws Error(kInvalidArgument) on sizes that do not
  // fit, Error(kClosed) once done().
  void consume(std::span<const float> logits, std::span<const float> scores, int stride);

  // After done(): the (text row, position) path, row 0 being <|notimestamps|>; empty when the
  // window has no text or fewer than 2 content frames.
  std::vector<std::pair<int, int>> path() const;
  // The text tokens' probabilities (after done()).
  std::span<const float> token_probabilities() const { return probabilities_; }

 private:
  int eot_;
  int heads_;
  int positions_;                   // content_frames / 2
  std::size_t sot_length_;
  std::vector<int> input_;
  std::vector<int> text_;
  int position_ = 0;
  std::vector<float> scores_;       // [input][heads][positions_]
  std::vector<float> probabilities_;
};

// faster-whisper's Tokenizer.split_to_word_tokens on `tokens` (+ <|endoftext|>, which ends as its
// own word): (word text, its tokens).
std::vector<std::pair<std::string, std::vector<int>>> whisper_split_words(const WhisperVocabulary& vocabulary,
                                                                          int eot, std::string_view language,
                                                                          std::span<const int> tokens);

// faster-whisper's find_alignment for one window: words with times within the window. Empty if
// `text` is empty or the path is.
std::vector<WhisperWordTiming> whisper_word_timings(const WhisperVocabulary& vocabulary, int eot,
                                                   std::string_view language, const WhisperAligner& aligner);

// faster-whisper's add_word_timestamps for one window decoded as one segment: `words` (this
// window's, from whisper_word_timings) placed at `window_start_s` in the recording. The segment's
// bounds [segment_start_s, segment_end_s] are adjusted as faster-whisper adjusts them;
// `last_speech_s` is the end of the previous window's last word (0 at the first).
std::vector<WhisperWord> whisper_place_words(std::vector<WhisperWordTiming> words, double window_start_s,
                                             double& segment_start_s, double& segment_end_s, double last_speech_s,
                                             const WhisperWordOptions& options = {});

// faster-whisper's merge_punctuations (in place; merged entries keep empty text and no tokens).
void whisper_merge_punctuations(std::vector<WhisperWordTiming>& words, std::string_view prepended,
                                std::string_view appended);

}  // namespace brisvox
