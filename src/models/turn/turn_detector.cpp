#include "brisvox/models/turn/turn_detector.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

#include "brisvox/error.h"

namespace brisvox {

std::string_view to_string(TurnAction::Reason reason) noexcept {
  switch (reason) {
    case TurnAction::Reason::kModel: return "model";
    case TurnAction::Reason::kTimeout: return "timeout";
    case TurnAction::Reason::kEndOfStream: return "end_of_stream";
  }
  return "model";
}

void TurnActions::push_back(const TurnAction& a) noexcept {
  assert(size_ < kCapacity);
  if (size_ < kCapacity) items_[size_++] = a;
}

void TurnParams::validate() const {
  auto fail = [](const std::string& m) { throw Error(ErrorCode::kInvalidArgument, m); };
  if (!(threshold > 0.0 && threshold < 1.0)) fail(fmt::format("turn threshold must be in (0, 1), got {}", threshold));
  if (neg_threshold >= 0.0 && !(neg_threshold < threshold)) {
    fail(fmt::format("turn neg_threshold must be below threshold ({}), got {}", threshold, neg_threshold));
  }
  if (stop_ms < 0 || stop_ms > 60000) fail(fmt::format("stop_ms must be 0 to 60000, got {}", stop_ms));
  if (pre_speech_ms < 0 || pre_speech_ms > 8000) fail(fmt::format("pre_speech_ms must be 0 to 8000, got {}", pre_speech_ms));
  if (max_silence_ms < stop_ms || max_silence_ms > 600000) {
    fail(fmt::format("max_silence_ms must be at least stop_ms ({}) and at most 600000, got {}", stop_ms, max_silence_ms));
  }
  if (!(turn_threshold >= 0.0 && turn_threshold <= 1.0)) {
    fail(fmt::format("turn_threshold must be in [0, 1], got {}", turn_threshold));
  }
}

double TurnParams::effective_neg_threshold() const {
  return neg_threshold >= 0.0 ? neg_threshold : std::max(threshold - 0.15, 0.01);
}

TurnDetector::TurnDetector(int sample_rate_hz, int frame_samples, const TurnParams& params)
    : sample_rate_hz_(sample_rate_hz), frame_samples_(frame_samples), params_(params) {
  params.validate();
  if (sample_rate_hz <= 0 || frame_samples <= 0) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("TurnDetector: bad rate {} or frame {}", sample_rate_hz, frame_samples));
  }
  neg_threshold_ = params.effective_neg_threshold();
  const auto ms = [&](int v) { return static_cast<std::int64_t>(v) * sample_rate_hz / 1000; };
  stop_samples_ = ms(params.stop_ms);
  pre_speech_samples_ = ms(params.pre_speech_ms);
  max_silence_samples_ = ms(params.max_silence_ms);
}

std::int64_t TurnDetector::retain_from_sample() const noexcept {
  if (state_ == State::kIdle) return std::max<std::int64_t>(0, position_ - pre_speech_samples_);
  return turn_start_;
}

TurnAction TurnDetector::analyze() {
  TurnAction a;
  a.kind = TurnAction::Kind::kAnalyze;
  a.start_sample = turn_start_;
  a.end_sample = position_;
  a.request_id = next_request_id_++;
  pending_request_ = a.request_id;
  state_ = State::kAwaitingVerdict;
  return a;
}

TurnAction TurnDetector::end_turn(TurnAction::Reason reason) {
  TurnAction a;
  a.kind = TurnAction::Kind::kTurnEnd;
  a.reason = reason;
  a.start_sample = turn_start_;
  a.end_sample = speech_end_;
  a.probability = last_probability_;
  state_ = State::kIdle;
  pending_request_ = 0;
  last_probability_ = -1.0f;
  silence_samples_ = 0;
  return a;
}

TurnActions TurnDetector::push(float prob) {
  TurnActions out;
  const std::int64_t frame_start = position_;
  position_ += frame_samples_;
  // Hysteresis, as the VAD segmenter: between the two thresholds a frame keeps the last state.
  const bool speech = prob >= params_.threshold ? true : (prob < neg_threshold_ ? false : in_speech_);
  in_speech_ = speech;
  switch (state_) {
    case State::kIdle:
      if (speech) {
        turn_start_ = std::max<std::int64_t>(0, frame_start - pre_speech_samples_);
        state_ = State::kSpeaking;
        silence_samples_ = 0;
      }
      break;
    case State::kSpeaking:
      if (speech) {
        silence_samples_ = 0;
      } else {
        if (silence_samples_ == 0) speech_end_ = frame_start;
        silence_samples_ += frame_samples_;
        if (silence_samples_ >= stop_samples_) out.push_back(analyze());
      }
      break;
    case State::kAwaitingVerdict:
    case State::kPaused:
      if (speech) {
        // The speaker goes on: a pending verdict is for audio that is no longer the whole turn.
        pending_request_ = 0;
        state_ = State::kSpeaking;
        silence_samples_ = 0;
      } else {
        silence_samples_ += frame_samples_;
        if (silence_samples_ >= max_silence_samples_) out.push_back(end_turn(TurnAction::Reason::kTimeout));
      }
      break;
  }
  return out;
}

TurnActions TurnDetector::verdict(std::uint64_t request_id, float probability) {
  TurnActions out;
  if (state_ != State::kAwaitingVerdict || request_id != pending_request_ || request_id == 0) return out;
  pending_request_ = 0;
  last_probability_ = probability;
  if (probability > params_.turn_threshold) {
    out.push_back(end_turn(TurnAction::Reason::kModel));
    return out;
  }
  TurnAction a;
  a.kind = TurnAction::Kind::kTurnIncomplete;
  a.start_sample = turn_start_;
  a.end_sample = speech_end_;
  a.probability = probability;
  out.push_back(a);
  state_ = State::kPaused;
  if (flushing_) out.push_back(end_turn(TurnAction::Reason::kEndOfStream));
  return out;
}

TurnActions TurnDetector::flush() {
  TurnActions out;
  flushing_ = true;
  switch (state_) {
    case State::kIdle:
    case State::kAwaitingVerdict:  // its verdict closes the turn
      break;
    case State::kSpeaking:
      if (silence_samples_ == 0) speech_end_ = position_;
      out.push_back(analyze());
      break;
    case State::kPaused:
      out.push_back(end_turn(TurnAction::Reason::kEndOfStream));
      break;
  }
  return out;
}

}  // namespace brisvox
