#include "audio/flac_end.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace brisvox::audio {
namespace {

constexpr std::size_t kStreamInfoEnd = 4 + 4 + 34;  // "fLaC", the block header, STREAMINFO
constexpr std::size_t kMinWindow = 64 << 10;
constexpr std::size_t kMaxWindow = 1 << 20;
// Headers that pass their CRC-8 but not the frame's CRC-16 before the search gives up: each costs
// a CRC over the rest of the window, and a crafted tail could be all such headers.
constexpr int kMaxCandidates = 16;

std::uint8_t crc8(const std::uint8_t* data, std::size_t size) {  // x^8 + x^2 + x + 1, initial 0
  std::uint8_t crc = 0;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = static_cast<std::uint8_t>((crc & 0x80) ? (crc << 1) ^ 0x07 : crc << 1);
  }
  return crc;
}

std::uint16_t crc16(const std::uint8_t* data, std::size_t size) {  // x^16 + x^15 + x^2 + 1, initial 0
  static const std::array<std::uint16_t, 256> table = [] {
    std::array<std::uint16_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t r = i << 8;
      for (int k = 0; k < 8; ++k) r = (r & 0x8000u) ? (r << 1) ^ 0x8005u : r << 1;
      t[i] = static_cast<std::uint16_t>(r);
    }
    return t;
  }();
  std::uint16_t crc = 0;
  for (std::size_t i = 0; i < size; ++i) {
    crc = static_cast<std::uint16_t>((crc << 8) ^ table[((crc >> 8) ^ data[i]) & 0xff]);
  }
  return crc;
}

struct FrameHeader {
  bool variable = false;     // the number is the first sample's, not the frame's
  std::uint64_t number = 0;  // frame number (fixed block size) or sample number (variable)
  std::uint32_t block_size = 0;
  std::size_t bytes = 0;  // with its CRC-8
};

// The frame header at `p` (RFC 9639, 9.1), if one is there with its CRC-8 right.
std::optional<FrameHeader> frame_header(const std::uint8_t* p, const std::uint8_t* end) {
  if (end - p < 6 || p[0] != 0xFF || (p[1] & 0xFE) != 0xF8) return std::nullopt;
  FrameHeader h;
  h.variable = (p[1] & 1) != 0;
  const unsigned size_bits = p[2] >> 4;
  const unsigned rate_bits = p[2] & 0x0F;
  const unsigned channel_bits = p[3] >> 4;
  const unsigned depth_bits = (p[3] >> 1) & 7;
  if (size_bits == 0 || rate_bits == 0x0F || channel_bits > 0x0A || depth_bits == 3 || (p[3] & 1) != 0) {
    return std::nullopt;
  }
  const std::uint8_t* q = p + 4;
  // The coded number, UTF-8 style: 1 to 6 bytes for a frame number (31 bits), 7 for a sample number.
  const std::uint8_t first = *q;
  int length = 0;
  std::uint64_t value = 0;
  if (first < 0x80) {
    length = 1, value = first;
  } else if ((first & 0xE0) == 0xC0) {
    length = 2, value = first & 0x1F;
  } else if ((first & 0xF0) == 0xE0) {
    length = 3, value = first & 0x0F;
  } else if ((first & 0xF8) == 0xF0) {
    length = 4, value = first & 0x07;
  } else if ((first & 0xFC) == 0xF8) {
    length = 5, value = first & 0x03;
  } else if ((first & 0xFE) == 0xFC) {
    length = 6, value = first & 0x01;
  } else if (first == 0xFE) {
    length = 7, value = 0;
  } else {
    return std::nullopt;
  }
  if (length == 7 && !h.variable) return std::nullopt;
  if (end - q < length + 1) return std::nullopt;
  for (int i = 1; i < length; ++i) {
    if ((q[i] & 0xC0) != 0x80) return std::nullopt;
    value = value << 6 | (q[i] & 0x3F);
  }
  h.number = value;
  q += length;
  const std::ptrdiff_t extra = (size_bits == 6 ? 1 : size_bits == 7 ? 2 : 0) +
                               (rate_bits == 0x0C ? 1 : rate_bits == 0x0D || rate_bits == 0x0E ? 2 : 0);
  if (end - q < extra + 1) return std::nullopt;
  if (size_bits == 1) {
    h.block_size = 192;
  } else if (size_bits <= 5) {
    h.block_size = 144u << size_bits;
  } else if (size_bits == 6) {
    h.block_size = q[0] + 1u;
  } else if (size_bits == 7) {
    h.block_size = (static_cast<std::uint32_t>(q[0]) << 8 | q[1]) + 1u;
  } else {
    h.block_size = 1u << size_bits;
  }
  q += extra;
  if (crc8(p, static_cast<std::size_t>(q - p)) != *q) return std::nullopt;
  h.bytes = static_cast<std::size_t>(q - p) + 1;
  return h;
}

}  // namespace

std::optional<std::uint64_t> flac_end_sample(const ReadExactly& read_at, std::uint64_t size) {
  if (size <= kStreamInfoEnd) return std::nullopt;
  std::array<std::uint8_t, kStreamInfoEnd> head{};
  if (!read_at(0, head.data(), head.size()) || std::memcmp(head.data(), "fLaC", 4) != 0) return std::nullopt;
  if ((head[4] & 0x7F) != 0) return std::nullopt;  // the first block must be the STREAMINFO
  const std::uint32_t min_block = static_cast<std::uint32_t>(head[8]) << 8 | head[9];
  const std::uint32_t max_block = static_cast<std::uint32_t>(head[10]) << 8 | head[11];
  const std::uint32_t max_frame = static_cast<std::uint32_t>(head[15]) << 16 | head[16] << 8 | head[17];

  const std::size_t wanted = std::clamp<std::size_t>(std::size_t{max_frame} + 64, kMinWindow, kMaxWindow);
  const auto window = static_cast<std::size_t>(std::min<std::uint64_t>(size - kStreamInfoEnd, wanted));
  if (window < 16) return std::nullopt;
  std::vector<std::uint8_t> tail(window);
  if (!read_at(size - window, tail.data(), window)) return std::nullopt;
  const std::uint8_t* begin = tail.data();
  const std::uint8_t* end = begin + window;
  const std::uint16_t stored_crc = static_cast<std::uint16_t>(end[-2] << 8 | end[-1]);
  int candidates = 0;
  // The last frame is the one that ends where the input ends: the latest header whose frame, up
  // to the input's last two bytes, has those bytes as its CRC-16.
  for (const std::uint8_t* p = end - 8; p >= begin; --p) {
    if (p[0] != 0xFF) continue;
    const std::optional<FrameHeader> h = frame_header(p, end);
    if (!h || static_cast<std::size_t>(end - p) < h->bytes + 3) continue;
    if (crc16(p, static_cast<std::size_t>(end - p) - 2) != stored_crc) {
      if (++candidates == kMaxCandidates) return std::nullopt;
      continue;
    }
    if (h->variable) return h->number + h->block_size;
    // A fixed-block-size stream numbers its frames; every frame before the last has the block
    // size STREAMINFO gives (as both its smallest and largest).
    if (min_block != max_block || max_block < 16) return std::nullopt;
    return h->number * max_block + h->block_size;
  }
  return std::nullopt;
}

}  // namespace brisvox::audio
