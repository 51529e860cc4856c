// Piper text-to-speech: a voice (VOICE.onnx + VOICE.onnx.json), the espeak-ng phonemizer and the
// VITS model, giving audio sentence by sentence in the libpiper pattern:
//
//   brisvox::PiperTts tts({.model_path = "en_US-joe-medium.onnx"});
//   brisvox::PiperSynthesis s = tts.start({.text = "Hello. How are you?"});  // checks + phonemizes all
//   brisvox::PiperChunk chunk;
//   while (tts.next(s, chunk)) play(chunk.samples, chunk.sample_rate_hz);   // one sentence each
//
// start() does everything that can fail on bad input before any audio exists: it checks the text
// (valid UTF-8, not empty, no control characters but tab/CR/LF, at most max_text_bytes), the
// request's options, and phonemizes the whole text, so that every sentence is known to fit one
// model run (max_phoneme_ids). Nothing is half-done: an Error from start() means no audio at all.
// Text with nothing to say ("...") gives a synthesis without sentences, as in Piper.
// With `fast_start` the first sentence comes as two chunks: its first clause, then the rest.
// next() then runs the model for one sentence (or, with max_batch > 1, a batch of sentences of
// similar length, returned one per call). Audio matches piper-tts's: each sentence normalised to
// peak 1 (Piper's normalize_audio), times volume, clipped to [-1, 1], optionally resampled
// (libsoxr, audio/resampler.h) to 8, 16, 24 or 48 kHz.
//
// For an engine: a PiperTts owns one model session and one phonemizer (two espeak-ng children)
// and is used by one thread at a time (one per worker). PiperSynthesis is the request's state
// (its sentences' phoneme ids and a cursor, a few KB per sentence), owned by the caller: a worker
// may interleave many, stream a first sentence while later ones wait, and stop between sentences
// by dropping it; cancel_run() (any thread) aborts the model run in progress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brisvox/models/tts/espeak_phonemizer.h"
#include "brisvox/models/tts/piper_vits.h"
#include "brisvox/models/tts/piper_voice.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox {

inline constexpr std::size_t kPiperDefaultMaxTextBytes = 20000;
// The scales a request may ask for: the lengthening ones bounded by the memory a run takes
// (check_piper_options).
inline constexpr float kPiperMaxNoiseScale = 10.0f;
inline constexpr float kPiperMaxNoiseWScale = 2.0f;
inline constexpr float kPiperMinLengthScale = 0.05f;
inline constexpr float kPiperMaxLengthScale = 4.0f;

// The session settings PiperTts uses by default: SessionConfig's (one thread, sequential) with
// ONNX Runtime's CPU arena on. A VITS run allocates a few hundred MB of intermediates whose sizes
// change with every sentence; without the arena each run maps and faults them in again (measured
// on one core: 23 % more time for a 455-id sentence, and a higher peak RSS, 513 vs 449 MB,
// docs/PERFORMANCE.md).
inline SessionConfig piper_session_config() {
  SessionConfig s;
  s.cpu_arena = true;
  return s;
}

struct PiperTtsConfig {
  std::string model_path;                 // VOICE.onnx
  std::string config_path;                // empty: model_path + ".json"
  EspeakInstall espeak = default_espeak_install();
  int espeak_timeout_ms = 10000;
  int max_batch = 1;                      // sentences per model run; > 1 needs a `durations` output
  int max_phoneme_ids = 2048;             // per sentence (about 1000 phonemes, a minute of speech)
  std::size_t max_text_bytes = kPiperDefaultMaxTextBytes;  // UTF-8 bytes per request
  SessionConfig session = piper_session_config();
  // Run VOICE.conv2d.onnx (tools/piper/conv2d_rewrite.py: the same weights in ONNX Runtime's
  // NCHWc layout, ~26 % less time per sentence on CPU) in place of VOICE.onnx when it lies beside it
  // and is not older; with max_batch > 1 the `durations` file is needed and this is not used.
  // model().model_info().source says which file runs.
  bool use_conv2d_rewrite = true;
};

