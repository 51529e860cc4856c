// The one latency distribution of brisvox: the engine's per-model statistics, `brisvox bench` and
// `brisvox loadtest` all record into and report from this type.
//
// Geometric buckets 2 % wide from 1 us to about 400 s (1000 buckets, 8 KiB): a quantile is exact
// to within the width of its bucket (interpolated inside it, and never above the largest value
// recorded). record() is lock-free (relaxed atomic increments), so any number of threads may record
// into one histogram while others read it; a copy is a snapshot (not atomic as a whole: a record
// racing with the copy may be in some fields and not yet in others).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace brisvox {

class LatencyHistogram {
 public:
  static constexpr std::size_t kNumBuckets = 1000;

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram& other) noexcept;
  LatencyHistogram& operator=(const LatencyHistogram& other) noexcept;

  // Any thread. Values below 1 us count in the first bucket; NaN counts as 0.
  void record(double value_us) noexcept;
  // Adds `other`'s values into this one (summing over workers).
  void merge(const LatencyHistogram& other) noexcept;
  void reset() noexcept;

  std::uint64_t count() const noexcept;
  double sum_us() const noexcept;
  double mean_us() const noexcept;  // 0 when empty
  double max_us() const noexcept;
  // The value below which a fraction q (0..1) of the values fall; 0 when empty.
  double quantile_us(double q) const noexcept;
  double p50_us() const noexcept { return quantile_us(0.5); }
  double p90_us() const noexcept { return quantile_us(0.9); }
  double p99_us() const noexcept { return quantile_us(0.99); }
  double p999_us() const noexcept { return quantile_us(0.999); }
  // Values at most `bound_us`, for Prometheus' cumulative buckets: a bucket counts when its upper
  // edge is within the bound, so the figure is exact to the bucket width (2 %).
  std::uint64_t count_at_most(double bound_us) const noexcept;

 private:
  static std::size_t bucket_of(double value_us) noexcept;
  static double upper_bound_us(std::size_t bucket) noexcept;

  std::array<std::atomic<std::uint64_t>, kNumBuckets> counts_{};
  std::atomic<std::uint64_t> sum_ns_{0};
  std::atomic<std::uint64_t> max_ns_{0};
};

}  // namespace brisvox
