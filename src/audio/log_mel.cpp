#include "brisvox/audio/log_mel.h"

#include <fmt/format.h>
#include <kiss_fftr.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>

#include "brisvox/error.h"

namespace brisvox {
namespace {

static_assert(sizeof(kiss_fft_cpx) == 2 * sizeof(float), "kissfft built for float samples");
static_assert(LogMelExtractor::kFftSize % 2 == 0, "kiss_fftr needs an even size");

constexpr double kMaxFrequencyHz = 8000.0;  // Whisper: the Nyquist frequency at 16 kHz
constexpr double kEnergyFloor = 1e-10;      // before log10
constexpr double kDynamicRange = 8.0;       // log10 units kept below the maximum (80 dB)
constexpr std::size_t kPadSamples = LogMelExtractor::kFftSize / 2;

// Slaney's mel scale (Auditory Toolbox, librosa's default): linear below 1 kHz at 200/3 Hz per
// mel, logarithmic above with 27 mels per factor 6.4.
constexpr double kHzPerMel = 200.0 / 3.0;
constexpr double kMinLogHz = 1000.0;
constexpr double kMinLogMel = kMinLogHz / kHzPerMel;  // 15
const double kLogStep = std::log(6.4) / 27.0;

double hz_to_mel(double hz) {
  return hz < kMinLogHz ? hz / kHzPerMel : kMinLogMel + std::log(hz / kMinLogHz) / kLogStep;
}

double mel_to_hz(double mel) {
  return mel < kMinLogMel ? mel * kHzPerMel : kMinLogHz * std::exp(kLogStep * (mel - kMinLogMel));
}

// Index into a signal of n >= 2 samples of position j (may be out of [0, n)) after numpy's
// "reflect" padding: mirror about the first and last samples without repeating them, again and
// again when the padding is longer than the signal (period 2 (n - 1)).
std::size_t reflect(std::ptrdiff_t j, std::size_t n) {
  const auto period = static_cast<std::ptrdiff_t>(2 * (n - 1));
  std::ptrdiff_t m = j % period;
  if (m < 0) m += period;
  if (m >= static_cast<std::ptrdiff_t>(n)) m = period - m;
  return static_cast<std::size_t>(m);
}

}  // namespace

void LogMelExtractor::FftDeleter::operator()(kiss_fftr_state* plan) const noexcept {
  kiss_fftr_free(plan);
}

LogMelExtractor::LogMelExtractor()
    : window_(kFftSize),
      filters_(kNumMels * kNumBins, 0.0f),
      spans_(kNumMels),
      frame_(kFftSize),
      spectrum_(2 * kNumBins),
      power_(kNumBins) {
  // Periodic Hann (the DFT-even window of torch.hann_window and transformers' default).
  for (std::size_t i = 0; i < kFftSize; ++i) {
    window_[i] = static_cast<float>(
        0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * static_cast<double>(i) / kFftSize));
  }
  // kNumMels triangles whose corners are equally spaced in mel from 0 to 8000 Hz; each one is
  // scaled to area 1 in Hz (Slaney normalisation: height 2 / width).
  const double max_mel = hz_to_mel(kMaxFrequencyHz);
  std::vector<double> edges_hz(kNumMels + 2);
  for (std::size_t i = 0; i < edges_hz.size(); ++i) {
    edges_hz[i] = mel_to_hz(max_mel * static_cast<double>(i) / (kNumMels + 1));
  }
  const double bin_hz = static_cast<double>(kSampleRateHz) / kFftSize;
  for (std::size_t m = 0; m < kNumMels; ++m) {
    const double lo = edges_hz[m];
    const double centre = edges_hz[m + 1];
    const double hi = edges_hz[m + 2];
    std::size_t first = kNumBins;
    std::size_t last = 0;
    for (std::size_t k = 0; k < kNumBins; ++k) {
      const double f = bin_hz * static_cast<double>(k);
      const double w = std::max(0.0, std::min((f - lo) / (centre - lo), (hi - f) / (hi - centre)));
      if (w <= 0.0) continue;
      filters_[m * kNumBins + k] = static_cast<float>(w * 2.0 / (hi - lo));
      first = std::min(first, k);
      last = k;
    }
    // At 80 mels and 40 Hz bins every filter holds at least one bin (the narrowest, 0-74 Hz,
    // holds the 40 Hz bin); tests check the bank against librosa's values.
    spans_[m] = first <= last ? FilterSpan{first, last - first + 1} : FilterSpan{};
  }
  fft_.reset(kiss_fftr_alloc(static_cast<int>(kFftSize), 0, nullptr, nullptr));
  if (!fft_)
    throw Error(ErrorCode::kInternal, "kissfft could not make a real FFT plan of size 400");
}

