#include "brisvox/audio/pcm.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "brisvox/error.h"

namespace brisvox {
namespace {

constexpr float kInt16Scale = 1.0f / 32768.0f;

// ITU-T G.711 mu-law expansion: complement the code, rebuild the biased magnitude from the
// 4-bit mantissa and 3-bit segment, remove the bias of 0x84 (132).
constexpr std::int16_t expand_mulaw(std::uint8_t code) {
  const int u = static_cast<std::uint8_t>(~code);
  const int segment = (u >> 4) & 0x7;
  const int magnitude = ((((u & 0x0F) << 3) + 0x84) << segment) - 0x84;
  return static_cast<std::int16_t>((u & 0x80) ? -magnitude : magnitude);
}

// ITU-T G.711 A-law expansion: even bits are inverted on the wire (XOR 0x55); segment 0 is linear,
// later segments double the step; the value is the midpoint of its quantisation interval; the
// sign bit set means positive.
constexpr std::int16_t expand_alaw(std::uint8_t code) {
  const int a = code ^ 0x55;
  const int segment = (a >> 4) & 0x7;
  int magnitude = (a & 0x0F) << 4;
  if (segment == 0) {
    magnitude += 8;
  } else {
    magnitude = (magnitude + 0x108) << (segment - 1);
  }
  return static_cast<std::int16_t>((a & 0x80) ? magnitude : -magnitude);
}

template <std::int16_t (*Expand)(std::uint8_t)>
constexpr std::array<float, 256> make_float_table() {
  std::array<float, 256> table{};
  for (int i = 0; i < 256; ++i) table[i] = Expand(static_cast<std::uint8_t>(i)) * kInt16Scale;
  return table;
}

constexpr std::array<float, 256> kMulawTable = make_float_table<expand_mulaw>();
constexpr std::array<float, 256> kAlawTable = make_float_table<expand_alaw>();

// Known values from G.711 (in 16-bit units): checked at compile time.
static_assert(expand_mulaw(0xFF) == 0 && expand_mulaw(0x7F) == 0);
static_assert(expand_mulaw(0x00) == -32124 && expand_mulaw(0x80) == 32124);
static_assert(expand_alaw(0xD5) == 8 && expand_alaw(0x55) == -8);
static_assert(expand_alaw(0xAA) == 32256 && expand_alaw(0x2A) == -32256);

float load_s16le(const std::byte* p) noexcept {
  const auto u = static_cast<std::uint16_t>(std::to_integer<unsigned>(p[0]) |
                                            (std::to_integer<unsigned>(p[1]) << 8));
  return static_cast<float>(static_cast<std::int16_t>(u)) * kInt16Scale;
}

float load_f32le(const std::byte* p) noexcept {
  const std::uint32_t u =
      std::to_integer<std::uint32_t>(p[0]) | (std::to_integer<std::uint32_t>(p[1]) << 8) |
      (std::to_integer<std::uint32_t>(p[2]) << 16) | (std::to_integer<std::uint32_t>(p[3]) << 24);
  return std::bit_cast<float>(u);
}

float decode_one(SampleEncoding encoding, const std::byte* p) noexcept {
  switch (encoding) {
    case SampleEncoding::kPcmS16le: return load_s16le(p);
    case SampleEncoding::kPcmF32le: return load_f32le(p);
    case SampleEncoding::kMulaw: return kMulawTable[std::to_integer<std::uint8_t>(p[0])];
    case SampleEncoding::kAlaw: return kAlawTable[std::to_integer<std::uint8_t>(p[0])];
  }
  return 0.0f;
}

[[noreturn]] void throw_non_finite(float value, std::uint64_t sample_index, int sample_rate_hz) {
  const char* what = std::isnan(value) ? "NaN" : (value > 0 ? "+Inf" : "-Inf");
  std::string when;
  if (sample_rate_hz > 0) {
    when = fmt::format(" at {:.6f} s", static_cast<double>(sample_index) / sample_rate_hz);
  }
  throw Error(ErrorCode::kBadAudio,
              fmt::format("pcm_f32le sample {}{} (byte offset {}) is {}: audio must be finite",
                          sample_index, when, sample_index * 4, what));
}

}  // namespace

SampleEncoding parse_encoding(std::string_view name) {
  for (auto e : {SampleEncoding::kPcmS16le, SampleEncoding::kPcmF32le, SampleEncoding::kMulaw,
                 SampleEncoding::kAlaw}) {
    if (name == to_string(e)) return e;
  }
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown sample encoding '{}': expected one of pcm_s16le, pcm_f32le, "
                          "mulaw, alaw",
                          name));
}

