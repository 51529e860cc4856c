#include "brisvox/models/vad/segmenter_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "brisvox/error.h"
#include "brisvox/models/vad/silero_rates.h"

namespace brisvox {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "segmenter: " + message);
}

void check_non_negative_ms(const char* name, int value_ms) {
  if (value_ms < 0) {
    invalid(fmt::format("{} is {}: it must be >= 0 milliseconds", name, value_ms));
  }
}

}  // namespace

void SegmenterParams::validate() const {
  if (!(threshold >= 0.0 && threshold <= 1.0)) {
    invalid(fmt::format("threshold is {}: it must be a probability in [0, 1] (default 0.5)",
                        threshold));
  }
  if (std::isnan(neg_threshold)) {
    invalid(
        "neg_threshold is NaN: give a value in [0, threshold], or a negative value for the "
        "default max(threshold - 0.15, 0.01)");
  }
  if (neg_threshold > threshold) {
    invalid(
        fmt::format("neg_threshold ({}) is above threshold ({}): the exit threshold must not "
                    "exceed the entry threshold; give a value in [0, {}], or a negative value "
                    "for the default max(threshold - 0.15, 0.01)",
                    neg_threshold, threshold, threshold));
  }
  check_non_negative_ms("min_speech_ms", min_speech_ms);
  if (!(max_speech_s > 0.0)) {
    invalid(
        fmt::format("max_speech_s is {}: it must be > 0 seconds (infinity, the default, never "
                    "cuts speech)",
                    max_speech_s));
  }
  check_non_negative_ms("min_silence_ms", min_silence_ms);
  check_non_negative_ms("speech_pad_ms", speech_pad_ms);
  check_non_negative_ms("min_silence_at_max_speech_ms", min_silence_at_max_speech_ms);
}

double SegmenterParams::effective_neg_threshold() const {
  if (neg_threshold >= 0.0) return neg_threshold;
  // Computed in double exactly as silero-vad does: 0.5 - 0.15 is 0.35000000000000003. Capped at
  // threshold (silero-vad does not cap): below threshold 0.01 its floor of 0.01 would make a
  // frame speech and silence at once, and a max-speech cut then yields an empty segment
  // [s, s) (found by fuzz/streaming_segmenter_fuzzer).
  return std::min(std::max(threshold - 0.15, 0.01), threshold);
}

SegmenterSamples SegmenterSamples::from(const SegmenterParams& params, int sample_rate_hz) {
  params.validate();
  SegmenterSamples s;
  s.sample_rate_hz = sample_rate_hz;
  s.window_samples = silero_chunk_samples(sample_rate_hz);
  s.threshold = params.threshold;
  s.neg_threshold = params.effective_neg_threshold();
  // rate / 1000 is a whole number (8 or 16), so these equal silero-vad's `rate * ms / 1000`.
  const std::int64_t samples_per_ms = sample_rate_hz / 1000;
  s.min_speech_samples = samples_per_ms * params.min_speech_ms;
  s.min_silence_samples = samples_per_ms * params.min_silence_ms;
  s.speech_pad_samples = samples_per_ms * params.speech_pad_ms;
  s.min_silence_at_max_speech_samples = samples_per_ms * params.min_silence_at_max_speech_ms;
  // Same operations in the same order as silero-vad, so the same double results.
  s.max_speech_samples = static_cast<double>(sample_rate_hz) * params.max_speech_s -
                         static_cast<double>(s.window_samples) -
                         2.0 * static_cast<double>(s.speech_pad_samples);
  s.use_max_poss_sil_at_max_speech = params.use_max_poss_sil_at_max_speech;
  return s;
}

}  // namespace brisvox
