// WinogradConv (models/tts/piper/winograd_conv.h) against a direct convolution computed in double, on
// every instruction set this CPU has: taps 3/5/7, dilations 1-12, lengths shorter than a tile
// up to several blocks, batches, the fused LeakyReLU and residual, channel counts the vector
// kernels do not tile, and bad parameters.
#include "models/tts/piper/winograd_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "brisvox/error.h"

namespace brisvox::piper {
namespace {

struct Case {
  int64_t in, out, taps, dilation, length, batch;
  bool leaky, residual;
};

std::vector<float> random_values(size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// y[n][o][t] = b[o] + sum_c,i w[o][c][i] act(x[n][c][t + d (i - r/2)]) (+ residual), in double.
std::vector<double> direct(const Case& k, const std::vector<float>& w, const std::vector<float>& b,
                           const std::vector<float>& x, const std::vector<float>& res, float alpha) {
  std::vector<double> y(size_t(k.batch * k.out * k.length));
  for (int64_t n = 0; n < k.batch; ++n)
    for (int64_t o = 0; o < k.out; ++o)
      for (int64_t t = 0; t < k.length; ++t) {
        double s = b[size_t(o)];
        for (int64_t c = 0; c < k.in; ++c)
          for (int64_t i = 0; i < k.taps; ++i) {
            const int64_t p = t + k.dilation * (i - k.taps / 2);
            if (p < 0 || p >= k.length) continue;
            double v = x[size_t((n * k.in + c) * k.length + p)];
            if (k.leaky && v < 0) v *= alpha;
            s += double(w[size_t((o * k.in + c) * k.taps + i)]) * v;
          }
        const size_t at = size_t((n * k.out + o) * k.length + t);
        y[at] = s + (k.residual ? res[at] : 0.0);
      }
  return y;
}

void check(const Case& k) {
  const float alpha = 0.1f;
  const auto w = random_values(size_t(k.out * k.in * k.taps), 1.f / std::sqrt(float(k.in * k.taps)), 1);
  const auto b = random_values(size_t(k.out), 0.1f, 2);
  const auto x = random_values(size_t(k.batch * k.in * k.length), 1.f, 3);
  const auto res = random_values(size_t(k.batch * k.out * k.length), 1.f, 4);
  const std::vector<double> want = direct(k, w, b, x, res, alpha);
  const WinogradConv conv(w, b, k.out, k.in, k.taps, k.dilation, k.leaky ? std::optional<float>(alpha) : std::nullopt);
  for (const WinogradIsa isa : WinogradConv::available()) {
    std::vector<float> y(want.size(), NAN);
    conv.run(x.data(), k.residual ? res.data() : nullptr, y.data(), k.batch, k.length, isa);
    double worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      const double e = std::fabs(double(y[i]) - want[i]);
      if (!(e <= worst)) worst = e, worst_at = i;  // NaN counts as worst
    }
    // F(4, 7) at +-3 rounds ~10x more than the direct form; still ~2e-5 of outputs ~5.
    EXPECT_LT(worst, 2e-4) << WinogradConv::name(isa) << " in=" << k.in << " out=" << k.out << " taps=" << k.taps
                           << " d=" << k.dilation << " T=" << k.length << " N=" << k.batch << ": |diff| " << worst
                           << " at " << worst_at;
  }
}

TEST(WinogradConv, MatchesTheDirectConvolutionForEveryFormAndDilation) {
  for (int64_t taps : {3, 5, 7})
    for (int64_t d : {1, 2, 3, 6, 12}) check({32, 32, taps, d, 700, 1, true, true});
}

TEST(WinogradConv, LengthsFromOneSampleToSeveralBlocks) {
  for (int64_t length : {1, 2, 3, 4, 5, 15, 16, 17, 63, 255, 256, 257, 1031}) check({32, 32, 7, 3, length, 1, true, true});
}

TEST(WinogradConv, WiderLayersBatchesAndNoActivationOrResidual) {
  check({64, 64, 5, 2, 513, 2, false, false});
  check({128, 64, 3, 1, 300, 3, true, false});
  check({64, 128, 7, 12, 300, 1, false, true});
}

TEST(WinogradConv, ChannelCountsTheVectorKernelsDoNotTileRunPortably) {
  check({3, 5, 3, 1, 50, 2, true, true});
  check({24, 40, 7, 2, 90, 1, true, false});
}

TEST(WinogradConv, ResidualMayBeTheOutputBuffer) {
  const Case k{32, 32, 5, 2, 300, 1, true, true};
  const auto w = random_values(size_t(k.out * k.in * k.taps), 0.1f, 1);
  const auto b = random_values(size_t(k.out), 0.1f, 2);
  const auto x = random_values(size_t(k.in * k.length), 1.f, 3);
  const auto res = random_values(size_t(k.out * k.length), 1.f, 4);
  const WinogradConv conv(w, b, k.out, k.in, k.taps, k.dilation, 0.1f);
  std::vector<float> separate(res.size()), in_place = res;
  conv.run(x.data(), res.data(), separate.data(), 1, k.length);
  conv.run(x.data(), in_place.data(), in_place.data(), 1, k.length);
  EXPECT_EQ(separate, in_place);
}

TEST(WinogradConv, RefusesWhatItCannotRun) {
  const std::vector<float> w(2 * 2 * 4), b(2);
  EXPECT_THROW(WinogradConv(w, b, 2, 2, 4, 1, std::nullopt), Error);  // no F(4, 4)
  const std::vector<float> w3(2 * 2 * 3);
  EXPECT_THROW(WinogradConv(w3, b, 2, 2, 3, 0, std::nullopt), Error);  // dilation 0
  EXPECT_THROW(WinogradConv(w3, b, 2, 3, 3, 1, std::nullopt), Error);  // weight size
  const std::vector<float> b3(3);
  EXPECT_THROW(WinogradConv(w3, b3, 2, 2, 3, 1, std::nullopt), Error);  // bias size
}

}  // namespace
}  // namespace brisvox::piper
