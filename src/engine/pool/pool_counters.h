// The statistics one pool worker keeps about its model runs, written by that worker with relaxed
// atomics and read by Engine::stats() from any thread; and the admission-control window (queue
// delay p99 over the last second).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "brisvox/engine/engine_stats.h"
#include "brisvox/latency_histogram.h"

namespace brisvox::engine {

struct PoolCounters {
  explicit PoolCounters(int max_batch) : batch_sizes(static_cast<std::size_t>(max_batch) + 1) {}

  std::atomic<std::uint64_t> runs{0};
  std::atomic<std::uint64_t> items{0};
  std::atomic<std::uint64_t> run_errors{0};
  std::atomic<std::uint64_t> run_timeouts{0};  // runs the watchdog cancelled (also in run_errors)
  std::atomic<std::uint64_t> jobs_moved{0};    // jobs another worker took from this one's queue
  std::vector<std::atomic<std::uint64_t>> batch_sizes;  // [b], b = 1..max_batch
  LatencyHistogram queue_delay;
  LatencyHistogram inference;
  LatencyHistogram latency;
  // p99 queue delay over the last full second, and when it was measured (stale values are ignored).
  std::atomic<double> recent_p99_queue_delay_us{0.0};
  std::atomic<std::int64_t> window_end_ns{0};

  // Adds this worker's figures into `into` (its batch_size_counts already sized).
  void add_to(ModelStats& into) const;
};

// The one-second queue-delay window of a worker (worker thread only).
class DelayWindow {
 public:
  void record(double delay_us) noexcept { histogram_.record(delay_us); }
  // Publishes the window's p99 into `counters` once a second has passed since it began.
  void roll(std::int64_t now_ns, PoolCounters& counters) noexcept;

 private:
  LatencyHistogram histogram_;
  std::int64_t start_ns_ = 0;
};

}  // namespace brisvox::engine
