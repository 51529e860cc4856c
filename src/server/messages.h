// The JSON text messages the server sends on /v1/stream, one function per message type
// (docs/PROTOCOL.md). Times are seconds of stream audio; numbers are printed in their shortest
// exact form.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <optional>
#include <utility>

#include "server/call_params.h"
#include "server/query_params.h"
#include "server/server_config.h"

namespace brisvox::server {

// {"type":"ready","id":..,"config":{..the effective stream config..},"limits":{..}}: `stream` is the
// config the engine runs (Stream::config(): the VAD's model rate, max_speech_s as the stt stage
// caps it); `request` gives the encoding and the tag.
std::string ready_message(std::uint64_t session_id, const AudioRequest& request, const StreamConfig& stream,
                          const ServerLimits& limits);
// /v1/call's ready message: the caller's stream as /v1/stream's, with the call's speech, barge-in
// and playout lead in "config", and the speak limits in "limits".
struct CallReady {
  const CallRequest& request;
  const StreamConfig& stream;  // Call::listen_config()
  std::string_view voice;      // the voice's name
  int speech_rate_hz;
  std::size_t max_text_bytes;
};
std::string call_ready_message(std::uint64_t session_id, const CallReady& call, const ServerLimits& limits);
// /v1/tts's ready message: the voice and its settings in "config", the text limits in "limits".
struct TtsReady {
  std::string_view tag;
  std::string_view voice;  // the voice's name
  int sample_rate_hz;
  const SpeechConfig& speech;
  std::size_t max_text_bytes;
};
std::string tts_ready_message(std::uint64_t session_id, const TtsReady& tts, const ServerLimits& limits);
std::string speech_start_message(double start_s);
std::string speech_end_message(double start_s, double end_s);
// End of turn (Smart Turn): probability -1 (no verdict, a timeout) is sent as null.
std::string turn_end_message(double start_s, double end_s, float probability, std::string_view reason);
std::string turn_incomplete_message(double start_s, double end_s, float probability);
std::string transcript_message(double start_s, double end_s, const Transcript& transcript);
// With partial transcripts (the query key partial_ms): the open segment's text so far, agreed and unstable.
std::string transcript_partial_message(double start_s, double end_s, const Transcript& transcript);
std::string vad_message(double frame_start_s, float probability);
// backlog_ms: how far behind the engine was; rejected_samples: samples the engine refused at first
// (held back and retried, never lost); dropped_messages: "vad" messages not sent to a slow reader.
std::string overload_message(std::uint32_t backlog_ms, std::uint64_t rejected_samples, std::uint64_t dropped_messages);
std::string error_message(std::string_view code, std::string_view message);
std::string flushed_message(double end_s);
std::string reset_message();

// /v1/call's speech messages. `id_json` is a speak's id as JSON (the client's, or its number);
// `name_json` a mark's name as JSON.
std::string speak_started_message(std::string_view id_json);
std::string speak_done_message(std::string_view id_json, double duration_ms);
// `barge_in`: where the caller's speech started and where it was confirmed (seconds of the call's
// audio), when a barge-in stopped it.
std::string interrupted_message(std::string_view id_json, double sent_ms, std::string_view reason,
                                const std::optional<std::pair<double, double>>& barge_in);
std::string mark_message(std::string_view name_json);
// An error about one speak (refused, or failed): error_message() with its "id".
std::string speak_error_message(std::string_view code, std::string_view message, std::string_view id_json);

// {"error":{"code":..,"message":..}}: the body of an HTTP error.
std::string http_error_body(std::string_view code, std::string_view message);

}  // namespace brisvox::server
