#include "engine/speech/piper_synthesizer.h"

#include <fmt/format.h>

#include <cmath>

#include "brisvox/error.h"
#include "engine/speech/speech_pool.h"

namespace brisvox::engine {
namespace {

PiperTtsConfig tts_config(const ModelSpec& spec) {
  PiperTtsConfig c;
  c.model_path = spec.path;
  if (const auto it = spec.options.find("config"); it != spec.options.end()) c.config_path = it->second;
  c.max_batch = 1;
  c.session = spec.session;
  return c;
}

}  // namespace

PiperSynthesizer::PiperSynthesizer(const ModelSpec& spec) : tts_(tts_config(spec)) {}

PiperSynthesizer::Options PiperSynthesizer::session_options(const ModelSpec& spec, const SpeechConfig& config) const {
  PiperRequest r;
  auto set = [&](std::string_view name, double value) {
    if (name == "noise_scale") {
      r.noise_scale = static_cast<float>(value);
    } else if (name == "length_scale") {
      r.length_scale = static_cast<float>(value);
    } else if (name == "noise_w_scale") {
      r.noise_w_scale = static_cast<float>(value);
    } else if (name == "speaker_id") {
      if (value != std::floor(value) || value < 0 || value > (1 << 20)) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("speaker_id must be a whole number 0 to 1048576, got {}", value));
      }
      r.speaker_id = static_cast<int>(value);
    } else {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("voice '{}' (piper_tts) has no setting '{}': it takes noise_scale, length_scale, "
                              "noise_w_scale and speaker_id",
                              spec.name, name));
    }
  };
  // The model's defaults first (numbers: ModelSpec::validate checked them), then the session's.
  for (const auto& [name, value] : spec.options) {
    if (name != "config") set(name, std::stod(value));
  }
  for (const auto& [name, value] : config.voice_options) set(name, value);
  r.output_rate_hz = config.sample_rate_hz;
  r.volume = config.volume;
  r.fast_start = config.fast_start;
  check_piper_options(r, tts_.voice());
  return r;
}

int PiperSynthesizer::sample_rate_hz(const Options& options) const noexcept {
  return options.output_rate_hz == 0 ? tts_.voice().sample_rate_hz : options.output_rate_hz;
}

void PiperSynthesizer::check_text(std::string_view text) const { check_piper_text(text, tts_.max_text_bytes()); }

PiperSynthesizer::Utterance PiperSynthesizer::start(const Options& options, std::string text) {
  PiperRequest request = options;
  request.text = std::move(text);
  return Utterance{tts_.start(request)};
}

bool PiperSynthesizer::next(Utterance& u, SynthesisChunk& chunk) {
  if (!tts_.next(u.synthesis, scratch_)) return false;
  chunk.samples = std::move(scratch_.samples);
  chunk.index = scratch_.sentence_index;
  chunk.count = scratch_.sentence_count;
  chunk.last = scratch_.last;
  chunk.cost = scratch_.phoneme_ids.size();
  return true;
}

std::string PiperSynthesizer::timeout_hint() const {
  return "a sentence costs about 2.2 ms of one core per phoneme id (1 s for 455 ids): raise "
         "EngineConfig::run_timeout_ms, or end long sentences earlier with . ? or !";
}

std::unique_ptr<SpeechModel> make_piper_pool(const ModelSpec& spec) { return std::make_unique<SpeechPool<PiperSynthesizer>>(spec); }

}  // namespace brisvox::engine
