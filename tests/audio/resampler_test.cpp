#include "brisvox/audio/resampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "brisvox/error.h"

extern std::atomic<long> g_num_allocations;  // counted in pcm_test.cpp

namespace brisvox {
namespace {

std::vector<float> sine(std::size_t n, double freq_hz, int rate_hz, double amplitude,
                        double phase = 0.0) {
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(
        amplitude *
        std::sin(2.0 * std::numbers::pi * freq_hz * static_cast<double>(i) / rate_hz + phase));
  }
  return out;
}

// Streams `in` through a Resampler in chunks of the given sizes (cycled), then flushes.
std::vector<float> stream(std::span<const float> in, int from_hz, int to_hz,
                          const std::vector<std::size_t>& chunk_sizes,
                          std::size_t max_input_chunk = 4096) {
  Resampler resampler(from_hz, to_hz, max_input_chunk);
  std::vector<float> all;
  std::vector<float> out;
  std::size_t pos = 0;
  for (std::size_t i = 0; pos < in.size(); ++i) {
    const std::size_t n = std::min(chunk_sizes[i % chunk_sizes.size()], in.size() - pos);
    out.resize(resampler.max_output_for(n));
    const std::size_t num_out = resampler.process(in.subspan(pos, n), out);
    all.insert(all.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(num_out));
    pos += n;
  }
  out.resize(resampler.max_output_for(0));
  while (const std::size_t num_out = resampler.flush(out)) {
    all.insert(all.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(num_out));
  }
  return all;
}

TEST(Resampler, RejectsBadRates) {
  for (auto [from, to] : {std::pair{0, 16000}, std::pair{16000, 0}, std::pair{-8000, 16000},
                          std::pair{16000, 768001}, std::pair{1000000, 16000}}) {
    try {
      Resampler r(from, to);
      FAIL() << from << " -> " << to;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
    const std::vector<float> in(10, 0.0f);
    EXPECT_THROW(resample(in, from, to), Error);
  }
  EXPECT_THROW(Resampler(16000, 8000, 0), Error);
  EXPECT_NO_THROW(Resampler(1, 768000));
}

TEST(Resampler, EqualRatesPassThroughExactly) {
  const auto in = sine(1000, 440.0, 16000, 0.9);
  Resampler resampler(16000, 16000);
  EXPECT_TRUE(resampler.is_passthrough());
  EXPECT_EQ(resampler.max_output_for(1000), 1000u);
  std::vector<float> out(1000);
  ASSERT_EQ(resampler.process(in, out), 1000u);
  EXPECT_EQ(out, in);
  EXPECT_EQ(resampler.flush(out), 0u);
  EXPECT_EQ(resample(in, 16000, 16000), in);
}

TEST(Resampler, OfflineLengthsAreRoundedExactly) {
  const std::vector<float> in(8000, 0.0f);
  EXPECT_EQ(resample(in, 8000, 16000).size(), 16000u);
  EXPECT_EQ(resample(std::span(in).first(1001), 8000, 16000).size(), 2002u);
  EXPECT_EQ(resample(in, 16000, 8000).size(), 4000u);
  EXPECT_EQ(resample(std::span(in).first(1001), 16000, 8000).size(), 501u);  // 500.5 rounds up
  EXPECT_EQ(resample(std::span(in).first(1003), 16000, 8000).size(), 502u);  // 501.5 rounds up
  EXPECT_EQ(resample(std::span(in).first(441), 44100, 16000).size(), 160u);
  EXPECT_EQ(resample(std::span(in).first(1000), 44100, 16000).size(), 363u);  // 362.8
  EXPECT_EQ(resample(std::span(in).first(1), 8000, 48000).size(), 6u);
  EXPECT_TRUE(resample(std::span(in).first(0), 8000, 16000).empty());
}

// Fits a*sin + b*cos at `freq_hz` over [begin, end): amplitude = hypot(a, b), and the RMS of the
// residual measures everything that is not that tone.
struct ToneFit {
  double amplitude;
  double residual_rms;
};
ToneFit fit_tone(const std::vector<float>& x, double freq_hz, int rate_hz, std::size_t begin,
                 std::size_t end) {
  double ss = 0, cc = 0, sc = 0, xs = 0, xc = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const double w = 2.0 * std::numbers::pi * freq_hz * static_cast<double>(i) / rate_hz;
    const double s = std::sin(w), c = std::cos(w);
    ss += s * s;
    cc += c * c;
    sc += s * c;
    xs += x[i] * s;
    xc += x[i] * c;
  }
  const double det = ss * cc - sc * sc;
  const double a = (xs * cc - xc * sc) / det;
  const double b = (xc * ss - xs * sc) / det;
  double residual = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const double w = 2.0 * std::numbers::pi * freq_hz * static_cast<double>(i) / rate_hz;
    const double e = x[i] - (a * std::sin(w) + b * std::cos(w));
    residual += e * e;
  }
  return {std::hypot(a, b), std::sqrt(residual / static_cast<double>(end - begin))};
}

