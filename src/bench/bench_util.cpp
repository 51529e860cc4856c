// Shared pieces of `brisvox bench`: looped audio, the latency histogram, CPU and memory probes.
#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "brisvox/runtime/runtime_info.h"
#include "bench/bench_runner.h"

namespace brisvox::bench {
namespace {

constexpr double kGrowth = 1.02;
const double kLogGrowth = std::log(kGrowth);

std::size_t bucket_of(double value_us) noexcept {
  if (!(value_us > 1.0)) return 0;  // also NaN
  const auto b = static_cast<std::size_t>(std::ceil(std::log(value_us) / kLogGrowth));
  return std::min(b, LatencyHistogram::kNumBuckets - 1);
}

double upper_bound_us(std::size_t bucket) noexcept { return std::pow(kGrowth, static_cast<double>(bucket)); }

}  // namespace

LoopedAudio LoopedAudio::load(const std::string& path) {
  Audio audio = load_audio(path);
  LoopedAudio out;
  out.source = path;
  out.source_rate_hz = audio.sample_rate_hz;
  out.samples = audio.sample_rate_hz == 16000 ? std::move(audio.samples)
                                              : resample(audio.samples, audio.sample_rate_hz, 16000);
  out.length = out.samples.size();
  if (out.length < 512) {
    throw Error(ErrorCode::kBadAudio,
                fmt::format("'{}' holds {} samples at 16 kHz: the benchmark needs at least one 512-sample frame",
                            path, out.length));
  }
  // The tail repeats the start (as often as needed for a very short file).
  out.samples.reserve(out.length + kTailSamples);
  for (std::size_t i = 0; i < kTailSamples; ++i) out.samples.push_back(out.samples[i % out.length]);
  return out;
}

std::size_t LoopedAudio::offset_for(std::size_t index, std::size_t count) const noexcept {
  if (count == 0) return 0;
  return static_cast<std::size_t>(static_cast<double>(index) / static_cast<double>(count) *
                                  static_cast<double>(length)) % length;
}

void LatencyHistogram::record(double value_us) noexcept {
  counts_[bucket_of(value_us)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  const auto ns = static_cast<std::uint64_t>(std::max(0.0, value_us) * 1000.0);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  std::uint64_t prev = max_ns_.load(std::memory_order_relaxed);
  while (ns > prev && !max_ns_.compare_exchange_weak(prev, ns, std::memory_order_relaxed)) {
  }
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  for (std::size_t i = 0; i < kNumBuckets; ++i) {
    counts_[i].fetch_add(other.counts_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  count_.fetch_add(other.count(), std::memory_order_relaxed);
  sum_ns_.fetch_add(other.sum_ns_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  const std::uint64_t theirs = other.max_ns_.load(std::memory_order_relaxed);
  std::uint64_t prev = max_ns_.load(std::memory_order_relaxed);
  while (theirs > prev && !max_ns_.compare_exchange_weak(prev, theirs, std::memory_order_relaxed)) {
  }
}

double LatencyHistogram::mean_us() const noexcept {
  const std::uint64_t n = count();
  return n == 0 ? 0.0 : static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1000.0 / static_cast<double>(n);
}

double LatencyHistogram::max_us() const noexcept {
  return static_cast<double>(max_ns_.load(std::memory_order_relaxed)) / 1000.0;
}

double LatencyHistogram::quantile_us(double q) const noexcept {
  std::uint64_t total = 0;
  for (const auto& c : counts_) total += c.load(std::memory_order_relaxed);
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

Quantiles Quantiles::of(const LatencyHistogram& h) {
  Quantiles q;
  q.count = h.count();
  q.mean_us = h.mean_us();
  q.p50_us = h.quantile_us(0.5);
  q.p90_us = h.quantile_us(0.9);
  q.p99_us = h.quantile_us(0.99);
  q.p999_us = h.quantile_us(0.999);
  q.max_us = h.max_us();
  return q;
}

Quantiles Quantiles::of(const EngineStats::Distribution& d) {
  Quantiles q;
  q.count = d.count;
  q.mean_us = d.mean_us;
  q.p50_us = d.p50_us;
  q.p90_us = d.p90_us;
  q.p99_us = d.p99_us;
  q.p999_us = d.p999_us;
  q.max_us = d.max_us;
  return q;
}

double process_cpu_s() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

long resident_bytes() {
  malloc_trim(0);
  return process_rss_bytes();
}

}  // namespace brisvox::bench
