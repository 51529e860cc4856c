// Whisper's log-mel spectrogram: the input features of Whisper-encoder models such as Pipecat
// Smart Turn v3.
//
// The same numbers as transformers' WhisperFeatureExtractor (its numpy path, which Smart Turn
// uses) on 16 kHz float samples, to a few 1e-5: measured against tools/mel_reference.py, a float64
// numpy implementation, 1.0-1.6e-5 on speech and 3.2e-5 on a clipped sine (the difference is
// kissfft's float FFT). Cost: ~3.4 ms for Smart Turn's 8 s on one x86-64 core (800 frames).
//   1. STFT with a periodic Hann window of 400 samples (25 ms), hop 160 (10 ms), centred frames:
//      the signal is extended by 200 samples on each side by reflection (numpy's "reflect",
//      which excludes the edge sample and reflects again when the input is shorter than 201);
//   2. power spectrum |X|^2, 201 bins of 40 Hz;
//   3. 80 triangular mel filters over 0-8000 Hz, Slaney mel scale, Slaney area normalisation
//      (librosa.filters.mel(sr=16000, n_fft=400, n_mels=80));
//   4. log10(max(energy, 1e-10)); the STFT's last frame is dropped;
//   5. every value is floored at (the maximum over the whole input - 8), then mapped by
//      (x + 4) / 4.
// Step 5 depends on the whole input: features of a piece of a recording differ from the same
// frames computed over the whole recording.
//
// Output layout: [kNumMels, num_frames(n)] row-major float32 (mel-major, as the model takes it),
// num_frames(n) = n / 160: 800 frames for Smart Turn's 8 s (128000 samples).
// Short inputs: fewer than 160 samples give no frame (an empty output; transformers itself fails
// on them, and Smart Turn always pads to 128000 samples); 160..200 samples are reflected
// repeatedly, as numpy does. Nothing is zero-padded: pad before calling if the model wants a fixed
// length (Smart Turn: zeros on the left up to 8 s).
//
// The waveform is used as given: Whisper's optional zero-mean/unit-variance normalisation
// (`do_normalize`) is the caller's choice.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

struct kiss_fftr_state;  // kissfft's plan (kiss_fftr_cfg is `struct kiss_fftr_state*`).

namespace brisvox {

// Computes Whisper log-mel features.
//
// Everything (window, filterbank, FFT plan, the one-frame work buffers) is made by the
// constructor; compute() never allocates, whatever the input length: frames are read from the
// input directly (the reflected edges by index), and the intermediate log energies live in `out`.
//
// Move-only (a moved-from extractor may only be assigned to or destroyed). compute() uses the
// object's work buffers: one caller at a time per object; const members are safe from any thread.
class LogMelExtractor {
 public:
  static constexpr int kSampleRateHz = 16000;
  static constexpr std::size_t kFftSize = 400;               // window length, samples (25 ms)
  static constexpr std::size_t kHopSamples = 160;            // 10 ms
  static constexpr std::size_t kNumBins = kFftSize / 2 + 1;  // 201, 40 Hz apart
  static constexpr std::size_t kNumMels = 80;

  // Throws Error(kInternal) if kissfft cannot make its plan.
  LogMelExtractor();
  ~LogMelExtractor();
  LogMelExtractor(LogMelExtractor&&) noexcept;
  LogMelExtractor& operator=(LogMelExtractor&&) noexcept;
  LogMelExtractor(const LogMelExtractor&) = delete;
  LogMelExtractor& operator=(const LogMelExtractor&) = delete;

  // Frames of `num_samples` samples at 16 kHz: num_samples / 160 (rounded down).
  static constexpr std::size_t num_frames(std::size_t num_samples) noexcept {
    return num_samples / kHopSamples;
  }
  // Floats compute() writes: kNumMels * num_frames(num_samples).
  static constexpr std::size_t num_values(std::size_t num_samples) noexcept {
    return kNumMels * num_frames(num_samples);
  }

  // Writes the [kNumMels, num_frames(samples.size())] features of `samples` (16 kHz, finite) to
  // `out`. Never allocates on success.
  // Throws Error(kInvalidArgument) if out.size() != num_values(samples.size()), and
  // Error(kBadAudio) naming the first NaN or Inf sample (`out` is then unspecified).
  void compute(std::span<const float> samples, std::span<float> out);

  // The filterbank, [kNumMels, kNumBins] row-major (the weight of each power bin in each filter).
  std::span<const float> mel_filters() const noexcept { return filters_; }
  // The periodic Hann window, kFftSize samples.
  std::span<const float> window() const noexcept { return window_; }

 private:
  struct FftDeleter {
    void operator()(kiss_fftr_state* plan) const noexcept;
  };
  // The bins [first_bin, first_bin + num_bins) where a filter is non-zero.
  struct FilterSpan {
    std::size_t first_bin = 0;
    std::size_t num_bins = 0;
  };

  std::vector<float> window_;
  std::vector<float> filters_;
  std::vector<FilterSpan> spans_;
  std::unique_ptr<kiss_fftr_state, FftDeleter> fft_;
  std::vector<float> frame_;     // kFftSize windowed samples
  std::vector<float> spectrum_;  // kNumBins complex values, interleaved (kiss_fft_cpx)
  std::vector<double> power_;    // kNumBins
};

// The features of a whole recording (16 kHz): a LogMelExtractor made for one call.
// Throws as LogMelExtractor::compute().
std::vector<float> log_mel(std::span<const float> samples);

}  // namespace brisvox