TEST(Resampler, KeepsFrequencyAmplitudeAndPhaseOf1kHzFrom44100To16000) {
  const auto in = sine(44100, 1000.0, 44100, 0.5);
  const auto out = resample(in, 44100, 16000);
  ASSERT_EQ(out.size(), 16000u);
  // Ignoring 50 ms at each edge, the output is the same 1 kHz tone, with no delay.
  const ToneFit fit = fit_tone(out, 1000.0, 16000, 800, 15200);
  EXPECT_NEAR(fit.amplitude, 0.5, 1e-3);
  EXPECT_LT(fit.residual_rms, 1e-4);
  const auto ideal = sine(16000, 1000.0, 16000, 0.5);
  for (std::size_t i = 800; i < 15200; ++i) ASSERT_NEAR(out[i], ideal[i], 1e-3) << i;

  // Zero crossings: 2 per period, 1000 periods per second.
  int crossings = 0;
  for (std::size_t i = 801; i < 15200; ++i) crossings += (out[i - 1] < 0) != (out[i] < 0);
  EXPECT_NEAR(crossings, 2 * 1000 * 14400 / 16000, 2);
}

TEST(Resampler, RemovesContentAboveTheNewNyquist) {
  // 7 kHz at 48 kHz survives to 16 kHz; 10 kHz would alias to 6 kHz and must be filtered out.
  const auto in = sine(48000, 10000.0, 48000, 0.5);
  const auto out = resample(in, 48000, 16000);
  double energy = 0;
  for (std::size_t i = 800; i < 15200; ++i) energy += out[i] * out[i];
  EXPECT_LT(std::sqrt(energy / 14400), 1e-3);
}

TEST(Resampler, Upsamples8000To16000) {
  const auto in = sine(8000, 440.0, 8000, 0.8, 0.3);
  const auto out = resample(in, 8000, 16000);
  ASSERT_EQ(out.size(), 16000u);
  const ToneFit fit = fit_tone(out, 440.0, 16000, 800, 15200);
  EXPECT_NEAR(fit.amplitude, 0.8, 1e-3);
  EXPECT_LT(fit.residual_rms, 1e-4);
  const auto back = resample(out, 16000, 8000);
  ASSERT_EQ(back.size(), 8000u);
  for (std::size_t i = 400; i < 7600; ++i) ASSERT_NEAR(back[i], in[i], 1e-3) << i;
}

// 8 kHz -> 16 kHz is the half-band interpolator (twice_upsampler.h), not libsoxr.
TEST(Resampler, DoublingKeepsEveryInputSampleWithAFixedLookAhead) {
  std::mt19937 rng(9);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::vector<float> in(3001);
  for (float& s : in) s = noise(rng);
  Resampler r(8000, 16000);
  std::vector<float> all, out;
  std::size_t pushed = 0;
  for (const std::size_t n : {1, 7, 23, 160, 1, 500, 2309}) {
    out.resize(r.max_output_for(n));
    const std::size_t got = r.process(std::span(in).subspan(pushed, n), out);
    pushed += n;
    all.insert(all.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(got));
    // Output trails input by exactly 24 input samples (3 ms at 8 kHz), never in bursts.
    ASSERT_EQ(all.size(), 2 * (pushed > 24 ? pushed - 24 : 0)) << "after " << pushed;
  }
  out.resize(r.max_output_for(0));
  EXPECT_EQ(r.flush(out), 48u) << "the tail fits a max_output_for(0) buffer";
  all.insert(all.end(), out.begin(), out.begin() + 48);
  EXPECT_EQ(r.flush(out), 0u);
  ASSERT_EQ(all.size(), 2 * in.size());
  for (std::size_t i = 0; i < in.size(); ++i) ASSERT_EQ(all[2 * i], in[i]) << "input sample " << i;
  EXPECT_EQ(resample(in, 8000, 16000), all);
}

