// The engine's one clock: steady time in nanoseconds, for queue delays, deadlines and latencies.
#pragma once

#include <chrono>
#include <cstdint>

namespace brisvox::engine {

using Clock = std::chrono::steady_clock;

inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

}  // namespace brisvox::engine
