#include "brisvox/engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "brisvox/models/vad/offline_segmenter.h"
#include "brisvox/models/vad/silero_vad.h"
#include "brisvox/runtime/runtime_info.h"
#include "engine/engine_test_util.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using test::bundled_model;
using test::feed_all;
using test::to_seconds;

EngineConfig small_engine(int workers = 2) {
  EngineConfig c;
  c.model("vad").path = bundled_model("silero_vad_v5.onnx");
  c.model("vad").num_workers = workers;
  c.model("vad").max_batch = 16;
  c.model("vad").max_gather_wait_us = 1000;
  return c;
}

std::vector<float> offline_probs(std::span<const float> audio, int rate) {
  SileroConfig c;
  c.model_path = bundled_model("silero_vad_v5.onnx");
  c.max_batch = 1;
  SileroVad vad(c);
  return vad.probabilities(audio, rate);
}

TEST(Engine, OneStreamGivesTheOfflineSegmentsAndProbabilities) {
  Engine engine(small_engine());
  StreamConfig sc;
  sc.vad.emit_probabilities = true;
  Stream s = engine.open_stream(sc);
  const auto r = feed_all(s, test::sample_audio().samples, 1);
  ASSERT_TRUE(r.ended);
  const auto probs = offline_probs(test::sample_audio().samples, 16000);
  ASSERT_EQ(r.probabilities.size(), probs.size());
  for (std::size_t i = 0; i < probs.size(); ++i) ASSERT_NEAR(r.probabilities[i], probs[i], 1e-5) << i;
  const auto expected = get_speech_timestamps(probs, static_cast<int64_t>(test::sample_audio().samples.size()), 16000, {});
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(r.segments_s, to_seconds(expected, 16000));
  // Starts come before their ends, alternating.
  bool open = false;
  for (const Event& e : r.events) {
    if (e.type == EventType::kSpeechStart) {
      EXPECT_FALSE(open);
      open = true;
    } else if (e.type == EventType::kSpeechEnd) {
      EXPECT_TRUE(open);
      open = false;
    }
  }
}

TEST(Engine, ManyConcurrentStreamsAreEachExact) {
  EngineConfig config = small_engine(2);
  Engine engine(config);
  constexpr int kStreams = 24;
  const auto& audio = test::sample_audio().samples;
  // Stream i reads a different 8-second window so that batches mix different audio.
  std::vector<std::vector<float>> inputs;
  for (int i = 0; i < kStreams; ++i) {
    const std::size_t begin = static_cast<std::size_t>(i) * 7001 % (audio.size() - 128000);
    inputs.emplace_back(audio.begin() + static_cast<std::ptrdiff_t>(begin),
                        audio.begin() + static_cast<std::ptrdiff_t>(begin + 128000 - static_cast<std::size_t>(i) * 37));
  }
  std::vector<test::StreamResult> results(kStreams);
  std::vector<std::thread> feeders;
  std::vector<Stream> streams;
  StreamConfig sc;
  sc.vad.emit_probabilities = true;
  for (int i = 0; i < kStreams; ++i) streams.push_back(engine.open_stream(sc));
  // Three feeder threads, eight streams each, interleaving pushes.
  for (int t = 0; t < 3; ++t) {
    feeders.emplace_back([&, t] {
      for (int i = t; i < kStreams; i += 3) results[i] = feed_all(streams[i], inputs[i], 100 + i, 700);
    });
  }
  for (auto& f : feeders) f.join();
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_TRUE(results[i].ended) << i;
    const auto probs = offline_probs(inputs[i], 16000);
    ASSERT_EQ(results[i].probabilities.size(), probs.size()) << i;
    for (std::size_t k = 0; k < probs.size(); ++k) ASSERT_NEAR(results[i].probabilities[k], probs[k], 1e-5) << i;
    EXPECT_EQ(results[i].segments_s,
              to_seconds(get_speech_timestamps(probs, static_cast<int64_t>(inputs[i].size()), 16000, {}), 16000))
        << "stream " << i;
  }
  const EngineStats st = engine.stats();
  std::uint64_t batched = 0, batches = 0;
  for (std::size_t b = 1; b < st.model("vad").batch_size_counts.size(); ++b) {
    batched += b * st.model("vad").batch_size_counts[b];
    batches += st.model("vad").batch_size_counts[b];
  }
  EXPECT_EQ(batched, st.frames_processed());
  EXPECT_EQ(batches, st.model("vad").runs);
  EXPECT_LT(st.model("vad").runs, st.frames_processed()) << "frames of different streams must share runs";
  EXPECT_EQ(st.model("vad").queue_delay.count(), st.frames_processed());
  EXPECT_EQ(st.model("vad").latency.count(), st.frames_processed());
}

