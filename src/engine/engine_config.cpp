// Validation of EngineConfig, ModelSpec and StreamConfig, apart from the engine so that code which
// only checks a configuration (the server's query parser, its fuzzer) needs no ONNX Runtime.
#include "brisvox/engine/engine_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <set>
#include <string>

#include "base/plain_name.h"
#include "brisvox/error.h"

namespace brisvox {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, message);
}

// The options each family takes (ModelSpec::options), and whether each is a number.
struct FamilyOption {
  std::string_view name;
  bool number;
};
constexpr FamilyOption kPiperOptions[] = {
    {"config", false}, {"noise_scale", true}, {"length_scale", true}, {"noise_w_scale", true}, {"speaker_id", true}};

constexpr FamilyOption kWhisperOptions[] = {{"max_width", true}, {"prompt_tokens", true}};

void validate_family_options(const ModelSpec& m) {
  std::span<const FamilyOption> known;
  if (m.family == ModelFamily::kPiperTts) known = kPiperOptions;
  if (m.family == ModelFamily::kWhisper) known = kWhisperOptions;
  for (const auto& [option, value] : m.options) {
    const std::string& name = option;  // a structured binding is not captured by clang 14's lambdas
    const auto it = std::find_if(known.begin(), known.end(), [&](const FamilyOption& o) { return o.name == name; });
    if (it == known.end()) {
      std::string names;
      for (const FamilyOption& o : known) names += fmt::format("{}{}", names.empty() ? "" : ", ", o.name);
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("model '{}' ({}) has no option '{}' ({})", m.name, to_string(m.family), name,
                              names.empty() ? "its family takes none" : "it takes: " + names));
    }
    if (it->number) {
      std::size_t used = 0;
      double d = 0;
      try {
        d = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      require(used == value.size() && !value.empty() && std::isfinite(d),
              fmt::format("model '{}': option '{}' must be a number, got '{}'", m.name, name, value));
      if (name == "max_width") {
        require(d >= 1 && d <= 16 && d == std::floor(d),
                fmt::format("model '{}': option 'max_width' must be a whole number 1 to 16, got '{}'", m.name, value));
      }
      if (name == "prompt_tokens") {
        require(d >= 0 && d <= 446 && d == std::floor(d),
                fmt::format("model '{}': option 'prompt_tokens' must be a whole number 0 to 446, got '{}'", m.name,
                            value));
      }
    } else {
      require(!value.empty(), fmt::format("model '{}': option '{}' is empty", m.name, name));
    }
  }
}

}  // namespace

std::string_view to_string(ModelFamily family) noexcept {
  switch (family) {
    case ModelFamily::kSileroVad: return "silero_vad";
    case ModelFamily::kSmartTurn: return "smart_turn";
    case ModelFamily::kWhisper: return "whisper";
    case ModelFamily::kPiperTts: return "piper_tts";
  }
  return "unknown";
}

namespace {

ModelSpec entry(ModelFamily family, std::string path, std::string name) {
  ModelSpec s;
  s.name = std::move(name);
  s.family = family;
  s.path = std::move(path);
  return s;
}

}  // namespace

ModelSpec ModelSpec::silero_vad(std::string path, std::string name) {
  return entry(ModelFamily::kSileroVad, std::move(path), std::move(name));
}

ModelSpec ModelSpec::smart_turn(std::string path, std::string name) {
  return entry(ModelFamily::kSmartTurn, std::move(path), std::move(name));
}

ModelSpec ModelSpec::whisper(std::string path, std::string name) {
  ModelSpec s = entry(ModelFamily::kWhisper, std::move(path), std::move(name));
  // ONNX Runtime's CPU arena on: without it every encoder run maps and faults in its ~100 MB of
  // intermediates afresh (a 30 s window's attention alone is 6 x 1500 x 1500 floats a layer),
  // 13-24 % of the run (docs/PERFORMANCE.md, "Windows one at a time, and ONNX Runtime's arena"). The arena keeps the
  // largest run's intermediates: one window per worker for tiny.en-int8, a batch for float.
  s.session.cpu_arena = true;
  return s;
}

ModelSpec ModelSpec::piper_tts(std::string path, std::string name) {
  ModelSpec s = entry(ModelFamily::kPiperTts, std::move(path), std::move(name));
  // As piper_session_config(): ONNX Runtime's CPU arena on, since VITS's intermediates change size
  // with every sentence (docs/PERFORMANCE.md, text-to-speech).
  s.session.cpu_arena = true;
  return s;
}

