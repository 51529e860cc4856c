#include "audio/ogg_end.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <vector>

namespace brisvox::audio {
namespace {

constexpr std::size_t kHeaderBytes = 27;             // "OggS" ... page_segments
constexpr std::size_t kMaxPageBytes = 27 + 255 + 255 * 255;
constexpr std::uint8_t kEndOfStream = 0x04;

// Ogg's CRC-32: polynomial 0x04c11db7, no reflection, initial value 0, no final xor.
std::uint32_t ogg_crc(const std::uint8_t* data, std::size_t size) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t r = i << 24;
      for (int k = 0; k < 8; ++k) r = (r & 0x80000000u) ? (r << 1) ^ 0x04c11db7u : r << 1;
      t[i] = r;
    }
    return t;
  }();
  std::uint32_t crc = 0;
  for (std::size_t i = 0; i < size; ++i) crc = (crc << 8) ^ table[((crc >> 24) ^ data[i]) & 0xff];
  return crc;
}

// The size of the page starting at `p` (within `end`), or 0 when it is not a complete page with
// a right CRC.
std::size_t complete_page(const std::uint8_t* p, const std::uint8_t* end) {
  if (end - p < static_cast<std::ptrdiff_t>(kHeaderBytes) || std::memcmp(p, "OggS", 4) != 0 || p[4] != 0) return 0;
  const std::size_t segments = p[26];
  if (static_cast<std::size_t>(end - p) < kHeaderBytes + segments) return 0;
  std::size_t size = kHeaderBytes + segments;
  for (std::size_t i = 0; i < segments; ++i) size += p[kHeaderBytes + i];
  if (static_cast<std::size_t>(end - p) < size) return 0;
  std::vector<std::uint8_t> page(p, p + size);
  const std::uint32_t stored = static_cast<std::uint32_t>(p[22]) | static_cast<std::uint32_t>(p[23]) << 8 |
                               static_cast<std::uint32_t>(p[24]) << 16 | static_cast<std::uint32_t>(p[25]) << 24;
  std::memset(page.data() + 22, 0, 4);
  return ogg_crc(page.data(), size) == stored ? size : 0;
}

}  // namespace

std::optional<std::string> ogg_end_problem(const ReadExactly& read_at, std::uint64_t size) {
  const std::size_t window = static_cast<std::size_t>(std::min<std::uint64_t>(size, 2 * kMaxPageBytes));
  std::vector<std::uint8_t> tail(window);
  if (window == 0 || !read_at(size - window, tail.data(), window)) return "its end cannot be read";
  const std::uint8_t* begin = tail.data();
  const std::uint8_t* end = begin + window;
  // The last complete page: the latest capture pattern that starts one.
  for (const std::uint8_t* p = end - 4; p >= begin; --p) {
    if (std::memcmp(p, "OggS", 4) != 0) continue;
    const std::size_t page = complete_page(p, end);
    if (page == 0) continue;
    if (p + page != end) {
      return fmt::format("its last {} bytes are not a complete Ogg page (the file is cut short)",
                         static_cast<std::size_t>(end - (p + page)));
    }
    if ((p[5] & kEndOfStream) == 0) return "its last Ogg page does not end the stream (the file is cut short)";
    return std::nullopt;
  }
  return fmt::format("no complete Ogg page in its last {} bytes", window);
}

}  // namespace brisvox::audio