TEST(Engine, EightKilohertzStreamsRunNativelyWhenAsked) {
  Engine engine(small_engine(1));
  const Audio prompt = load_audio("/usr/share/asterisk/sounds/en_US_f_Allison/agent-loggedoff.wav");
  ASSERT_EQ(prompt.sample_rate_hz, 8000);
  StreamConfig sc;
  sc.sample_rate_hz = 8000;
  sc.vad.model_rate_hz = 8000;
  sc.vad.emit_probabilities = true;
  Stream s = engine.open_stream(sc);
  const auto r = feed_all(s, prompt.samples, 7);
  const auto probs = offline_probs(prompt.samples, 8000);
  ASSERT_EQ(r.probabilities.size(), probs.size());
  for (std::size_t i = 0; i < probs.size(); ++i) ASSERT_NEAR(r.probabilities[i], probs[i], 1e-5);
  EXPECT_EQ(r.segments_s, to_seconds(get_speech_timestamps(probs, static_cast<int64_t>(prompt.samples.size()), 8000, {}), 8000));
  EXPECT_FALSE(r.segments_s.empty());
}

// A feeder that pushes at most writable() is never refused, whatever the resampler holds back:
// libsoxr hands back owed output in bursts (up to ~650 samples at 44.1 kHz), and a writable()
// that ignored them made an idle engine count rejected samples and overload events (issue 13:
// a 44.1 kHz MP3 POSTed to an idle server added 12-32 overload events).
TEST(Engine, ResampledStreamsFedWithinWritableAreNeverRefused) {
  Engine engine(small_engine(1));
  for (const int rate : {44100, 22050, 11025, 48000, 96000}) {
    SCOPED_TRACE(rate);
    const std::vector<float> audio = resample(std::span(test::sample_audio().samples).first(5 * 16000), 16000, rate);
    StreamConfig sc;
    sc.sample_rate_hz = rate;
    Stream s = engine.open_stream(sc);
    const auto r = feed_all(s, audio, 11, 5000);
    ASSERT_TRUE(r.ended);
    for (const Event& e : r.events) EXPECT_NE(e.type, EventType::kOverload) << "at " << e.start_s << " s";
    const EngineStats st = engine.stats();
    EXPECT_EQ(st.samples_rejected, 0u);
    EXPECT_EQ(st.overload_events, 0u);
  }
}

// Downsampled for the 8 kHz model, a 16 kHz stream's resampler holds back more output (its filter
// delay) than the 8 kHz ring holds: writable() must still offer a block once the VAD has taken
// every whole frame, or the stream (and `brisvox vad --model-rate 8000`) stalls for good.
TEST(Engine, AStreamWhoseResamplerOwesMoreThanTheRingStillMakesProgress) {
  Engine engine(small_engine(1));
  const std::span<const float> audio = std::span(test::sample_audio().samples).first(5 * 16000);
  StreamConfig sc;
  sc.sample_rate_hz = 16000;
  sc.vad.model_rate_hz = 8000;
  Stream s = engine.open_stream(sc);
  test::StreamResult r;
  std::size_t pos = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (pos < audio.size() && std::chrono::steady_clock::now() < deadline) {
    const std::size_t room = std::min(audio.size() - pos, s.writable());
    if (room > 0) pos += s.push(audio.subspan(pos, room));
    test::collect(s, r);
    if (pos < audio.size()) s.wait_writable(512, std::chrono::milliseconds(20));
  }
  ASSERT_EQ(pos, audio.size()) << "writable() stayed 0 with " << pos << " samples pushed";
  s.flush();
  while (!r.ended && std::chrono::steady_clock::now() < deadline + std::chrono::seconds(10)) {
    s.wait_events(std::chrono::milliseconds(10));
    test::collect(s, r);
  }
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(engine.stats().samples_rejected, 0u);
}