TEST(Resampler, DoublingIsFlatThroughThePhoneBandAndRejectsImages) {
  for (const double f : {300.0, 1000.0, 2000.0, 3000.0, 3400.0}) {
    SCOPED_TRACE(f);
    const auto out = resample(sine(8000, f, 8000, 0.5), 8000, 16000);
    const ToneFit tone = fit_tone(out, f, 16000, 800, 15200);
    EXPECT_NEAR(tone.amplitude, 0.5, 0.5 * 2e-4);  // +-0.002 dB
    EXPECT_LT(tone.residual_rms, 0.5 * 1e-4);      // the image and all else: 80 dB down
    EXPECT_LT(fit_tone(out, 8000.0 - f, 16000, 800, 15200).amplitude, 0.5 * 1e-4);
  }
}

TEST(Resampler, StreamingEqualsOfflineForAnyChunking) {
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 0.2f);
  std::vector<float> in(20000);
  for (float& s : in) s = noise(rng);

  for (auto [from, to] : {std::pair{44100, 16000}, std::pair{8000, 16000}, std::pair{48000, 16000},
                          std::pair{16000, 8000}, std::pair{22050, 16000}}) {
    SCOPED_TRACE(std::to_string(from) + " -> " + std::to_string(to));
    const auto offline = resample(in, from, to);
    const std::vector<std::vector<std::size_t>> chunkings = {
        {1}, {160}, {7, 1000, 1, 333}, {20000}, {4097, 3}};
    for (const auto& chunks : chunkings) {
      // A small max_input_chunk makes process() loop over big inputs.
      const auto streamed = stream(in, from, to, chunks, chunks.size() == 2 ? 256 : 4096);
      // Streaming ends where libsoxr's tail ends, which is the offline length give or take one.
      ASSERT_LE(streamed.size() > offline.size() ? streamed.size() - offline.size()
                                                 : offline.size() - streamed.size(),
                1u);
      const std::size_t n = std::min(streamed.size(), offline.size());
      for (std::size_t i = 0; i < n; ++i) ASSERT_NEAR(streamed[i], offline[i], 1e-6) << i;
    }
  }
}

TEST(Resampler, ProcessChecksItsOutputAndStateAndResets) {
  const auto in = sine(1000, 300.0, 8000, 0.5);
  Resampler resampler(8000, 16000);
  std::vector<float> small(resampler.max_output_for(in.size()) - 1);
  EXPECT_THROW(resampler.process(in, small), Error);

  std::vector<float> first(resampler.max_output_for(in.size()));
  const std::size_t n = resampler.process(in, first);
  first.resize(n);
  std::vector<float> tail(resampler.max_output_for(0));
  while (resampler.flush(tail) > 0) {
  }
  std::vector<float> out(resampler.max_output_for(in.size()));
  try {
    resampler.process(in, out);
    FAIL() << "process after flush";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  // After reset() the same input gives the same output as a fresh resampler.
  resampler.reset();
  ASSERT_EQ(resampler.process(in, out), n);
  out.resize(n);
  EXPECT_EQ(out, first);
}

TEST(Resampler, MovesKeepTheStream) {
  const auto in = sine(2000, 300.0, 16000, 0.5);
  Resampler a(16000, 8000);
  std::vector<float> out(a.max_output_for(in.size()));
  a.process(std::span(in).first(1000), out);
  Resampler b = std::move(a);
  EXPECT_EQ(b.input_rate_hz(), 16000);
  EXPECT_EQ(b.output_rate_hz(), 8000);
  EXPECT_NO_THROW(b.process(std::span(in).subspan(1000), out));
}

TEST(Resampler, ProcessDoesNotAllocateInBrisvoxCode) {
  const auto in = sine(16000, 440.0, 48000, 0.5);
  Resampler resampler(48000, 16000, 960);
  std::vector<float> out(resampler.max_output_for(960));
  resampler.process(std::span(in).first(960), out);  // libsoxr sizes its FIFOs (malloc)
  const long before = g_num_allocations.load();
  for (std::size_t pos = 960; pos + 960 <= in.size(); pos += 960) {
    resampler.process(std::span(in).subspan(pos, 960), out);
  }
  EXPECT_EQ(g_num_allocations.load(), before);
}

}  // namespace
}  // namespace brisvox
