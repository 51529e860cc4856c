#include "engine/call/barge_in_stage.h"

#include <algorithm>

#include "engine/pool/pool_clock.h"
#include "engine/stages/turn_stage.h"
#include "engine/stream/stream_state.h"

namespace brisvox::engine {

BargeInStage::BargeInStage(const BargeInOptions& options, const VadOptions& vad, int model_rate_hz, int chunk_samples,
                           std::shared_ptr<CallLink> link, const TurnStage* turn)
    : options_(options),
      threshold_(static_cast<float>(vad.params.threshold)),
      min_voiced_samples_(std::int64_t{options.min_speech_ms} * model_rate_hz / 1000),
      chunk_samples_(chunk_samples),
      link_(std::move(link)),
      turn_(turn),
      turns_seen_(turn != nullptr ? turn->turns_ended() : 0) {}

void BargeInStage::on_segment(StreamState& /*s*/, const SegmentEvent& e) {
  if (e.kind == SegmentEvent::Kind::kSpeechStart) {
    in_speech_ = true;
    interrupted_ = false;
    speech_start_ = e.start_sample;
    voiced_ = 0;
  } else {
    in_speech_ = false;
  }
}

void BargeInStage::on_frame(StreamState& s, float probability, std::int64_t /*frame_ready_ns*/) {
  if (options_.on_turn_end) {
    check_turn(s);
    return;
  }
  if (!in_speech_ || interrupted_) return;
  if (probability >= threshold_) voiced_ += chunk_samples_;
  if (voiced_ >= min_voiced_samples_ && link_->speaking(now_ns())) interrupt(s);
}

void BargeInStage::collect(StreamState& s) {
  // A verdict that ends the turn comes through the turn stage's mailbox, before this stage's turn.
  if (options_.on_turn_end) check_turn(s);
}

void BargeInStage::check_turn(StreamState& s) {
  if (turn_ == nullptr) return;
  const std::uint64_t turns = turn_->turns_ended();
  if (turns == turns_seen_) return;
  turns_seen_ = turns;
  if (link_->speaking(now_ns())) interrupt(s);
}

void BargeInStage::interrupt(StreamState& s) {
  interrupted_ = true;
  const std::int64_t now = now_ns();
  // The utterance heard now, by the owner's playout clock (0: none of it had been handed out yet).
  const std::uint32_t heard =
      now < link_->playout_end_ns.load(std::memory_order_acquire) ? link_->audible_id.load(std::memory_order_acquire) : 0;
  Event ev;
  ev.type = EventType::kBargeIn;
  ev.start_s = s.seconds(speech_start_);
  ev.end_s = s.seconds(s.frames_done * s.chunk_samples);  // the end of the frame that confirmed it
  ev.speech = SpeechPosition{heard, 0, 0};
  // The event before the stop: a kTtsInterrupted the stop leads to is written after it, so the
  // owner can always hand the kBargeIn out first (Call::poll).
  s.output.emit(ev);
  link_->barge_ins.fetch_add(1, std::memory_order_acq_rel);
  link_->speech->stop(/*barge_in=*/true);
}

}  // namespace brisvox::engine