std::string_view to_string(SampleEncoding encoding) noexcept {
  switch (encoding) {
    case SampleEncoding::kPcmS16le: return "pcm_s16le";
    case SampleEncoding::kPcmF32le: return "pcm_f32le";
    case SampleEncoding::kMulaw: return "mulaw";
    case SampleEncoding::kAlaw: return "alaw";
  }
  return "unknown";
}

std::size_t bytes_per_sample(SampleEncoding encoding) noexcept {
  switch (encoding) {
    case SampleEncoding::kPcmS16le: return 2;
    case SampleEncoding::kPcmF32le: return 4;
    case SampleEncoding::kMulaw:
    case SampleEncoding::kAlaw: return 1;
  }
  return 1;
}

std::int16_t mulaw_to_linear(std::uint8_t code) noexcept { return expand_mulaw(code); }
std::int16_t alaw_to_linear(std::uint8_t code) noexcept { return expand_alaw(code); }

std::uint8_t linear_to_mulaw(std::int16_t sample) noexcept {
  int x = sample >> 2;  // mu-law works on 14-bit values
  int mask = 0xFF;      // the code is complemented; a positive one keeps its sign bit set
  if (x < 0) {
    x = -x;
    mask = 0x7F;
  }
  x = std::min(x, 8159) + 33;  // clip, then the bias (0x84 / 4)
  int segment = 0;
  for (int v = x >> 6; v != 0 && segment < 8; v >>= 1) ++segment;
  if (segment >= 8) return static_cast<std::uint8_t>(0x7F ^ mask);
  return static_cast<std::uint8_t>(((segment << 4) | ((x >> (segment + 1)) & 0x0F)) ^ mask);
}

std::uint8_t linear_to_alaw(std::int16_t sample) noexcept {
  int x = sample >> 3;  // A-law works on 13-bit magnitudes
  int mask = 0xD5;      // sign bit set (positive), with the even-bit inversion
  if (x < 0) {
    mask = 0x55;
    x = -x - 1;
  }
  int segment = 0;
  for (int v = x >> 5; v != 0 && segment < 8; v >>= 1) ++segment;
  if (segment >= 8) return static_cast<std::uint8_t>(0x7F ^ mask);
  const int mantissa = segment < 2 ? (x >> 1) & 0x0F : (x >> segment) & 0x0F;
  return static_cast<std::uint8_t>(((segment << 4) | mantissa) ^ mask);
}

std::int16_t float_to_s16(float sample) noexcept {
  if (std::isnan(sample)) return 0;
  return static_cast<std::int16_t>(std::clamp(sample * 32767.0f, -32767.0f, 32767.0f));
}

std::size_t encode_pcm(std::span<const float> samples, SampleEncoding encoding, std::span<std::byte> out) {
  const std::size_t size = bytes_per_sample(encoding);
  if (out.size() < samples.size() * size) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("encode_pcm: {} samples of {} need {} bytes, the output holds {}",
                                                         samples.size(), to_string(encoding), samples.size() * size,
                                                         out.size()));
  }
  std::byte* o = out.data();
  switch (encoding) {
    case SampleEncoding::kPcmS16le:
      for (const float x : samples) {
        const auto v = static_cast<std::uint16_t>(float_to_s16(x));
        *o++ = static_cast<std::byte>(v & 0xFF);
        *o++ = static_cast<std::byte>(v >> 8);
      }
      break;
    case SampleEncoding::kPcmF32le:
      for (const float x : samples) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &x, sizeof(bits));
        for (int b = 0; b < 4; ++b) *o++ = static_cast<std::byte>((bits >> (8 * b)) & 0xFF);
      }
      break;
    case SampleEncoding::kMulaw:
      for (const float x : samples) *o++ = static_cast<std::byte>(linear_to_mulaw(float_to_s16(x)));
      break;
    case SampleEncoding::kAlaw:
      for (const float x : samples) *o++ = static_cast<std::byte>(linear_to_alaw(float_to_s16(x)));
      break;
  }
  return samples.size() * size;
}

