// Speech segments of a live stream, one Silero VAD probability at a time, with the same result
// as get_speech_timestamps on the whole recording.
//
// Contract. Push the probability of every window (512 samples at 16 kHz, 256 at 8 kHz) in
// order, then flush() with the stream's length in samples. The events emitted over the stream,
// start/end pairs taken in order, are exactly the segments get_speech_timestamps returns for the
// same probabilities, length and params: the same samples, including min-speech drops, both
// max-speech cuts, merged padding between close neighbours and the last end's clamp to the
// audio length. tests/vad checks this on every golden case and on random sequences.
//
// Events. kSpeechStart carries a segment's final (padded) start; kSpeechEnd carries its start
// and final end. Each is emitted once, as soon as its value is certain, never revised: a start
// is never retracted, so it is only emitted once the segment is sure to survive the min-speech
// filter. Over the stream the events alternate start, end, start, end...; segments are in order
// and do not overlap. An end never precedes the start it closes, even within one call.
//
// Latency (d = when the event is emitted, as the number of samples pushed so far, i.e. the end
// of the last window pushed; s, e = the raw, unpadded start and end of the segment; W = window;
// m = min_speech, q = min_silence, p = speech_pad, all in samples; ceil to whole windows):
//   speech_start: d = s + (ceil(m / W) + 1) * W when the speech runs on: m plus one window
//     after the raw start (default params: 4608 samples = 288 ms after s, 318 ms after the padded
//     start s - p). It comes later only when a pause inside those first m samples leaves the
//     segment's survival open; the segment then either resumes (and is confirmed as above) or
//     ends and is dropped, emitting nothing. With min_speech_ms = 0 the start is emitted on the
//     very window that starts the speech.
//   speech_end after silence: the min-silence wait of the algorithm itself,
//     d = e + (ceil(q / W) + 1) * W (default params: 2560 samples = 160 ms after e, 130 ms after
//     the padded end e + p), provided (ceil(q / W) + 1) * W >= 2p and ceil(q / W) * W >= p - 1,
//     which holds for the defaults and whenever min_silence_ms >= 2 * speech_pad_ms. Otherwise
//     the end waits until the next segment is known: until d >= max(e + 2p, e + p + W - 1) with
//     no segment started before e + 2p, or until the next segment's start is emitted (the end
//     comes just before it, in the same call), or flush().
//   speech_end of a max-speech cut at a pause (the pause is longer than
//     min_silence_at_max_speech and the speech resumed after it): on the cut's window if the
//     pause is at least 2p long (default params: always, 1568 > 960 samples). After a hard cut
//     (no such pause) with speech running on, the next segment starts one window after the cut,
//     so the two share the gap's padding: the end is emitted together with the next start, about
//     m + W after the cut.
//   The last segment's end: at flush() if e + p reaches past the audio pushed.
// A consumer that forwards a segment's audio must keep p + (ceil(m / W) + 1) * W samples behind
// the live edge (5088 at 16 kHz with default params) to still hold the start when it is emitted.
//
// Cost: push() is O(1), allocates nothing and never throws (except on a NaN probability);
// per-stream state is a few dozen bytes and never grows with the audio. Not thread-safe: one
// caller at a time per stream. Copyable (a copy is an independent stream).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "brisvox/models/vad/offline_segmenter.h"
#include "brisvox/models/vad/segmenter_params.h"

namespace brisvox {

struct SegmentEvent {
  enum class Kind : std::uint8_t { kSpeechStart, kSpeechEnd };
  Kind kind = Kind::kSpeechStart;
  std::int64_t start_sample = 0;  // the segment's final start
  std::int64_t end_sample = 0;    // kSpeechEnd: the segment's final end; kSpeechStart: 0

  friend bool operator==(const SegmentEvent&, const SegmentEvent&) = default;
};

// The events of one push() or flush(), in order. Fixed capacity, no allocation: one call emits
// at most kCapacity events (the bound: it closes at most two segments and confirms at most one
// open one; see streaming_segmenter.cpp).
class SegmentEvents {
 public:
  static constexpr std::size_t kCapacity = 6;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const SegmentEvent& operator[](std::size_t i) const noexcept { return events_[i]; }
  const SegmentEvent* begin() const noexcept { return events_.data(); }
  const SegmentEvent* end() const noexcept { return events_.data() + size_; }

  void clear() noexcept { size_ = 0; }
  // Appends; the segmenter never exceeds kCapacity (checked in debug builds).
  void push_back(const SegmentEvent& event) noexcept;

 private:
  std::array<SegmentEvent, kCapacity> events_{};
  std::size_t size_ = 0;
};

class StreamingSegmenter {
 public:
  // Throws Error(kInvalidArgument) for a rate other than 16000/8000 or invalid params.
  StreamingSegmenter(int sample_rate_hz, const SegmenterParams& params);

  // The probability of the next window. Returns the events it made certain. Throws
  // Error(kInvalidArgument) on a NaN probability (the state is then unchanged).
  SegmentEvents push(float prob);

  // End of the stream: `num_audio_samples` is its length, which must be covered by the windows
  // pushed (ceil(num_audio_samples / window) == number of pushes, the last window zero-padded;
  // Error kInvalidArgument otherwise, state unchanged). Emits everything still pending, then
  // resets the segmenter for a new stream.
  SegmentEvents flush(std::int64_t num_audio_samples);

  // Forgets the stream: back to the state after construction, nothing emitted.
  void reset() noexcept;

  int sample_rate_hz() const noexcept { return tracker_.limits().sample_rate_hz; }
  int window_samples() const noexcept { return static_cast<int>(tracker_.limits().window_samples); }
  // Windows pushed since construction, the last flush() or reset().
  std::int64_t num_frames() const noexcept { return tracker_.num_frames(); }

 private:
  void on_closed(const RawSpeechSegment& segment, SegmentEvents& events);
  void confirm(std::int64_t raw_start, SegmentEvents& events);
  void try_confirm_open(SegmentEvents& events);
  void try_finish_pending(SegmentEvents& events);

  SpeechTracker tracker_;
  // The open segment's start has been emitted (it is sure to be kept).
  bool open_confirmed_ = false;
  // A kept, closed segment whose end is not emitted yet (it depends on the next segment, and the
  // next segment's start on it).
  bool has_pending_ = false;
  std::int64_t pending_start_ = 0;    // final start, emitted
  std::int64_t pending_raw_end_ = 0;  // raw end
  // Final start of the open segment once confirmed.
  std::int64_t open_start_ = 0;
};

}  // namespace brisvox
