#include "brisvox/models/turn/turn_detector.h"

#include <gtest/gtest.h>

#include <vector>

#include "brisvox/error.h"

namespace brisvox {
namespace {

using Kind = TurnAction::Kind;
using Reason = TurnAction::Reason;

constexpr int kRate = 16000;
constexpr int kFrame = 512;  // 32 ms

// Feeds `frames` frames of probability `p`; returns every action, in order.
std::vector<TurnAction> feed(TurnDetector& d, float p, int frames) {
  std::vector<TurnAction> out;
  for (int i = 0; i < frames; ++i) {
    for (const auto& a : d.push(p)) out.push_back(a);
  }
  return out;
}

std::vector<TurnAction> all(const TurnActions& actions) { return {actions.begin(), actions.end()}; }

TEST(TurnDetector, PauseTriggersAnalysisAndAHighVerdictEndsTheTurn) {
  TurnDetector d(kRate, kFrame, {});
  EXPECT_TRUE(feed(d, 0.0f, 40).empty());  // 1.28 s of silence: nothing
  EXPECT_TRUE(feed(d, 0.9f, 50).empty());  // speech from frame 40 (sample 20480)
  // stop_ms 200 = 3200 samples: the 7th silent frame (7 * 512 = 3584 >= 3200) asks for analysis.
  auto actions = feed(d, 0.05f, 6);
  EXPECT_TRUE(actions.empty());
  actions = feed(d, 0.05f, 1);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].kind, Kind::kAnalyze);
  EXPECT_EQ(actions[0].start_sample, 20480 - 8000);  // 500 ms of pre-speech
  EXPECT_EQ(actions[0].end_sample, 97 * kFrame);
  EXPECT_TRUE(d.verdict_pending());
  const auto verdict = all(d.verdict(actions[0].request_id, 0.93f));
  ASSERT_EQ(verdict.size(), 1u);
  EXPECT_EQ(verdict[0].kind, Kind::kTurnEnd);
  EXPECT_EQ(verdict[0].reason, Reason::kModel);
  EXPECT_EQ(verdict[0].start_sample, 20480 - 8000);
  EXPECT_EQ(verdict[0].end_sample, 90 * kFrame);  // where the silence began
  EXPECT_FLOAT_EQ(verdict[0].probability, 0.93f);
  EXPECT_EQ(d.state(), TurnDetector::State::kIdle);
}

TEST(TurnDetector, IncompleteThenCompleteKeepsTheTurnStart) {
  TurnDetector d(kRate, kFrame, {});
  feed(d, 0.9f, 30);
  auto a1 = feed(d, 0.0f, 7);
  ASSERT_EQ(a1.size(), 1u);
  const auto incomplete = all(d.verdict(a1[0].request_id, 0.2f));
  ASSERT_EQ(incomplete.size(), 1u);
  EXPECT_EQ(incomplete[0].kind, Kind::kTurnIncomplete);
  EXPECT_FLOAT_EQ(incomplete[0].probability, 0.2f);
  EXPECT_EQ(d.state(), TurnDetector::State::kPaused);
  feed(d, 0.0f, 10);  // thinking
  EXPECT_TRUE(feed(d, 0.9f, 20).empty());  // and goes on
  auto a2 = feed(d, 0.0f, 7);
  ASSERT_EQ(a2.size(), 1u);
  EXPECT_EQ(a2[0].kind, Kind::kAnalyze);
  EXPECT_NE(a2[0].request_id, a1[0].request_id);
  EXPECT_EQ(a2[0].start_sample, 0) << "the whole turn, from its first speech (clamped at 0)";
  const auto end = all(d.verdict(a2[0].request_id, 0.7f));
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].kind, Kind::kTurnEnd);
  EXPECT_EQ(end[0].end_sample, (30 + 7 + 10 + 20) * kFrame);
}

