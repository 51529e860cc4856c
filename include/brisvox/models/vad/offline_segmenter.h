// Speech segments from a whole recording's Silero VAD probabilities: silero-vad 6.2.1's
// get_speech_timestamps (src/silero_vad/utils_vad.py), re-implemented.
//
// The result is the same list of samples the Python function returns (return_seconds=False) for
// the same float32 probabilities, including its corner cases: the hysteresis between threshold
// and neg_threshold, the min-silence wait, the min-speech filter (applied to segments that end in
// silence or at the end of the audio, never to segments cut by max_speech_s), both ways of
// cutting over-long speech, the padding and merging pass, and the clamp of the last end to the
// audio length. tests/vad checks it against golden output of an independent JavaScript port
// (tools/reference/silero_reference.mjs).
//
// Version note: the max-speech logic changed within silero-vad 6.x. This follows 6.2.x (the
// logic of silero-vad PR #710, Oct 2025, kept by the later get_speech_timestamps_from_probs
// refactor): with use_max_poss_sil_at_max_speech the cut is at the longest pause seen and the
// candidates are then cleared; without it, silero-vad's original cut at the start of the last
// silence longer than min_silence_at_max_speech. The code between PR #664 and #710 (Aug-Oct
// 2025) cut at the last ended pause in that mode and gives other segments.
//
// The algorithm has a causal part (a state machine over the frames, SpeechTracker below: it
// finds raw, unpadded segments and decides which survive) and a final padding pass that looks at
// each segment's neighbours. StreamingSegmenter runs the same SpeechTracker frame by frame.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "brisvox/models/vad/segmenter_params.h"
#include "brisvox/models/vad/speech_segment.h"

namespace brisvox {

// Segments the probabilities of one recording. `probs[i]` is the speech probability of samples
// [i * window, (i + 1) * window) (window: 512 at 16000 Hz, 256 at 8000 Hz), the last frame
// zero-padded, so probs.size() must be ceil(num_audio_samples / window). Returns segments in
// order, non-overlapping, within [0, num_audio_samples].
//
// Throws Error(kInvalidArgument) for a rate other than 16000 or 8000, invalid params, a count of
// probabilities that does not match num_audio_samples, or a NaN probability.
std::vector<SpeechSegment> get_speech_timestamps(std::span<const float> probs,
                                                 std::int64_t num_audio_samples, int sample_rate_hz,
                                                 const SegmenterParams& params);

// A segment as the causal part of get_speech_timestamps closes it: not yet padded.
struct RawSpeechSegment {
  std::int64_t start_sample = 0;
  std::int64_t end_sample = 0;
  // False if the min-speech filter dropped it (it then appears in no output).
  bool kept = false;
};

// The frame-by-frame state machine of get_speech_timestamps, with constant-size state (the list
// of candidate pauses silero-vad keeps is reduced to the one it would pick). No allocation, no
// exceptions after construction. Not thread-safe; copyable.
class SpeechTracker {
 public:
  // What one frame did: closed 0, 1 or 2 segments (2 when a max-speech cut opens a continuation
  // that the same frame's silence closes at once, possible with min_silence_ms = 0).
  struct Step {
    std::array<RawSpeechSegment, 2> closed{};
    int num_closed = 0;
  };

  explicit SpeechTracker(const SegmenterSamples& limits) noexcept : limits_(limits) {}

  // Consumes the probability of the next frame.
  Step push(float prob) noexcept;

  // End of the audio: the open segment, if any, closed at num_audio_samples (kept if longer
  // than min_speech). The tracker is then reset.
  std::optional<RawSpeechSegment> finish(std::int64_t num_audio_samples) noexcept;

  void reset() noexcept;

  // Frames pushed since construction or the last reset()/finish().
  std::int64_t num_frames() const noexcept { return num_frames_; }
  // Whether a segment is open, and where it starts.
  bool in_speech() const noexcept { return triggered_; }
  std::int64_t open_start_sample() const noexcept { return start_; }
  // Inside an open segment: the first sample of the silence being waited out, or 0 if none.
  std::int64_t silence_start_sample() const noexcept { return temp_end_; }

  const SegmenterSamples& limits() const noexcept { return limits_; }

 private:
  SegmenterSamples limits_;
  std::int64_t num_frames_ = 0;
  bool triggered_ = false;
  std::int64_t start_ = 0;
  // silero-vad's temp_end, prev_end and next_start: 0 means "none", as there (no silence can
  // start at sample 0 inside speech, since speech cannot start before frame 0).
  std::int64_t temp_end_ = 0;
  std::int64_t prev_end_ = 0;
  std::int64_t next_start_ = 0;
  // The longest candidate pause seen in the open segment (the earliest among equals, as
  // Python's max() picks), used when use_max_poss_sil_at_max_speech is set.
  bool has_pause_ = false;
  std::int64_t pause_start_ = 0;
  std::int64_t pause_samples_ = 0;
};

// The padding pass of get_speech_timestamps between two consecutive kept segments: given the
// raw end of one and the raw start of the next, their padded end and start.
struct PaddedJoint {
  std::int64_t end_sample;
  std::int64_t next_start_sample;
};
PaddedJoint pad_between(std::int64_t raw_end, std::int64_t next_raw_start,
                        std::int64_t speech_pad_samples, std::int64_t num_audio_samples) noexcept;

}  // namespace brisvox