TEST(Engine, OtherRatesAreResampledLikeTheOfflinePath) {
  Engine engine(small_engine(1));
  const std::vector<float> at48k = resample(test::sample_audio().samples, 16000, 48000);
  StreamConfig sc;
  sc.sample_rate_hz = 48000;
  sc.vad.emit_probabilities = true;
  Stream s = engine.open_stream(sc);
  const auto r = feed_all(s, at48k, 9, 5000);
  ASSERT_TRUE(r.ended);
  const std::vector<float> back = resample(at48k, 48000, 16000);
  const auto probs = offline_probs(back, 16000);
  ASSERT_NEAR(static_cast<double>(r.probabilities.size()), static_cast<double>(probs.size()), 1.0);
  const auto expected = to_seconds(get_speech_timestamps(probs, static_cast<int64_t>(back.size()), 16000, {}), 16000);
  ASSERT_EQ(r.segments_s.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(r.segments_s[i].first, expected[i].first, 0.033) << i;  // within one frame
    EXPECT_NEAR(r.segments_s[i].second, expected[i].second, 0.033) << i;
  }
}

TEST(Engine, FlushEndsOpenSpeechWithAFinalSpeechEnd) {
  Engine engine(small_engine(1));
  // Cut the recording in the middle of its first segment.
  const std::vector<float> cut(test::sample_audio().samples.begin(), test::sample_audio().samples.begin() + 16000 * 3);
  Stream s = engine.open_stream({});
  const auto r = feed_all(s, cut, 3);
  ASSERT_TRUE(r.ended);
  ASSERT_EQ(r.segments_s.size(), 1u);
  EXPECT_NEAR(r.segments_s[0].second, 3.0, 1e-9) << "the open segment ends at the end of the audio";
  EXPECT_EQ(r.events.back().type, EventType::kEndOfStream);
  EXPECT_THROW(s.push(cut), Error);
  s.flush();  // idempotent
}

TEST(Engine, AResampledStreamsLastSegmentEndsNoLaterThanItsInput) {
  // Cut inside speech, at lengths whose model-rate equivalent is not a whole sample: the
  // resampler's tail rounds up, and the open segment used to end past the input (a 22.05 kHz file
  // of 0.5340589 s gave "end": 0.5340625).
  Engine engine(small_engine(1));
  for (const int rate : {22050, 44100, 11025}) {
    const std::vector<float> at_rate = resample(test::sample_audio().samples, 16000, rate);
    for (const double cut_s : {2.0000907, 3.0001, 4.5340589}) {
      const auto n = static_cast<std::size_t>(cut_s * rate);
      const std::vector<float> cut(at_rate.begin(), at_rate.begin() + static_cast<std::ptrdiff_t>(n));
      StreamConfig sc;
      sc.sample_rate_hz = rate;
      Stream s = engine.open_stream(sc);
      const auto r = feed_all(s, cut, 7);
      ASSERT_TRUE(r.ended);
      ASSERT_FALSE(r.segments_s.empty()) << rate << " Hz, " << n << " samples";
      const double duration = static_cast<double>(n) / rate;
      EXPECT_LE(r.segments_s.back().second, duration) << rate << " Hz, " << n << " samples";
      EXPECT_NEAR(r.segments_s.back().second, duration, 1.0 / 16000) << "the open segment ends where the input does";
    }
  }
}

TEST(Engine, PushRefusesNonFiniteSamplesAndAcceptsNothing) {
  Engine engine(small_engine(1));
  Stream s = engine.open_stream({});
  std::vector<float> bad(1000, 0.1f);
  bad[500] = std::nanf("");
  try {
    s.push(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadAudio);
    EXPECT_NE(std::string(e.what()).find("sample 500"), std::string::npos) << e.what();
  }
  s.flush();
  test::StreamResult r;
  while (!r.ended) {
    s.wait_events(std::chrono::milliseconds(10));
    test::collect(s, r);
  }
  EXPECT_DOUBLE_EQ(r.events.back().end_s, 0.0) << "no sample of the bad push was accepted";
}

