// The end-of-turn state machine (TurnDetector) driven by arbitrary interleavings of VAD
// probabilities, verdicts (for the pending analysis, or stale) and an end-of-stream flush, under
// arbitrary valid parameters.
//
// Invariants, from the state machine documented in turn_detector.h: an analysis is asked only
// inside a turn, with a fresh (increasing) id, over [turn start, now]; a verdict only counts for
// the pending id (a stale one changes nothing); kTurnIncomplete answers a verdict at or below
// turn_threshold, kTurnEnd(kModel) one above it, kTimeout only comes from silence, kEndOfStream
// only after flush(); every turn ends exactly once, ends inside the audio no earlier than it
// started; retain_from_sample() never moves back and never passes audio an analysis then asks
// for; and after flush(), answering what it asks, every turn that started has ended.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <optional>

#include "brisvox/error.h"
#include "brisvox/models/turn/turn_detector.h"
#include "fuzz_check.h"
#include "probability_sequence.h"

namespace {

using brisvox::TurnAction;
using brisvox::TurnDetector;
using State = TurnDetector::State;

brisvox::TurnParams params_from(FuzzedDataProvider& in) {
  brisvox::TurnParams p;
  p.threshold = in.PickValueInArray({0.01, 0.3, 0.5, 0.7, 0.99});
  p.neg_threshold = in.ConsumeBool() ? -1.0 : p.threshold * in.ConsumeProbability<double>();
  p.stop_ms = in.ConsumeIntegralInRange(0, 1000);
  p.pre_speech_ms = in.ConsumeIntegralInRange(0, 1000);
  p.max_silence_ms = p.stop_ms + in.ConsumeIntegralInRange(0, 3000);
  p.turn_threshold = in.ConsumeProbability<double>();
  return p;
}

enum class Call { kPush, kVerdict, kFlush };

// Checks one call's actions against the detector before and after it.
class TurnChecker {
 public:
  explicit TurnChecker(const brisvox::TurnParams& params) : params_(params) {}

  void before(const TurnDetector& d) {
    state_before_ = d.state();
    const std::int64_t retain = d.retain_from_sample();
    FUZZ_CHECK(retain >= retain_from_, "retain_from_sample went back from %lld to %lld",
               static_cast<long long>(retain_from_), static_cast<long long>(retain));
    retain_from_ = retain;
  }

  void after(const TurnDetector& d, const brisvox::TurnActions& actions, Call call, std::optional<float> verdict) {
    if (state_before_ == State::kIdle && d.state() != State::kIdle) {
      FUZZ_CHECK(call == Call::kPush && actions.empty(), "a turn started other than by a push");
      ++turns_started_;
    }
    bool open = state_before_ != State::kIdle;
    for (const TurnAction& a : actions) {
      FUZZ_CHECK(open, "an action outside a turn");
      FUZZ_CHECK(a.start_sample >= 0 && a.start_sample <= a.end_sample && a.end_sample <= d.position_samples(),
                 "action over [%lld, %lld) at position %lld", static_cast<long long>(a.start_sample),
                 static_cast<long long>(a.end_sample), static_cast<long long>(d.position_samples()));
      switch (a.kind) {
        case TurnAction::Kind::kAnalyze:
          FUZZ_CHECK(call != Call::kVerdict, "a verdict asked for an analysis");
          FUZZ_CHECK(a.request_id > last_request_, "request id %llu after %llu",
                     static_cast<unsigned long long>(a.request_id), static_cast<unsigned long long>(last_request_));
          FUZZ_CHECK(a.start_sample >= retain_from_, "analysis from %lld, audio before %lld may be gone",
                     static_cast<long long>(a.start_sample), static_cast<long long>(retain_from_));
          FUZZ_CHECK(a.end_sample == d.position_samples(), "analysis does not end now");
          last_request_ = a.request_id;
          FUZZ_CHECK(d.state() == State::kAwaitingVerdict && d.pending_request() == a.request_id,
                     "no verdict pending after an analysis");
          break;
        case TurnAction::Kind::kTurnIncomplete:
          FUZZ_CHECK(call == Call::kVerdict && verdict && *verdict <= params_.turn_threshold,
                     "turn_incomplete not from a verdict at or below turn_threshold");
          break;
        case TurnAction::Kind::kTurnEnd:
          check_end(a, call, verdict);
          open = false;
          ++turns_ended_;
          break;
      }
    }
    if (call == Call::kVerdict && !counts_) {
      FUZZ_CHECK(actions.empty() && d.state() == state_before_, "a stale verdict changed the detector");
    }
  }

