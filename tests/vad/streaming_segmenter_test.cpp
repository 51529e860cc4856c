// StreamingSegmenter: the same segments as get_speech_timestamps, events well formed, latency as
// documented, state handling and errors.
#include "brisvox/models/vad/streaming_segmenter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "brisvox/error.h"
#include "brisvox/models/vad/offline_segmenter.h"
#include "segmenter_golden.h"

namespace brisvox {
namespace {

// No heap state: a push cannot allocate, and state never grows with the audio.
static_assert(std::is_trivially_copyable_v<StreamingSegmenter>);
static_assert(std::is_trivially_copyable_v<SegmentEvents>);
static_assert(sizeof(StreamingSegmenter) <= 256);

struct TimedEvent {
  std::int64_t window;  // index of the push that emitted it; -1 for flush()
  SegmentEvent event;
};

struct Streamed {
  std::vector<TimedEvent> events;
  std::vector<SpeechSegment> segments;
};

// Feeds the probabilities one at a time, then flushes; checks the events are well formed:
// alternating start/end, each end closing the start before it, in order, within the audio.
Streamed stream(StreamingSegmenter& segmenter, const std::vector<float>& probs,
                std::int64_t num_samples) {
  Streamed out;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    for (const SegmentEvent& e : segmenter.push(probs[i])) {
      out.events.push_back({static_cast<std::int64_t>(i), e});
    }
  }
  for (const SegmentEvent& e : segmenter.flush(num_samples)) out.events.push_back({-1, e});

