// The engine's models: one pool per EngineConfig::models entry, built by its family. Adding a
// family is its model (models/<family>/), its stage (stages/<family>_stage.*) or synthesizer
// (speech/<family>_synthesizer.*), and one case in make_pool() (model_registry.cpp): nothing in
// the pool.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/engine_stats.h"
#include "engine/pool/batch_pool.h"
#include "engine/pool/run_watchdog.h"

namespace brisvox::engine {

struct EngineShared;
class VadPool;
class TurnPool;
class SttPool;
class SpeechModel;

class ModelRegistry {
 public:
  // `config` resolved (every ModelSpec::resolved). Loads every model (Error kIo, kBadModel, ...).
  ModelRegistry(const EngineConfig& config, EngineShared& shared);
  ~ModelRegistry();  // stops every pool
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // The pool of the entry `name` if it has that family, else null.
  VadPool* vad_pool(std::string_view name) const noexcept;
  TurnPool* turn_pool(std::string_view name) const noexcept;
  SttPool* stt_pool(std::string_view name) const noexcept;
  // Any text-to-speech family's.
  SpeechModel* speech_model(std::string_view name) const noexcept;
  // "vad (silero_vad), turn (smart_turn)": for messages.
  std::string describe() const;

  // Puts every pool's runs under `watchdog` (may be null), then starts the pools.
  void start(RunWatchdog* watchdog);
  // Request models first (their results go back to streams on the frame models' workers), then
  // frame models. Idempotent.
  void stop();

  std::vector<ModelStats> stats() const;
  int num_workers() const noexcept;
  const std::vector<std::unique_ptr<ModelPool>>& pools() const noexcept { return pools_; }

 private:
  ModelPool* find(std::string_view name, ModelFamily family) const noexcept;
  std::vector<std::unique_ptr<ModelPool>> pools_;  // EngineConfig::models order
};

}  // namespace brisvox::engine