void ModelSpec::validate() const {
  require(is_plain_name(name), fmt::format("model name '{}' must be 1 to 64 letters, digits, '-', '_' or '.'", name));
  const std::string m = fmt::format("model '{}'", name);
  require(!path.empty(), fmt::format("{} ({}): path is empty: give a model file", m, to_string(family)));
  require(num_workers >= 0 && num_workers <= 1024,
          fmt::format("{}: num_workers must be 0 (the family's default) to 1024, got {}", m, num_workers));
  // Piper: one sentence per run. On CPU a batch costs as much per sentence as single runs, and
  // every row is decoded to the longest row's length (docs/PERFORMANCE.md, text-to-speech).
  const int most_batch = family == ModelFamily::kPiperTts                                   ? 1
                         : family == ModelFamily::kSmartTurn || family == ModelFamily::kWhisper ? 64
                                                                                                : 512;
  require(max_batch >= 0 && max_batch <= most_batch,
          fmt::format("{}: max_batch must be 0 (the family's default) or 1 to {}, got {}", m, most_batch, max_batch));
  require(max_gather_wait_us >= -1 && max_gather_wait_us <= 1'000'000,
          fmt::format("{}: max_gather_wait_us must be -1 (the family's default) or 0 to 1000000, got {}", m,
                      max_gather_wait_us));
  require(max_pending >= 0 && max_pending <= 4096,
          fmt::format("{}: max_pending must be 0 (the family's default) to 4096, got {}", m, max_pending));
  require(run_timeout_ms == -1 || run_timeout_ms == 0 || (run_timeout_ms >= 10 && run_timeout_ms <= 600'000),
          fmt::format("{}: run_timeout_ms must be -1 (the engine's), 0 (no deadline) or 10 to 600000, got {}", m,
                      run_timeout_ms));
  session.validate();
  validate_family_options(*this);
}

const ModelSpec* EngineConfig::find_model(std::string_view name) const noexcept {
  for (const ModelSpec& m : models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const ModelSpec& EngineConfig::model(std::string_view name) const {
  if (const ModelSpec* m = find_model(name)) return *m;
  std::string names;
  for (const ModelSpec& m : models) names += (names.empty() ? "" : ", ") + m.name;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("the engine has no model named '{}' (it has: {})", name, names.empty() ? "none" : names));
}

ModelSpec& EngineConfig::model(std::string_view name) {
  return const_cast<ModelSpec&>(static_cast<const EngineConfig&>(*this).model(name));
}

void EngineConfig::validate() const {
  require(!models.empty(), "models is empty: an engine needs at least one model (ModelSpec::silero_vad())");
  std::set<std::string_view> names;
  for (const ModelSpec& m : models) {
    m.validate();
    require(names.insert(m.name).second, fmt::format("two models are named '{}': names must be unique", m.name));
  }
  require(max_streams >= 1 && max_streams <= 1'000'000, fmt::format("max_streams must be 1 to 1000000, got {}", max_streams));
  require(latency_budget_ms >= 1 && latency_budget_ms <= 60'000,
          fmt::format("latency_budget_ms must be 1 to 60000, got {}", latency_budget_ms));
  require(run_timeout_ms == 0 || (run_timeout_ms >= 10 && run_timeout_ms <= 600'000),
          fmt::format("run_timeout_ms must be 0 (no deadline) or 10 to 600000, got {}", run_timeout_ms));
}

void StreamConfig::validate() const {
  require(sample_rate_hz >= kMinSampleRateHz && sample_rate_hz <= kMaxSampleRateHz,
          fmt::format("sample_rate_hz must be {} to {}, got {}", kMinSampleRateHz, kMaxSampleRateHz,
                      sample_rate_hz));
  require(vad.model_rate_hz == 0 || vad.model_rate_hz == 8000 || vad.model_rate_hz == 16000,
          fmt::format("model_rate_hz must be 0 (auto), 8000 or 16000, got {}", vad.model_rate_hz));
  require(buffer_ms >= 64 && buffer_ms <= 60'000, fmt::format("buffer_ms must be 64 to 60000, got {}", buffer_ms));
  require(payload_buffer_bytes == 0 || (payload_buffer_bytes >= 4096 && payload_buffer_bytes <= (1 << 30)),
          fmt::format("payload_buffer_bytes must be 0 (automatic) or 4096 to 1073741824, got {}",
                      payload_buffer_bytes));
  require(!vad.model.empty(), "the vad stage names no model (VadOptions::model)");
  vad.params.validate();
  require(!vad.segment_audio || (vad.max_segment_audio_s >= 0.5 && vad.max_segment_audio_s <= 600.0),
          fmt::format("max_segment_audio_s must be 0.5 to 600, got {}", vad.max_segment_audio_s));
  if (turn) {
    require(!turn->model.empty(), "the turn stage names no model (TurnOptions::model)");
    turn->params.validate();
  }
  if (stt) {
    require(!stt->model.empty(), "the stt stage names no model (SttOptions::model)");
    require(stt->partial_interval_ms == 0 || (stt->partial_interval_ms >= 200 && stt->partial_interval_ms <= 10'000),
            fmt::format("partial_interval_ms must be 0 (no partial transcripts) or 200 to 10000, got {}",
                        stt->partial_interval_ms));
  }
}

}  // namespace brisvox