TEST(Engine, AFullStreamRefusesSamplesAndReportsAnOverload) {
  EngineConfig config = small_engine(1);
  Engine engine(config);
  StreamConfig sc;
  sc.buffer_ms = 128;
  Stream s = engine.open_stream(sc);
  // Ten seconds at once: far more than 128 ms of buffer.
  const std::size_t accepted = s.push(std::span(test::sample_audio().samples).first(160000));
  EXPECT_LE(accepted, 2048u + 512u);
  EXPECT_GT(accepted, 0u);
  test::StreamResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool overload = false;
  while (!overload && std::chrono::steady_clock::now() < deadline) {
    s.wait_events(std::chrono::milliseconds(10));
    test::collect(s, r);
    for (const Event& e : r.events) {
      if (e.type == EventType::kOverload && e.rejected_samples > 0) {
        overload = true;
        EXPECT_EQ(e.rejected_samples, 160000 - accepted);
        EXPECT_EQ(e.type, EventType::kOverload);
      }
    }
  }
  EXPECT_TRUE(overload);
  EXPECT_EQ(engine.stats().samples_rejected, 160000 - accepted);
}

TEST(Engine, RefusesStreamsBeyondCapacity) {
  EngineConfig config = small_engine(1);
  config.max_streams = 2;
  Engine engine(config);
  Stream a = engine.open_stream({});
  Stream b = engine.open_stream({});
  try {
    engine.open_stream({});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOverloaded);
    EXPECT_NE(std::string(e.what()).find("2 of 2 streams"), std::string::npos) << e.what();
  }
  EXPECT_EQ(engine.stats().streams_refused, 1u);
  a.close();
  // The slot is released by the worker; a new stream fits once it has.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (engine.stats().active_streams > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_NO_THROW(engine.open_stream({}));
}

TEST(Engine, ASessionsNextStreamIsNotRefusedAtCapacity) {
  EngineConfig config = small_engine(1);
  config.max_streams = 1;
  Engine engine(config);
  Stream first = engine.open_stream({});
  EXPECT_THROW(engine.open_stream({}), Error);  // a new arrival at capacity
  // The same session's next stream (a Realtime session.update) takes over from the first.
  Stream next = engine.open_stream({}, first);
  first.close();
  std::vector<float> speechless(1024, 0.0f);
  EXPECT_EQ(next.push(speechless), speechless.size());
  next.flush();
  bool ended = false;
  std::vector<Event> events(16);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ended && std::chrono::steady_clock::now() < deadline) {
    next.wait_events(std::chrono::milliseconds(100));
    const std::size_t n = next.poll(events);
    for (std::size_t i = 0; i < n; ++i) ended |= events[i].type == EventType::kEndOfStream;
  }
  EXPECT_TRUE(ended);
  // Only an open stream vouches for a session.
  try {
    engine.open_stream({}, first);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
}