std::size_t PcmDecoder::max_samples_for(std::size_t num_bytes) const noexcept {
  const std::size_t size = bytes_per_sample(encoding_);
  return num_bytes / size + (num_bytes % size != 0 ? 1 : 0);
}

std::size_t PcmDecoder::decode(std::span<const std::byte> bytes, std::span<float> out) {
  if (out.size() < max_samples_for(bytes.size())) {
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("PcmDecoder::decode: output holds {} samples, {} bytes of {} need {}",
                    out.size(), bytes.size(), to_string(encoding_), max_samples_for(bytes.size())));
  }
  const std::size_t size = bytes_per_sample(encoding_);
  const bool check_finite = encoding_ == SampleEncoding::kPcmF32le;
  std::size_t num_written = 0;
  std::size_t pos = 0;

  // Complete a sample split across calls. The pending bytes are only committed at the end, so a
  // throw leaves the decoder as it was.
  std::byte first[4];
  if (const std::size_t num_pending = num_pending_bytes_; num_pending > 0) {
    const std::size_t take = std::min(size - num_pending, bytes.size());
    std::memcpy(first, pending_, num_pending);
    // memcpy needs valid pointers even for 0 bytes, and an empty span's data() may be null.
    if (take > 0) std::memcpy(first + num_pending, bytes.data(), take);
    pos = take;
    if (num_pending + take < size) {
      std::memcpy(pending_, first, num_pending + take);
      num_pending_bytes_ = num_pending + take;
      return 0;
    }
    const float value = decode_one(encoding_, first);
    if (check_finite && !std::isfinite(value)) {
      throw_non_finite(value, num_samples_decoded_, sample_rate_hz_);
    }
    out[num_written++] = value;
  }

  const std::byte* p = bytes.data() + pos;
  const std::size_t num_whole = (bytes.size() - pos) / size;
  switch (encoding_) {
    case SampleEncoding::kPcmS16le:
      for (std::size_t i = 0; i < num_whole; ++i) out[num_written++] = load_s16le(p + 2 * i);
      break;
    case SampleEncoding::kPcmF32le:
      for (std::size_t i = 0; i < num_whole; ++i) {
        const float value = load_f32le(p + 4 * i);
        if (!std::isfinite(value)) {
          throw_non_finite(value, num_samples_decoded_ + num_written, sample_rate_hz_);
        }
        out[num_written++] = value;
      }
      break;
    case SampleEncoding::kMulaw:
      for (std::size_t i = 0; i < num_whole; ++i) {
        out[num_written++] = kMulawTable[std::to_integer<std::uint8_t>(p[i])];
      }
      break;
    case SampleEncoding::kAlaw:
      for (std::size_t i = 0; i < num_whole; ++i) {
        out[num_written++] = kAlawTable[std::to_integer<std::uint8_t>(p[i])];
      }
      break;
  }
  pos += num_whole * size;

  const std::size_t num_tail = bytes.size() - pos;
  if (num_tail > 0) std::memcpy(pending_, bytes.data() + pos, num_tail);
  num_pending_bytes_ = num_tail;
  num_samples_decoded_ += num_written;
  return num_written;
}

void PcmDecoder::reset() noexcept {
  num_pending_bytes_ = 0;
  num_samples_decoded_ = 0;
}

std::vector<float> decode_pcm(std::span<const std::byte> bytes, SampleEncoding encoding) {
  const std::size_t size = bytes_per_sample(encoding);
  if (bytes.size() % size != 0) {
    const std::size_t offset = bytes.size() - bytes.size() % size;
    throw Error(ErrorCode::kBadAudio,
                fmt::format("{} bytes of {} are not a whole number of {}-byte samples: the last "
                            "sample, at byte offset {}, is incomplete",
                            bytes.size(), to_string(encoding), size, offset));
  }
  std::vector<float> samples(bytes.size() / size);
  PcmDecoder decoder(encoding);
  decoder.decode(bytes, samples);
  return samples;
}

}  // namespace brisvox
