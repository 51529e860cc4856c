// The barge-in stage of a call's stream (call.h, stream/stage.h): when the caller's speech is
// confirmed while the call is speaking, it stops the call's speech on the spot (the VAD frame that
// confirmed it) and emits kBargeIn.
//
// Confirmed speech: since the VAD's speech start, frames scored at or above its threshold add up
// to BargeInOptions::min_speech_ms (a short backchannel does not); once per speech segment. With
// on_turn_end, a kTurnEnd of the turn stage while the call speaks interrupts instead.
#pragma once

#include <cstdint>
#include <memory>

#include "brisvox/engine/call.h"
#include "engine/call/call_link.h"
#include "engine/stream/stage.h"

namespace brisvox::engine {

class TurnStage;

class BargeInStage final : public Stage {
 public:
  // `turn`: the stream's turn stage (on_turn_end needs it; it outlives this stage: both belong to
  // the stream).
  BargeInStage(const BargeInOptions& options, const VadOptions& vad, int model_rate_hz, int chunk_samples,
               std::shared_ptr<CallLink> link, const TurnStage* turn);

  void collect(StreamState& s) override;
  void on_segment(StreamState& s, const SegmentEvent& e) override;
  void on_frame(StreamState& s, float probability, std::int64_t frame_ready_ns) override;

 private:
  void check_turn(StreamState& s);
  void interrupt(StreamState& s);

  const BargeInOptions options_;
  const float threshold_;
  const std::int64_t min_voiced_samples_;
  const std::int64_t chunk_samples_;
  std::shared_ptr<CallLink> link_;
  const TurnStage* turn_;
  bool in_speech_ = false;
  bool interrupted_ = false;          // this speech segment interrupted already
  std::int64_t speech_start_ = 0;     // model-rate sample
  std::int64_t voiced_ = 0;           // samples of frames at or above the threshold since then
  std::uint64_t turns_seen_ = 0;
};

}  // namespace brisvox::engine