  // Whether the next verdict is for the pending request.
  void set_verdict_counts(bool counts) { counts_ = counts; }
  void flushed() { flushed_ = true; }
  int turns_started() const { return turns_started_; }
  int turns_ended() const { return turns_ended_; }

 private:
  void check_end(const TurnAction& a, Call call, std::optional<float> verdict) {
    switch (a.reason) {
      case TurnAction::Reason::kModel:
        FUZZ_CHECK(call == Call::kVerdict && verdict && *verdict > params_.turn_threshold,
                   "turn_end(model) not from a verdict above turn_threshold");
        FUZZ_CHECK(a.probability == *verdict, "turn_end carries another probability");
        break;
      case TurnAction::Reason::kTimeout:
        FUZZ_CHECK(call == Call::kPush, "turn_end(timeout) not from silence");
        break;
      case TurnAction::Reason::kEndOfStream:
        FUZZ_CHECK(flushed_, "turn_end(end_of_stream) before flush()");
        break;
    }
  }

  brisvox::TurnParams params_;
  State state_before_ = State::kIdle;
  std::int64_t retain_from_ = 0;
  std::uint64_t last_request_ = 0;
  bool counts_ = false;
  bool flushed_ = false;
  int turns_started_ = 0;
  int turns_ended_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const bool wideband = in.ConsumeBool();
  const int rate = wideband ? 16000 : 8000;
  const int frame = wideband ? 512 : 256;
  const brisvox::TurnParams params = params_from(in);
  std::optional<TurnDetector> detector;
  try {
    detector.emplace(rate, frame, params);
  } catch (const brisvox::Error&) {
    return 0;  // parameters the validation refuses (covered by the unit tests)
  }
  const brisvox::fuzz::ProbabilityMap to_probability(params.threshold, params.effective_neg_threshold());
  TurnChecker checker(params);
  TurnDetector& d = *detector;

  // Verdicts may come late, never, or with an id that is no longer pending; most calls are frames.
  while (in.remaining_bytes() > 0) {
    const std::uint8_t op = in.ConsumeIntegral<std::uint8_t>();
    checker.before(d);
    if (op < 200) {
      checker.after(d, d.push(to_probability(in.ConsumeIntegral<std::uint8_t>())), Call::kPush, std::nullopt);
    } else {
      const bool stale = op >= 240 || d.pending_request() == 0;
      const std::uint64_t id = stale ? in.ConsumeIntegralInRange<std::uint64_t>(0, 8) : d.pending_request();
      const float p = in.ConsumeProbability<float>();
      checker.set_verdict_counts(id != 0 && id == d.pending_request() && d.verdict_pending());
      checker.after(d, d.verdict(id, p), Call::kVerdict, p);
    }
  }

  // End of the stream: flush, answer what it asks, until it has nothing more to say.
  checker.flushed();
  checker.before(d);
  checker.after(d, d.flush(), Call::kFlush, std::nullopt);
  for (int round = 0; d.verdict_pending(); ++round) {
    FUZZ_CHECK(round < 2, "still awaiting a verdict after %d answered analyses", round);
    checker.before(d);
    checker.set_verdict_counts(true);
    checker.after(d, d.verdict(d.pending_request(), round == 0 ? 0.0f : 1.0f), Call::kVerdict,
                  round == 0 ? 0.0f : 1.0f);
  }
  checker.before(d);
  const brisvox::TurnActions last = d.flush();
  FUZZ_CHECK(last.empty() && d.state() == State::kIdle, "a turn is still open after the end of the stream");
  FUZZ_CHECK(checker.turns_started() == checker.turns_ended(), "%d turns started, %d ended",
             checker.turns_started(), checker.turns_ended());
  return 0;
}
