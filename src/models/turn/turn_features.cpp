#include "brisvox/models/turn/turn_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <numbers>
#include <vector>

#include "brisvox/error.h"
#include "brisvox/models/turn/smart_turn.h"

namespace brisvox {
namespace {

using Complex = std::complex<double>;

// a * b without std::complex's NaN/Inf recovery (a library call per product in GCC); the inputs
// are finite.
inline Complex mul(Complex a, Complex b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

constexpr std::size_t kWindow = kTurnWindowSamples;  // 128000
constexpr std::size_t kFft = 400;                    // n_fft: 25 ms
constexpr std::size_t kHop = 160;                    // 10 ms
constexpr std::size_t kPad = kFft / 2;               // centred frames: 200 reflected samples each side
constexpr std::size_t kBins = kFft / 2 + 1;          // 201
constexpr std::size_t kMels = kTurnMels;             // 80
constexpr std::size_t kFrames = kTurnFrames;         // 800 (the STFT's 801st is dropped)
constexpr std::size_t kHalf = kFft / 2;              // the real FFT as a complex FFT of 200

// numpy's float32 add.reduce (FLOAT_pairwise_sum, numpy/_core/src/umath/loops_utils.h.src): eight
// accumulators over blocks of at most 128, halves split at multiples of 8. The order matters: the
// mean and variance must round exactly as numpy's do.
float pairwise_sum(const float* a, std::size_t n) {
  if (n < 8) {
    float res = 0.0f;
    for (std::size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (int k = 0; k < 8; ++k) r[k] = a[k];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (std::size_t k = 0; k < 8; ++k) r[k] += a[i + k];
    }
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

// The Slaney mel scale as Pipecat's _whisper_features.py writes it.
double hz_to_mel(double hz) {
  if (hz < 1000.0) return 3.0 * hz / 200.0;
  return 15.0 + std::log(hz / 1000.0) * (27.0 / std::log(6.4));
}
double mel_to_hz(double mel) {
  if (mel < 15.0) return 200.0 * mel / 3.0;
  return 1000.0 * std::exp((std::log(6.4) / 27.0) * (mel - 15.0));
}

// A complex FFT of a fixed size, radix 4 / 2 / generic (kissfft's recursive decimation in time),
// in double. 200 = 4 x 2 x 5 x 5.
class ComplexFft {
 public:
  explicit ComplexFft(std::size_t n) : n_(n), twiddles_(n) {
    for (std::size_t i = 0; i < n; ++i) {
      twiddles_[i] = std::polar(1.0, -2.0 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(n));
    }
    std::size_t rest = n;
    for (std::size_t p : {4u, 2u, 3u, 5u}) {
      while (rest % p == 0) {
        rest /= p;
        factors_.push_back(p);
        factors_.push_back(rest);
      }
    }
    if (rest != 1) throw Error(ErrorCode::kInternal, fmt::format("ComplexFft: {} has a prime factor above 5", n));
  }

  // out[k] = sum_j in[j] exp(-2 pi i j k / n). `in` and `out` hold n values and must not overlap.
  void run(const Complex* in, Complex* out) const { work(out, in, 1, factors_.data()); }

 private:
  void work(Complex* out, const Complex* in, std::size_t fstride, const std::size_t* factors) const {
    const std::size_t p = factors[0];
    const std::size_t m = factors[1];
    if (m == 1) {
      for (std::size_t i = 0; i < p; ++i) out[i] = in[i * fstride];
    } else {
      for (std::size_t i = 0; i < p; ++i) work(out + i * m, in + i * fstride, fstride * p, factors + 2);
    }
    // The butterflies of radix p over the p sub-transforms of length m.
    Complex scratch[5];
    for (std::size_t u = 0; u < m; ++u) {
      for (std::size_t q = 0; q < p; ++q) scratch[q] = out[u + q * m];
      for (std::size_t q1 = 0; q1 < p; ++q1) {
        const std::size_t k = u + q1 * m;
        Complex sum = scratch[0];
        std::size_t tw = 0;
        for (std::size_t q = 1; q < p; ++q) {
          tw += fstride * k;
          if (tw >= n_) tw %= n_;
          sum += mul(scratch[q], twiddles_[tw]);
        }
        out[k] = sum;
      }
    }
  }

  std::size_t n_;
  std::vector<Complex> twiddles_;
  std::vector<std::size_t> factors_;  // (radix, remaining length) pairs
};

}  // namespace

struct TurnFeatures::Impl {
  std::vector<float> window = std::vector<float>(kWindow);    // the turn, left-padded, then normalised
  std::vector<float> squares = std::vector<float>(kWindow);   // (x - mean)^2, for the variance
  std::vector<double> padded = std::vector<double>(kWindow + 2 * kPad);
  std::vector<double> hann = std::vector<double>(kFft);
  std::vector<double> filters = std::vector<double>(kMels * kBins);  // [mel][bin]
  std::vector<std::size_t> first_bin = std::vector<std::size_t>(kMels);
  std::vector<std::size_t> end_bin = std::vector<std::size_t>(kMels);
  std::vector<Complex> post = std::vector<Complex>(kHalf + 1);  // exp(-2 pi i k / 400)
  ComplexFft fft{kHalf};
  std::vector<Complex> packed = std::vector<Complex>(kHalf);
  std::vector<Complex> spectrum = std::vector<Complex>(kHalf);
  std::vector<double> power = std::vector<double>(kBins);
  std::vector<double> logs = std::vector<double>(kMels * kFrames);  // [mel][frame]

  Impl() {
    // np.hanning(401)[:-1], numpy's formula: 0.5 + 0.5 cos(pi n / 400), n = -400, -398, ...
    for (std::size_t i = 0; i < kFft; ++i) {
      const double n = 2.0 * static_cast<double>(i) - 400.0;
      hann[i] = 0.5 + 0.5 * std::cos(std::numbers::pi * n / 400.0);
    }
    // _build_mel_filterbank(201, 80, 0, 8000, 16000): triangles between mel-spaced corners
    // (np.linspace over mels), Slaney area normalisation.
    const double mel_max = hz_to_mel(8000.0);
    std::vector<double> corners(kMels + 2);
    const double step = mel_max / static_cast<double>(kMels + 1);
    for (std::size_t i = 0; i < corners.size(); ++i) corners[i] = mel_to_hz(static_cast<double>(i) * step);
    corners.back() = mel_to_hz(mel_max);
    for (std::size_t m = 0; m < kMels; ++m) {
      first_bin[m] = kBins;
      end_bin[m] = 0;
      const double enorm = 2.0 / (corners[m + 2] - corners[m]);
      for (std::size_t k = 0; k < kBins; ++k) {
        const double f = 40.0 * static_cast<double>(k);
        const double down = -(corners[m] - f) / (corners[m + 1] - corners[m]);
        const double up = (corners[m + 2] - f) / (corners[m + 2] - corners[m + 1]);
        const double w = std::max(0.0, std::min(down, up)) * enorm;
        filters[m * kBins + k] = w;
        if (w > 0.0) {
          first_bin[m] = std::min(first_bin[m], k);
          end_bin[m] = k + 1;
        }
      }
      if (end_bin[m] == 0) first_bin[m] = 0;
    }
    for (std::size_t k = 0; k <= kHalf; ++k) {
      post[k] = std::polar(1.0, -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(kFft));
    }
  }

  // The power spectrum of one windowed frame (400 real samples) through a complex FFT of 200:
  // z[j] = x[2j] + i x[2j+1]; X[k] = E[k] + W^k O[k], E/O from Z[k] and conj(Z[200-k]).
  void frame_power(const double* x) {
    for (std::size_t j = 0; j < kHalf; ++j) packed[j] = Complex(x[2 * j] * hann[2 * j], x[2 * j + 1] * hann[2 * j + 1]);
    fft.run(packed.data(), spectrum.data());
    for (std::size_t k = 0; k <= kHalf; ++k) {
      const Complex zk = spectrum[k % kHalf];
      const Complex zc = std::conj(spectrum[(kHalf - k) % kHalf]);
      const Complex even((zk.real() + zc.real()) * 0.5, (zk.imag() + zc.imag()) * 0.5);
      const Complex diff = zk - zc;
      const Complex odd(0.5 * diff.imag(), -0.5 * diff.real());  // -i/2 (zk - zc)
      const Complex v = even + mul(post[k], odd);
      power[k] = v.real() * v.real() + v.imag() * v.imag();
    }
  }
};

TurnFeatures::TurnFeatures() : impl_(std::make_unique<Impl>()) {}
TurnFeatures::~TurnFeatures() = default;
TurnFeatures::TurnFeatures(TurnFeatures&&) noexcept = default;
TurnFeatures& TurnFeatures::operator=(TurnFeatures&&) noexcept = default;

void TurnFeatures::compute(std::span<const float> audio, std::span<float> out) {
  if (out.size() != static_cast<std::size_t>(kTurnFeatureValues)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("TurnFeatures::compute: output holds {} values, expected {} ([80, 800])", out.size(),
                            kTurnFeatureValues));
  }
  Impl& s = *impl_;
  std::vector<float>& x = s.window;
  const std::size_t n = std::min(audio.size(), kWindow);
  const std::size_t pad = kWindow - n;
  std::fill(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(pad), 0.0f);
  std::copy(audio.end() - static_cast<std::ptrdiff_t>(n), audio.end(), x.begin() + static_cast<std::ptrdiff_t>(pad));

  // (x - x.mean()) / np.sqrt(x.var() + 1e-7), all float32 as numpy computes it: the sums pairwise,
  // each divided by the count in double (numpy divides the float32 sum by an intp) and rounded.
  const float mean = static_cast<float>(static_cast<double>(pairwise_sum(x.data(), kWindow)) / static_cast<double>(kWindow));
  for (std::size_t i = 0; i < kWindow; ++i) {
    const float d = x[i] - mean;
    s.squares[i] = d * d;
  }
  const float var =
      static_cast<float>(static_cast<double>(pairwise_sum(s.squares.data(), kWindow)) / static_cast<double>(kWindow));
  if (!std::isfinite(var) || !std::isfinite(mean)) throw Error(ErrorCode::kBadAudio, "turn audio holds NaN or Inf samples");
  const float denom = std::sqrt(var + 1e-7f);
  for (float& v : x) v = (v - mean) / denom;

  // Reflect-padded (numpy's "reflect": the edge sample is not repeated), in double.
  for (std::size_t j = 0; j < s.padded.size(); ++j) {
    const auto i = static_cast<std::ptrdiff_t>(j) - static_cast<std::ptrdiff_t>(kPad);
    const auto last = static_cast<std::ptrdiff_t>(kWindow) - 1;
    const std::ptrdiff_t r = i < 0 ? -i : (i > last ? 2 * last - i : i);
    s.padded[j] = static_cast<double>(x[static_cast<std::size_t>(r)]);
  }
  double max_log = -std::numeric_limits<double>::infinity();
  for (std::size_t t = 0; t < kFrames; ++t) {
    s.frame_power(s.padded.data() + t * kHop);
    for (std::size_t m = 0; m < kMels; ++m) {
      const double* w = s.filters.data() + m * kBins;
      double energy = 0.0;
      for (std::size_t k = s.first_bin[m]; k < s.end_bin[m]; ++k) energy += w[k] * s.power[k];
      const double v = std::log10(std::max(1e-10, energy));
      s.logs[m * kFrames + t] = v;
      max_log = std::max(max_log, v);
    }
  }
  const double floor = max_log - 8.0;
  for (std::size_t i = 0; i < s.logs.size(); ++i) out[i] = static_cast<float>((std::max(s.logs[i], floor) + 4.0) / 4.0);
}

}  // namespace brisvox
