#include "brisvox/audio/pcm.h"

#include <gtest/gtest.h>
#include <sndfile.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "brisvox/error.h"

// Counts operator new calls in this test binary (the resampler tests use it too), so the tests
// can prove the streaming hot paths do not allocate.
std::atomic<long> g_num_allocations{0};

// noinline: inlined into a new-expression, GCC would flag the malloc/free pairing as a mismatch.
[[gnu::noinline]] void* operator new(std::size_t size) {
  g_num_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace brisvox {
namespace {

// --- G.711 compressors written from ITU-T G.711 (segment search over the magnitude), used to
// check the decoder against an independent implementation.

std::uint8_t reference_mulaw(int sample16) {
  int magnitude = sample16 >> 2;  // mu-law works on 14 bits
  std::uint8_t mask = 0xFF;       // the code is complemented; positive keeps the sign bit set
  if (magnitude < 0) {
    magnitude = -magnitude;
    mask = 0x7F;
  }
  magnitude = std::min(magnitude, 8159) + 33;  // clip, then add the bias (132 / 4)
  int segment = 0;
  while (segment < 8 && magnitude > (0x40 << segment) - 1) ++segment;
  if (segment >= 8) return static_cast<std::uint8_t>(0x7F ^ mask);
  const int code = (segment << 4) | ((magnitude >> (segment + 1)) & 0x0F);
  return static_cast<std::uint8_t>(code ^ mask);
}

std::uint8_t reference_alaw(int sample16) {
  int magnitude = sample16 >> 3;  // A-law works on 13 bits
  std::uint8_t mask = 0xD5;       // sign bit set = positive; even bits inverted
  if (magnitude < 0) {
    magnitude = -magnitude - 1;
    mask = 0x55;
  }
  int segment = 0;
  while (segment < 8 && magnitude > (0x20 << segment) - 1) ++segment;
  if (segment >= 8) return static_cast<std::uint8_t>(0x7F ^ mask);
  int code = segment << 4;
  code |= (segment < 2 ? magnitude >> 1 : magnitude >> segment) & 0x0F;
  return static_cast<std::uint8_t>(code ^ mask);
}

std::vector<std::byte> to_bytes(const std::vector<std::uint8_t>& v) {
  std::vector<std::byte> out(v.size());
  std::memcpy(out.data(), v.data(), v.size());
  return out;
}

std::vector<std::byte> f32le_bytes(const std::vector<float>& samples) {
  std::vector<std::byte> out;
  for (float s : samples) {
    const auto u = std::bit_cast<std::uint32_t>(s);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>((u >> (8 * i)) & 0xFF));
  }
  return out;
}

std::vector<float> decode_all(SampleEncoding encoding, std::span<const std::byte> bytes) {
  PcmDecoder decoder(encoding);
  std::vector<float> out(decoder.max_samples_for(bytes.size()));
  out.resize(decoder.decode(bytes, out));
  return out;
}

// Decodes `bytes` in consecutive chunks of the given sizes (cycled), checking the decoder's
// bookkeeping after each call.
std::vector<float> decode_chunked(SampleEncoding encoding, std::span<const std::byte> bytes,
                                  const std::vector<std::size_t>& chunk_sizes) {
  PcmDecoder decoder(encoding);
  const std::size_t size = bytes_per_sample(encoding);
  std::vector<float> all;
  std::vector<float> out;
  std::size_t pos = 0;
  for (std::size_t i = 0; pos < bytes.size(); ++i) {
    const std::size_t n = std::min(chunk_sizes[i % chunk_sizes.size()], bytes.size() - pos);
    out.assign(decoder.max_samples_for(n), 0.0f);
    const std::size_t num_written = decoder.decode(bytes.subspan(pos, n), out);
    all.insert(all.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(num_written));
    pos += n;
    EXPECT_EQ(decoder.pending_bytes(), pos % size);
    EXPECT_EQ(decoder.num_samples_decoded(), pos / size);
  }
  return all;
}

std::vector<std::byte> random_stream(SampleEncoding encoding, std::size_t num_bytes,
                                     unsigned seed) {
  std::mt19937 rng(seed);
  if (encoding == SampleEncoding::kPcmF32le) {
    std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
    std::vector<float> samples(num_bytes / 4);
    for (float& s : samples) s = dist(rng);
    return f32le_bytes(samples);
  }
  std::vector<std::uint8_t> raw(num_bytes);
  for (auto& b : raw) b = static_cast<std::uint8_t>(rng());
  return to_bytes(raw);
}

constexpr SampleEncoding kAllEncodings[] = {SampleEncoding::kPcmS16le, SampleEncoding::kPcmF32le,
                                            SampleEncoding::kMulaw, SampleEncoding::kAlaw};

TEST(Encoding, ParsesAndNamesEveryEncoding) {
  for (auto e : kAllEncodings) EXPECT_EQ(parse_encoding(to_string(e)), e);
  EXPECT_EQ(parse_encoding("pcm_s16le"), SampleEncoding::kPcmS16le);
  EXPECT_EQ(parse_encoding("alaw"), SampleEncoding::kAlaw);
  EXPECT_EQ(bytes_per_sample(SampleEncoding::kPcmS16le), 2u);
  EXPECT_EQ(bytes_per_sample(SampleEncoding::kPcmF32le), 4u);
  EXPECT_EQ(bytes_per_sample(SampleEncoding::kMulaw), 1u);
  EXPECT_EQ(bytes_per_sample(SampleEncoding::kAlaw), 1u);
}

TEST(Encoding, RejectsUnknownNamesListingTheAcceptedOnes) {
  for (const char* bad : {"", "s16le", "PCM_S16LE", "ulaw", "pcm_s24le"}) {
    try {
      parse_encoding(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      const std::string message = e.what();
      EXPECT_NE(message.find("'" + std::string(bad) + "'"), std::string::npos) << message;
      for (const char* ok : {"pcm_s16le", "pcm_f32le", "mulaw", "alaw"}) {
        EXPECT_NE(message.find(ok), std::string::npos) << message;
      }
    }
  }
}

TEST(G711, KnownValues) {
  EXPECT_EQ(mulaw_to_linear(0xFF), 0);
  EXPECT_EQ(mulaw_to_linear(0x7F), 0);
  EXPECT_EQ(mulaw_to_linear(0x00), -32124);
  EXPECT_EQ(mulaw_to_linear(0x80), 32124);
  EXPECT_EQ(mulaw_to_linear(0xFE), 8);    // smallest positive step
  EXPECT_EQ(mulaw_to_linear(0xEF), 132);  // first code of segment 1
  EXPECT_EQ(alaw_to_linear(0xD5), 8);
  EXPECT_EQ(alaw_to_linear(0x55), -8);
  EXPECT_EQ(alaw_to_linear(0xAA), 32256);
  EXPECT_EQ(alaw_to_linear(0x2A), -32256);
  EXPECT_EQ(alaw_to_linear(0xD4), 24);

  const auto bytes = to_bytes({0xFF, 0x00, 0x80});
  const auto mulaw = decode_all(SampleEncoding::kMulaw, bytes);
  ASSERT_EQ(mulaw.size(), 3u);
  EXPECT_EQ(mulaw[0], 0.0f);
  EXPECT_EQ(mulaw[1], -32124.0f / 32768.0f);
  EXPECT_EQ(mulaw[2], 32124.0f / 32768.0f);
  const auto alaw = decode_all(SampleEncoding::kAlaw, to_bytes({0xD5, 0x55}));
  EXPECT_EQ(alaw[0], 8.0f / 32768.0f);
  EXPECT_EQ(alaw[1], -8.0f / 32768.0f);
}

TEST(G711, EveryCodeRoundTripsThroughAnIndependentEncoder) {
  for (int code = 0; code < 256; ++code) {
    const auto c = static_cast<std::uint8_t>(code);
    // mu-law has two zeros (0x7F = -0, 0xFF = +0); the encoder produces +0.
    const std::uint8_t expected_mulaw = c == 0x7F ? 0xFF : c;
    EXPECT_EQ(reference_mulaw(mulaw_to_linear(c)), expected_mulaw) << "mu-law code " << code;
    EXPECT_EQ(reference_alaw(alaw_to_linear(c)), c) << "A-law code " << code;
  }
}

TEST(G711, QuantisationErrorIsWithinHalfAStepOverTheWhole16BitRange) {
  int previous_mulaw = -32768;
  int previous_alaw = -32768;
  for (int x = -32768; x <= 32767; ++x) {
    const int mu = mulaw_to_linear(reference_mulaw(x));
    const int a = alaw_to_linear(reference_alaw(x));
    // Monotonic companding, and an error bounded by the step of the segment (1/16 of the level
    // beyond the linear first segments; the outermost codes clip at +-32124 / +-32256).
    EXPECT_GE(mu, previous_mulaw);
    EXPECT_GE(a, previous_alaw);
    previous_mulaw = mu;
    previous_alaw = a;
    const int bound = std::abs(x) / 16 + 16;
    ASSERT_LE(std::abs(mu - x), std::max(bound, std::abs(x) - 32124)) << x;
    ASSERT_LE(std::abs(a - x), std::max(bound, std::abs(x) - 32256)) << x;
  }
}

TEST(G711, TheEncodersAgreeWithTheReferenceOnEvery16BitValue) {
  for (int x = -32768; x <= 32767; ++x) {
    const auto v = static_cast<std::int16_t>(x);
    ASSERT_EQ(linear_to_mulaw(v), reference_mulaw(x)) << x;
    ASSERT_EQ(linear_to_alaw(v), reference_alaw(x)) << x;
  }
}

TEST(EncodePcm, EveryEncodingAndPipersConversion) {
  EXPECT_EQ(float_to_s16(1.0f), 32767);
  EXPECT_EQ(float_to_s16(-1.0f), -32767);
  EXPECT_EQ(float_to_s16(2.0f), 32767);
  EXPECT_EQ(float_to_s16(0.5f), 16383);  // 16383.5, truncated as piper-tts does
  EXPECT_EQ(float_to_s16(-0.5f), -16383);
  EXPECT_EQ(float_to_s16(std::nanf("")), 0);
  const std::vector<float> samples = {0.0f, 0.5f, -0.25f, 1.0f};
  for (auto encoding : kAllEncodings) {
    std::vector<std::byte> out(samples.size() * bytes_per_sample(encoding));
    ASSERT_EQ(encode_pcm(samples, encoding, out), out.size());
    const std::vector<float> back = decode_pcm(out, encoding);
    ASSERT_EQ(back.size(), samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      // s16: 1/32768 of scale; G.711: its step at that level.
      const float tolerance = encoding == SampleEncoding::kPcmF32le ? 0.0f : encoding == SampleEncoding::kPcmS16le ? 1e-4f : 0.02f;
      EXPECT_NEAR(back[i], samples[i], tolerance) << to_string(encoding) << " sample " << i;
    }
    std::vector<std::byte> small(out.size() - 1);
    EXPECT_THROW(encode_pcm(samples, encoding, small), Error) << to_string(encoding);
  }
}

// libsndfile has its own G.711 tables: a third, independent implementation to agree with.
TEST(G711, MatchesLibsndfile) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("brisvox_pcm_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (int format : {SF_FORMAT_ULAW, SF_FORMAT_ALAW}) {
    const auto path = dir / "codes.raw";
    {
      std::ofstream f(path, std::ios::binary);
      for (int code = 0; code < 256; ++code) f.put(static_cast<char>(code));
    }
    SF_INFO info{};
    info.samplerate = 8000;
    info.channels = 1;
    info.format = SF_FORMAT_RAW | format;
    SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
    ASSERT_NE(file, nullptr) << sf_strerror(nullptr);
    std::vector<short> expected(256);
    ASSERT_EQ(sf_read_short(file, expected.data(), 256), 256);
    sf_close(file);
    for (int code = 0; code < 256; ++code) {
      const auto c = static_cast<std::uint8_t>(code);
      const int ours = format == SF_FORMAT_ULAW ? mulaw_to_linear(c) : alaw_to_linear(c);
      EXPECT_EQ(ours, expected[code])
          << (format == SF_FORMAT_ULAW ? "mu" : "A") << "-law code " << code;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(PcmDecoder, S16leAndF32leDecodeLittleEndian) {
  const auto s16 = decode_all(SampleEncoding::kPcmS16le,
                              to_bytes({0x00, 0x80, 0xFF, 0x7F, 0x01, 0x00, 0xFF, 0xFF}));
  ASSERT_EQ(s16.size(), 4u);
  EXPECT_EQ(s16[0], -1.0f);
  EXPECT_EQ(s16[1], 32767.0f / 32768.0f);
  EXPECT_EQ(s16[2], 1.0f / 32768.0f);
  EXPECT_EQ(s16[3], -1.0f / 32768.0f);

  // 0.5f = 0x3F000000, -2.0f = 0xC0000000: out-of-range but finite values pass unchanged.
  const auto f32 = decode_all(SampleEncoding::kPcmF32le,
                              to_bytes({0x00, 0x00, 0x00, 0x3F, 0x00, 0x00, 0x00, 0xC0}));
  ASSERT_EQ(f32.size(), 2u);
  EXPECT_EQ(f32[0], 0.5f);
  EXPECT_EQ(f32[1], -2.0f);
}

TEST(PcmDecoder, EverySplitOfTheStreamDecodesLikeOneShot) {
  for (auto encoding : kAllEncodings) {
    SCOPED_TRACE(std::string(to_string(encoding)));
    const auto bytes = random_stream(encoding, 4 * 29, 7);  // 116 bytes: whole samples for all
    const auto expected = decode_all(encoding, bytes);
    ASSERT_EQ(expected.size(), bytes.size() / bytes_per_sample(encoding));

    // Every single cut point.
    for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
      ASSERT_EQ(decode_chunked(encoding, bytes, {cut == 0 ? bytes.size() : cut, bytes.size()}),
                expected)
          << "cut at " << cut;
    }
    // Fixed chunk sizes, including byte by byte and sizes prime to every sample size.
    for (std::size_t chunk = 1; chunk <= 13; ++chunk) {
      ASSERT_EQ(decode_chunked(encoding, bytes, {chunk}), expected) << "chunks of " << chunk;
    }
    // Irregular sizes, including empty chunks.
    ASSERT_EQ(decode_chunked(encoding, bytes, {3, 0, 1, 5, 2, 0, 7, 1, 1, 6}), expected);
  }
}

TEST(PcmDecoder, KeepsPartialSampleAndResets) {
  PcmDecoder decoder(SampleEncoding::kPcmF32le);
  const auto bytes = f32le_bytes({0.25f});
  float out[1] = {};
  EXPECT_EQ(decoder.decode(std::span(bytes).first(3), out), 0u);
  EXPECT_EQ(decoder.pending_bytes(), 3u);
  decoder.reset();
  EXPECT_EQ(decoder.pending_bytes(), 0u);
  EXPECT_EQ(decoder.num_samples_decoded(), 0u);
  EXPECT_EQ(decoder.decode(bytes, out), 1u);
  EXPECT_EQ(out[0], 0.25f);
}

// Found by fuzz/pcm_decoder_fuzzer: an empty span (whose data() is null) reached memcpy, which is
// undefined even for 0 bytes (UndefinedBehaviorSanitizer: "null pointer passed as argument 2").
TEST(PcmDecoder, EmptyChunksChangeNothing) {
  for (const auto encoding : {SampleEncoding::kPcmS16le, SampleEncoding::kPcmF32le}) {
    PcmDecoder decoder(encoding);
    std::vector<float> out(4);
    EXPECT_EQ(decoder.decode({}, out), 0u);
    const std::byte one_byte[1] = {std::byte{0x12}};
    EXPECT_EQ(decoder.decode(one_byte, out), 0u);
    EXPECT_EQ(decoder.decode({}, out), 0u);  // with a byte pending
    EXPECT_EQ(decoder.pending_bytes(), 1u);
    EXPECT_EQ(decoder.num_samples_decoded(), 0u);
  }
}

TEST(PcmDecoder, MaxSamplesForBoundsEveryCall) {
  PcmDecoder decoder(SampleEncoding::kPcmF32le);
  EXPECT_EQ(decoder.max_samples_for(0), 0u);
  EXPECT_EQ(decoder.max_samples_for(1), 1u);
  EXPECT_EQ(decoder.max_samples_for(4), 1u);
  EXPECT_EQ(decoder.max_samples_for(5), 2u);
  const auto bytes = f32le_bytes({1, 2, 3});
  float out[2] = {};
  // 3 pending + 5 new = 2 samples = max_samples_for(5).
  ASSERT_EQ(decoder.decode(std::span(bytes).first(3), std::span(out, 1)), 0u);
  EXPECT_EQ(decoder.decode(std::span(bytes).subspan(3, 5), out), 2u);
  EXPECT_EQ(out[1], 2.0f);
}

TEST(PcmDecoder, RejectsTooSmallOutput) {
  PcmDecoder decoder(SampleEncoding::kPcmS16le);
  const auto bytes = to_bytes({1, 2, 3, 4, 5});
  float out[2] = {};
  try {
    decoder.decode(bytes, out);  // needs 3
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(decoder.pending_bytes(), 0u);
}

void expect_non_finite_error(float bad, const char* name) {
  std::vector<float> samples(12, 0.125f);
  samples[8] = bad;
  const auto bytes = f32le_bytes(samples);
  for (std::size_t chunk : {std::size_t{48}, std::size_t{1}, std::size_t{6}}) {
    PcmDecoder decoder(SampleEncoding::kPcmF32le, 16000);
    std::vector<float> out(decoder.max_samples_for(chunk));
    std::size_t pos = 0;
    try {
      for (; pos < bytes.size(); pos += chunk) {
        decoder.decode(std::span(bytes).subspan(pos, chunk), out);
      }
      FAIL() << name << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadAudio);
      const std::string message = e.what();
      EXPECT_NE(message.find("sample 8 "), std::string::npos) << message;
      EXPECT_NE(message.find("byte offset 32"), std::string::npos) << message;
      EXPECT_NE(message.find("0.000500 s"), std::string::npos) << message;  // 8 / 16000
      EXPECT_NE(message.find(name), std::string::npos) << message;
      // The bad bytes were not consumed: the decoder is where it was before the call.
      EXPECT_EQ(decoder.num_samples_decoded() * 4 + decoder.pending_bytes(), pos);
      EXPECT_LE(decoder.num_samples_decoded(), 8u);
    }
  }
}

TEST(PcmDecoder, RejectsNanAndInfinityWithTheirPosition) {
  expect_non_finite_error(std::numeric_limits<float>::quiet_NaN(), "NaN");
  expect_non_finite_error(std::numeric_limits<float>::infinity(), "+Inf");
  expect_non_finite_error(-std::numeric_limits<float>::infinity(), "-Inf");
}

TEST(PcmDecoder, DecodeDoesNotAllocate) {
  ASSERT_GT(g_num_allocations.load(), 0) << "the counting operator new is not in use";
  for (auto encoding : kAllEncodings) {
    const auto bytes = random_stream(encoding, 4096, 3);
    PcmDecoder decoder(encoding);
    std::vector<float> out(decoder.max_samples_for(777));
    const long before = g_num_allocations.load();
    for (std::size_t pos = 0; pos < bytes.size(); pos += 777) {
      decoder.decode(std::span(bytes).subspan(pos, std::min<std::size_t>(777, bytes.size() - pos)),
                     out);
    }
    EXPECT_EQ(g_num_allocations.load(), before) << to_string(encoding);
  }
}

TEST(DecodePcm, WholeBufferAndIncompleteLastSample) {
  const auto bytes = to_bytes({0x00, 0x40, 0x00, 0xC0});
  EXPECT_EQ(decode_pcm(bytes, SampleEncoding::kPcmS16le), (std::vector<float>{0.5f, -0.5f}));
  try {
    decode_pcm(std::span(bytes).first(3), SampleEncoding::kPcmS16le);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadAudio);
    EXPECT_NE(std::string(e.what()).find("byte offset 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace brisvox
