// What a stream reports back: speech events, optional per-frame probabilities, end-of-turn
// verdicts, and trouble; and what a speech (text-to-speech) session reports: audio chunks and the
// end of each utterance. Events are small fixed-size records copied through a ring per stream
// (allocation-free); variable-size results (a speech segment's audio; later transcript text and
// synthesized audio) travel beside them in the stream's bounded payload channel, and their event
// says how to read them (payload, payload_bytes, payload_id; Stream::read_payload).
#pragma once

#include <cstdint>
#include <string_view>

#include "brisvox/error.h"
#include "brisvox/models/turn/turn_detector.h"

namespace brisvox {

enum class EventType : std::uint8_t {
  kSpeechStart,      // start_s: where the speech starts (padded), in seconds of stream audio
  kSpeechEnd,        // start_s, end_s: the finished segment (its audio as payload with VadOptions::segment_audio)
  kVadProbability,   // frame_index, start_s/end_s of the frame, probability (VadOptions::emit_probabilities)
  kOverload,         // the stream fell behind: backlog_ms of audio waited, or audio/events were refused
  kError,            // error_code; Stream::last_error() has the message
  kEndOfStream,      // after flush(): every event of the stream has been delivered
  kTurnEnd,          // start_s, end_s (end of speech), probability (-1: none), turn_reason
  kTurnIncomplete,   // start_s, end_s, probability: the speaker paused but has not finished
  kTranscript,       // start_s, end_s of the segment, probability = its no-speech probability;
                     // the transcript as payload (Stream::read_transcript). SttOptions only.
  // Text-to-speech (Speech, speech.h); `speech` says which utterance and sentence.
  kTtsAudio,         // a piece of synthesised audio as payload (float32 at Speech::sample_rate_hz());
                     // start_s, end_s: where it lies in the utterance's audio
  kTtsEnd,           // the utterance is done: all its audio was delivered (end_s: its length)
  kTtsCancelled,     // the utterance was stopped by Speech::cancel() (end_s: the audio delivered)
  // A call (call.h): the caller's confirmed speech stopped the call's speech (barge-in). start_s: where
  // that speech started, end_s: where it was confirmed (seconds of the caller's audio);
  // speech.utterance_id: the utterance being heard then (0: none had been heard yet). Every
  // utterance spoken so far stops: those not finished end with kTtsInterrupted.
  kBargeIn,
  kTtsInterrupted,   // the utterance was stopped by a barge-in (end_s: the audio delivered)
  // Speech::mark(): every utterance spoken before the mark has been delivered (or stopped).
  // speech.utterance_id: the mark's id; end_s: when its playback reaches it, by a clock that plays
  // the delivered audio in real time (std::chrono::steady_clock, in seconds since its epoch). A
  // Call holds the event until then (CallConfig::playout_lead_ms).
  kTtsMark,
  // SttOptions::partial_interval_ms: the open speech segment's text so far (start_s: the
  // segment's start, end_s: the end of the audio decoded), as payload (Stream::read_transcript:
  // `text` is what two consecutive decodes agree on, `unstable` the rest of the latest); the
  // segment's kTranscript follows at its end.
  kTranscriptPartial,
};

std::string_view to_string(EventType type) noexcept;

// Whether an event comes with a payload in the stream's payload channel.
enum class PayloadStatus : std::uint8_t {
  kNone,       // no payload
  kAttached,   // payload_bytes bytes wait in the channel under payload_id
  kTruncated,  // attached, but holds only the end of what it describes (a segment longer than the
               // audio the stream keeps: VadOptions::max_segment_audio_s)
  kDropped,    // there was one, but the channel was full (the reader fell behind); counted in
               // EngineStats::payloads_dropped
};

// Where a text-to-speech event belongs: the utterance (Speech::speak's or Speech::mark's id) and its
// sentence.
// Trivial (no initialisers): it shares its 8 bytes with Event::frame_index.
struct SpeechPosition {
  std::uint32_t utterance_id;
  std::uint16_t sentence_index;  // 0-based; kTtsEnd / kTtsCancelled / kError: sentences delivered
  std::uint16_t sentence_count;  // of the utterance (0 when it ended before its text was phonemized)
};

// Plain data, 48 bytes.
struct Event {
  EventType type = EventType::kSpeechStart;
  ErrorCode error_code = ErrorCode::kInternal;                  // kError only
  TurnAction::Reason turn_reason = TurnAction::Reason::kModel;  // kTurnEnd only
  PayloadStatus payload = PayloadStatus::kNone;
  float probability = 0.0f;                     // kVadProbability, kTurn*
  double start_s = 0.0;
  double end_s = 0.0;
  union {
    std::int64_t frame_index = 0;               // kVadProbability, kError of a stream: index of the model frame
    SpeechPosition speech;                      // kTts*, kError of a speech session
  };
  // kOverload: how far behind the stream was (ms of audio waiting), and what was refused so far.
  std::uint32_t backlog_ms = 0;
  std::uint32_t rejected_samples = 0;
  // With a payload: its size, and its number in the stream (1, 2, ...), for Stream::read_payload.
  std::uint32_t payload_bytes = 0;
  std::uint32_t payload_id = 0;
};

}  // namespace brisvox
