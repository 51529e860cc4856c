// End-of-turn detection through the engine, with the generated Smart Turn models: the tiny one
// computes sigmoid(4 * mean(features) - 1), so every verdict can be predicted offline.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/engine/engine.h"
#include "brisvox/error.h"
#include "brisvox/models/turn/smart_turn.h"
#include "brisvox/models/turn/turn_detector.h"
#include "brisvox/models/turn/turn_features.h"
#include "brisvox/models/vad/silero_vad.h"
#include "engine/engine_test_util.h"
#include "test_paths.h"

namespace brisvox {
namespace {

// 8 kHz turn audio reaches Smart Turn at 16 kHz: the engine's upsampler does the same.
std::vector<float> resample_for_test(const std::vector<float>& audio, int rate) {
  return resample(audio, rate, 16000);
}

EngineConfig turn_engine(const std::string& turn_model) {
  EngineConfig c;
  c.model("vad").path = test::bundled_model("silero_vad_v5.onnx");
  c.model("vad").num_workers = 1;
  c.model("vad").max_batch = 8;
  if (!turn_model.empty()) c.models.push_back(ModelSpec::smart_turn(turn_model));
  return c;
}

// The turns the engine must report for `audio`, computed without the engine: Silero offline,
// the detector fed frame by frame, each analysis run at once on the audio it asks for.
std::vector<TurnAction> offline_turns(const std::vector<float>& audio, int rate) {
  SileroConfig vc;
  vc.model_path = test::bundled_model("silero_vad_v5.onnx");
  SileroVad vad(vc);
  const auto probs = vad.probabilities(audio, rate);
  SmartTurnConfig tc;
  tc.model_path = test::generated_model("smart_turn_tiny.onnx");
  SmartTurn model(tc);
  TurnFeatures features;
  std::vector<float> f(kTurnFeatureValues);
  const int frame = silero_chunk_samples(rate);
  TurnDetector d(rate, frame, {});
  std::vector<TurnAction> out;
  auto handle = [&](const TurnActions& actions, auto&& self) -> void {
    for (const auto& a : actions) {
      if (a.kind != TurnAction::Kind::kAnalyze) {
        out.push_back(a);
        continue;
      }
      const std::int64_t end = std::min<std::int64_t>(a.end_sample, static_cast<std::int64_t>(audio.size()));
      const std::int64_t begin = std::max<std::int64_t>(a.start_sample, end - 8 * rate);
      std::vector<float> turn_audio(audio.begin() + begin, audio.begin() + end);
      if (rate != 16000) turn_audio = resample_for_test(turn_audio, rate);
      features.compute(turn_audio, f);
      const float* fp = f.data();
      float p = 0;
      model.run(std::span(&fp, 1), std::span(&p, 1));
      self(d.verdict(a.request_id, p), self);
    }
  };
  for (float p : probs) handle(d.push(p), handle);
  handle(d.flush(), handle);
  return out;
}

TEST(EngineTurns, VerdictsAndTurnsMatchAnOfflineRunOfTheSameModel) {
  Engine engine(turn_engine(test::generated_model("smart_turn_tiny.onnx")));
  StreamConfig sc;
  sc.turn = TurnOptions{};
  sc.turn->wait_for_verdict = true;
  Stream s = engine.open_stream(sc);
  const Audio audio = load_audio(test::sample_wav());
  const auto r = test::feed_all(s, audio.samples, 5);
  ASSERT_TRUE(r.ended);
  std::vector<Event> turns;
  for (const Event& e : r.events) {
    if (e.type == EventType::kTurnEnd || e.type == EventType::kTurnIncomplete) turns.push_back(e);
  }
  const auto expected = offline_turns(audio.samples, 16000);
  ASSERT_EQ(turns.size(), expected.size());
  ASSERT_GE(expected.size(), 3u);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const TurnAction& x = expected[i];
    EXPECT_EQ(turns[i].type, x.kind == TurnAction::Kind::kTurnEnd ? EventType::kTurnEnd : EventType::kTurnIncomplete) << i;
    EXPECT_DOUBLE_EQ(turns[i].start_s, static_cast<double>(x.start_sample) / 16000.0) << i;
    EXPECT_DOUBLE_EQ(turns[i].end_s, static_cast<double>(x.end_sample) / 16000.0) << i;
    EXPECT_NEAR(turns[i].probability, x.probability, 1e-5) << i;
    if (x.kind == TurnAction::Kind::kTurnEnd) {
      EXPECT_EQ(turns[i].turn_reason, x.reason) << i;
    }
  }
  const EngineStats st = engine.stats();
  EXPECT_GE(st.model("turn").items, expected.size() - 1);
  EXPECT_EQ(st.model("turn").latency.count(), st.model("turn").items);
  EXPECT_EQ(st.model("turn").run_errors, 0u);
  // One turn latency per event a verdict decided (not the timeouts' or the end of the stream's).
  std::uint64_t decided = 0;
  for (const Event& e : turns) {
    decided += e.type == EventType::kTurnIncomplete || e.turn_reason == TurnAction::Reason::kModel ? 1 : 0;
  }
  EXPECT_GT(decided, 0u);
  EXPECT_EQ(st.model("turn").turn_latency.count(), decided);
  EXPECT_GT(st.model("turn").turn_latency.sum_us(), 0.0);
  EXPECT_EQ(st.model("vad").turn_latency.count(), 0u);
}

TEST(EngineTurns, EightKilohertzTurnsAreUpsampledForTheModel) {
  Engine engine(turn_engine(test::generated_model("smart_turn_tiny.onnx")));
  StreamConfig sc;
  sc.sample_rate_hz = 8000;
  sc.turn = TurnOptions{};
  sc.turn->wait_for_verdict = true;
  Stream s = engine.open_stream(sc);
  const Audio prompt = load_audio("/usr/share/asterisk/sounds/en_US_f_Allison/agent-loggedoff.wav");
  const auto r = test::feed_all(s, prompt.samples, 3);
  ASSERT_TRUE(r.ended);
  int turn_ends = 0;
  for (const Event& e : r.events) {
    if (e.type == EventType::kTurnEnd) {
      ++turn_ends;
      EXPECT_GT(e.probability, 0.0f);
      EXPECT_LE(e.end_s, prompt.duration_s() + 1e-9);
    }
  }
  EXPECT_EQ(turn_ends, 1);
}

// A reader that learns of events only through on_events (the server's strands, Python's event
// loops) must hear of a verdict that arrives after the stream's last frame: the verdict is written
// when the worker picks up the turn mailbox, with no frame to run then.
TEST(EngineTurns, AVerdictAfterTheLastFrameIsAnnouncedThroughOnEvents) {
  const Audio audio = load_audio(test::sample_wav());
  const auto expected = offline_turns(audio.samples, 16000);
  ASSERT_FALSE(expected.empty());
  // The audio up to half a second after the first turn's speech ends: the analysis is asked for
  // (turn_stop_ms 200) and nothing comes after it.
  const auto end = std::min<std::size_t>(audio.samples.size(), static_cast<std::size_t>(expected[0].end_sample) + 8000);

  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t announcements = 0;
  Engine engine(turn_engine(test::generated_model("smart_turn_tiny.onnx")));
  StreamConfig sc;
  sc.turn = TurnOptions{};
  sc.on_events = [&] {
    std::lock_guard lock(mu);
    ++announcements;
    cv.notify_all();
  };
  Stream s = engine.open_stream(sc);
  std::span<const float> rest(audio.samples.data(), end);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool verdict = false;
  std::uint64_t seen = 0;
  while (!verdict && std::chrono::steady_clock::now() < deadline) {
    if (!rest.empty()) rest = rest.subspan(s.push(rest.first(std::min<std::size_t>(rest.size(), s.writable()))));
    {
      std::unique_lock lock(mu);
      const bool announced =
          cv.wait_for(lock, std::chrono::milliseconds(rest.empty() ? 1000 : 5), [&] { return announcements != seen; });
      seen = announcements;
      if (!announced) continue;  // read only when told to, as such a reader does
    }
    Event events[16];
    for (std::size_t n; (n = s.poll(events)) > 0;) {
      for (std::size_t i = 0; i < n; ++i) {
        verdict |= events[i].type == EventType::kTurnEnd || events[i].type == EventType::kTurnIncomplete;
      }
    }
  }
  EXPECT_TRUE(rest.empty());
  EXPECT_TRUE(verdict) << "no TURN_END/TURN_INCOMPLETE announced within 20 s";
}

TEST(EngineTurns, RenamedTensorsAreBoundByPosition) {
  Engine engine(turn_engine(test::generated_model("smart_turn_tiny_renamed.onnx")));
  StreamConfig sc;
  sc.turn = TurnOptions{};
  sc.turn->wait_for_verdict = true;
  Stream s = engine.open_stream(sc);
  const Audio audio = load_audio(test::sample_wav());
  const auto r = test::feed_all(s, std::span(audio.samples).first(16000 * 8), 2);
  int turn_events = 0;
  for (const Event& e : r.events) turn_events += e.type == EventType::kTurnEnd || e.type == EventType::kTurnIncomplete;
  EXPECT_GE(turn_events, 1);
}

TEST(EngineTurns, AModelOfTheWrongShapeIsRefusedWithBothShapes) {
  try {
    Engine engine(turn_engine(test::generated_model("smart_turn_bad_shape.onnx")));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kModelMismatch);
    EXPECT_NE(std::string(e.what()).find("[?,80,400], expected [?,80,800]"), std::string::npos) << e.what();
  }
}

TEST(EngineTurns, StreamsCannotAskForTurnsWithoutATurnModel) {
  EngineConfig c = turn_engine("");
  Engine engine(c);
  StreamConfig sc;
  sc.turn = TurnOptions{};
  try {
    engine.open_stream(sc);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("turn model"), std::string::npos);
  }
}

}  // namespace
}  // namespace brisvox
