// Headerless PCM sample encodings and a streaming decoder to float.
//
// Every decoder output is a float sample in the scale of 16-bit audio divided by 32768: integer
// and G.711 encodings land in [-1, 1); pcm_f32le samples are passed through unchanged (not
// clipped), but NaN and +-Inf are rejected because every model downstream would turn them into
// garbage without saying why.
//
// Byte order is little-endian for the multi-byte encodings regardless of the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace brisvox {

enum class SampleEncoding {
  kPcmS16le,  // signed 16-bit integer, little-endian
  kPcmF32le,  // IEEE-754 binary32, little-endian
  kMulaw,     // ITU-T G.711 mu-law, 1 byte
  kAlaw,      // ITU-T G.711 A-law, 1 byte
};

// Parses "pcm_s16le", "pcm_f32le", "mulaw" or "alaw" (exact, lower case).
// Throws Error(kInvalidArgument) naming the value and listing the accepted ones.
SampleEncoding parse_encoding(std::string_view name);

// The name parse_encoding accepts for `encoding`; the view is to static storage.
std::string_view to_string(SampleEncoding encoding) noexcept;

// Size of one sample in bytes: 2, 4, 1, 1.
std::size_t bytes_per_sample(SampleEncoding encoding) noexcept;

// ITU-T G.711 expansion of one code to a 16-bit linear value (mu-law: -32124..32124, A-law:
// -32256..32256). Table lookups, built at compile time.
std::int16_t mulaw_to_linear(std::uint8_t code) noexcept;
std::int16_t alaw_to_linear(std::uint8_t code) noexcept;

// ITU-T G.711 compression of a 16-bit linear value to one code (the segment search of Sun's
// reference g711.c: mu-law on 14 bits with its bias of 33 and clip at 8159, A-law on 13 bits).
// Expanding a code and compressing it again gives the code back (mu-law's two zeros give 0xFF).
std::uint8_t linear_to_mulaw(std::int16_t sample) noexcept;
std::uint8_t linear_to_alaw(std::int16_t sample) noexcept;

// A float sample in [-1, 1] to 16-bit PCM as piper-tts writes it: x * 32767, clamped to +-32767,
// truncated toward zero (so that synthesised audio equals piper-tts's byte for byte). NaN gives 0.
std::int16_t float_to_s16(float sample) noexcept;

// Encodes float samples in [-1, 1] into `out`, which must hold samples.size() *
// bytes_per_sample(encoding) bytes (Error kInvalidArgument otherwise); returns the bytes written.
// pcm_s16le: float_to_s16; mulaw/alaw: G.711 of that value; pcm_f32le: the floats as they are.
std::size_t encode_pcm(std::span<const float> samples, SampleEncoding encoding, std::span<std::byte> out);

// Streaming decoder of one encoded sample stream (mono, or interleaved samples: the decoder
// does not know about channels).
//
// Bytes may arrive in chunks of any size: a sample split across calls is completed from the up to
// (bytes_per_sample - 1) bytes kept in the object. decode() never allocates.
//
// Not thread-safe: one stream, one caller at a time. Cheap to copy and move.
class PcmDecoder {
 public:
  // `sample_rate_hz` only improves error messages (the time of a bad sample); 0 = unknown.
  explicit PcmDecoder(SampleEncoding encoding, int sample_rate_hz = 0) noexcept
      : encoding_(encoding), sample_rate_hz_(sample_rate_hz) {}

  SampleEncoding encoding() const noexcept { return encoding_; }

  // Upper bound on the samples one decode() of `num_bytes` bytes can write, whatever is pending:
  // ceil(num_bytes / bytes_per_sample). Size `out` with it.
  std::size_t max_samples_for(std::size_t num_bytes) const noexcept;

  // Decodes `bytes` (continuing the stream) into the front of `out`; returns the number of
  // samples written. Bytes of an incomplete trailing sample are kept for the next call.
  //
  // Throws Error(kInvalidArgument) if out.size() < max_samples_for(bytes.size()), and
  // Error(kBadAudio) on a NaN or infinite pcm_f32le sample, naming its index in the stream
  // (samples decoded before it since construction or reset()), its time when the rate is known,
  // and its byte offset in the stream. On a throw the decoder's state is unchanged (the bad
  // bytes are not consumed) and the contents of `out` are unspecified.
  std::size_t decode(std::span<const std::byte> bytes, std::span<float> out);

  // Bytes of an incomplete sample held from earlier calls (0 .. bytes_per_sample - 1). Non-zero at
  // the end of a stream means it was truncated.
  std::size_t pending_bytes() const noexcept { return num_pending_bytes_; }

  // Samples decoded since construction or reset().
  std::uint64_t num_samples_decoded() const noexcept { return num_samples_decoded_; }

  // Forgets pending bytes and the sample count: ready for a new stream.
  void reset() noexcept;

 private:
  SampleEncoding encoding_;
  int sample_rate_hz_;
  std::byte pending_[4] = {};
  std::size_t num_pending_bytes_ = 0;
  std::uint64_t num_samples_decoded_ = 0;
};

// Whole-buffer decoding: `bytes.size()` must be a multiple of bytes_per_sample(encoding)
// (Error kBadAudio naming the offset of the incomplete sample otherwise); NaN/Inf as in
// PcmDecoder::decode. Allocates the result.
std::vector<float> decode_pcm(std::span<const std::byte> bytes, SampleEncoding encoding);

}  // namespace brisvox
