#include "audio/container_format.h"

#include <algorithm>
#include <cstring>

namespace brisvox::audio {
namespace {

bool is_mpeg_frame_sync(const unsigned char* b) {
  // 11 sync bits, then a layer other than the reserved 00.
  return b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && ((b[1] >> 1) & 0x03) != 0;
}

// The bytes an ID3v2 tag at the start takes (header, body and footer), or 0 if there is none.
std::uint64_t id3v2_size(const unsigned char* b) {
  if (std::memcmp(b, "ID3", 3) != 0) return 0;
  // The size is "syncsafe": four bytes of seven bits each.
  if ((b[6] | b[7] | b[8] | b[9]) & 0x80) return 0;
  const std::uint64_t body = (static_cast<std::uint64_t>(b[6]) << 21) | (static_cast<std::uint64_t>(b[7]) << 14) |
                             (static_cast<std::uint64_t>(b[8]) << 7) | static_cast<std::uint64_t>(b[9]);
  const bool footer = (b[5] & 0x10) != 0;
  return 10 + body + (footer ? 10 : 0);
}

}  // namespace

std::optional<Container> sniff_container(const ReadExactly& read_at, std::uint64_t input_size) {
  unsigned char b[12] = {};
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof b, input_size));
  if (n < 4 || !read_at(0, b, n)) return std::nullopt;
  if (n >= 12 && std::memcmp(b + 8, "WAVE", 4) == 0) {
    if (std::memcmp(b, "RIFF", 4) == 0) return Container::kWav;
    if (std::memcmp(b, "RF64", 4) == 0) return Container::kRf64;
    return std::nullopt;  // RIFX (big-endian WAV) and the like: rare, and not walked by riff_wave
  }
  if (n >= 12 && std::memcmp(b, "FORM", 4) == 0 &&
      (std::memcmp(b + 8, "AIFF", 4) == 0 || std::memcmp(b + 8, "AIFC", 4) == 0)) {
    return Container::kAiff;
  }
  if (std::memcmp(b, ".snd", 4) == 0 || std::memcmp(b, "dns.", 4) == 0) return Container::kAu;
  if (std::memcmp(b, "fLaC", 4) == 0) return Container::kFlac;
  if (std::memcmp(b, "OggS", 4) == 0) return Container::kOgg;
  if (is_mpeg_frame_sync(b)) return Container::kMp3;
  // libsndfile skips an ID3v2 tag and looks again: only MP3 or FLAC may follow it here.
  if (n >= 10) {
    const std::uint64_t tag = id3v2_size(b);
    unsigned char after[4];
    if (tag > 0 && tag + sizeof after <= input_size && read_at(tag, after, sizeof after)) {
      if (std::memcmp(after, "fLaC", 4) == 0) return Container::kFlac;
      if (is_mpeg_frame_sync(after)) return Container::kMp3;
    }
  }
  return std::nullopt;
}

}  // namespace brisvox::audio
