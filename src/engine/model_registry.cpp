#include "engine/model_registry.h"

#include <fmt/format.h>

#include "engine/speech/piper_synthesizer.h"
#include "engine/stages/stt_stage.h"
#include "engine/stages/turn_stage.h"
#include "engine/stream/vad_pool.h"

namespace brisvox::engine {
namespace {

// The one registration of each family: how its pool is built.
std::unique_ptr<ModelPool> make_pool(const ModelSpec& spec, const EngineConfig& config, EngineShared& shared) {
  switch (spec.family) {
    case ModelFamily::kSileroVad:
      return std::make_unique<VadPool>(spec, static_cast<std::size_t>(config.max_streams), shared);
    case ModelFamily::kSmartTurn:
      return std::make_unique<TurnPool>(spec);
    case ModelFamily::kWhisper:
      return std::make_unique<SttPool>(spec);
    case ModelFamily::kPiperTts:
      return make_piper_pool(spec);
  }
  throw Error(ErrorCode::kInternal, fmt::format("model '{}': unknown family", spec.name));
}

// Frame-synchronous models drive streams; request models report back to them.
bool is_request_model(ModelFamily family) noexcept { return family != ModelFamily::kSileroVad; }

}  // namespace

ModelRegistry::ModelRegistry(const EngineConfig& config, EngineShared& shared) {
  for (const ModelSpec& spec : config.models) pools_.push_back(make_pool(spec, config, shared));
}

ModelRegistry::~ModelRegistry() {
  stop();
  // Request pools go first: a request may still hold a stream whose memory the frame pools free.
  for (auto& p : pools_) {
    if (is_request_model(p->spec().family)) p.reset();
  }
  pools_.clear();
}

ModelPool* ModelRegistry::find(std::string_view name, ModelFamily family) const noexcept {
  for (const auto& p : pools_) {
    if (p && p->spec().name == name && p->spec().family == family) return p.get();
  }
  return nullptr;
}

VadPool* ModelRegistry::vad_pool(std::string_view name) const noexcept {
  return static_cast<VadPool*>(find(name, ModelFamily::kSileroVad));
}

TurnPool* ModelRegistry::turn_pool(std::string_view name) const noexcept {
  return static_cast<TurnPool*>(find(name, ModelFamily::kSmartTurn));
}

SttPool* ModelRegistry::stt_pool(std::string_view name) const noexcept {
  return static_cast<SttPool*>(find(name, ModelFamily::kWhisper));
}

SpeechModel* ModelRegistry::speech_model(std::string_view name) const noexcept {
  return static_cast<SpeechModel*>(find(name, ModelFamily::kPiperTts));
}

std::string ModelRegistry::describe() const {
  std::string out;
  for (const auto& p : pools_) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} ({})", p->spec().name, to_string(p->spec().family));
  }
  return out.empty() ? "none" : out;
}

void ModelRegistry::start(RunWatchdog* watchdog) {
  if (watchdog) {
    for (auto& p : pools_) p->watch_runs(*watchdog);
  }
  for (auto& p : pools_) p->start();
}

void ModelRegistry::stop() {
  for (auto& p : pools_) {
    if (p && is_request_model(p->spec().family)) p->stop();
  }
  for (auto& p : pools_) {
    if (p && !is_request_model(p->spec().family)) p->stop();
  }
}

std::vector<ModelStats> ModelRegistry::stats() const {
  std::vector<ModelStats> out;
  out.reserve(pools_.size());
  for (const auto& p : pools_) out.push_back(p->stats());
  return out;
}

int ModelRegistry::num_workers() const noexcept {
  int n = 0;
  for (const auto& p : pools_) n += p->num_workers();
  return n;
}

}  // namespace brisvox::engine
