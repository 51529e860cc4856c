#include "engine/pool/pool_counters.h"

#include <algorithm>

namespace brisvox::engine {

void PoolCounters::add_to(ModelStats& into) const {
  into.runs += runs.load(std::memory_order_relaxed);
  into.items += items.load(std::memory_order_relaxed);
  into.run_errors += run_errors.load(std::memory_order_relaxed);
  into.run_timeouts += run_timeouts.load(std::memory_order_relaxed);
  into.jobs_moved += jobs_moved.load(std::memory_order_relaxed);
  for (std::size_t b = 0; b < into.batch_size_counts.size() && b < batch_sizes.size(); ++b) {
    into.batch_size_counts[b] += batch_sizes[b].load(std::memory_order_relaxed);
  }
  into.queue_delay.merge(queue_delay);
  into.inference.merge(inference);
  into.latency.merge(latency);
}

void DelayWindow::roll(std::int64_t now_ns, PoolCounters& counters) noexcept {
  constexpr std::int64_t kWindowNs = 1'000'000'000;
  if (start_ns_ == 0) start_ns_ = now_ns;
  if (now_ns - start_ns_ < kWindowNs) return;
  counters.recent_p99_queue_delay_us.store(histogram_.p99_us(), std::memory_order_relaxed);
  counters.window_end_ns.store(now_ns, std::memory_order_relaxed);
  histogram_.reset();
  start_ns_ = now_ns;
}

}  // namespace brisvox::engine
