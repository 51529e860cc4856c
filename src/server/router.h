// HTTP routing: which endpoint a request is for, and the answers that need no waiting.
//
//   GET  /healthz      200 {"status":"ok",...} (503 {"status":"draining"} while shutting down)
//   GET  /readyz       200 {"status":"ready",...} when it can take a new stream now; 503
//                      {"status":"not_ready","reasons":[...]} while draining or at capacity
//   GET  /metrics      Prometheus text format 0.0.4
//   GET  /v1/stream    WebSocket upgrade (stream_handler.h); without an upgrade: 426
//   POST /v1/vad       speech segments of an audio file (vad_request.h)
//   POST /v1/transcribe  the transcript of an audio file (vad_request.h; needs --stt-model)
//   POST /v1/tts       text to speech, WAV or chunked PCM (tts_http.h); GET: WebSocket (tts_handler.h)
//   GET  /v1/call      WebSocket: a duplex call (call_handler.h, call_protocol.h)
//   GET  /v1/telephony/twilio         WebSocket: a Twilio Media Stream, <Connect><Stream>, driven by
//                                     the --call-app application (twilio_front.h, docs/TELEPHONY.md)
//   GET  /v1/telephony/twilio/listen  the same for <Start><Stream>: listen-only
//   GET  /v1/telephony/telnyx         WebSocket: a Telnyx media stream (bidirectional, RTP mode),
//                                     driven by the --call-app application (telnyx_front.h)
//   GET  /v1/telephony/telnyx/listen  the same, listen-only
//   POST /v1/audio/transcriptions  OpenAI's transcription (openai_transcription.h, docs/OPENAI.md)
//   POST /v1/audio/translations    OpenAI's translation: refused, brisvox does not translate yet
//   POST /v1/audio/speech          OpenAI's text to speech, answered as POST /v1/tts (openai_speech.h)
//   GET  /v1/models    OpenAI's model list: the configured models and the stock names mapped to them
//   GET  /, /<file>    the demo page (static_files.h)
// Errors are JSON: {"error":{"code":"...","message":"..."}}; on OpenAI's paths (/v1/audio/...,
// /v1/models) OpenAI's {"error":{"message","type","param","code"}} (openai_api.h).
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <optional>
#include <string_view>

#include "server/server_context.h"

namespace brisvox::server {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

// Beast's string_view (boost::string_view in Boost 1.74) as a std::string_view.
inline std::string_view to_sv(boost::beast::string_view s) { return {s.data(), s.size()}; }

enum class Route {
  kHealth, kReady, kMetrics, kStream, kCall, kRealtime, kTwilio, kTwilioListen, kTelnyx, kTelnyxListen, kVonage,
  kVonageListen, kAsterisk, kAsteriskListen, kJambonz, kJambonzListen, kFreeswitch, kFreeswitchListen, kAudioSocket, kVad, kTranscribe, kTts, kOpenAiTranscriptions, kOpenAiTranslations, kOpenAiSpeech, kOpenAiModels, kPreflight, kStatic, kNotFound, kMethodNotAllowed
};

Route route_for(const Request& request);
// The handler label of a route in the HTTP metrics: "healthz", "readyz", "metrics", "stream",
// "call", "twilio", "telnyx", "vad", "transcribe", "tts", "openai_transcriptions", "openai_translations",
// "openai_speech", "openai_models", "preflight", "static", "not_found", "method_not_allowed".
std::string_view route_name(Route route);

// The largest body a request to `route` may carry, and what to say when one is larger. Only the
// uploads (POST /v1/vad, /v1/transcribe, /v1/audio/transcriptions, /v1/audio/translations) take --max-body-bytes, and only they count against
// --max-uploads; a JSON request (POST /v1/tts, /v1/audio/speech) is text and its options; every other route needs
// no body. So no route outside the upload gate buffers more than kMaxJsonBodyBytes per connection.
inline constexpr std::size_t kMaxJsonBodyBytes = 256 << 10;  // a 20 000-byte text escaped, and options
inline constexpr std::size_t kMaxOtherBodyBytes = 8 << 10;
struct BodyLimit {
  std::size_t bytes;
  std::string_view why;  // e.g. "--max-body-bytes"
};
BodyLimit body_limit(Route route, const ServerLimits& limits);

// A JSON error answer for `request` (keep-alive as the request asks).
Response error_response(const Request& request, boost::beast::http::status status, std::string_view code,
                        std::string_view message);

// Token and Origin checks of the /v1/ endpoints: the refusal (401, 403), or nothing.
// `token_checked_later`: the Origin only (the endpoint's handler checks the token).
std::optional<Response> check_access(ServerContext& ctx, const Request& request, bool token_checked_later = false);

// The answer of every route except kStream with an upgrade, kVad, kTranscribe, kOpenAiTranscriptions
// and kTts (they wait for the engine).
Response immediate_response(ServerContext& ctx, const Request& request, Route route);

// Headers that let an allowed cross-origin page read the answer (none for same-origin pages).
void add_cors_headers(const ServerContext& ctx, const Request& request, Response& response);

}  // namespace brisvox::server
