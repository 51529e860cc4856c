#include "brisvox/models/stt/whisper_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "brisvox/error.h"

namespace brisvox {

const char* to_string(WhisperWindow window) {
  return window == WhisperWindow::kFull ? "full" : "fit";
}

WhisperFeatures::WhisperFeatures(int full_frames, int fit_granularity_frames, int fit_min_frames,
                                 std::size_t max_samples)
    : full_frames_(full_frames), fit_granularity_(fit_granularity_frames), fit_min_(fit_min_frames) {
  if (full_frames < 2 || full_frames % 2 != 0) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper full window must be an even number of frames, got {}", full_frames));
  }
  if (fit_granularity_frames < 2 || fit_granularity_frames % 2 != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper fit granularity must be an even number of frames, got {}", fit_granularity_frames));
  }
  if (fit_min_frames < 0 || fit_min_frames % fit_granularity_frames != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper fit minimum must be a multiple of the granularity ({} frames), got {}",
                            fit_granularity_frames, fit_min_frames));
  }
  const std::size_t full_samples = static_cast<std::size_t>(full_frames) * kHopSamples;
  if (max_samples > full_samples) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("WhisperFeatures: max_samples {} exceeds a full window ({} samples); cut longer audio "
                            "into windows (WhisperFeatures::whole_recording + cut_window)",
                            max_samples, full_samples));
  }
  max_samples_ = max_samples == 0 ? full_samples : max_samples;
  padded_.assign(max_samples_ + kHopSamples, 0.0f);
  frames_.assign(LogMelExtractor::num_values(max_samples_ + kHopSamples), 0.0f);
}

int WhisperFeatures::fit_frames(int content, int granularity, int min, int full) {
  const int rounded = (std::max(content, 1) + granularity - 1) / granularity * granularity;
  return std::min(std::max(rounded, min), full);
}

int WhisperFeatures::window_frames(WhisperWindow window, int content) const {
  return window == WhisperWindow::kFull ? full_frames_ : fit_frames(content, fit_granularity_, fit_min_, full_frames_);
}

int WhisperFeatures::compute(std::span<const float> samples, WhisperWindow window, std::span<float> out) {
  const std::size_t n = samples.size();
  if (n > max_samples_) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper segment of {} samples ({:.2f} s) exceeds this extractor's {} samples", n,
                            static_cast<double>(n) / kSampleRateHz, max_samples_));
  }
  const int content = std::min(content_frames(n), full_frames_);
  const int frames = window_frames(window, content);
  const std::size_t needed = static_cast<std::size_t>(kMels) * static_cast<std::size_t>(frames);
  if (out.size() < needed) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper features need {} floats ({} mels x {} frames), the buffer holds {}", needed, kMels,
                            frames, out.size()));
  }
  std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(needed), 0.0f);
  if (n == 0) return frames;
  // faster-whisper appends 160 zero samples before the STFT (FeatureExtractor's padding=160).
  std::copy(samples.begin(), samples.end(), padded_.begin());
  std::fill(padded_.begin() + static_cast<std::ptrdiff_t>(n), padded_.begin() + static_cast<std::ptrdiff_t>(n + kHopSamples), 0.0f);
  const std::size_t total = n / kHopSamples + 1;  // = LogMelExtractor::num_frames(n + 160)
  mel_.compute(std::span<const float>(padded_.data(), n + kHopSamples),
               std::span<float>(frames_.data(), static_cast<std::size_t>(kMels) * total));
  for (std::size_t m = 0; m < static_cast<std::size_t>(kMels); ++m) {
    std::memcpy(out.data() + m * static_cast<std::size_t>(frames), frames_.data() + m * total,
                static_cast<std::size_t>(content) * sizeof(float));
  }
  return frames;
}

std::vector<float> WhisperFeatures::whole_recording(std::span<const float> samples) {
  std::vector<float> padded(samples.size() + kHopSamples, 0.0f);
  std::copy(samples.begin(), samples.end(), padded.begin());
  return log_mel(padded);
}

void WhisperFeatures::cut_window(std::span<const float> mel, int total_frames, int first, int count, int window_frames,
                                 std::span<float> out) {
  const auto total = static_cast<std::size_t>(total_frames);
  const auto wf = static_cast<std::size_t>(window_frames);
  if (first < 0 || count < 0 || count > window_frames || static_cast<std::size_t>(first + count) > total ||
      mel.size() < static_cast<std::size_t>(kMels) * total || out.size() < static_cast<std::size_t>(kMels) * wf) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper cut_window: frames [{}, {}) of {} into a window of {}", first, first + count,
                            total_frames, window_frames));
  }
  std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(kMels * wf), 0.0f);
  for (std::size_t m = 0; m < static_cast<std::size_t>(kMels); ++m) {
    std::memcpy(out.data() + m * wf, mel.data() + m * total + static_cast<std::size_t>(first),
                static_cast<std::size_t>(count) * sizeof(float));
  }
}

}  // namespace brisvox