LogMelExtractor::~LogMelExtractor() = default;
LogMelExtractor::LogMelExtractor(LogMelExtractor&&) noexcept = default;
LogMelExtractor& LogMelExtractor::operator=(LogMelExtractor&&) noexcept = default;

void LogMelExtractor::compute(std::span<const float> samples, std::span<float> out) {
  const std::size_t n = samples.size();
  const std::size_t num_frames_out = num_frames(n);
  if (out.size() != kNumMels * num_frames_out) {
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("log-mel output holds {} floats; {} samples need {} ({} mels x {} frames)",
                    out.size(), n, kNumMels * num_frames_out, kNumMels, num_frames_out));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(samples[i])) {
      throw Error(ErrorCode::kBadAudio,
                  fmt::format("log-mel input sample {} ({:.3f} s) is {}", i,
                              static_cast<double>(i) / kSampleRateHz, samples[i]));
    }
  }
  if (num_frames_out == 0) return;  // n < 160 (so n >= 2 below, as reflect() needs)

  auto* spectrum = reinterpret_cast<kiss_fft_cpx*>(spectrum_.data());
  float max_log = -std::numeric_limits<float>::infinity();
  for (std::size_t t = 0; t < num_frames_out; ++t) {
    // Frame t covers padded samples [160 t, 160 t + 400), i.e. signal samples from 160 t - 200.
    const auto start =
        static_cast<std::ptrdiff_t>(t * kHopSamples) - static_cast<std::ptrdiff_t>(kPadSamples);
    if (start >= 0 && static_cast<std::size_t>(start) + kFftSize <= n) {
      const float* x = samples.data() + start;
      for (std::size_t i = 0; i < kFftSize; ++i) frame_[i] = x[i] * window_[i];
    } else {
      for (std::size_t i = 0; i < kFftSize; ++i) {
        frame_[i] = samples[reflect(start + static_cast<std::ptrdiff_t>(i), n)] * window_[i];
      }
    }
    kiss_fftr(fft_.get(), frame_.data(), spectrum);
    // Power and filtering in double: the reference is float64, and the quiet bins of a loud frame
    // (down to the 80 dB floor) should keep the FFT's float precision, not lose more here.
    for (std::size_t k = 0; k < kNumBins; ++k) {
      const double re = spectrum[k].r;
      const double im = spectrum[k].i;
      power_[k] = re * re + im * im;
    }
    for (std::size_t m = 0; m < kNumMels; ++m) {
      const float* w = filters_.data() + m * kNumBins;
      double energy = 0.0;
      const std::size_t end = spans_[m].first_bin + spans_[m].num_bins;
      for (std::size_t k = spans_[m].first_bin; k < end; ++k) energy += w[k] * power_[k];
      const auto value = static_cast<float>(std::log10(std::max(energy, kEnergyFloor)));
      out[m * num_frames_out + t] = value;
      max_log = std::max(max_log, value);
    }
  }
  const float min_log = max_log - static_cast<float>(kDynamicRange);
  for (float& v : out) v = (std::max(v, min_log) + 4.0f) / 4.0f;
}

std::vector<float> log_mel(std::span<const float> samples) {
  std::vector<float> out(LogMelExtractor::num_values(samples.size()));
  LogMelExtractor().compute(samples, out);
  return out;
}

}  // namespace brisvox
