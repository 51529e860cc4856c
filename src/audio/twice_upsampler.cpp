#include "twice_upsampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "brisvox/error.h"

namespace brisvox::audio_detail {
namespace {

constexpr std::size_t K = TwiceUpsampler::kHalfTaps;
// Odd outputs are computed this many at a time, in fixed-length loops the compiler vectorises;
// the buffer keeps this much slack after its samples for the last, partial block.
constexpr std::size_t kBlock = 16;
// Kaiser window shape: with 24 taps a side, 82.8 dB of image rejection and +-0.0006 dB of
// passband ripple up to 0.425 of the input rate (the design is in docs/TELEPHONY.md).
constexpr double kKaiserBeta = 8.0;

double kaiser(double x, double half_width) {
  const double r = x / half_width;
  return std::cyl_bessel_i(0.0, kKaiserBeta * std::sqrt(std::max(0.0, 1.0 - r * r))) /
         std::cyl_bessel_i(0.0, kKaiserBeta);
}

}  // namespace

TwiceUpsampler::TwiceUpsampler() : buffer_((K - 1) + K + std::max(kPiece, K) + kBlock, 0.0f) {
  // The ideal interpolator at half a sample (sinc at d - 1/2) under a Kaiser window, scaled so
  // that a constant stays constant.
  double sum = 0;
  std::array<double, K> w{};
  for (std::size_t d = 1; d <= K; ++d) {
    const double x = static_cast<double>(d) - 0.5;
    w[d - 1] = std::sin(M_PI * x) / (M_PI * x) * kaiser(x, static_cast<double>(K));
    sum += 2 * w[d - 1];
  }
  for (std::size_t d = 0; d < K; ++d) weights_[d] = static_cast<float>(w[d] / sum);
}

void TwiceUpsampler::reset() {
  std::fill(buffer_.begin(), buffer_.end(), 0.0f);
  filled_ = 0;
  owed_ = 0;
}

// Writes the outputs of the first `num_ready` owed samples (each has its look-ahead in the buffer)
// and drops them from the buffer, keeping the K - 1 before the next owed one.
std::size_t TwiceUpsampler::emit(std::size_t num_ready, std::span<float> out) {
  const float* x = buffer_.data() + (K - 1);  // x[i]: owed sample i; x[i - K + 1 .. i + K] are valid
  for (std::size_t b = 0; b < num_ready; b += kBlock) {
    float acc[kBlock] = {};
    for (std::size_t d = 1; d <= K; ++d) {
      const float w = weights_[d - 1];
      const float* before = x + b + 1 - d;
      const float* after = x + b + d;
      for (std::size_t j = 0; j < kBlock; ++j) acc[j] += w * (before[j] + after[j]);
    }
    const std::size_t n = std::min(kBlock, num_ready - b);
    for (std::size_t j = 0; j < n; ++j) {
      out[2 * (b + j)] = x[b + j];
      out[2 * (b + j) + 1] = acc[j];
    }
  }
  const std::size_t keep = (K - 1) + filled_ - num_ready;
  std::memmove(buffer_.data(), buffer_.data() + num_ready, keep * sizeof(float));
  filled_ -= num_ready;
  owed_ -= num_ready;
  return 2 * num_ready;
}

std::size_t TwiceUpsampler::process(std::span<const float> in, std::span<float> out) {
  if (out.size() < 2 * in.size()) {
    throw Error(ErrorCode::kInternal,
                fmt::format("TwiceUpsampler::process: {} input samples need {} of output, got {}", in.size(),
                            2 * in.size(), out.size()));
  }
  std::size_t written = 0;
  for (std::size_t pos = 0; pos < in.size(); pos += kPiece) {
    const std::size_t n = std::min(kPiece, in.size() - pos);
    std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(pos), n,
                buffer_.begin() + static_cast<std::ptrdiff_t>((K - 1) + filled_));
    filled_ += n;
    owed_ += n;
    // Owed samples at most K before: every call leaves at most K owed, the rest is written.
    written += emit(owed_ > K ? owed_ - K : 0, out.subspan(written));
  }
  return written;
}

std::size_t TwiceUpsampler::flush(std::span<float> out) {
  if (filled_ == owed_ && owed_ > 0) {  // the stream's end: silence after it, once
    std::fill_n(buffer_.begin() + static_cast<std::ptrdiff_t>((K - 1) + filled_), K, 0.0f);
    filled_ += K;
  }
  return emit(std::min(owed_, out.size() / 2), out);
}

}  // namespace brisvox::audio_detail
