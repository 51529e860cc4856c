// Single-producer single-consumer rings over preallocated storage: the per-stream sample buffer
// (caller thread -> worker), event queue and payload bytes (worker -> reader). Positions only grow (64-bit: no
// wrap in practice); the capacity is a power of two so an index is `position & mask`.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace brisvox::engine {

// Rounds up to a power of two, at least `minimum`.
inline std::size_t ring_capacity_for(std::size_t wanted, std::size_t minimum) {
  return std::bit_ceil(std::max(wanted, minimum));
}

template <typename T>
class SpscRing {
 public:
  explicit SpscRing(std::size_t capacity_pow2) : buffer_(capacity_pow2), mask_(capacity_pow2 - 1) {}

  std::size_t capacity() const noexcept { return buffer_.size(); }
  // Producer: total written so far (its own counter: relaxed read is exact).
  std::uint64_t written() const noexcept { return write_.load(std::memory_order_acquire); }
  std::uint64_t read_position() const noexcept { return read_.load(std::memory_order_acquire); }
  std::size_t size() const noexcept { return static_cast<std::size_t>(written() - read_position()); }
  std::size_t free_space() const noexcept { return capacity() - size(); }

  // Producer: appends as many as fit; returns how many.
  std::size_t write(std::span<const T> items) noexcept {
    const std::uint64_t w = write_.load(std::memory_order_relaxed);
    const std::uint64_t r = read_.load(std::memory_order_acquire);
    const std::size_t n = std::min(items.size(), capacity() - static_cast<std::size_t>(w - r));
    const std::size_t start = static_cast<std::size_t>(w) & mask_;
    const std::size_t first = std::min(n, capacity() - start);
    std::copy_n(items.data(), first, buffer_.data() + start);
    std::copy_n(items.data() + first, n - first, buffer_.data());
    write_.store(w + n, std::memory_order_release);
    return n;
  }

  // Producer: appends every part, or nothing when they do not fit together; the reader sees them
  // all at once (one release store).
  bool write_all(std::span<const std::span<const T>> parts) noexcept {
    const std::uint64_t w = write_.load(std::memory_order_relaxed);
    const std::uint64_t r = read_.load(std::memory_order_acquire);
    std::size_t total = 0;
    for (const auto& p : parts) total += p.size();
    if (total > capacity() - static_cast<std::size_t>(w - r)) return false;
    std::uint64_t at = w;
    for (const auto& p : parts) {
      const std::size_t start = static_cast<std::size_t>(at) & mask_;
      const std::size_t first = std::min(p.size(), capacity() - start);
      std::copy_n(p.data(), first, buffer_.data() + start);
      std::copy_n(p.data() + first, p.size() - first, buffer_.data());
      at += p.size();
    }
    write_.store(at, std::memory_order_release);
    return true;
  }

  // Consumer: copies `out.size()` items starting `offset` items after the read position without
  // consuming them; the caller must have checked size().
  void peek(std::span<T> out, std::size_t offset = 0) const noexcept {
    const std::size_t start = static_cast<std::size_t>(read_.load(std::memory_order_relaxed) + offset) & mask_;
    const std::size_t first = std::min(out.size(), capacity() - start);
    std::copy_n(buffer_.data() + start, first, out.data());
    std::copy_n(buffer_.data(), out.size() - first, out.data() + first);
  }

  // Consumer: drops `n` items (n <= size()).
  void consume(std::size_t n) noexcept { read_.fetch_add(n, std::memory_order_release); }

  // Consumer: moves up to out.size() items out; returns how many.
  std::size_t read(std::span<T> out) noexcept {
    const std::size_t n = std::min(out.size(), size());
    peek(out.first(n));
    consume(n);
    return n;
  }

  // Consumer: empties the ring (close without flush).
  void discard() noexcept { read_.store(write_.load(std::memory_order_acquire), std::memory_order_release); }

  // The atomic the consumer advances: producers waiting for room wait on it.
  const std::atomic<std::uint64_t>& read_counter() const noexcept { return read_; }
  const std::atomic<std::uint64_t>& write_counter() const noexcept { return write_; }
  std::atomic<std::uint64_t>& read_counter() noexcept { return read_; }
  std::atomic<std::uint64_t>& write_counter() noexcept { return write_; }

 private:
  std::vector<T> buffer_;
  std::size_t mask_;
  // Separate cache lines: the producer writes one, the consumer the other.
  alignas(64) std::atomic<std::uint64_t> write_{0};
  alignas(64) std::atomic<std::uint64_t> read_{0};
};

}  // namespace brisvox::engine
