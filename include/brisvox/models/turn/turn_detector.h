// The end-of-turn state machine of one stream, with the semantics of Pipecat's
// LocalSmartTurnAnalyzerV3 driven by a VAD:
//
//   - A turn starts with the first speech frame (probability >= threshold); its audio starts
//     pre_speech_ms earlier.
//   - When the speaker pauses for stop_ms (frames below the VAD's neg_threshold), the detector asks
//     for an analysis of the turn audio (its last 8 s): an kAnalyze action with the sample range.
//   - The verdict (the model's probability) is given back with verdict(). Above turn_threshold:
//     kTurnEnd {start, end, probability, reason kModel}. Otherwise kTurnIncomplete, the audio is
//     kept, and the next pause asks again, over the whole turn so far.
//   - Silence of max_silence_ms after the last speech ends the turn, reason kTimeout.
//   - Speech that resumes while a verdict is pending cancels it: its verdict is ignored.
//   - flush() at the end of the stream: a turn still speaking is analysed as if paused; one still
//     open after its last verdict ends with reason kEndOfStream.
//
// Pure logic on probabilities and sample counts: no audio, no model. push() is O(1) and never
// allocates. Times are samples at the VAD's rate.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace brisvox {

struct TurnParams {
  double threshold = 0.5;       // a frame is speech at or above this probability
  double neg_threshold = -1.0;  // ... and silence below this; negative: max(threshold - 0.15, 0.01)
  int stop_ms = 200;            // pause that triggers an analysis
  int pre_speech_ms = 500;      // audio kept before the first speech frame
  int max_silence_ms = 3000;    // silence that ends a turn without a verdict
  double turn_threshold = 0.5;  // probability above which the turn is complete
  void validate() const;        // Error(kInvalidArgument) naming the field
  double effective_neg_threshold() const;
};

struct TurnAction {
  enum class Kind : std::uint8_t { kAnalyze, kTurnEnd, kTurnIncomplete };
  enum class Reason : std::uint8_t { kModel, kTimeout, kEndOfStream };
  Kind kind = Kind::kAnalyze;
  Reason reason = Reason::kModel;  // kTurnEnd only
  std::int64_t start_sample = 0;   // turn audio start (speech start - pre_speech, >= 0)
  std::int64_t end_sample = 0;     // kAnalyze: end of the audio to analyse; kTurnEnd: end of speech
  float probability = -1.0f;       // the verdict's; -1 when there was none (timeout before any)
  std::uint64_t request_id = 0;    // kAnalyze: pass back to verdict()
};

std::string_view to_string(TurnAction::Reason reason) noexcept;

class TurnActions {
 public:
  static constexpr std::size_t kCapacity = 4;
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const TurnAction& operator[](std::size_t i) const noexcept { return items_[i]; }
  const TurnAction* begin() const noexcept { return items_.data(); }
  const TurnAction* end() const noexcept { return items_.data() + size_; }
  void push_back(const TurnAction& a) noexcept;

 private:
  std::array<TurnAction, kCapacity> items_{};
  std::size_t size_ = 0;
};

class TurnDetector {
 public:
  enum class State : std::uint8_t { kIdle, kSpeaking, kAwaitingVerdict, kPaused };

  // frame_samples: VAD window (512 at 16 kHz, 256 at 8 kHz). Throws Error(kInvalidArgument).
  TurnDetector(int sample_rate_hz, int frame_samples, const TurnParams& params);

  // The VAD probability of the next frame.
  TurnActions push(float prob);
  // The verdict of an analysis. Stale ids (cancelled requests) are ignored.
  TurnActions verdict(std::uint64_t request_id, float probability);
  // End of the stream (after the last push). May ask for a final analysis; call flush() again
  // after its verdict to close the turn. Returns nothing once everything is closed.
  TurnActions flush();

  State state() const noexcept { return state_; }
  bool verdict_pending() const noexcept { return state_ == State::kAwaitingVerdict; }
  std::uint64_t pending_request() const noexcept { return pending_request_; }
  std::int64_t position_samples() const noexcept { return position_; }
  // The earliest sample an analysis may still ask for (the open turn's start), or the current
  // position when no turn is open: audio before it can be forgotten.
  std::int64_t retain_from_sample() const noexcept;

 private:
  TurnAction analyze();
  TurnAction end_turn(TurnAction::Reason reason);

  int sample_rate_hz_;
  std::int64_t frame_samples_;
  TurnParams params_;
  double neg_threshold_;
  std::int64_t stop_samples_;
  std::int64_t pre_speech_samples_;
  std::int64_t max_silence_samples_;

  State state_ = State::kIdle;
  std::int64_t position_ = 0;        // samples pushed
  bool in_speech_ = false;           // hysteresis state of the last frame
  std::int64_t turn_start_ = 0;      // with pre-speech
  std::int64_t speech_end_ = 0;      // where the current silence began
  std::int64_t silence_samples_ = 0; // length of the current silence
  float last_probability_ = -1.0f;   // of the last verdict in this turn
  std::uint64_t next_request_id_ = 1;
  std::uint64_t pending_request_ = 0;
  bool flushing_ = false;
};

}  // namespace brisvox
