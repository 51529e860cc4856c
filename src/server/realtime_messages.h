// The messages of OpenAI's Realtime API in a transcription session (GET /v1/realtime?intent=
// transcription; docs/OPENAI.md "Realtime transcription"), read and written as OpenAI's API reference
// and its official client (the `openai` package's types/realtime) define them: the client events a
// transcription session takes (session.update, input_audio_buffer.append/commit/clear) and the
// server events brisvox sends (session.created/updated, input_audio_buffer.speech_started/
// speech_stopped/committed/cleared, conversation.item.input_audio_transcription.delta/completed/
// failed, error).
//
// Reading is strict about the values of the fields brisvox uses (a wrong one is an error event
// naming it, as OpenAI's `param`) and lets through fields a transcription session has no use for
// (create_response, idle_timeout_ms, ...), as OpenAI ignores fields a model does not use. Bounded as
// every peer input (peer_json.h). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "brisvox/audio/pcm.h"

namespace brisvox::server {

// turn_detection {type: "server_vad", ...}: brisvox's VAD segments the audio, each segment an item;
// {type: "semantic_vad", eagerness}: Smart Turn decides where a turn ends, each turn an item
// (docs/OPENAI.md says how the parameters map onto brisvox's).
struct RealtimeVad {
  enum class Type { kServerVad, kSemanticVad };
  Type type = Type::kServerVad;
  double threshold = 0.5;
  int prefix_padding_ms = 300;
  int silence_duration_ms = 500;
  std::string eagerness = "auto";  // semantic_vad: low, medium, high, auto
  bool operator==(const RealtimeVad&) const = default;
};

// audio.input.transcription: the model as the client named it, the language ("" = null), the prompt.
struct RealtimeTranscription {
  std::string model;
  std::string language;
  std::string prompt;
  bool operator==(const RealtimeTranscription&) const = default;
};

// A transcription session's settings.
struct RealtimeSession {
  // audio/pcm (24 kHz, 16-bit little-endian mono), audio/pcmu or audio/pcma (8 kHz G.711).
  SampleEncoding encoding = SampleEncoding::kPcmS16le;
  int sample_rate_hz = 24000;
  std::optional<RealtimeVad> turn_detection = RealtimeVad{};  // nullopt: null, the client commits
  std::optional<RealtimeTranscription> transcription;          // nullopt: null, no transcripts
  bool operator==(const RealtimeSession&) const = default;
};

// Bounds on what a client may send.
inline constexpr int kMaxRealtimePaddingMs = 10000;   // prefix_padding_ms
inline constexpr int kMaxRealtimeSilenceMs = 10000;   // silence_duration_ms
inline constexpr std::size_t kMaxRealtimeIdBytes = 256;       // event_id
inline constexpr std::size_t kMaxRealtimeModelBytes = 128;    // transcription.model
inline constexpr std::size_t kMaxRealtimeLanguageBytes = 16;  // transcription.language
inline constexpr std::size_t kMaxRealtimePromptBytes = 4096;  // transcription.prompt

enum class RealtimeClientType { kSessionUpdate, kAppend, kCommit, kClear };

// What an error event says (its "error" object); `param` and `code` may be empty (null).
struct RealtimeProblem {
  std::string code;
  std::string message;
  std::string param;
};

struct RealtimeClientEvent {
  RealtimeClientType type = RealtimeClientType::kCommit;
  std::string event_id;     // the client's, "" when none (echoed in an error about it)
  RealtimeSession session;  // kSessionUpdate: the current session with the update applied
  std::string audio;        // kAppend: the decoded bytes
  std::optional<RealtimeProblem> problem;  // set: the event is refused, nothing else is read
};

// Reads one client event (a WebSocket text message). A session.update is applied to `current`
// (fields it leaves out keep their values; null turns turn_detection or transcription off). Never
// throws.
RealtimeClientEvent parse_realtime_event(std::string_view json_text, const RealtimeSession& current);

// --- server events (each a JSON text; `event_id` is the server's, unique in the session) -----------
// The session object: {"type":"transcription","object":"realtime.session","id",
// "audio":{"input":{"format","noise_reduction":null,"transcription","turn_detection"}},"include":null}.
std::string realtime_session_json(const RealtimeSession& s, std::string_view session_id);
std::string realtime_session_event(std::string_view type, std::string_view event_id, const RealtimeSession& s,
                                   std::string_view session_id);  // session.created / session.updated
std::string realtime_speech_started(std::string_view event_id, long long audio_start_ms, std::string_view item_id);
std::string realtime_speech_stopped(std::string_view event_id, long long audio_end_ms, std::string_view item_id);
// previous_item_id: "" for null.
std::string realtime_committed(std::string_view event_id, std::string_view item_id, std::string_view previous_item_id);
std::string realtime_cleared(std::string_view event_id);
std::string realtime_transcription_delta(std::string_view event_id, std::string_view item_id, std::string_view delta);
// usage {"type":"duration","seconds"}: the item's audio.
std::string realtime_transcription_completed(std::string_view event_id, std::string_view item_id,
                                             std::string_view transcript, double seconds);
std::string realtime_transcription_failed(std::string_view event_id, std::string_view item_id,
                                          std::string_view code, std::string_view message);
// {"type":"error","event_id","error":{"type","code","message","param","event_id"}}: `type` is
// "invalid_request_error" for the client's mistakes, "server_error" for brisvox's;
// `client_event_id` is the event the error is about ("" for null).
std::string realtime_error(std::string_view event_id, std::string_view type, const RealtimeProblem& problem,
                           std::string_view client_event_id = {});

}  // namespace brisvox::server
