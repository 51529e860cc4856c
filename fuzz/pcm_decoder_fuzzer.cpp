// The headerless PCM/G.711 decoders (the WebSocket audio path and POST /v1/vad?encoding=) on
// arbitrary bytes cut into arbitrary chunks, so that samples are split across calls.
//
// Invariants: every decode() writes exactly the samples its bytes complete, into an output of
// exactly max_samples_for() (AddressSanitizer catches a write past it), keeps the rest pending,
// and yields the value an independent decoder of the whole stream gives for each sample; a
// non-finite pcm_f32le sample throws kBadAudio and leaves the decoder unchanged; decode_pcm on
// the whole buffer agrees with the stream.
#include <fuzzer/FuzzedDataProvider.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "brisvox/audio/pcm.h"
#include "brisvox/error.h"
#include "fuzz_check.h"

namespace {

using brisvox::SampleEncoding;

// The value of the sample at `p`, computed straight from the format definitions.
float reference_sample(SampleEncoding encoding, const std::uint8_t* p) {
  switch (encoding) {
    case SampleEncoding::kPcmS16le:
      return static_cast<float>(static_cast<std::int16_t>(p[0] | (p[1] << 8))) / 32768.0f;
    case SampleEncoding::kPcmF32le: {
      std::uint32_t bits = 0;
      for (int i = 3; i >= 0; --i) bits = (bits << 8) | p[i];
      return std::bit_cast<float>(bits);
    }
    case SampleEncoding::kMulaw: return brisvox::mulaw_to_linear(p[0]) / 32768.0f;
    case SampleEncoding::kAlaw: return brisvox::alaw_to_linear(p[0]) / 32768.0f;
  }
  return 0.0f;
}

bool same_bits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

// Decodes `stream` in the given chunks, checking every call; returns the samples, stopping at the
// first rejected (non-finite) sample.
std::vector<float> decode_in_chunks(SampleEncoding encoding, const std::vector<std::uint8_t>& stream,
                                    FuzzedDataProvider& chunking) {
  brisvox::PcmDecoder decoder(encoding, 8000);
  const std::size_t size = brisvox::bytes_per_sample(encoding);
  std::vector<float> decoded;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    // Empty chunks too; once the chunk sizes run out, the rest in one piece.
    const std::size_t rest = stream.size() - pos;
    const std::size_t len = chunking.remaining_bytes() == 0
                                ? rest
                                : std::min(rest, chunking.ConsumeIntegralInRange<std::size_t>(0, 3 * size));
    const auto chunk = std::as_bytes(std::span(stream.data() + pos, len));
    const std::size_t pending = decoder.pending_bytes();
    const std::uint64_t count = decoder.num_samples_decoded();
    std::vector<float> out(decoder.max_samples_for(len));  // exact: a write past it is caught
    try {
      const std::size_t n = decoder.decode(chunk, out);
      FUZZ_CHECK(n == (pending + len) / size, "%zu samples from %zu pending + %zu bytes", n, pending, len);
      FUZZ_CHECK(decoder.pending_bytes() == (pending + len) % size, "%zu bytes pending", decoder.pending_bytes());
      FUZZ_CHECK(decoder.num_samples_decoded() == count + n, "sample count");
      decoded.insert(decoded.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
    } catch (const brisvox::Error& e) {
      FUZZ_CHECK(e.code() == brisvox::ErrorCode::kBadAudio && encoding == SampleEncoding::kPcmF32le,
                 "unexpected error: %s", e.what());
      FUZZ_CHECK(decoder.pending_bytes() == pending && decoder.num_samples_decoded() == count,
                 "a rejected chunk changed the decoder");
      // The stream is rejected; check that it was for a sample this chunk completes.
      const std::size_t first = count, last = (count * size + pending + len) / size;
      bool non_finite = false;
      for (std::size_t i = first; i < last; ++i) {
        non_finite |= !std::isfinite(reference_sample(encoding, stream.data() + i * size));
      }
      FUZZ_CHECK(non_finite, "rejected samples %zu..%zu, all finite", first, last);
      return decoded;
    }
    pos += len;
  }
  FUZZ_CHECK(decoder.num_samples_decoded() == stream.size() / size, "total sample count");
  return decoded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);  // encoding and chunk sizes from the end, bytes from the front
  const auto encoding = input.PickValueInArray({SampleEncoding::kPcmS16le, SampleEncoding::kPcmF32le,
                                                SampleEncoding::kMulaw, SampleEncoding::kAlaw});
  const auto stream = input.ConsumeBytes<std::uint8_t>(input.ConsumeIntegralInRange<std::size_t>(0, size));
  const std::size_t sample_size = brisvox::bytes_per_sample(encoding);

  const std::vector<float> decoded = decode_in_chunks(encoding, stream, input);
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    const float want = reference_sample(encoding, stream.data() + i * sample_size);
    FUZZ_CHECK(same_bits(decoded[i], want), "sample %zu is %g, expected %g", i, decoded[i], want);
    FUZZ_CHECK(encoding == SampleEncoding::kPcmF32le || (decoded[i] >= -1.0f && decoded[i] < 1.0f),
               "sample %zu = %g outside [-1, 1)", i, decoded[i]);
  }
  const bool stream_complete = decoded.size() == stream.size() / sample_size;

  try {
    const std::vector<float> whole = brisvox::decode_pcm(std::as_bytes(std::span(stream)), encoding);
    FUZZ_CHECK(stream.size() % sample_size == 0, "decode_pcm accepted an incomplete sample");
    FUZZ_CHECK(stream_complete && whole.size() == decoded.size(), "decode_pcm gave %zu samples, the stream %zu",
               whole.size(), decoded.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      FUZZ_CHECK(same_bits(whole[i], decoded[i]), "decode_pcm sample %zu differs", i);
    }
  } catch (const brisvox::Error& e) {
    FUZZ_CHECK(e.code() == brisvox::ErrorCode::kBadAudio, "decode_pcm: %s", e.what());
    FUZZ_CHECK(stream.size() % sample_size != 0 || !stream_complete, "decode_pcm refused a valid buffer: %s",
               e.what());
  }
  return 0;
}