TEST(TurnDetector, LongSilenceAfterAnIncompleteVerdictTimesOut) {
  TurnDetector d(kRate, kFrame, {});
  feed(d, 0.9f, 30);
  auto a = feed(d, 0.0f, 7);
  d.verdict(a[0].request_id, 0.1f);
  // max_silence 3000 ms = 48000 samples = 93.75 frames of silence in all (7 already).
  EXPECT_TRUE(feed(d, 0.0f, 86).empty());
  auto timeout = feed(d, 0.0f, 1);
  ASSERT_EQ(timeout.size(), 1u);
  EXPECT_EQ(timeout[0].kind, Kind::kTurnEnd);
  EXPECT_EQ(timeout[0].reason, Reason::kTimeout);
  EXPECT_FLOAT_EQ(timeout[0].probability, 0.1f);
  EXPECT_EQ(timeout[0].end_sample, 30 * kFrame);
}

TEST(TurnDetector, AVerdictThatNeverComesTimesOutToo) {
  TurnDetector d(kRate, kFrame, {});
  feed(d, 0.9f, 30);
  feed(d, 0.0f, 7);
  const auto t = feed(d, 0.0f, 87);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].reason, Reason::kTimeout);
  EXPECT_FLOAT_EQ(t[0].probability, -1.0f) << "no verdict was ever given";
}

TEST(TurnDetector, SpeechDuringAnalysisCancelsTheVerdict) {
  TurnDetector d(kRate, kFrame, {});
  feed(d, 0.9f, 30);
  auto a1 = feed(d, 0.0f, 7);
  ASSERT_EQ(a1.size(), 1u);
  feed(d, 0.9f, 5);  // speaks again before the verdict
  EXPECT_TRUE(d.verdict(a1[0].request_id, 0.99f).empty()) << "a stale verdict is ignored";
  EXPECT_EQ(d.state(), TurnDetector::State::kSpeaking);
  auto a2 = feed(d, 0.0f, 7);
  ASSERT_EQ(a2.size(), 1u);
  EXPECT_EQ(d.verdict(a2[0].request_id, 0.8f)[0].kind, Kind::kTurnEnd);
}

TEST(TurnDetector, HysteresisKeepsSpeechBetweenTheThresholds) {
  TurnDetector d(kRate, kFrame, {});
  feed(d, 0.9f, 10);
  EXPECT_TRUE(feed(d, 0.4f, 50).empty()) << "0.4 is above neg_threshold 0.35: still speech";
  EXPECT_EQ(feed(d, 0.3f, 7).size(), 1u);
}

TEST(TurnDetector, FlushAnalysesOpenSpeechAndClosesTheTurn) {
  TurnDetector d(kRate, kFrame, {});
  feed(d, 0.9f, 20);
  auto f = all(d.flush());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::kAnalyze);
  EXPECT_EQ(f[0].end_sample, 20 * kFrame);
  const auto v = all(d.verdict(f[0].request_id, 0.3f));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].kind, Kind::kTurnIncomplete);
  EXPECT_EQ(v[1].kind, Kind::kTurnEnd);
  EXPECT_EQ(v[1].reason, Reason::kEndOfStream);
  EXPECT_EQ(v[1].end_sample, 20 * kFrame);
  EXPECT_TRUE(d.flush().empty());
}

TEST(TurnDetector, FlushWhilePausedEndsTheTurn) {
  TurnDetector d(kRate, kFrame, {});
  feed(d, 0.9f, 20);
  auto a = feed(d, 0.0f, 7);
  d.verdict(a[0].request_id, 0.2f);
  const auto f = all(d.flush());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].reason, Reason::kEndOfStream);
  EXPECT_FLOAT_EQ(f[0].probability, 0.2f);
}

TEST(TurnDetector, EightKilohertzFramesUseTheirOwnClock) {
  TurnDetector d(8000, 256, {});
  feed(d, 0.9f, 40);  // 1.28 s
  auto a = feed(d, 0.0f, 7);  // 7 * 256 = 1792 >= 1600 (200 ms at 8 kHz)
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].end_sample, 47 * 256);
}

TEST(TurnParams, InvalidValuesNameTheField) {
  TurnParams p;
  p.stop_ms = -1;
  try {
    p.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stop_ms"), std::string::npos);
  }
  p = {};
  p.max_silence_ms = 100;  // below stop_ms
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.turn_threshold = 1.5;
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.threshold = 0.0;
  EXPECT_THROW(TurnDetector(kRate, kFrame, p), Error);
}

}  // namespace
}  // namespace brisvox
