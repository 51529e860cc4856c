// A session's bounded channel for variable-size results (a speech segment's audio, a transcript's
// text, synthesised audio), beside its fixed-size event ring: the session's worker writes, its
// reader reads. Single producer, single consumer, preallocated, no allocation per payload.
//
// Records are [id u32][size u32][bytes] in one byte ring; a payload is written whole or not at all
// (the reader never sees half of one), and ids grow by one per payload of the stream. The event
// announcing a payload is emitted after the payload is written, so a reader that sees the event
// finds its payload. A payload that does not fit is not written: the writer marks its event
// PayloadStatus::kDropped and counts it (never a silent loss).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/sync/spsc_ring.h"

namespace brisvox::engine {

class PayloadChannel {
 public:
  static constexpr std::size_t kHeaderBytes = 8;

  // Holds at least `capacity_bytes` of payload plus one record header (rounded up to a power of two).
  explicit PayloadChannel(std::size_t capacity_bytes);

  // Producer: the payload `id` (the previous id + 1), in up to two pieces. False when it does not
  // fit now (nothing written).
  bool write(std::uint32_t id, std::span<const std::byte> a, std::span<const std::byte> b = {}) noexcept;
  // Largest payload the channel could ever hold.
  std::size_t max_payload_bytes() const noexcept { return ring_.capacity() - kHeaderBytes; }

  // Consumer: copies payload `id` into `out` and removes it; returns its size. Older payloads are
  // removed and counted in `skipped` first. 0 when payload `id` is not there (already read, or
  // skipped, or never written), or when `out` is smaller than it (then it stays).
  std::size_t read(std::uint32_t id, std::span<std::byte> out, std::uint64_t& skipped) noexcept;
  // Consumer: removes payload `id` unread (older ones are skipped first, counted in `skipped`);
  // false when it is not there.
  bool discard(std::uint32_t id, std::uint64_t& skipped) noexcept;
  // Consumer: the size of payload `id` if it is the next one waiting (after skipping older ones,
  // counted in `skipped`), else 0.
  std::size_t size_of(std::uint32_t id, std::uint64_t& skipped) noexcept;

  // Payloads written and not yet read or skipped (either side; exact once the other has stopped).
  std::uint64_t waiting() const noexcept {
    return written_.load(std::memory_order_acquire) - taken_.load(std::memory_order_acquire);
  }

 private:
  // Consumer: skips records older than `id`; true when `id` is next, with its size.
  bool seek(std::uint32_t id, std::uint32_t& size, std::uint64_t& skipped) noexcept;

  SpscRing<std::byte> ring_;
  std::atomic<std::uint64_t> written_{0};  // producer
  std::atomic<std::uint64_t> taken_{0};    // consumer
};

}  // namespace brisvox::engine
