// Engine-wide stream figures the stages update: what became of closed streams' input, overload
// events, dropped payloads. Relaxed atomics, written rarely (a stream closing, an overload episode),
// read by Engine::stats().
#pragma once

#include <atomic>
#include <cstdint>

namespace brisvox::engine {

struct StreamTotals {
  // Of closed streams (input_tally.h), in input-rate samples.
  std::atomic<std::uint64_t> samples_analysed{0};
  std::atomic<std::uint64_t> samples_failed{0};
  std::atomic<std::uint64_t> samples_discarded{0};
  // The per-stream counters of closed streams, so that the engine's totals never go down.
  std::atomic<std::uint64_t> samples_rejected{0};
  std::atomic<std::uint64_t> events_dropped{0};
  std::atomic<std::uint64_t> payloads_dropped{0};
  std::atomic<std::uint64_t> payloads_unread{0};
  std::atomic<std::uint64_t> overload_events{0};
};

}  // namespace brisvox::engine
