#include "brisvox/models/vad/streaming_segmenter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "brisvox/error.h"

// How the streamed result stays equal to get_speech_timestamps.
//
// The offline algorithm is a causal state machine (SpeechTracker, shared with the offline code)
// followed by a padding pass in which a segment's start depends only on the previous kept
// segment's raw end, and its end only on the next kept segment's raw start (or, for the last
// one, on the audio length). So the events wait exactly for those facts:
//
// * A segment is emitted only once it is sure to be kept. The min-speech filter compares its
//   final raw end with its start; a lower bound on that end is the start of the silence being
//   waited out if there is one (the end can be no earlier), else the earliest end the stream
//   could still give it: a silence starting at the next window (window * frames), or the end of
//   the audio, which can be as early as one sample past the start of the last window pushed.
//   Segments closed by a max-speech cut are kept whatever their length.
// * The previous kept segment has always ended before the next one starts, so a start's padding
//   is known when the start is confirmed.
// * A pending end is certain once the next kept segment's start is known (confirmed), or once
//   that start is known to be at least 2 * pad away: every later segment starts at or after the
//   unconfirmed open segment's start if there is one, else at or after the next window. The plain
//   end + pad is only emitted early once it lies within the audio seen (so the clamp to the audio
//   length cannot change it); the last end otherwise waits for flush().
//
// Per-call bound on events (SegmentEvents::kCapacity): a window closes at most two segments (a
// max-speech cut, and the continuation it opens closed by the same window's silence when
// min_silence is 0), each closing emitting at most the previous end and its own start; the open
// segment's confirmation emits at most an end and a start; and one pending end may follow.
// Two closings leave no open segment, so the total is at most 5.

namespace brisvox {

void SegmentEvents::push_back(const SegmentEvent& event) noexcept {
  assert(size_ < kCapacity);
  if (size_ < kCapacity) events_[size_++] = event;
}

StreamingSegmenter::StreamingSegmenter(int sample_rate_hz, const SegmenterParams& params)
    : tracker_(SegmenterSamples::from(params, sample_rate_hz)) {}

void StreamingSegmenter::reset() noexcept {
  tracker_.reset();
  open_confirmed_ = false;
  has_pending_ = false;
  pending_start_ = pending_raw_end_ = 0;
  open_start_ = 0;
}

void StreamingSegmenter::confirm(std::int64_t raw_start, SegmentEvents& events) {
  const std::int64_t pad = tracker_.limits().speech_pad_samples;
  // With a next segment the clamp to the audio length never applies (the end stays below the
  // next start), so the length is not needed here.
  constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();
  // With no end pending this is the first segment, or the previous end went out early because
  // this start was known to be >= 2 * pad away: either way the plain padding.
  std::int64_t start = std::max<std::int64_t>(0, raw_start - pad);
  if (has_pending_) {
    const PaddedJoint joint = pad_between(pending_raw_end_, raw_start, pad, kUnbounded);
    events.push_back({SegmentEvent::Kind::kSpeechEnd, pending_start_, joint.end_sample});
    has_pending_ = false;
    start = joint.next_start_sample;
  }
  events.push_back({SegmentEvent::Kind::kSpeechStart, start, 0});
  open_start_ = start;
  open_confirmed_ = true;
}

void StreamingSegmenter::on_closed(const RawSpeechSegment& segment, SegmentEvents& events) {
  const bool confirmed = open_confirmed_;
  open_confirmed_ = false;    // whatever opens next (a continuation) is a new segment
  if (!segment.kept) return;  // dropped by min-speech: it was never confirmed, nothing to say
  if (!confirmed) confirm(segment.start_sample, events);
  open_confirmed_ = false;
  has_pending_ = true;
  pending_start_ = open_start_;
  pending_raw_end_ = segment.end_sample;
}

void StreamingSegmenter::try_confirm_open(SegmentEvents& events) {
  if (!tracker_.in_speech() || open_confirmed_) return;
  const SegmenterSamples& l = tracker_.limits();
  const std::int64_t start = tracker_.open_start_sample();
  const std::int64_t silence = tracker_.silence_start_sample();
  const std::int64_t earliest_end =
      silence != 0 ? silence : l.window_samples * (tracker_.num_frames() - 1) + 1;
  if (earliest_end - start > l.min_speech_samples) confirm(start, events);
}

void StreamingSegmenter::try_finish_pending(SegmentEvents& events) {
  if (!has_pending_) return;
  const SegmenterSamples& l = tracker_.limits();
  const std::int64_t frames = tracker_.num_frames();
  // The earliest raw start the next kept segment can have (an open segment here is unconfirmed:
  // confirming it would have finished the pending end).
  const std::int64_t next_start =
      tracker_.in_speech() ? tracker_.open_start_sample() : l.window_samples * frames;
  const std::int64_t end = pending_raw_end_ + l.speech_pad_samples;
  const std::int64_t audio_seen = l.window_samples * (frames - 1) + 1;  // a lower bound
  if (next_start - pending_raw_end_ >= 2 * l.speech_pad_samples && end <= audio_seen) {
    events.push_back({SegmentEvent::Kind::kSpeechEnd, pending_start_, end});
    has_pending_ = false;
  }
}

SegmentEvents StreamingSegmenter::push(float prob) {
  if (std::isnan(prob)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("StreamingSegmenter::push: probability of window {} is NaN",
                            tracker_.num_frames()));
  }
  SegmentEvents events;
  const SpeechTracker::Step step = tracker_.push(prob);
  for (int k = 0; k < step.num_closed; ++k) {
    on_closed(step.closed[static_cast<std::size_t>(k)], events);
  }
  try_confirm_open(events);
  try_finish_pending(events);
  return events;
}

SegmentEvents StreamingSegmenter::flush(std::int64_t num_audio_samples) {
  const std::int64_t window = tracker_.limits().window_samples;
  const std::int64_t frames = tracker_.num_frames();
  if (num_audio_samples < 0 || (num_audio_samples + window - 1) / window != frames) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("StreamingSegmenter::flush: {} samples do not match the {} windows "
                            "pushed: at {} samples per window they cover {} to {} samples",
                            num_audio_samples, frames, window,
                            frames == 0 ? 0 : window * (frames - 1) + 1, window * frames));
  }
  SegmentEvents events;
  if (const auto last = tracker_.finish(num_audio_samples)) on_closed(*last, events);
  if (has_pending_) {
    events.push_back(
        {SegmentEvent::Kind::kSpeechEnd, pending_start_,
         std::min(num_audio_samples, pending_raw_end_ + tracker_.limits().speech_pad_samples)});
  }
  reset();
  return events;
}

}  // namespace brisvox
