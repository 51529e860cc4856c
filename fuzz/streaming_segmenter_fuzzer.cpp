// The VAD segmenters fed arbitrary probability sequences under arbitrary valid parameters: the
// streaming segmenter (the engine's, one window at a time) and get_speech_timestamps (offline).
//
// Invariants: events alternate speech_start / speech_end, an end repeats its start, no call emits
// more than SegmentEvents::kCapacity events, and no event speaks of audio not yet pushed; segments
// are ordered, non-overlapping, start < end, inside [0, audio length]; after flush() every start
// has its end; the streamed segments are exactly get_speech_timestamps' (the documented contract);
// and flush() leaves the segmenter as new (the same stream again gives the same events).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "brisvox/error.h"
#include "brisvox/models/vad/offline_segmenter.h"
#include "brisvox/models/vad/streaming_segmenter.h"
#include "fuzz_check.h"
#include "probability_sequence.h"

namespace {

using brisvox::SegmentEvent;
using brisvox::SpeechSegment;

brisvox::SegmenterParams params_from(FuzzedDataProvider& in) {
  brisvox::SegmenterParams p;
  p.threshold = in.PickValueInArray({0.0, 0.01, 0.3, 0.5, 0.7, 0.99, 1.0});
  p.neg_threshold = in.ConsumeBool() ? -1.0 : p.threshold * in.ConsumeProbability<double>();
  p.min_speech_ms = in.ConsumeIntegralInRange(0, 600);
  p.min_silence_ms = in.ConsumeIntegralInRange(0, 600);
  p.speech_pad_ms = in.ConsumeIntegralInRange(0, 200);
  p.min_silence_at_max_speech_ms = in.ConsumeIntegralInRange(0, 300);
  // Short limits so that both ways of cutting over-long speech happen within a few kilobytes.
  p.max_speech_s = in.ConsumeBool() ? std::numeric_limits<double>::infinity()
                                    : in.ConsumeFloatingPointInRange(0.001, 3.0);
  p.use_max_poss_sil_at_max_speech = in.ConsumeBool();
  return p;
}

// Collects a stream's events into segments, checking the event-level invariants as they come.
class EventChecker {
 public:
  void take(const brisvox::SegmentEvents& events, std::int64_t audio_pushed) {
    FUZZ_CHECK(events.size() <= brisvox::SegmentEvents::kCapacity, "%zu events in one call", events.size());
    for (const SegmentEvent& e : events) {
      const std::int64_t last = e.kind == SegmentEvent::Kind::kSpeechStart ? e.start_sample : e.end_sample;
      FUZZ_CHECK(last <= audio_pushed, "event at sample %lld, only %lld pushed", static_cast<long long>(last),
                 static_cast<long long>(audio_pushed));
      if (e.kind == SegmentEvent::Kind::kSpeechStart) {
        FUZZ_CHECK(!open_, "two starts in a row (at %lld)", static_cast<long long>(e.start_sample));
        open_ = e.start_sample;
      } else {
        FUZZ_CHECK(open_ && *open_ == e.start_sample, "an end whose start was not the open one");
        segments_.push_back({e.start_sample, e.end_sample});
        open_.reset();
      }
      all_.push_back(e);
    }
  }
  bool open() const { return open_.has_value(); }
  const std::vector<SpeechSegment>& segments() const { return segments_; }
  const std::vector<SegmentEvent>& events() const { return all_; }

 private:
  std::optional<std::int64_t> open_;
  std::vector<SpeechSegment> segments_;
  std::vector<SegmentEvent> all_;
};

void check_segments(const std::vector<SpeechSegment>& segments, std::int64_t num_samples, const char* who) {
  std::int64_t previous_end = 0;
  for (const SpeechSegment& s : segments) {
    FUZZ_CHECK(s.start_sample >= previous_end && s.start_sample < s.end_sample && s.end_sample <= num_samples,
               "%s: segment [%lld, %lld) after end %lld, audio of %lld samples", who,
               static_cast<long long>(s.start_sample), static_cast<long long>(s.end_sample),
               static_cast<long long>(previous_end), static_cast<long long>(num_samples));
    previous_end = s.end_sample;
  }
}

EventChecker stream(brisvox::StreamingSegmenter& segmenter, const std::vector<float>& probs,
                    std::int64_t num_samples) {
  EventChecker checker;
  const std::int64_t window = segmenter.window_samples();
  for (std::size_t i = 0; i < probs.size(); ++i) {
    checker.take(segmenter.push(probs[i]), window * static_cast<std::int64_t>(i + 1));
  }
  checker.take(segmenter.flush(num_samples), num_samples);
  FUZZ_CHECK(!checker.open(), "a speech start without an end after flush()");
  FUZZ_CHECK(segmenter.num_frames() == 0, "flush() left %lld frames", static_cast<long long>(segmenter.num_frames()));
  return checker;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);  // parameters from the end, probabilities from the front
  const int rate = in.PickValueInArray({16000, 8000});
  const brisvox::SegmenterParams params = params_from(in);
  std::optional<brisvox::StreamingSegmenter> segmenter;
  try {
    segmenter.emplace(rate, params);
  } catch (const brisvox::Error&) {
    return 0;  // parameters the validation refuses (covered by the unit tests)
  }
  const std::int64_t window = segmenter->window_samples();
  const auto bytes = in.ConsumeBytes<std::uint8_t>(in.ConsumeIntegralInRange<std::size_t>(0, size));
  // The last window may be partial: the audio ends up to window - 1 samples before its end.
  const std::int64_t shortfall = bytes.empty() ? 0 : in.ConsumeIntegralInRange<std::int64_t>(0, window - 1);
  const std::int64_t num_samples = window * static_cast<std::int64_t>(bytes.size()) - shortfall;

  const brisvox::fuzz::ProbabilityMap to_probability(params.threshold, params.effective_neg_threshold());
  std::vector<float> probs;
  for (const std::uint8_t b : bytes) probs.push_back(to_probability(b));

  const EventChecker streamed = stream(*segmenter, probs, num_samples);
  check_segments(streamed.segments(), num_samples, "streaming");
  const std::vector<SpeechSegment> offline = brisvox::get_speech_timestamps(probs, num_samples, rate, params);
  check_segments(offline, num_samples, "offline");
  FUZZ_CHECK(streamed.segments() == offline, "streaming gave %zu segments, get_speech_timestamps %zu",
             streamed.segments().size(), offline.size());

  const EventChecker again = stream(*segmenter, probs, num_samples);
  FUZZ_CHECK(again.events() == streamed.events(), "the same stream after flush() gave other events");
  return 0;
}
