// What a stream reports back: speech events, optional per-frame probabilities, and trouble.
#pragma once

#include <cstdint>
#include <string_view>

#include "brisvox/error.h"
#include "brisvox/models/turn/turn_detector.h"

namespace brisvox {

enum class EventType : std::uint8_t {
  kSpeechStart,      // start_s: where the speech starts (padded), in seconds of stream audio
  kSpeechEnd,        // start_s, end_s: the finished segment
  kVadProbability,   // frame_index, start_s/end_s of the frame, probability (StreamConfig::emit_probabilities)
  kOverload,         // the stream fell behind: backlog_ms of audio waited, or audio/events were refused
  kError,            // error_code; Stream::last_error() has the message
  kEndOfStream,      // after flush(): every event of the stream has been delivered
  kTurnEnd,          // start_s, end_s (end of speech), probability (-1: none), turn_reason
  kTurnIncomplete,   // start_s, end_s, probability: the speaker paused but has not finished
};

std::string_view to_string(EventType type) noexcept;

// Plain data, 48 bytes: events are copied through a fixed ring per stream, never allocated.
struct Event {
  EventType type = EventType::kSpeechStart;
  ErrorCode error_code = ErrorCode::kInternal;  // kError only
  TurnAction::Reason turn_reason = TurnAction::Reason::kModel;  // kTurnEnd only
  float probability = 0.0f;                     // kVadProbability, kTurn*
  double start_s = 0.0;
  double end_s = 0.0;
  std::int64_t frame_index = 0;                 // kVadProbability: index of the model frame
  // kOverload: how far behind the stream was (ms of audio waiting), and what was refused so far.
  std::uint32_t backlog_ms = 0;
  std::uint32_t rejected_samples = 0;
};

}  // namespace brisvox
