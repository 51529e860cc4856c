// Fault injection in the engine: a model Run that fails for one batch, and one that hangs past
// EngineConfig::run_timeout_ms. Both use generated Silero-contract models whose Run misbehaves only
// for a trap frame (tools/make_test_models.py: silero_poison.onnx fails when a row's mean is below
// -0.75, silero_slow.onnx loops over MatMuls for minutes when one is above 0.75), so that one batch
// misbehaves while every other runs normally.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/engine/engine.h"
#include "brisvox/error.h"
#include "brisvox/models/vad/offline_segmenter.h"
#include "brisvox/models/vad/silero_vad.h"
#include "engine/engine_test_util.h"
#include "engine/pool/pool_clock.h"
#include "engine/pool/run_watchdog.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kFrame = 512;  // 16 kHz model frame

std::vector<float> cut(std::size_t offset, std::size_t num_samples) {
  const auto& s = test::sample_audio().samples;
  return {s.begin() + static_cast<std::ptrdiff_t>(offset), s.begin() + static_cast<std::ptrdiff_t>(offset + num_samples)};
}

// What the trap model computes for audio that springs no trap (one stream, batch of one).
std::vector<float> offline_probs(const std::string& model, std::span<const float> audio) {
  SileroConfig c;
  c.model_path = model;
  c.max_batch = 1;
  SileroVad vad(c);
  return vad.probabilities(audio, 16000);
}

int count(const test::StreamResult& r, EventType type) {
  int n = 0;
  for (const Event& e : r.events) n += e.type == type;
  return n;
}

const Event* first(const test::StreamResult& r, EventType type) {
  for (const Event& e : r.events) {
    if (e.type == type) return &e;
  }
  return nullptr;
}

// --- RunDeadline: the claim protocol between a runner and the watchdog ------------------------

TEST(RunDeadline, AClaimedRunEndsCancelledAndTheNextRunIsUntouched) {
  engine::RunDeadline d;
  d.begin(100);
  EXPECT_EQ(d.in_flight_since(), 100);
  ASSERT_TRUE(d.claim(100));
  EXPECT_EQ(d.in_flight_since(), 0) << "a claimed Run is not claimed twice";
  d.cancelled();
  EXPECT_TRUE(d.end(100));
  d.begin(200);
  EXPECT_FALSE(d.end(200));
}

TEST(RunDeadline, AStaleClaimNeverCancelsALaterRun) {
  engine::RunDeadline d;
  d.begin(100);
  EXPECT_FALSE(d.end(100));
  EXPECT_FALSE(d.claim(100)) << "the Run ended";
  d.begin(200);
  EXPECT_FALSE(d.claim(100)) << "another Run is in flight: the watchdog saw the old start time";
  EXPECT_FALSE(d.end(200));
}

TEST(RunDeadline, EndWaitsForAWatchdogBetweenClaimAndFlag) {
  engine::RunDeadline d;
  d.begin(100);
  ASSERT_TRUE(d.claim(100));
  std::thread watchdog([&d] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    d.cancelled();
  });
  const auto t0 = Clock::now();
  EXPECT_TRUE(d.end(100));
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(40)) << "end() returned before the flag was set";
  watchdog.join();
}

