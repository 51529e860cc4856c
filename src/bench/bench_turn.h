// `brisvox bench --turn-model v3.2|FILE`: the cost of one end-of-turn analysis (Smart Turn features +
// model, batch of one) at 1, 2 and 4 intra-op threads, as the engine's turn workers run it.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

namespace brisvox::bench {

// Runs `runs` analyses of 8 s turns cut from `audio` (16 kHz) per thread count. Returns
// {"path": resolved file, "threads": {"1": {"p50_ms", "p99_ms", "features_p50_ms", "model_p50_ms",
// "thread_cpu_p50_ms"}, ...}}. `turn_model`: "v3.2" or a file (resolve_turn_model).
nlohmann::ordered_json run_turn_phase(const std::string& turn_model, std::span<const float> audio, int runs);

}  // namespace brisvox::bench
