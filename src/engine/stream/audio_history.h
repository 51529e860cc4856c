// The last N samples of a stream's model-rate audio, kept by its VAD worker for the stages that
// look back: an end-of-turn analysis (the turn's last 8 s), a speech segment's audio. A ring: the
// oldest samples are overwritten. Worker thread only; no allocation after construction.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace brisvox::engine {

class AudioHistory {
 public:
  explicit AudioHistory(std::size_t capacity_samples) : ring_(std::max<std::size_t>(capacity_samples, 1), 0.0f) {}

  std::size_t capacity() const noexcept { return ring_.size(); }
  std::int64_t written() const noexcept { return written_; }  // samples appended so far
  // The first sample still held.
  std::int64_t oldest() const noexcept { return std::max<std::int64_t>(0, written_ - static_cast<std::int64_t>(ring_.size())); }

  void append(const float* samples, std::size_t n) noexcept {
    const std::size_t cap = ring_.size();
    for (std::size_t i = 0; i < n; ++i) ring_[static_cast<std::size_t>(written_ + static_cast<std::int64_t>(i)) % cap] = samples[i];
    written_ += static_cast<std::int64_t>(n);
  }

  // Samples [begin, end) of the stream, clamped to what is held, in order as up to two pieces.
  struct Range {
    std::int64_t begin = 0;  // after clamping
    std::int64_t end = 0;
    std::span<const float> first;
    std::span<const float> second;
  };
  Range range(std::int64_t begin, std::int64_t end) const noexcept {
    Range r;
    r.end = std::min(end, written_);
    r.begin = std::min(std::max(begin, oldest()), r.end);
    const std::size_t cap = ring_.size();
    const auto n = static_cast<std::size_t>(r.end - r.begin);
    const std::size_t start = static_cast<std::size_t>(r.begin) % cap;
    const std::size_t n_first = std::min(n, cap - start);
    r.first = std::span<const float>(ring_.data() + start, n_first);
    r.second = std::span<const float>(ring_.data(), n - n_first);
    return r;
  }

 private:
  std::vector<float> ring_;
  std::int64_t written_ = 0;
};

}  // namespace brisvox::engine