TEST(RunWatchdog, ARunnerWithItsOwnDeadlineIsCancelledByThatOne) {
  // Two runners in flight since the same moment: one with a 50 ms deadline, one with 60 s. Only
  // the first is cancelled (ModelSpec::run_timeout_ms: one deadline per runner).
  engine::RunWatchdog watchdog;
  engine::RunDeadline own, engines;
  std::atomic<int> own_cancels{0}, engine_cancels{0};
  watchdog.watch(own, [&] { ++own_cancels; }, 50);
  watchdog.watch(engines, [&] { ++engine_cancels; }, 60'000);
  const std::int64_t start = engine::now_ns();
  own.begin(start);
  engines.begin(start);
  watchdog.start();
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (own_cancels.load() == 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(own_cancels.load(), 1);
  EXPECT_TRUE(own.end(start));
  EXPECT_EQ(engine_cancels.load(), 0);
  EXPECT_FALSE(engines.end(start));
  watchdog.stop();
}

TEST(RunTimeout, ConfigIsValidated) {
  EngineConfig c;
  c.model("vad").path = test::generated_model("silero_contract.onnx");
  c.model("vad").num_workers = 1;
  for (int bad : {-1, 5, 600'001}) {
    c.run_timeout_ms = bad;
    try {
      c.validate();
      FAIL() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("run_timeout_ms"), std::string::npos) << e.what();
    }
  }
  c.run_timeout_ms = 0;
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(to_string(ErrorCode::kInferenceTimeout), "inference_timeout");
  // A model's own deadline: -1 (the engine's), 0 (none) or 10 to 600000.
  for (int bad : {-2, 5, 600'001}) {
    c.model("vad").run_timeout_ms = bad;
    EXPECT_THROW(c.validate(), Error) << bad;
  }
  c.model("vad").run_timeout_ms = -1;
  EXPECT_EQ(c.model("vad").resolved(1, 2000).run_timeout_ms, 2000) << "Silero keeps the engine's";
}

// --- a Run that fails for one batch ---------------------------------------------------------

TEST(FaultInjection, AFailedRunGivesExactlyItsBatchErrorEventsAndEveryOtherFrameRuns) {
  const std::string model = test::generated_model("silero_poison.onnx");
  EngineConfig config;
  config.model("vad").path = model;
  config.model("vad").num_workers = 1;  // every stream shares the worker whose Run fails
  config.model("vad").max_batch = 4;
  config.model("vad").max_gather_wait_us = 1000;
  Engine engine(config);

  constexpr int kStreams = 6;
  constexpr std::size_t kSamples = 64 * kFrame;  // 64 frames each
  constexpr std::int64_t kPoisonFrame = 20;
  std::vector<std::vector<float>> audio;
  for (int k = 0; k < kStreams; ++k) audio.push_back(cut(16000 + static_cast<std::size_t>(k) * 8000, kSamples));
  std::vector<float> clean0 = audio[0];
  std::fill(audio[0].begin() + kPoisonFrame * kFrame, audio[0].begin() + (kPoisonFrame + 1) * kFrame, -1.0f);

  StreamConfig sc;
  sc.vad.emit_probabilities = true;
  std::vector<Stream> streams;
  for (int k = 0; k < kStreams; ++k) streams.push_back(engine.open_stream(sc));
  std::vector<test::StreamResult> results(kStreams);
  std::vector<std::thread> feeders;
  for (int k = 0; k < kStreams; ++k) {
    feeders.emplace_back([&, k] { results[k] = test::feed_all(streams[k], audio[k], 10 + k, 700); });
  }
  for (auto& t : feeders) t.join();

  const EngineStats st = engine.stats();
  EXPECT_EQ(st.model("vad").run_errors, 1u) << "only the batch holding the poison frame fails";
  EXPECT_EQ(st.model("vad").run_timeouts, 0u);

  // The poisoned stream: one error event, for that frame, with a message naming the model.
  const test::StreamResult& r0 = results[0];
  ASSERT_TRUE(r0.ended) << "the stream still completes";
  ASSERT_EQ(count(r0, EventType::kError), 1);
  const Event& err = *first(r0, EventType::kError);
  EXPECT_EQ(err.error_code, ErrorCode::kRuntime);
  EXPECT_EQ(err.frame_index, kPoisonFrame);
  EXPECT_DOUBLE_EQ(err.start_s, kPoisonFrame * 512 / 16000.0);
  const std::string message = streams[0].last_error();
  EXPECT_NE(message.find("frame 20 of stream"), std::string::npos) << message;
  EXPECT_NE(message.find("silero_poison.onnx"), std::string::npos) << message;

  // The batch's other streams (at most max_batch - 1 of them) got one error each, for the same
  // Run; every frame of every stream is either analysed or reported, never silently dropped.
  int streams_with_errors = 0;
  for (int k = 0; k < kStreams; ++k) {
    const test::StreamResult& r = results[static_cast<std::size_t>(k)];
    ASSERT_TRUE(r.ended) << "stream " << k;
    const int errors = count(r, EventType::kError);
    EXPECT_LE(errors, 1) << "stream " << k;
    streams_with_errors += errors;
    EXPECT_EQ(r.probabilities.size() + static_cast<std::size_t>(errors), kSamples / kFrame) << "stream " << k;
    // The frames after the failure were analysed: the worker and the stream went on. (A stream
    // fed faster than the poisoned one may have had its very last frame in the failed Run.)
    std::int64_t last_prob_frame = -1;
    for (const Event& e : r.events) {
      if (e.type == EventType::kVadProbability) last_prob_frame = e.frame_index;
    }
    const auto last_frame = static_cast<std::int64_t>(kSamples / kFrame) - 1;
    const Event* error = first(r, EventType::kError);
    EXPECT_EQ(last_prob_frame, error != nullptr && error->frame_index == last_frame ? last_frame - 1 : last_frame)
        << "stream " << k;
  }
  EXPECT_GE(streams_with_errors, 1);
  EXPECT_LE(streams_with_errors, config.model("vad").max_batch);
  std::printf("the failed Run held %d of %d streams; the others ran every frame\n", streams_with_errors, kStreams);

  // Streams that were not in the failed batch got exactly what the model gives them alone.
  for (int k = 1; k < kStreams; ++k) {
    const test::StreamResult& r = results[static_cast<std::size_t>(k)];
    if (count(r, EventType::kError) != 0) continue;
    const std::vector<float> want = offline_probs(model, audio[static_cast<std::size_t>(k)]);
    ASSERT_EQ(r.probabilities.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(r.probabilities[i], want[i], 1e-6) << k << " " << i;
  }
  // So did the poisoned stream up to the poison frame.
  const std::vector<float> want0 = offline_probs(model, clean0);
  for (std::size_t i = 0; i < static_cast<std::size_t>(kPoisonFrame); ++i) {
    ASSERT_NEAR(r0.probabilities[i], want0[i], 1e-6) << i;
  }

  // The worker serves new streams.
  Stream t = engine.open_stream(sc);
  const test::StreamResult rt = test::feed_all(t, cut(0, 8 * kFrame), 99);
  EXPECT_TRUE(rt.ended);
  EXPECT_EQ(count(rt, EventType::kError), 0);
  EXPECT_EQ(rt.probabilities.size(), 8u);
}

// --- a Run that hangs past its deadline ----------------------------------------------------

// Waits for the first event of `type` on `s`, collecting every event into `r`.
bool wait_for(Stream& s, test::StreamResult& r, EventType type, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    test::collect(s, r);
    if (first(r, type) != nullptr) return true;
    s.wait_events(std::chrono::milliseconds(2));
  }
  test::collect(s, r);
  return first(r, type) != nullptr;
}

TEST(FaultInjection, ARunPastItsDeadlineIsCancelledAndTheEngineGoesOn) {
  const std::string model = test::generated_model("silero_slow.onnx");
  EngineConfig config;
  config.model("vad").path = model;
  config.model("vad").num_workers = 2;
  config.model("vad").max_batch = 4;
  config.model("vad").max_gather_wait_us = 1000;
  config.run_timeout_ms = 300;
  Engine engine(config);

  StreamConfig sc;
  sc.vad.emit_probabilities = true;
  sc.buffer_ms = 256;  // room for the eight frames below
  Stream slow = engine.open_stream(sc);   // worker 0
  Stream other = engine.open_stream(sc);  // worker 1 (the least loaded)

  // Eight clean frames (the stream's whole buffer), analysed before the trap is pushed.
  const std::vector<float> head = cut(16000, 8 * kFrame);
  ASSERT_EQ(slow.push(head), head.size());
  test::StreamResult r;
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (r.probabilities.size() < 8 && Clock::now() < until) {
    slow.wait_events(std::chrono::milliseconds(5));
    test::collect(slow, r);
  }
  ASSERT_EQ(r.probabilities.size(), 8u);

  // The trap frame: its Run would take minutes (200000 MatMuls of [256, 256]).
  const std::vector<float> trap(kFrame, 1.0f);
  const auto trap_pushed = Clock::now();
  ASSERT_EQ(slow.push(trap), trap.size());

  // Meanwhile the other worker serves its stream, whole, while the first one is stuck.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const test::StreamResult ro = test::feed_all(other, cut(48000, 32 * kFrame), 5);
  const auto other_done = Clock::now();
  ASSERT_TRUE(ro.ended);
  EXPECT_EQ(count(ro, EventType::kError), 0);
  EXPECT_EQ(ro.probabilities.size(), 32u);

  ASSERT_TRUE(wait_for(slow, r, EventType::kError, std::chrono::seconds(15)))
      << "no error event: the hung Run was not cancelled";
  const auto error_seen = Clock::now();
  const auto after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(error_seen - trap_pushed).count();
  EXPECT_LT(other_done, error_seen) << "the other worker finished its stream while this one was stuck";
  // The deadline counts from the Run's start (after the push); the slack covers a loaded machine
  // (the flag is checked between MatMuls of ~1 ms each; the watchdog wakes at the deadline).
  EXPECT_GE(after_ms, 300);
  EXPECT_LE(after_ms, 300 + 1500);
  const Event& err = *first(r, EventType::kError);
  EXPECT_EQ(err.error_code, ErrorCode::kInferenceTimeout);
  EXPECT_EQ(err.frame_index, 8);
  const std::string message = slow.last_error();
  EXPECT_NE(message.find("run_timeout_ms (300 ms)"), std::string::npos) << message;
  EXPECT_NE(message.find("frame 8 of stream"), std::string::npos) << message;

  // The stuck worker carries on: the same stream's next frames run (the terminate flag was
  // cleared), and a new stream is served.
  const std::vector<float> tail = cut(16000 + 9 * kFrame, 20 * kFrame);
  std::size_t done = 0;
  while (done < tail.size()) {
    done += slow.push(std::span(tail).subspan(done, std::min(tail.size() - done, slow.writable())));
    slow.wait_writable(kFrame, std::chrono::milliseconds(50));
    test::collect(slow, r);
  }
  slow.flush();
  ASSERT_TRUE(wait_for(slow, r, EventType::kEndOfStream, std::chrono::seconds(10)));
  EXPECT_EQ(count(r, EventType::kError), 1);
  EXPECT_EQ(r.probabilities.size(), 8u + 20u);
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - error_seen).count();
  EXPECT_LT(elapsed_ms, 2000) << "the frames after the timeout ran at normal speed";

  const EngineStats st = engine.stats();
  EXPECT_EQ(st.model("vad").run_timeouts, 1u);
  EXPECT_EQ(st.model("vad").run_errors, 1u);
  slow.close();
  other.close();
  Stream again = engine.open_stream(sc);
  const test::StreamResult ra = test::feed_all(again, cut(0, 8 * kFrame), 6);
  EXPECT_TRUE(ra.ended);
  EXPECT_EQ(ra.probabilities.size(), 8u);
  EXPECT_EQ(engine.stats().model("vad").run_timeouts, 1u) << "normal Runs are never cancelled";
  std::printf("timeout error after %lld ms (deadline 300 ms)\n", static_cast<long long>(after_ms));
}

TEST(FaultInjection, ATurnAnalysisPastItsDeadlineIsCancelledAndTheTurnGoesOn) {
  // Every Smart Turn run of smart_turn_slow.onnx would take minutes.
  EngineConfig config;
  config.model("vad").path = test::bundled_model("silero_vad_v5.onnx");
  config.model("vad").num_workers = 1;
  config.models.push_back(ModelSpec::smart_turn(test::generated_model("smart_turn_slow.onnx")));
  config.run_timeout_ms = 300;
  Engine engine(config);
  StreamConfig sc;
  sc.turn = TurnOptions{};
  sc.turn->wait_for_verdict = true;  // the stream waits for each (cancelled) verdict: deterministic
  Stream s = engine.open_stream(sc);
  const std::vector<float> audio = cut(0, 10 * 16000);
  const auto t0 = Clock::now();
  const test::StreamResult r = test::feed_all(s, audio, 3);
  const auto took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  ASSERT_TRUE(r.ended) << "the stream still completes";

  const int errors = count(r, EventType::kError);
  ASSERT_GE(errors, 1);
  for (const Event& e : r.events) {
    if (e.type == EventType::kError) {
      EXPECT_EQ(e.error_code, ErrorCode::kInferenceTimeout);
    }
  }
  const std::string message = s.last_error();
  EXPECT_NE(message.find("run_timeout_ms (300 ms)"), std::string::npos) << message;
  const EngineStats st = engine.stats();
  EXPECT_EQ(st.model("turn").run_timeouts, static_cast<std::uint64_t>(errors)) << "one analysis per run (one stream)";
  EXPECT_EQ(st.model("turn").run_errors, st.model("turn").run_timeouts);
  EXPECT_EQ(st.model("vad").run_errors, 0u) << "VAD runs are not affected";
  // Each cancelled analysis cost about the deadline, not minutes.
  EXPECT_LT(took_ms, errors * (300 + 1500) + 3000) << errors << " timeouts";
  // Speech detection is untouched, and the turn still ends (a failed verdict counts as incomplete,
  // so the silence timeout or the end of the stream ends it).
  SileroConfig vc;
  vc.model_path = config.model("vad").path;
  const auto probs = SileroVad(vc).probabilities(audio, 16000);
  EXPECT_EQ(r.segments_s, test::to_seconds(get_speech_timestamps(probs, static_cast<std::int64_t>(audio.size()), 16000, {}), 16000));
  EXPECT_GE(count(r, EventType::kTurnEnd), 1);
  std::printf("%d turn analyses cancelled at the 300 ms deadline; stream of 10 s done in %lld ms\n", errors,
              static_cast<long long>(took_ms));
}

}  // namespace
}  // namespace brisvox