TEST(Engine, InvalidConfigsAreRejectedWithTheField) {
  EngineConfig bad = small_engine(1);
  bad.model("vad").max_batch = -1;
  try {
    Engine e(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_batch"), std::string::npos);
  }
  Engine engine(small_engine(1));
  StreamConfig sc;
  sc.vad.model_rate_hz = 22050;
  EXPECT_THROW(engine.open_stream(sc), Error);
  sc = {};
  sc.vad.params.threshold = 1.5;
  EXPECT_THROW(engine.open_stream(sc), Error);
  // A family's own options (ModelSpec::options): only the ones it takes, numbers where numbers.
  auto refused = [](const EngineConfig& c, const char* why) {
    try {
      c.validate();
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  EngineConfig opts = small_engine(1);
  opts.model("vad").options["threshold"] = "0.5";
  refused(opts, "its family takes none");
  opts = small_engine(1);
  opts.models.push_back(ModelSpec::piper_tts("voice.onnx"));
  opts.model("tts").options["pitch"] = "1";
  refused(opts, "it takes: config, noise_scale, length_scale, noise_w_scale, speaker_id");
  opts.model("tts").options = {{"noise_scale", "zero"}};
  refused(opts, "option 'noise_scale' must be a number, got 'zero'");
  opts.model("tts").options = {{"config", ""}};
  refused(opts, "option 'config' is empty");
  opts.model("tts").options = {{"config", "voice.json"}, {"noise_scale", "0"}, {"speaker_id", "2"}};
  EXPECT_NO_THROW(opts.validate());
}

TEST(Engine, AStreamReportsTheConfigItRunsWith) {
  Engine engine(small_engine(1));
  StreamConfig sc;
  sc.sample_rate_hz = 8000;
  Stream up = engine.open_stream(sc);
  EXPECT_EQ(up.model_rate_hz(), 16000) << "8 kHz input reaches the 16 kHz model by default";
  EXPECT_EQ(up.config().vad.model_rate_hz, 16000);
  up.close();
  sc.vad.model_rate_hz = 8000;
  Stream s = engine.open_stream(sc);
  EXPECT_EQ(s.model_rate_hz(), 8000);
  EXPECT_EQ(s.config().vad.model_rate_hz, 8000);
  EXPECT_TRUE(s.can_flush()) << "no resampler: flush() never waits";
  sc.vad.model_rate_hz = 0;
  sc.sample_rate_hz = 44100;
  Stream r = engine.open_stream(sc);
  EXPECT_EQ(r.model_rate_hz(), 16000);
  EXPECT_TRUE(r.can_flush()) << "an empty stream has room for its resampler's tail";
  s.close();
  EXPECT_EQ(s.model_rate_hz(), 0);
  EXPECT_THROW(s.config(), Error);
}

// A joined thread can stay listed in /proc/self/task for a moment after pthread_join returns
// (the kernel wakes the joiner before it reaps the task): read until two reads agree.
int settled_thread_count() {
  int last = process_thread_count();
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const int now = process_thread_count();
    if (now == last) return now;
    last = now;
  }
  return last;
}

TEST(Engine, WorkersAreTheOnlyThreadsItAdds) {
  // Threads that start once per process and stay are not the engine's: ONNX Runtime's
  // environment thread, and under a sanitizer its runtime's background thread (TSan starts one
  // at the first pthread_create, so on some machines it appears during the first Engine). One
  // engine built, run and destroyed first makes all of them exist before the count is taken.
  ort_initialize();
  {
    Engine warm_up(small_engine(1));
    Stream s = warm_up.open_stream({});
    feed_all(s, std::span(test::sample_audio().samples).first(16000), 1);
  }
  const int before = settled_thread_count();
  {
    // Two workers and the run watchdog (EngineConfig::run_timeout_ms).
    Engine engine(small_engine(2));
    EXPECT_EQ(process_thread_count(), before + 2 + 1);
    Stream s = engine.open_stream({});
    feed_all(s, std::span(test::sample_audio().samples).first(64000), 1);
    EXPECT_EQ(process_thread_count(), before + 2 + 1) << "ONNX Runtime added threads while running";
  }
  EXPECT_EQ(settled_thread_count(), before);
  {
    EngineConfig no_deadline = small_engine(2);
    no_deadline.run_timeout_ms = 0;  // no watchdog thread
    Engine engine(no_deadline);
    EXPECT_EQ(process_thread_count(), before + 2);
  }
}

TEST(Engine, DrainFlushesOpenStreams) {
  Engine engine(small_engine(1));
  Stream s = engine.open_stream({});
  const std::vector<float> cut(test::sample_audio().samples.begin(), test::sample_audio().samples.begin() + 16000 * 3);
  std::size_t done = 0;
  while (done < cut.size()) {
    done += s.push(std::span(cut).subspan(done, std::min(cut.size() - done, s.writable())));
    s.wait_writable(512, std::chrono::milliseconds(50));
  }
  engine.drain();
  test::StreamResult r;
  test::collect(s, r);
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(r.segments_s.size(), 1u);
  EXPECT_THROW(engine.open_stream({}), Error);
}

TEST(Engine, ARunErrorBecomesErrorEventsAndTheWorkerSurvives) {
  // silero_failing.onnx fails for every batch size but 4.
  EngineConfig config = small_engine(1);
  config.model("vad").path = test::generated_model("silero_failing.onnx");
  Engine engine(config);
  Stream s = engine.open_stream({});
  const auto r = feed_all(s, std::span(test::sample_audio().samples).first(5120), 1);
  ASSERT_TRUE(r.ended) << "the stream still completes";
  int errors = 0;
  for (const Event& e : r.events) errors += e.type == EventType::kError;
  EXPECT_EQ(errors, 10);
  EXPECT_NE(s.last_error().find("silero_failing.onnx"), std::string::npos) << s.last_error();
  EXPECT_EQ(engine.stats().model("vad").run_errors, 10u);
  // The worker still serves new streams.
  Stream t = engine.open_stream({});
  EXPECT_TRUE(feed_all(t, std::span(test::sample_audio().samples).first(1024), 2).ended);
}

}  // namespace
}  // namespace brisvox