  bool open = false;
  std::int64_t open_start = 0;
  std::int64_t last_end = 0;
  for (const TimedEvent& t : out.events) {
    const SegmentEvent& e = t.event;
    if (e.kind == SegmentEvent::Kind::kSpeechStart) {
      EXPECT_FALSE(open) << "two starts in a row, at window " << t.window;
      EXPECT_GE(e.start_sample, last_end) << "overlaps the previous segment";
      EXPECT_GE(e.start_sample, 0);
      open = true;
      open_start = e.start_sample;
    } else {
      EXPECT_TRUE(open) << "an end without a start, at window " << t.window;
      EXPECT_EQ(e.start_sample, open_start);
      EXPECT_LE(e.start_sample, e.end_sample);
      EXPECT_LE(e.end_sample, num_samples);
      open = false;
      last_end = e.end_sample;
      out.segments.push_back({e.start_sample, e.end_sample});
    }
  }
  EXPECT_FALSE(open) << "flush() left a segment open";
  EXPECT_EQ(segmenter.num_frames(), 0) << "flush() resets the segmenter";
  return out;
}

TEST(StreamingSegmenter, MatchesOfflineOnEveryGoldenCase) {
  const std::vector<test::GoldenCase> cases = test::load_golden_cases();
  ASSERT_GE(cases.size(), 100u) << "golden data in " << test::golden_dir();
  for (const test::GoldenCase& c : cases) {
    SCOPED_TRACE(c.label);
    StreamingSegmenter segmenter(c.sample_rate_hz, c.params);
    const Streamed streamed = stream(segmenter, c.probs, c.num_samples);
    // Exact equality, including neighbours closer than 2 * speech_pad: the end of a segment is
    // held back until its neighbour is known.
    EXPECT_EQ(streamed.segments, c.segments);
    EXPECT_EQ(streamed.segments,
              get_speech_timestamps(c.probs, c.num_samples, c.sample_rate_hz, c.params));
  }
}

TEST(StreamingSegmenter, MatchesOfflineOnRandomSequences) {
  std::mt19937_64 rng(7);
  auto uniform = [&rng](int lo, int hi) {
    return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  int total_segments = 0;
  for (int round = 0; round < 3000; ++round) {
    const int rate = uniform(0, 1) == 0 ? 16000 : 8000;
    const int window = rate == 16000 ? 512 : 256;
    SegmenterParams params;
    params.threshold = std::vector<double>{0.5, 0.3, 0.7}[uniform(0, 2)];
    params.min_speech_ms = std::vector<int>{250, 0, 20, 100, 500}[uniform(0, 4)];
    params.max_speech_s = std::vector<double>{std::numeric_limits<double>::infinity(), 0.01, 0.3,
                                              0.9, 2.0}[uniform(0, 4)];
    params.min_silence_ms = std::vector<int>{100, 0, 10, 40, 300}[uniform(0, 4)];
    params.speech_pad_ms = std::vector<int>{30, 0, 1, 15, 40, 100, 400}[uniform(0, 6)];
    params.min_silence_at_max_speech_ms = std::vector<int>{98, 0, 20, 200}[uniform(0, 3)];
    params.use_max_poss_sil_at_max_speech = uniform(0, 1) == 1;
    const int frames = uniform(0, 300);
    const int switch_percent = std::vector<int>{2, 10, 30, 60}[uniform(0, 3)];
    std::vector<float> probs;
    bool speech = uniform(0, 1) == 1;
    for (int i = 0; i < frames; ++i) {
      if (uniform(0, 99) < switch_percent) speech = !speech;
      probs.push_back(static_cast<float>(speech ? uniform(45, 100) : uniform(0, 55)) / 100.0f);
    }
    const std::int64_t num_samples =
        frames == 0 ? 0 : std::int64_t{frames} * window - uniform(0, window - 1);
    SCOPED_TRACE("round " + std::to_string(round));
    StreamingSegmenter segmenter(rate, params);
    const std::vector<SpeechSegment> offline =
        get_speech_timestamps(probs, num_samples, rate, params);
    ASSERT_EQ(stream(segmenter, probs, num_samples).segments, offline);
    total_segments += static_cast<int>(offline.size());
  }
  EXPECT_GT(total_segments, 10000);  // the sequences do exercise the segmenter
}

// Speech on windows [10, 30), silence after; 16 kHz, 512-sample windows.
std::vector<float> one_utterance(int num_windows) {
  std::vector<float> probs(static_cast<std::size_t>(num_windows), 0.05f);
  for (int i = 10; i < 30; ++i) probs[static_cast<std::size_t>(i)] = 0.95f;
  return probs;
}

TEST(StreamingSegmenter, LatencyWithDefaultParams) {
  StreamingSegmenter segmenter(16000, {});
  const Streamed s = stream(segmenter, one_utterance(60), 60 * 512);
  ASSERT_EQ(s.events.size(), 2u);
  // The start is certain once the speech outlasts min_speech (4000 samples): on window
  // 10 + ceil(4000 / 512) = 18, i.e. with 19 * 512 samples pushed, 288 ms after the raw start.
  EXPECT_EQ(s.events[0].window, 18);
  EXPECT_EQ(s.events[0].event.start_sample, 10 * 512 - 480);
  // The end needs min_silence (1600 samples) of silence from window 30: window
  // 30 + ceil(1600 / 512) = 34, emitted at once since the next segment cannot start closer than
  // 2 * pad.
  EXPECT_EQ(s.events[1].window, 34);
  EXPECT_EQ(s.events[1].event.end_sample, 30 * 512 + 480);
}

TEST(StreamingSegmenter, StartOnTheFirstSpeechWindowWithoutMinSpeech) {
  SegmenterParams params;
  params.min_speech_ms = 0;
  StreamingSegmenter segmenter(16000, params);
  const Streamed s = stream(segmenter, one_utterance(60), 60 * 512);
  ASSERT_EQ(s.events.size(), 2u);
  EXPECT_EQ(s.events[0].window, 10);
}

TEST(StreamingSegmenter, EndWaitsForTheNeighbourWhenPaddingCanMerge) {
  // speech_pad 200 ms (3200 samples) exceeds what min_silence waits for: the end depends on
  // whether speech comes back within 2 * pad, so it is held until it is certain.
  SegmenterParams params;
  params.speech_pad_ms = 200;
  StreamingSegmenter segmenter(16000, params);
  std::vector<float> probs = one_utterance(80);
  for (int i = 37; i < 60; ++i) probs[static_cast<std::size_t>(i)] = 0.95f;
  const Streamed s = stream(segmenter, probs, 80 * 512);
  ASSERT_EQ(s.segments.size(), 2u);
  // Gap 7 windows = 3584 < 6400: the two share it.
  EXPECT_EQ(s.segments[0].end_sample, 30 * 512 + 3584 / 2);
  EXPECT_EQ(s.segments[1].start_sample, 37 * 512 - 3584 / 2);
  // The first end comes out right before the second start, once that one is confirmed.
  ASSERT_EQ(s.events.size(), 4u);
  EXPECT_EQ(s.events[1].window, s.events[2].window);
  EXPECT_EQ(s.events[2].window, 37 + 8);
}

TEST(StreamingSegmenter, FlushAndResetStartAFreshStream) {
  const std::vector<float> probs = one_utterance(50);
  const auto expected = get_speech_timestamps(probs, 50 * 512, 16000, {});
  StreamingSegmenter segmenter(16000, {});
  EXPECT_EQ(stream(segmenter, probs, 50 * 512).segments, expected);
  EXPECT_EQ(stream(segmenter, probs, 50 * 512).segments, expected);  // flush() reset it
  for (int i = 0; i < 25; ++i) segmenter.push(probs[static_cast<std::size_t>(i)]);
  segmenter.reset();
  EXPECT_EQ(segmenter.num_frames(), 0);
  EXPECT_EQ(stream(segmenter, probs, 50 * 512).segments, expected);
}

TEST(StreamingSegmenter, ACopyIsAnIndependentStream) {
  const std::vector<float> probs = one_utterance(50);
  StreamingSegmenter a(16000, {});
  for (int i = 0; i < 20; ++i) a.push(probs[static_cast<std::size_t>(i)]);
  StreamingSegmenter b = a;
  std::vector<SegmentEvent> from_a, from_b;
  for (std::size_t i = 20; i < probs.size(); ++i) {
    for (const auto& e : a.push(probs[i])) from_a.push_back(e);
    for (const auto& e : b.push(probs[i])) from_b.push_back(e);
  }
  EXPECT_EQ(from_a, from_b);
  EXPECT_FALSE(from_a.empty());
}

TEST(StreamingSegmenter, RejectsBadInput) {
  EXPECT_THROW(StreamingSegmenter(22050, {}), Error);
  SegmenterParams bad;
  bad.threshold = 1.5;
  EXPECT_THROW(StreamingSegmenter(16000, bad), Error);

  StreamingSegmenter segmenter(8000, {});
  for (int i = 0; i < 3; ++i) segmenter.push(0.9f);
  try {
    segmenter.push(std::numeric_limits<float>::quiet_NaN());
    ADD_FAILURE() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(segmenter.num_frames(), 3);  // unchanged
  // 3 windows of 256 cover 513..768 samples.
  EXPECT_THROW(segmenter.flush(512), Error);
  EXPECT_THROW(segmenter.flush(769), Error);
  EXPECT_EQ(segmenter.num_frames(), 3);  // a refused flush changes nothing
  EXPECT_NO_THROW(segmenter.flush(513));
  EXPECT_NO_THROW(segmenter.flush(0));  // nothing pushed since: an empty stream
}

}  // namespace
}  // namespace brisvox
