#include "engine/output/payload_channel.h"

#include <array>
#include <cstring>

namespace brisvox::engine {
namespace {

std::array<std::byte, PayloadChannel::kHeaderBytes> header(std::uint32_t id, std::uint32_t size) noexcept {
  std::array<std::byte, PayloadChannel::kHeaderBytes> h{};
  std::memcpy(h.data(), &id, 4);
  std::memcpy(h.data() + 4, &size, 4);
  return h;
}

}  // namespace

PayloadChannel::PayloadChannel(std::size_t capacity_bytes)
    : ring_(ring_capacity_for(capacity_bytes + kHeaderBytes, 64)) {}

bool PayloadChannel::write(std::uint32_t id, std::span<const std::byte> a, std::span<const std::byte> b) noexcept {
  const std::size_t size = a.size() + b.size();
  if (size > max_payload_bytes()) return false;
  const auto h = header(id, static_cast<std::uint32_t>(size));
  const std::array<std::span<const std::byte>, 3> parts{std::span<const std::byte>(h), a, b};
  if (!ring_.write_all(parts)) return false;
  written_.fetch_add(1, std::memory_order_release);
  return true;
}

bool PayloadChannel::seek(std::uint32_t id, std::uint32_t& size, std::uint64_t& skipped) noexcept {
  while (ring_.size() >= kHeaderBytes) {
    std::array<std::byte, kHeaderBytes> h{};
    ring_.peek(h);
    std::uint32_t record_id = 0;
    std::memcpy(&record_id, h.data(), 4);
    std::memcpy(&size, h.data() + 4, 4);
    if (record_id == id) return true;
    if (record_id > id) return false;  // `id` was read or skipped already
    ring_.consume(kHeaderBytes + size);
    taken_.fetch_add(1, std::memory_order_release);
    ++skipped;
  }
  return false;
}

std::size_t PayloadChannel::size_of(std::uint32_t id, std::uint64_t& skipped) noexcept {
  std::uint32_t size = 0;
  return seek(id, size, skipped) ? size : 0;
}

bool PayloadChannel::discard(std::uint32_t id, std::uint64_t& skipped) noexcept {
  std::uint32_t size = 0;
  if (!seek(id, size, skipped)) return false;
  ring_.consume(kHeaderBytes + size);
  taken_.fetch_add(1, std::memory_order_release);
  return true;
}

std::size_t PayloadChannel::read(std::uint32_t id, std::span<std::byte> out, std::uint64_t& skipped) noexcept {
  std::uint32_t size = 0;
  if (!seek(id, size, skipped) || out.size() < size) return 0;
  ring_.peek(out.first(size), kHeaderBytes);
  ring_.consume(kHeaderBytes + size);
  taken_.fetch_add(1, std::memory_order_release);
  return size;
}

}  // namespace brisvox::engine
