// Whole-recording transcription on one thread, built on the batched pieces (WhisperFeatures,
// WhisperEncoder, WhisperDecoder, WhisperSequence): for tests, the offline path and as the
// reference of how the pieces fit together. An engine batches across streams with the pieces
// themselves.
//
// As faster-whisper's transcribe(without_timestamps=True, condition_on_previous_text=False,
// vad_filter=False), at its decoding options (greedy by default; beam search, best-of sampling
// and the temperature fallback as options, faster_whisper() for its defaults): the recording is
// resampled to 16 kHz
// (audio/resampler, libsoxr), its log-mel computed once over the whole recording (plus 160 zero
// samples), and cut into consecutive windows of full_frames() content frames (30 s); each window
// is decoded on its own (no previous text in the prompt), which is also what lets the windows of
// one recording be encoded and decoded as a batch. A window whose no-speech rule fires gets an
// empty text (faster-whisper drops it).
// Without a language (multilingual models), the first window's detected language is used for the
// whole recording, as faster-whisper does (or each window's own: language_detection kEach).
// A window whose result needs the fallback (whisper_fallback.h) is decoded again from the same
// encoder output at the next temperature, in the language first decoded in.
// With word_timestamps, each window's words (whisper_words.h), placed in window order.
// Differences: with timestamps, or word timestamps, the windows still advance by 30 s
// (faster-whisper seeks to the last timestamp, or the last word's end); sampled tokens come from
// brisvox's generator, not CTranslate2's.
//
// Not thread-safe: one transcribe() at a time per object (it owns one encoder and one decoder
// session). cancel_run() from any thread makes the transcribe() in progress throw
// Error(kRuntime) at its next model Run.
#pragma once

#include <memory>
#include <span>
#include <cstddef>
#include <string>
#include <vector>

#include "brisvox/models/stt/whisper_features.h"
#include "brisvox/models/stt/whisper_model.h"
#include "brisvox/models/stt/whisper_fallback.h"
#include "brisvox/models/stt/whisper_search.h"
#include "brisvox/models/stt/whisper_words.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox {

struct WhisperTranscribeOptions {
  WhisperWindow window = WhisperWindow::kFull;
  // kFit: the shortest window (frames; a multiple of 100, clamped to the model's full window).
  int fit_min_frames = WhisperFeatures::kDefaultFitMinFrames;
  // kFit: a window that ends at the token limit (Whisper repeating itself, which a cut window
  // provokes now and then: docs/MODELS.md) is decoded again in the full window, and that result
  // kept.
  bool fit_fallback = true;
  WhisperDecodeOptions decode;
  // Without decode.language: detect on the first window for all (kFirst) or on each window.
  WhisperLanguageDetection language_detection = WhisperLanguageDetection::kFirst;
  // The temperature fallback (none by default).
  WhisperFallbackOptions fallback;
  // Word timestamps (whisper_words.h): each window with text gets an alignment pass on its
  // encoder output, one decoder step per token. Needs a decoder with alignment heads (a model
  // converted by tools/whisper/convert_ct2.py).
  bool word_timestamps = false;
  WhisperWordOptions words;

  // faster-whisper's decoding defaults (use_faster_whisper_decoding), the rest default.
  static WhisperTranscribeOptions faster_whisper();
};

struct WhisperSegment {
  // The window's span in the recording; with word timestamps, narrowed to its words as
  // faster-whisper does.
  double start_s = 0.0;
  double end_s = 0.0;
  std::string text;      // as faster-whisper's Segment.text (leading space included); "" if
                         // no_speech
  std::vector<int> tokens;  // sampled tokens (without <|endoftext|>)
  double avg_logprob = 0.0;
  float no_speech_prob = 0.0f;
  bool no_speech = false;        // the no-speech rule fired: text is empty
  bool hit_token_limit = false;  // ended at max_new_tokens without <|endoftext|>
  int window_frames = 0;         // the window it was decoded in (kFit: after any fallback)
  std::string language;          // decoded in: given, detected, or "en" (English-only models)
  float language_probability = 1.0f;  // its detection probability; 1 when given
  float temperature = 0.0f;      // of the attempt kept
  double compression_ratio = 0.0;  // of its text
  // Every attempt decoded, in temperature order (one unless the fallback fired).
  std::vector<WhisperAttempt> attempts;
  std::vector<WhisperWord> words;  // with word_timestamps
};

struct WhisperTranscript {
  std::vector<WhisperSegment> segments;  // one per window, in order
  // The recording's language: the first window's (faster-whisper's info.language and
  // info.language_probability); "" and 0 without any window.
  std::string language;
  float language_probability = 0.0f;
  // The segments' texts concatenated (faster-whisper: "".join(s.text for s in segments)).
  std::string text() const;
};

struct WhisperTranscriberConfig {
  int max_batch = 4;  // windows encoded (and decoded) together
  SessionConfig session;
  // Sequences a window may be decoded as (beam_size, best_of): the decoder has max(max_batch,
  // max_width) lanes, and a batch holds as many windows as their sequences fit.
  int max_width = 5;
  // Positions a decoder lane holds (WhisperDecoderConfig::max_tokens): 0, the default 229, fits
  // no prompt; a prompt or hotwords need n_text_ctx (448). The one-shot transcribe() sizes it.
  int max_tokens = 0;
};

class WhisperTranscriber {
 public:
  // Copies what it needs of `model`. Throws as WhisperEncoder/WhisperDecoder do.
  WhisperTranscriber(const WhisperModel& model, const WhisperTranscriberConfig& config = {});
  ~WhisperTranscriber();
  WhisperTranscriber(WhisperTranscriber&&) noexcept;
  WhisperTranscriber& operator=(WhisperTranscriber&&) noexcept;

  // `audio`: mono samples at sample_rate_hz (any rate libsoxr takes; 16 kHz is used as is).
  // Throws Error(kBadAudio) naming the first NaN/Inf sample, Error(kInvalidArgument) for a bad
  // rate, an option the model does not support (kFit on an Optimum model, an unknown language),
  // Error(kRuntime) from ONNX Runtime. Audio shorter than 10 ms gives no segment.
  WhisperTranscript transcribe(std::span<const float> audio, int sample_rate_hz,
                               const WhisperTranscribeOptions& options = {});

  void cancel_run() noexcept;
  void clear_cancel() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One-shot convenience: a WhisperTranscriber for one call.
WhisperTranscript transcribe(const WhisperModel& model, std::span<const float> audio,
                             int sample_rate_hz, const WhisperTranscribeOptions& options = {});

}  // namespace brisvox
