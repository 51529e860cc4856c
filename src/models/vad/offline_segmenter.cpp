#include "brisvox/models/vad/offline_segmenter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "brisvox/error.h"

namespace brisvox {

SpeechTracker::Step SpeechTracker::push(float prob) noexcept {
  Step step;
  const SegmenterSamples& l = limits_;
  // silero-vad compares the float32 probability, widened to a Python float, with double
  // thresholds: so does this.
  const double p = prob;
  const std::int64_t at = l.window_samples * num_frames_;
  ++num_frames_;
  auto close = [&step](std::int64_t start, std::int64_t end, bool kept) {
    step.closed[static_cast<std::size_t>(step.num_closed++)] = {start, end, kept};
  };
  auto clear_pending = [this] {
    prev_end_ = next_start_ = temp_end_ = 0;
    has_pause_ = false;
  };

  // Speech again after some silence: remember the pause as a possible cut point.
  if (p >= l.threshold && temp_end_ != 0) {
    const std::int64_t pause_samples = at - temp_end_;
    if (pause_samples > l.min_silence_at_max_speech_samples &&
        (!has_pause_ || pause_samples > pause_samples_)) {
      has_pause_ = true;
      pause_start_ = temp_end_;
      pause_samples_ = pause_samples;
    }
    temp_end_ = 0;
    if (next_start_ < prev_end_) next_start_ = at;
  }

  if (p >= l.threshold && !triggered_) {
    triggered_ = true;
    start_ = at;
    return step;
  }

  if (triggered_ && static_cast<double>(at - start_) > l.max_speech_samples) {
    if (l.use_max_poss_sil_at_max_speech && has_pause_) {
      // Cut at the longest pause; the rest of the speech continues from the pause's end.
      close(start_, pause_start_, true);
      const std::int64_t resume = pause_start_ + pause_samples_;
      // silero-vad's test (`next_start < prev_end + cur`): true unless the pause is as long as
      // the whole audio before it, which cannot happen inside an open segment.
      if (resume < pause_start_ + at) {
        start_ = resume;
      } else {
        triggered_ = false;
      }
      clear_pending();
    } else if (prev_end_ != 0) {
      // Legacy cut (use_max_poss_sil_at_max_speech off): at the start of the last pause longer
      // than min_silence_at_max_speech; continue from where speech resumed after it, or stop if
      // it has not.
      close(start_, prev_end_, true);
      if (next_start_ < prev_end_) {
        triggered_ = false;
      } else {
        start_ = next_start_;
      }
      clear_pending();
    } else {
      // No pause to cut at: cut here, and start again with the next speech frame.
      close(start_, at, true);
      triggered_ = false;
      clear_pending();
      return step;
    }
  }

  if (p < l.neg_threshold && triggered_) {
    if (temp_end_ == 0) temp_end_ = at;
    const std::int64_t silence_samples = at - temp_end_;
    if (!l.use_max_poss_sil_at_max_speech &&
        silence_samples > l.min_silence_at_max_speech_samples) {
      prev_end_ = temp_end_;
    }
    if (silence_samples >= l.min_silence_samples) {
      close(start_, temp_end_, temp_end_ - start_ > l.min_speech_samples);
      triggered_ = false;
      clear_pending();
    }
  }
  return step;
}

std::optional<RawSpeechSegment> SpeechTracker::finish(std::int64_t num_audio_samples) noexcept {
  std::optional<RawSpeechSegment> last;
  if (triggered_) {
    last = RawSpeechSegment{start_, num_audio_samples,
                            num_audio_samples - start_ > limits_.min_speech_samples};
  }
  reset();
  return last;
}

void SpeechTracker::reset() noexcept {
  num_frames_ = 0;
  triggered_ = false;
  start_ = temp_end_ = prev_end_ = next_start_ = 0;
  has_pause_ = false;
  pause_start_ = pause_samples_ = 0;
}

PaddedJoint pad_between(std::int64_t raw_end, std::int64_t next_raw_start,
                        std::int64_t speech_pad_samples, std::int64_t num_audio_samples) noexcept {
  const std::int64_t gap = next_raw_start - raw_end;
  if (gap < 2 * speech_pad_samples) {
    // Python's floor division; gaps between kept segments are never negative, but be exact.
    const std::int64_t half = gap >= 0 ? gap / 2 : -((-gap + 1) / 2);
    return {raw_end + half, std::max<std::int64_t>(0, next_raw_start - half)};
  }
  return {std::min(num_audio_samples, raw_end + speech_pad_samples),
          std::max<std::int64_t>(0, next_raw_start - speech_pad_samples)};
}

std::vector<SpeechSegment> get_speech_timestamps(std::span<const float> probs,
                                                 std::int64_t num_audio_samples, int sample_rate_hz,
                                                 const SegmenterParams& params) {
  const SegmenterSamples limits = SegmenterSamples::from(params, sample_rate_hz);
  const std::int64_t window = limits.window_samples;
  if (num_audio_samples < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("get_speech_timestamps: num_audio_samples is {}: it must be >= 0",
                            num_audio_samples));
  }
  const std::int64_t expected_frames = (num_audio_samples + window - 1) / window;
  if (static_cast<std::int64_t>(probs.size()) != expected_frames) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("get_speech_timestamps: {} probabilities for {} samples at {} Hz: "
                            "expected ceil({} / {}) = {}, one per {}-sample window, the last one "
                            "zero-padded",
                            probs.size(), num_audio_samples, sample_rate_hz, num_audio_samples,
                            window, expected_frames, window));
  }

  SpeechTracker tracker(limits);
  std::vector<RawSpeechSegment> kept;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (std::isnan(probs[i])) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("get_speech_timestamps: probability {} (samples {}..{}) is NaN", i,
                              static_cast<std::int64_t>(i) * window,
                              static_cast<std::int64_t>(i + 1) * window));
    }
    const SpeechTracker::Step step = tracker.push(probs[i]);
    for (int k = 0; k < step.num_closed; ++k) {
      if (step.closed[static_cast<std::size_t>(k)].kept) {
        kept.push_back(step.closed[static_cast<std::size_t>(k)]);
      }
    }
  }
  if (const auto last = tracker.finish(num_audio_samples); last && last->kept) {
    kept.push_back(*last);
  }

  // The padding pass: the first start and the last end get the plain pad (clamped to the
  // audio); every pair of neighbours shares its gap.
  std::vector<SpeechSegment> out(kept.size());
  const std::int64_t pad = limits.speech_pad_samples;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (i == 0) out[i].start_sample = std::max<std::int64_t>(0, kept[i].start_sample - pad);
    if (i + 1 < kept.size()) {
      const PaddedJoint joint =
          pad_between(kept[i].end_sample, kept[i + 1].start_sample, pad, num_audio_samples);
      out[i].end_sample = joint.end_sample;
      out[i + 1].start_sample = joint.next_start_sample;
    } else {
      out[i].end_sample = std::min(num_audio_samples, kept[i].end_sample + pad);
    }
  }
  return out;
}

}  // namespace brisvox
