// Whisper's input features for one segment of audio: the 80-bin log-mel of audio/log_mel.h in the
// window the encoder takes.
//
// Exactly as faster-whisper prepares a segment of at most 30 s: the 16 kHz samples with 160 zero
// samples appended, log-mel over all of it (so the max - 8 floor is taken over the segment plus
// that last frame), the first samples / 160 frames kept ("content frames"), and the window
// filled up with zeros in the log-mel domain (faster-whisper's pad_or_trim of the features; not
// openai/whisper's 30 s of zero audio, which gives the padding frames the floor value instead).
//
// Windows:
//   kFull  full_frames() frames (3000 = 30 s): what Whisper was trained on, and what
//          faster-whisper runs; the parity tests use it.
//   kFit   the content frames rounded up to a multiple of fit_granularity_frames (default 100 =
//          1 s), at least fit_min_frames (default 1000 = 10 s) and at most full_frames():
//          whisper.cpp's audio_ctx, brisvox's "fit" window. A segment of up to 10 s then costs the
//          encoder a third of a full window's positions (less than a third of its time: attention
//          is quadratic) and the decoder attends to 500 positions, not 1500. The rounding keeps
//          the number of distinct window lengths small, so an engine can batch segments of similar
//          length. The minimum is what keeps Whisper, trained on 30 s windows, from repeating
//          itself: on the parity set tiny.en looped until the token limit on 22 of 79 utterances
//          with a 5 s minimum, 6 with 8 s, none with 10 s (docs/MODELS.md). The text may still
//          differ from kFull's (measured there too).
//
// compute() never allocates: its scratch is sized for max_samples at construction. Move-only;
// one caller at a time per object.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "brisvox/audio/log_mel.h"

namespace brisvox {

enum class WhisperWindow { kFull, kFit };
const char* to_string(WhisperWindow window);

class WhisperFeatures {
 public:
  static constexpr int kSampleRateHz = 16000;
  static constexpr int kMels = 80;
  static constexpr std::size_t kHopSamples = 160;

  static constexpr int kDefaultFitGranularityFrames = 100;
  static constexpr int kDefaultFitMinFrames = 1000;

  // full_frames: the model's full window (2 x n_audio_ctx; 3000). max_samples: the longest
  // segment compute() takes (0: a full window of audio, also the most it takes).
  // Throws Error(kInvalidArgument) for full_frames < 2 or odd, a granularity < 2 or odd, a
  // minimum that is not a multiple of it, or max_samples above a full window.
  explicit WhisperFeatures(int full_frames = 3000, int fit_granularity_frames = kDefaultFitGranularityFrames,
                           int fit_min_frames = kDefaultFitMinFrames, std::size_t max_samples = 0);

  int full_frames() const { return full_frames_; }
  int fit_granularity_frames() const { return fit_granularity_; }
  int fit_min_frames() const { return fit_min_; }
  std::size_t max_samples() const { return max_samples_; }

  // Frames faster-whisper treats as content for `samples` samples: samples / 160.
  static int content_frames(std::size_t samples) { return static_cast<int>(samples / kHopSamples); }
  // The window length (frames) for a segment of `content` frames.
  int window_frames(WhisperWindow window, int content) const;
  // The fit rule itself: content rounded up to `granularity`, at least `min` (clamped to `full`),
  // at most `full`.
  static int fit_frames(int content, int granularity, int min, int full);

  // Writes the [80, window_frames(window, content_frames(samples.size()))] features of `samples`
  // (16 kHz, finite, at most max_samples()) to the front of `out`; returns the window's frames.
  // Zero samples give the all-zero window (an empty segment: the caller should not encode it).
  // Throws Error(kInvalidArgument) if samples is longer than max_samples() or `out` is too small
  // (it needs kMels x window frames), Error(kBadAudio) naming the first NaN/Inf sample.
  int compute(std::span<const float> samples, WhisperWindow window, std::span<float> out);

  // The features of a whole recording of any length, as faster-whisper computes them before
  // cutting 30 s windows: [80, content_frames(n) + 1] (the extra frame is the appended zeros').
  // Allocates; for the offline path.
  static std::vector<float> whole_recording(std::span<const float> samples);
  // Copies frames [first, first + count) of `mel` ([80, total_frames]) into a zero-filled
  // [80, window_frames] window at `out`.
  static void cut_window(std::span<const float> mel, int total_frames, int first, int count,
                         int window_frames, std::span<float> out);

 private:
  int full_frames_;
  int fit_granularity_;
  int fit_min_;
  std::size_t max_samples_;
  LogMelExtractor mel_;
  std::vector<float> padded_;  // max_samples + 160
  std::vector<float> frames_;  // [80, max_samples / 160 + 1]
};

}  // namespace brisvox