struct PiperRequest {
  std::string text;                       // UTF-8
  std::optional<float> noise_scale;       // unset: the voice's
  std::optional<float> length_scale;
  std::optional<float> noise_w_scale;
  std::optional<int> speaker_id;          // multi-speaker voices; unset: the voice's default
  int output_rate_hz = 0;                 // 0: the voice's rate; else 8000, 16000, 24000 or 48000
  bool normalize = true;                  // Piper's peak normalisation
  float volume = 1.0f;                    // 0 to 10
  // The first sentence's first clause (up to its first ',', ';' or ':' with more to say after it)
  // is synthesised alone, and the rest of that sentence as the next chunk, so that the first audio
  // costs one clause's model run instead of one sentence's (a VITS run's time grows with its
  // audio: "Sure," 51 ms against "Sure, I can help with that." 139 ms on one core). The phonemes
  // are the same; the model sees the two parts apart, so the audio differs from Piper's at that
  // boundary (each part normalised as Piper normalises a sentence). Off: Piper's audio exactly.
  bool fast_start = false;
};

struct PiperChunk {
  std::vector<float> samples;             // mono, in [-1, 1]
  int sample_rate_hz = 0;
  std::size_t sentence_index = 0;         // 0-based
  std::size_t sentence_count = 0;
  bool last = false;                      // no sentence follows
  // False for the first clause of a fast_start sentence (its rest is the next chunk). The indexes
  // above count chunks: a fast_start synthesis has one more chunk than sentences.
  bool ends_sentence = true;
  std::vector<std::string> phonemes;      // the sentence's phonemes (UTF-8)
  std::vector<std::int64_t> phoneme_ids;
  std::vector<std::string> missing_phonemes;  // phonemes the voice's id map lacks (left out)
};

// One request's state. Movable; independent of other requests.
class PiperSynthesis {
 public:
  PiperSynthesis() = default;
  std::size_t sentence_count() const { return sentences_.size(); }
  std::size_t sentences_done() const { return next_; }
  bool done() const { return next_ >= sentences_.size() && ready_.empty(); }
  // Phoneme ids of the chunk the next model run makes (0 when none is left to run): a run's cost
  // grows with them.
  std::size_t next_phoneme_ids() const { return next_ < sentences_.size() ? sentences_[next_].ids.size() : 0; }

 private:
  friend class PiperTts;
  struct Sentence {
    std::vector<std::string> phonemes;
    std::vector<std::int64_t> ids;
    std::vector<std::string> missing;
    bool ends_sentence = true;
  };
  std::vector<Sentence> sentences_;
  std::size_t next_ = 0;            // first sentence not yet run
  std::deque<PiperChunk> ready_;    // chunks of a batch not yet returned
  PiperScales scales_;
  std::int64_t speaker_id_ = 0;
  int output_rate_hz_ = 0;
  bool normalize_ = true;
  float volume_ = 1.0f;
};

class PiperTts {
 public:
  // Loads the voice config and model and starts the phonemizer. Throws Error(kIo) for a missing
  // file or espeak-ng, Error(kBadModel / kModelMismatch) for a file that is not a Piper voice,
  // Error(kInvalidArgument) for a bad config value or an espeak voice espeak-ng refuses.
  explicit PiperTts(const PiperTtsConfig& config);
  ~PiperTts();
  PiperTts(PiperTts&&) noexcept;
  PiperTts& operator=(PiperTts&&) noexcept;

  const PiperVoiceConfig& voice() const;
  std::size_t max_text_bytes() const;

  // Checks the request and phonemizes its text (see the top of this file). Throws
  // Error(kInvalidArgument) for bad text or options (the message says which and where),
  // Error(kRuntime) if espeak-ng dies (the next call starts it again).
  PiperSynthesis start(const PiperRequest& request);
  // The next sentence's audio; false when the synthesis is done (chunk untouched). Throws
  // Error(kRuntime) if the model run fails or is cancelled (the synthesis stays where it was).
  bool next(PiperSynthesis& synthesis, PiperChunk& chunk);

  void cancel_run() noexcept;
  void clear_cancel() noexcept;

  EspeakPhonemizer& phonemizer();
  PiperVits& model();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Piper's AudioChunk.audio_int16_array: clip(x * 32767, -32767, 32767) truncated to int16.
std::vector<std::int16_t> piper_to_int16(const std::vector<float>& samples);

// The checks PiperTts::start() makes before it phonemizes, for a caller that accepts a request on
// one thread and synthesises it on another (an engine worker): an Error from these is an Error
// from start(), and passing them means start() can fail only in espeak-ng (kRuntime) or on a
// sentence longer than max_phoneme_ids (kInvalidArgument). Thread-safe, no state.
// The text: at most max_text_bytes, valid UTF-8, no control characters but tab/CR/LF, not blank.
void check_piper_text(std::string_view text, std::size_t max_text_bytes);
// The options (scales, speaker, output rate, volume; `request.text` is not looked at) for `voice`.
void check_piper_options(const PiperRequest& request, const PiperVoiceConfig& voice);

}  // namespace brisvox
