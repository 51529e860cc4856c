#include "engine/histogram.h"

#include <cmath>

namespace brisvox::engine {
namespace {

constexpr double kGrowth = 1.1;
const double kLogGrowth = std::log(kGrowth);

}  // namespace

double Histogram::upper_bound_us(std::size_t bucket) noexcept {
  return std::pow(kGrowth, static_cast<double>(bucket));
}

std::size_t Histogram::bucket_of(double value_us) noexcept {
  if (!(value_us > 1.0)) return 0;  // also NaN
  const auto b = static_cast<std::size_t>(std::ceil(std::log(value_us) / kLogGrowth));
  return b < kNumBuckets ? b : kNumBuckets - 1;
}

void Histogram::record(double value_us) noexcept {
  counts_[bucket_of(value_us)].fetch_add(1, std::memory_order_relaxed);
  const auto ns = static_cast<std::uint64_t>(std::max(0.0, value_us) * 1000.0);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  std::uint64_t prev = max_ns_.load(std::memory_order_relaxed);
  while (ns > prev && !max_ns_.compare_exchange_weak(prev, ns, std::memory_order_relaxed)) {
  }
}

void Histogram::reset() noexcept {
  for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
  sum_ns_.store(0, std::memory_order_relaxed);
  max_ns_.store(0, std::memory_order_relaxed);
}

void Histogram::add_to(std::array<std::uint64_t, kNumBuckets>& into, double& sum_us, double& max_us) const noexcept {
  for (std::size_t i = 0; i < kNumBuckets; ++i) into[i] += counts_[i].load(std::memory_order_relaxed);
  sum_us += static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1000.0;
  max_us = std::max(max_us, static_cast<double>(max_ns_.load(std::memory_order_relaxed)) / 1000.0);
}

double Histogram::quantile(const std::array<std::uint64_t, kNumBuckets>& counts, double q) noexcept {
  std::uint64_t total = 0;
  for (auto c : counts) total += c;
  if (total == 0) return 0.0;
  const double target = q * static_cast<double>(total);
  double seen = 0;
  for (std::size_t i = 0; i < kNumBuckets; ++i) {
    if (counts[i] == 0) continue;
    const double next = seen + static_cast<double>(counts[i]);
    if (next >= target) {
      const double lo = i == 0 ? 0.0 : upper_bound_us(i - 1);
      const double hi = upper_bound_us(i);
      const double frac = (target - seen) / static_cast<double>(counts[i]);
      return lo + (hi - lo) * frac;
    }
    seen = next;
  }
  return upper_bound_us(kNumBuckets - 1);
}

EngineStats::Distribution Histogram::summarize(const std::array<std::uint64_t, kNumBuckets>& counts,
                                               double sum_us, double max_us) {
  EngineStats::Distribution d;
  for (auto c : counts) d.count += c;
  d.sum_us = sum_us;
  d.max_us = max_us;
  d.mean_us = d.count ? sum_us / static_cast<double>(d.count) : 0.0;
  d.p50_us = std::min(quantile(counts, 0.5), max_us);
  d.p90_us = std::min(quantile(counts, 0.9), max_us);
  d.p99_us = std::min(quantile(counts, 0.99), max_us);
  d.p999_us = std::min(quantile(counts, 0.999), max_us);
  // Prometheus-style cumulative buckets at round bounds; a fine bucket counts toward a bound when
  // its upper edge is within it (so these are exact to 10 %).
  static constexpr double kBounds[] = {10,    25,    50,     100,    250,    500,     1000,    2500,
                                       5000,  10000, 25000,  50000,  100000, 250000,  500000,  1000000};
  std::size_t i = 0;
  std::uint64_t cumulative = 0;
  for (double bound : kBounds) {
    while (i < kNumBuckets && upper_bound_us(i) <= bound * 1.0000001) cumulative += counts[i++];
    d.buckets.emplace_back(bound, cumulative);
  }
  return d;
}

}  // namespace brisvox::engine
