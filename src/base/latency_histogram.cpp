#include "brisvox/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace brisvox {
namespace {

constexpr double kGrowth = 1.02;
const double kLogGrowth = std::log(kGrowth);

void raise_to(std::atomic<std::uint64_t>& max, std::uint64_t value) noexcept {
  std::uint64_t prev = max.load(std::memory_order_relaxed);
  while (value > prev && !max.compare_exchange_weak(prev, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

std::size_t LatencyHistogram::bucket_of(double value_us) noexcept {
  if (!(value_us > 1.0)) return 0;  // also NaN
  const auto b = static_cast<std::size_t>(std::ceil(std::log(value_us) / kLogGrowth));
  return std::min(b, kNumBuckets - 1);
}

double LatencyHistogram::upper_bound_us(std::size_t bucket) noexcept {
  return std::pow(kGrowth, static_cast<double>(bucket));
}

LatencyHistogram::LatencyHistogram(const LatencyHistogram& other) noexcept { merge(other); }

LatencyHistogram& LatencyHistogram::operator=(const LatencyHistogram& other) noexcept {
  if (this != &other) {
    reset();
    merge(other);
  }
  return *this;
}

void LatencyHistogram::record(double value_us) noexcept {
  counts_[bucket_of(value_us)].fetch_add(1, std::memory_order_relaxed);
  const auto ns = static_cast<std::uint64_t>(std::max(0.0, value_us) * 1000.0);  // NaN: 0
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  raise_to(max_ns_, ns);
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  for (std::size_t i = 0; i < kNumBuckets; ++i) {
    const std::uint64_t c = other.counts_[i].load(std::memory_order_relaxed);
    if (c != 0) counts_[i].fetch_add(c, std::memory_order_relaxed);
  }
  sum_ns_.fetch_add(other.sum_ns_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  raise_to(max_ns_, other.max_ns_.load(std::memory_order_relaxed));
}

void LatencyHistogram::reset() noexcept {
  for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
  sum_ns_.store(0, std::memory_order_relaxed);
  max_ns_.store(0, std::memory_order_relaxed);
}

std::uint64_t LatencyHistogram::count() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : counts_) n += c.load(std::memory_order_relaxed);
  return n;
}

double LatencyHistogram::sum_us() const noexcept {
  return static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1000.0;
}

double LatencyHistogram::mean_us() const noexcept {
  const std::uint64_t n = count();
  return n == 0 ? 0.0 : sum_us() / static_cast<double>(n);
}

double LatencyHistogram::max_us() const noexcept {
  return static_cast<double>(max_ns_.load(std::memory_order_relaxed)) / 1000.0;
}

double LatencyHistogram::quantile_us(double q) const noexcept {
  const std::uint64_t total = count();
  if (total == 0) return 0.0;
  const double target = q * static_cast<double>(total);
  double seen = 0;
  for (std::size_t i = 0; i < kNumBuckets; ++i) {
    const auto c = static_cast<double>(counts_[i].load(std::memory_order_relaxed));
    if (c == 0) continue;
    if (seen + c >= target) {
      const double lo = i == 0 ? 0.0 : upper_bound_us(i - 1);
      const double hi = upper_bound_us(i);
      return std::min(lo + (hi - lo) * (target - seen) / c, max_us());
    }
    seen += c;
  }
  return max_us();
}

std::uint64_t LatencyHistogram::count_at_most(double bound_us) const noexcept {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < kNumBuckets && upper_bound_us(i) <= bound_us * 1.0000001; ++i) {
    n += counts_[i].load(std::memory_order_relaxed);
  }
  return n;
}

}  // namespace brisvox
