// Validation of EngineConfig and StreamConfig, apart from the engine so that code which only
// checks a configuration (the server's query parser, its fuzzer) needs no ONNX Runtime.
#include <fmt/format.h>

#include <string>

#include "brisvox/engine/engine.h"
#include "brisvox/error.h"

namespace brisvox {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, message);
}

}  // namespace

void EngineConfig::validate() const {
  require(num_workers >= 0 && num_workers <= 1024, fmt::format("num_workers must be 0 (one per core) to 1024, got {}", num_workers));
  require(max_batch >= 1 && max_batch <= 512, fmt::format("max_batch must be 1 to 512, got {}", max_batch));
  require(max_gather_wait_us >= 0 && max_gather_wait_us <= 1'000'000,
          fmt::format("max_gather_wait_us must be 0 to 1000000, got {}", max_gather_wait_us));
  require(max_streams >= 1 && max_streams <= 1'000'000, fmt::format("max_streams must be 1 to 1000000, got {}", max_streams));
  require(latency_budget_ms >= 1 && latency_budget_ms <= 60'000,
          fmt::format("latency_budget_ms must be 1 to 60000, got {}", latency_budget_ms));
  require(run_timeout_ms == 0 || (run_timeout_ms >= 10 && run_timeout_ms <= 600'000),
          fmt::format("run_timeout_ms must be 0 (no deadline) or 10 to 600000, got {}", run_timeout_ms));
  session.validate();
  if (!turn_model.empty()) {
    require(num_turn_workers >= 1 && num_turn_workers <= 256,
            fmt::format("num_turn_workers must be 1 to 256, got {}", num_turn_workers));
    require(turn_max_batch >= 1 && turn_max_batch <= 64, fmt::format("turn_max_batch must be 1 to 64, got {}", turn_max_batch));
    require(max_pending_turns >= 1 && max_pending_turns <= 4096,
            fmt::format("max_pending_turns must be 1 to 4096, got {}", max_pending_turns));
    turn_session.validate();
  }
}

void StreamConfig::validate() const {
  require(sample_rate_hz >= kMinSampleRateHz && sample_rate_hz <= kMaxSampleRateHz,
          fmt::format("sample_rate_hz must be {} to {}, got {}", kMinSampleRateHz, kMaxSampleRateHz,
                      sample_rate_hz));
  require(model_rate_hz == 0 || model_rate_hz == 8000 || model_rate_hz == 16000,
          fmt::format("model_rate_hz must be 0 (auto), 8000 or 16000, got {}", model_rate_hz));
  require(buffer_ms >= 64 && buffer_ms <= 60'000, fmt::format("buffer_ms must be 64 to 60000, got {}", buffer_ms));
  vad.validate();
  if (detect_turns) turn.validate();
}

}  // namespace brisvox
