#include "server/router.h"

#include <fmt/format.h>

#include <boost/beast/version.hpp>
#include <nlohmann/json.hpp>

#include "brisvox/error.h"
#include "brisvox/runtime/runtime_info.h"
#include "server/access_policy.h"
#include "server/messages.h"
#include "server/openai_api.h"
#include "server/openai_transcription.h"
#include "server/query_params.h"
#include "server/static_files.h"
#include "server/telephony_metrics.h"
#include "server/tts_metrics.h"

namespace brisvox::server {

namespace http = boost::beast::http;

namespace {

Response make_response(const Request& request, http::status status, std::string_view content_type, std::string body) {
  Response res{status, request.version()};
  res.set(http::field::server, "brisvox/" BRISVOX_VERSION);
  res.set(http::field::content_type, boost::beast::string_view(content_type.data(), content_type.size()));
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(request.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

Response health_response(ServerContext& ctx, const Request& request) {
  const bool draining = ctx.draining.load();
  nlohmann::ordered_json j;
  j["status"] = draining ? "draining" : "ok";
  j["version"] = BRISVOX_VERSION;
  j["uptime_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count();
  j["workers"] = ctx.engine.num_workers();
  j["streams"] = ctx.streams_open.load();
  j["max_streams"] = ctx.config.limits.max_streams;
  // What the server can do: the demo page asks for transcripts only when a Whisper model is here.
  j["models"] = nlohmann::ordered_json::array();
  for (const ModelSpec& m : ctx.engine.config().models) {
    j["models"].push_back({{"name", m.name}, {"family", std::string(to_string(m.family))}});
  }
  return make_response(request, draining ? http::status::service_unavailable : http::status::ok, "application/json",
                       j.dump() + "\n");
}

// Readiness, for a load balancer: whether a new stream would be admitted now. The models are
// loaded before the server listens, so a server that answers has them.
Response ready_response(ServerContext& ctx, const Request& request) {
  const auto& l = ctx.config.limits;
  nlohmann::ordered_json reasons = nlohmann::ordered_json::array();
  if (ctx.draining.load()) reasons.push_back("draining");
  const int streams = ctx.streams_open.load();
  if (streams >= l.max_streams) reasons.push_back("max_streams");
  const int connections = ctx.connections.open();
  if (connections >= ctx.connections.max_total()) reasons.push_back("max_connections");
  nlohmann::ordered_json j;
  j["status"] = reasons.empty() ? "ready" : "not_ready";
  if (!reasons.empty()) j["reasons"] = reasons;
  j["streams"] = streams;
  j["max_streams"] = l.max_streams;
  j["connections"] = connections;
  j["max_connections"] = ctx.connections.max_total();
  j["uploads"] = ctx.uploads.in_progress();
  j["max_uploads"] = ctx.uploads.max();
  auto res = make_response(request, reasons.empty() ? http::status::ok : http::status::service_unavailable,
                           "application/json", j.dump() + "\n");
  if (!reasons.empty()) res.set(http::field::retry_after, "1");
  return res;
}

Response metrics_response(ServerContext& ctx, const Request& request) {
  std::string text = render_prometheus(ctx.engine.stats(), ctx.metrics, process_rss_bytes());
  text += render_tts_metrics(ctx.tts_metrics);
  text += render_call_metrics(ctx.call_metrics);
  text += render_telephony_metrics(ctx.telephony_metrics);
  text += render_process_and_limits(
      {ctx.connections.open(), ctx.connections.max_total(), ctx.uploads.in_progress(), ctx.uploads.max()},
      ctx.metrics);
  return make_response(request, http::status::ok, kPrometheusContentType, std::move(text));
}

Response static_response(ServerContext& ctx, const Request& request) {
  const std::string& dir = ctx.config.web_dir.empty() ? default_web_dir() : ctx.config.web_dir;
  StaticFile file = serve_static_file(dir, target_path(to_sv(request.target())));
  auto res = make_response(request, static_cast<http::status>(file.status), file.content_type, std::move(file.body));
  res.set(http::field::cache_control, "no-cache");
  return res;
}

}  // namespace

Route route_for(const Request& request) {
  const std::string_view path = target_path(to_sv(request.target()));
  const http::verb method = request.method();
  auto only = [&](http::verb allowed, Route route) { return method == allowed ? route : Route::kMethodNotAllowed; };
  // HEAD is GET without the body (the session leaves the body out).
  auto get_or_head = [&](Route route) {
    return method == http::verb::get || method == http::verb::head ? route : Route::kMethodNotAllowed;
  };
  if (path == "/healthz") return get_or_head(Route::kHealth);
  if (path == "/readyz") return get_or_head(Route::kReady);
  if (path == "/metrics") return get_or_head(Route::kMetrics);
  if (path == "/v1/stream") return only(http::verb::get, Route::kStream);
  if (path == "/v1/call") return only(http::verb::get, Route::kCall);
  if (path == "/v1/realtime") return only(http::verb::get, Route::kRealtime);
  if (path == "/v1/telephony/twilio") return only(http::verb::get, Route::kTwilio);
  if (path == "/v1/telephony/twilio/listen") return only(http::verb::get, Route::kTwilioListen);
  if (path == "/v1/telephony/telnyx") return only(http::verb::get, Route::kTelnyx);
  if (path == "/v1/telephony/telnyx/listen") return only(http::verb::get, Route::kTelnyxListen);
  if (path == "/v1/telephony/vonage") return only(http::verb::get, Route::kVonage);
  if (path == "/v1/telephony/vonage/listen") return only(http::verb::get, Route::kVonageListen);
  if (path == "/v1/telephony/asterisk") return only(http::verb::get, Route::kAsterisk);
  if (path == "/v1/telephony/asterisk/listen") return only(http::verb::get, Route::kAsteriskListen);
  if (path == "/v1/telephony/jambonz") return only(http::verb::get, Route::kJambonz);
  if (path == "/v1/telephony/jambonz/listen") return only(http::verb::get, Route::kJambonzListen);
  if (path == "/v1/telephony/freeswitch") return only(http::verb::get, Route::kFreeswitch);
  if (path == "/v1/telephony/freeswitch/listen") return only(http::verb::get, Route::kFreeswitchListen);
  if (path == "/v1/telephony/audiosocket") return only(http::verb::get, Route::kAudioSocket);
  if (path == "/v1/vad") return method == http::verb::options ? Route::kPreflight : only(http::verb::post, Route::kVad);
  if (path == "/v1/transcribe") {
    return method == http::verb::options ? Route::kPreflight : only(http::verb::post, Route::kTranscribe);
  }
  if (path == "/v1/tts") {
    if (method == http::verb::options) return Route::kPreflight;
    return method == http::verb::post || method == http::verb::get ? Route::kTts : Route::kMethodNotAllowed;
  }
  if (path == "/v1/audio/transcriptions") return only(http::verb::post, Route::kOpenAiTranscriptions);
  if (path == "/v1/audio/translations") return only(http::verb::post, Route::kOpenAiTranslations);
  if (path == "/v1/audio/speech") return only(http::verb::post, Route::kOpenAiSpeech);
  if (path == "/v1/models") return get_or_head(Route::kOpenAiModels);
  if (path.starts_with("/v1/")) return Route::kNotFound;
  return method == http::verb::get || method == http::verb::head ? Route::kStatic : Route::kMethodNotAllowed;
}

BodyLimit body_limit(Route route, const ServerLimits& limits) {
  switch (route) {
    case Route::kVad:
    case Route::kTranscribe:
    case Route::kOpenAiTranscriptions:
    case Route::kOpenAiTranslations:
      return {limits.max_body_bytes, "--max-body-bytes"};
    case Route::kTts:
    case Route::kOpenAiSpeech:
      return {kMaxJsonBodyBytes, "a JSON request's limit"};
    default:
      return {kMaxOtherBodyBytes, "the limit of a route that takes no upload"};
  }
}

std::string_view route_name(Route route) {
  switch (route) {
    case Route::kHealth: return "healthz";
    case Route::kReady: return "readyz";
    case Route::kMetrics: return "metrics";
    case Route::kStream: return "stream";
    case Route::kCall: return "call";
    case Route::kRealtime: return "realtime";
    case Route::kTwilio:
    case Route::kTwilioListen: return "twilio";
    case Route::kTelnyx:
    case Route::kTelnyxListen: return "telnyx";
    case Route::kVonage:
    case Route::kVonageListen: return "vonage";
    case Route::kAsterisk:
    case Route::kAsteriskListen: return "asterisk";
    case Route::kJambonz:
    case Route::kJambonzListen: return "jambonz";
    case Route::kFreeswitch:
    case Route::kFreeswitchListen: return "freeswitch";
    case Route::kAudioSocket: return "audiosocket";
    case Route::kVad: return "vad";
    case Route::kTranscribe: return "transcribe";
    case Route::kTts: return "tts";
    case Route::kOpenAiTranscriptions: return "openai_transcriptions";
    case Route::kOpenAiTranslations: return "openai_translations";
    case Route::kOpenAiSpeech: return "openai_speech";
    case Route::kOpenAiModels: return "openai_models";
    case Route::kPreflight: return "preflight";
    case Route::kStatic: return "static";
    case Route::kNotFound: return "not_found";
    case Route::kMethodNotAllowed: return "method_not_allowed";
  }
  return "none";
}

namespace {

bool query_has_token(const Request& request) {
  try {
    return parse_query_string(target_query(to_sv(request.target()))).contains("token");
  } catch (const Error&) {
    return false;  // a malformed query: treated as no token
  }
}

}  // namespace

Response error_response(const Request& request, http::status status, std::string_view code, std::string_view message) {
  return make_response(request, status, "application/json", http_error_body(code, message));
}

std::optional<Response> check_access(ServerContext& ctx, const Request& request, bool token_checked_later) {
  if (!token_checked_later &&
      !token_ok(ctx.config.token, to_sv(request[http::field::authorization]), target_query(to_sv(request.target())))) {
    ctx.metrics.count_error("unauthorized");
    // The reason, for the client and the log line of the refusal: none sent, or a wrong one.
    const bool sent = !to_sv(request[http::field::authorization]).empty() || query_has_token(request);
    auto res = error_response(request, http::status::unauthorized, "unauthorized",
                              sent ? "the token sent is not this server's: send 'Authorization: Bearer <token>' or "
                                     "add ?token=<token> with the server's --token"
                                   : "this server needs a token: send 'Authorization: Bearer <token>' or add "
                                     "?token=<token>");
    res.set(http::field::www_authenticate, "Bearer");
    return res;
  }
  if (!origin_ok(ctx.config.allowed_origins, to_sv(request[http::field::origin]), to_sv(request[http::field::host]))) {
    ctx.metrics.count_error("forbidden_origin");
    return error_response(request, http::status::forbidden, "forbidden_origin",
                          fmt::format("origin '{}' may not use this server; start it with --allow-origin {}",
                                      to_sv(request[http::field::origin]), to_sv(request[http::field::origin])));
  }
  return std::nullopt;
}

void add_cors_headers(const ServerContext& ctx, const Request& request, Response& response) {
  const std::string_view origin = to_sv(request[http::field::origin]);
  if (origin.empty() || !origin_ok(ctx.config.allowed_origins, origin, to_sv(request[http::field::host]))) return;
  response.set(http::field::access_control_allow_origin, request[http::field::origin]);
  response.set(http::field::vary, "Origin");
}

Response immediate_response(ServerContext& ctx, const Request& request, Route route) {
  switch (route) {
    case Route::kHealth:
      return health_response(ctx, request);
    case Route::kReady:
      return ready_response(ctx, request);
    case Route::kMetrics:
      return metrics_response(ctx, request);
    case Route::kStatic: {
      auto res = static_response(ctx, request);
      if (request.method() == http::verb::head) {
        const auto size = res.body().size();
        res.body().clear();
        res.content_length(size);
      }
      return res;
    }
    case Route::kStream:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/stream is a WebSocket endpoint: connect with a WebSocket client");
    case Route::kCall:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/call is a WebSocket endpoint: connect with a WebSocket client");
    case Route::kRealtime:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/realtime is a WebSocket endpoint (OpenAI's Realtime API, transcription sessions): "
                            "connect with a WebSocket client and ?intent=transcription");
    case Route::kTwilio:
    case Route::kTwilioListen:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/telephony/twilio is a WebSocket endpoint for Twilio Media Streams: point a "
                            "<Connect><Stream> at it (docs/TELEPHONY.md)");
    case Route::kTelnyx:
    case Route::kTelnyxListen:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/telephony/telnyx is a WebSocket endpoint for Telnyx media streaming: give it as "
                            "a Call Control command's stream_url (docs/TELEPHONY.md)");
    case Route::kVonage:
    case Route::kVonageListen:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/telephony/vonage is a WebSocket endpoint for the Vonage Voice API: give it as the "
                            "uri of an NCCO connect action's websocket endpoint (docs/TELEPHONY.md)");
    case Route::kAsterisk:
    case Route::kAsteriskListen:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/telephony/asterisk is a WebSocket endpoint for Asterisk's chan_websocket: give it "
                            "as the uri of a websocket_client.conf connection that a dial string uses "
                            "(docs/TELEPHONY.md)");
    case Route::kJambonz:
    case Route::kJambonzListen:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/telephony/jambonz is a WebSocket endpoint for jambonz's listen verb: give it as "
                            "the verb's url (docs/TELEPHONY.md)");
    case Route::kFreeswitch:
    case Route::kFreeswitchListen:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/telephony/freeswitch is a WebSocket endpoint for FreeSWITCH's mod_audio_fork: give "
                            "it as uuid_audio_fork's url (docs/TELEPHONY.md)");
    case Route::kAudioSocket:
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "/v1/telephony/audiosocket is a WebSocket endpoint carrying Asterisk's AudioSocket frames "
                            "in binary messages; Asterisk itself connects to serve --audiosocket-port (docs/TELEPHONY.md)");
    case Route::kTts:  // a GET without an upgrade (POST and upgrades are the exchanges')
      return error_response(request, http::status::upgrade_required, "bad_request",
                            "GET /v1/tts is a WebSocket endpoint; POST a JSON body {\"text\": ...} for one answer");
    case Route::kPreflight: {
      // A preflight carries no credentials: only the origin is checked here.
      if (!origin_ok(ctx.config.allowed_origins, to_sv(request[http::field::origin]),
                     to_sv(request[http::field::host]))) {
        return error_response(request, http::status::forbidden, "forbidden_origin", "origin not allowed");
      }
      auto res = make_response(request, http::status::no_content, "text/plain", "");
      add_cors_headers(ctx, request, res);
      res.set(http::field::access_control_allow_methods, "POST, OPTIONS");
      res.set(http::field::access_control_allow_headers, "Authorization, Content-Type");
      res.set(http::field::access_control_max_age, "600");
      return res;
    }
    case Route::kOpenAiModels:
      if (auto refusal = check_access(ctx, request)) return std::move(*refusal);
      return make_response(request, http::status::ok, "application/json", models_list_json(ctx.engine.config()));
    case Route::kOpenAiTranslations: {
      // The token was checked with the head; the upload is refused whatever it holds.
      const HttpAnswer a = openai_translation_refusal(ctx.engine.config());
      return make_response(request, static_cast<http::status>(a.status), a.content_type, a.body);
    }
    case Route::kMethodNotAllowed:
      return error_response(
          request, http::status::method_not_allowed, "bad_request",
          fmt::format("{} is not allowed on {}", to_sv(request.method_string()), target_path(to_sv(request.target()))));
    case Route::kNotFound:
    case Route::kVad:  // answered by the job; never here
    case Route::kTranscribe:
    case Route::kOpenAiTranscriptions:
    case Route::kOpenAiSpeech:
      break;
  }
  return error_response(request, http::status::not_found, "not_found",
                        fmt::format("no endpoint {}; see docs/PROTOCOL.md", target_path(to_sv(request.target()))));
}

}  // namespace brisvox::server
