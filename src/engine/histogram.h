// A lock-free latency histogram: geometric buckets (10 % wide) from 1 us to ~100 s, updated with
// relaxed atomic increments by one worker and read by anyone. Percentiles come from the buckets,
// so they are exact to within the bucket width (10 %).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "brisvox/engine/engine.h"

namespace brisvox::engine {

class Histogram {
 public:
  static constexpr std::size_t kNumBuckets = 200;

  void record(double value_us) noexcept;
  void reset() noexcept;
  // Adds this histogram's counts into `into` (for summing over workers).
  void add_to(std::array<std::uint64_t, kNumBuckets>& into, double& sum_us, double& max_us) const noexcept;

  // The value below which a fraction q of the recorded values fall (bucket upper bound,
  // interpolated within the bucket); 0 when empty.
  static double quantile(const std::array<std::uint64_t, kNumBuckets>& counts, double q) noexcept;
  static EngineStats::Distribution summarize(const std::array<std::uint64_t, kNumBuckets>& counts,
                                             double sum_us, double max_us);
  static double upper_bound_us(std::size_t bucket) noexcept;

 private:
  static std::size_t bucket_of(double value_us) noexcept;
  std::array<std::atomic<std::uint64_t>, kNumBuckets> counts_{};
  std::atomic<std::uint64_t> sum_ns_{0};
  std::atomic<std::uint64_t> max_ns_{0};
};

}  // namespace brisvox::engine
