// Piper as a synthesizer (synthesizer.h): one PiperTts per worker (its ONNX Runtime session handle
// and its two espeak-ng children), a chunk per sentence (the first one split at its first clause
// with SpeechConfig::fast_start). The voice's settings come from ModelSpec::options ("config",
// "noise_scale", "length_scale", "noise_w_scale", "speaker_id") and a session's voice_options.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "brisvox/models/tts/piper_tts.h"
#include "engine/speech/speech_model.h"
#include "engine/speech/synthesizer.h"

namespace brisvox::engine {

class PiperSynthesizer {
 public:
  using Options = PiperRequest;  // text left empty
  struct Utterance {
    PiperSynthesis synthesis;
    std::size_t chunk_count() const { return synthesis.sentence_count(); }
    std::size_t chunks_done() const { return synthesis.sentences_done(); }
    std::size_t next_cost() const { return synthesis.next_phoneme_ids(); }
  };

  // Loads the voice (Error kIo, kBadModel, kModelMismatch, kInvalidArgument).
  explicit PiperSynthesizer(const ModelSpec& spec);

  Options session_options(const ModelSpec& spec, const SpeechConfig& config) const;
  int sample_rate_hz(const Options& options) const noexcept;
  void check_text(std::string_view text) const;
  std::size_t max_text_bytes() const noexcept { return tts_.max_text_bytes(); }
  Utterance start(const Options& options, std::string text);
  bool next(Utterance& u, SynthesisChunk& chunk);
  void cancel_run() noexcept { tts_.cancel_run(); }
  void clear_cancel() noexcept { tts_.clear_cancel(); }
  std::string timeout_hint() const;

 private:
  PiperTts tts_;
  PiperChunk scratch_;
};

static_assert(Synthesizer<PiperSynthesizer>);

// The pool of one kPiperTts entry of the registry.
std::unique_ptr<SpeechModel> make_piper_pool(const ModelSpec& spec);

}  // namespace brisvox::engine
