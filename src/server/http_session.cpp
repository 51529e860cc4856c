#include "server/http_session.h"

#include <fmt/format.h>

#include <utility>

#include <nlohmann/json.hpp>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "brisvox/error.h"
#include "server/hangup_watch.h"
#include "server/openai_api.h"
#include "server/openai_speech.h"
#include "server/openai_transcription.h"
#include "server/query_params.h"
#include "server/request_tag.h"
#include "server/access_policy.h"
#include "server/call_handler.h"
#include "server/server_log.h"
#include "server/realtime_handler.h"
#include "server/stream_handler.h"
#include "server/tts_handler.h"
#include "server/tts_http.h"
#include "server/asterisk_front.h"
#include "server/audiosocket_front.h"
#include "server/freeswitch_front.h"
#include "server/jambonz_front.h"
#include "server/telnyx_front.h"
#include "server/vonage_front.h"
#include "server/twilio_front.h"
#include "server/vad_request.h"
#include "server/ws_admission.h"
#include "server/ws_connection.h"

namespace brisvox::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr std::size_t kHeaderLimit = 16 << 10;
constexpr std::size_t kLingerBytes = std::size_t{256} << 20;
constexpr auto kLingerTime = std::chrono::milliseconds(5000);
// A connection refused at once (too many connections) lingers only long enough for its answer,
// reading into a small buffer, and only while few others do: a flood of connections over the caps
// must cost a descriptor for a moment each, not a second and 64 KiB (issue 35 D7).
constexpr auto kRefusalLinger = std::chrono::milliseconds(250);
constexpr std::size_t kRefusalDiscardBytes = 512;
constexpr int kMaxLingeringRefusals = 32;
// Beast's own timer on the socket: a backstop behind the request deadline (it closes without
// an answer).
constexpr auto kBackstop = std::chrono::seconds(5);

std::string peer_name(const net::ip::tcp::socket& socket) {
  beast::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && beast::iequals(beast::string_view(s.data(), prefix.size()),
                                                      beast::string_view(prefix.data(), prefix.size()));
}

// An absolute-form target ("GET http://host:port/healthz", RFC 9112 3.2.2): the path and query
// become the target and the authority replaces Host, as the RFC asks of a server.
void normalise_absolute_form(Request& req) {
  const std::string_view target = to_sv(req.target());
  std::size_t skip = 0;
  if (iequals_prefix(target, "http://")) {
    skip = 7;
  } else if (iequals_prefix(target, "https://")) {
    skip = 8;
  } else {
    return;
  }
  const std::string_view rest = target.substr(skip);
  const auto path_start = rest.find_first_of("/?");
  const std::string authority(rest.substr(0, path_start));
  // No authority ("http:///metrics"): left as it is (no such path), so that it cannot replace the
  // Host header with an empty one, which the allow-list accepts (HTTP/1.0 may omit Host).
  if (authority.empty()) return;
  std::string path = path_start == std::string_view::npos ? "/" : std::string(rest.substr(path_start));
  if (path.front() == '?') path.insert(0, "/");
  req.target(path);
  req.set(http::field::host, authority);
}

bool is_parse_error(beast::error_code ec) {
  static const auto& http_category = beast::http::make_error_code(http::error::bad_method).category();
  return ec.category() == http_category && ec != http::error::end_of_stream && ec != http::error::partial_message;
}

}  // namespace

HttpSession::HttpSession(net::ip::tcp::socket&& socket, ServerContext& ctx, ConnectionLimiter::Slot slot)
    : stream_(std::move(socket)),
      buffer_(ctx.config.limits.max_request_buffer_bytes),
      ctx_(ctx),
      peer_(peer_name(stream_.socket())),
      slot_(std::move(slot)),
      deadline_(stream_.get_executor()) {}

void HttpSession::run() {
  if (slot_.refused() != ConnectionLimiter::Refusal::kNone) {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&HttpSession::refuse_connection, shared_from_this()));
    return;
  }
  net::dispatch(stream_.get_executor(), beast::bind_front_handler(&HttpSession::read_request, shared_from_this()));
}

std::string HttpSession::client_address() const {
  beast::error_code ec;
  const auto ep = stream_.socket().remote_endpoint(ec);
  return ec ? std::string("?") : ep.address().to_string();
}

void HttpSession::refuse_connection() {
  const auto& l = ctx_.config.limits;
  const bool total = slot_.refused() == ConnectionLimiter::Refusal::kTotal;
  ctx_.metrics.count_error("too_many_connections");
  Request dummy;
  auto res = error_response(
      dummy, http::status::service_unavailable, "too_many_connections",
      total ? fmt::format("the server has {} HTTP connections open, its limit (--max-connections); try again later",
                          ctx_.connections.max_total())
            : fmt::format("this client address has {} HTTP connections open, the limit per client "
                          "(--max-connections-per-client); close some or try again later",
                          l.max_connections_per_client));
  res.set(http::field::retry_after, "1");
  send(std::move(res), true);
}

void HttpSession::read_request() {
  if (ctx_.draining.load()) {
    close();
    return;
  }
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  body_limit_ = body_limit(Route::kVad, ctx_.config.limits);  // until check_head knows the route
  parser_->body_limit(body_limit_.bytes);
  timed_out_ = false;
  head_request_ = false;
  handler_ = "none";
  log_method_ = "-";
  log_path_ = "-";
  log_tag_.clear();
  head_time_ = std::chrono::steady_clock::now();
  ++request_number_;
  ++reads_;
  arm_deadline(std::chrono::seconds(ctx_.config.limits.request_head_timeout_s));
  stream_.expires_after(std::chrono::seconds(ctx_.config.limits.http_timeout_s) + kBackstop);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

void HttpSession::arm_deadline(std::chrono::seconds after) {
  deadline_.expires_after(after);
  deadline_.async_wait([self = shared_from_this(), n = request_number_](beast::error_code ec) {
    if (ec || n != self->request_number_ || self->timed_out_) return;
    // Cancels the pending read, whose handler answers 408 (beast's own timeout would close the
    // socket before an answer could be written).
    self->timed_out_ = true;
    beast::error_code ignored;
    self->stream_.socket().cancel(ignored);
  });
}

void HttpSession::on_header(beast::error_code ec) {
  if (ec) {
    if (ec == http::error::body_limit) ctx_.metrics.http_requests.fetch_add(1, std::memory_order_relaxed);
    on_read_error(ec);
    return;
  }
  ctx_.metrics.http_requests.fetch_add(1, std::memory_order_relaxed);
  if (!check_head()) return;
  const auto& req = parser_->get();
  if (const auto length = parser_->content_length(); length && *length > body_limit_.bytes) {
    refuse_body(req);
    return;
  }
  // The body has http_timeout_s from the end of the head.
  arm_deadline(std::chrono::seconds(ctx_.config.limits.http_timeout_s));
  if (beast::iequals(req[http::field::expect], "100-continue")) {
    continue_ = http::response<http::empty_body>{http::status::continue_, req.version()};
    http::async_write(stream_, continue_, [self = shared_from_this()](beast::error_code wec, std::size_t) {
      if (wec) return self->close();
      self->read_body();
    });
    return;
  }
  read_body();
}

bool HttpSession::check_head() {
  auto& req = parser_->get();
  head_request_ = req.method() == http::verb::head;
  handler_ = route_name(route_for(req));  // again once an absolute-form target is normalised
  // Kept for every request, not only with the access log: 401 and 403 answers are always logged.
  head_time_ = std::chrono::steady_clock::now();
  log_method_ = std::string(to_sv(req.method_string()));
  log_path_ = std::string(target_path(to_sv(req.target())));  // no query: it may hold ?token=
  log_tag_ = tag_of_target(to_sv(req.target()));
  auto refuse = [&](http::status status, std::string_view code, std::string message) {
    ctx_.metrics.count_error(code);
    send_and_close(error_response(req, status, code, message));
    return false;
  };
  // RFC 9112 3.2: an HTTP/1.1 request has exactly one Host; an HTTP/1.0 one at most one.
  const std::size_t hosts = req.count(http::field::host);
  if ((req.version() >= 11 && hosts != 1) || hosts > 1) {
    return refuse(http::status::bad_request, "bad_request",
                  fmt::format("an HTTP/{}.{} request needs {} Host header, this one has {}", req.version() / 10,
                              req.version() % 10, req.version() >= 11 ? "exactly one" : "at most one", hosts));
  }
  // RFC 9112 6.3: a request whose Transfer-Encoding does not end with chunked has no knowable length.
  if (req.count(http::field::transfer_encoding) > 0 && !parser_->chunked()) {
    return refuse(http::status::bad_request, "bad_request",
                  fmt::format("Transfer-Encoding '{}' does not end with chunked", to_sv(req[http::field::transfer_encoding])));
  }
  normalise_absolute_form(req);
  handler_ = route_name(route_for(req));
  if (!host_ok(ctx_.config.allowed_hosts, to_sv(req[http::field::host]), ctx_.config.host)) {
    return refuse(http::status::forbidden, "forbidden_host",
                  fmt::format("Host '{}' is not a name of this server (a DNS rebinding guard): connect by IP address "
                              "or localhost, or start the server with --allow-host {}",
                              to_sv(req[http::field::host]), host_name(to_sv(req[http::field::host]))));
  }
  const Route route = route_for(req);
  body_limit_ = body_limit(route, ctx_.config.limits);
  parser_->body_limit(body_limit_.bytes);
  if ((route == Route::kTts && (req.method() == http::verb::post || beast::websocket::is_upgrade(req))) ||
      route == Route::kOpenAiSpeech) {
    // Text to speech: the token and Origin before the body too (handle() checks again, at no cost).
    if (auto refusal = check_access(ctx_, req)) {
      send_and_close(std::move(*refusal));
      return false;
    }
  }
  if (route == Route::kVad || route == Route::kTranscribe || route == Route::kOpenAiTranscriptions ||
      route == Route::kOpenAiTranslations) {
    // Before the body is read: a client without the token, or one over the upload limit, does not
    // get its 64 MiB buffered.
    if (auto refusal = check_access(ctx_, req)) {
      send_and_close(std::move(*refusal));
      return false;
    }
    upload_ = ctx_.uploads.try_acquire();
    if (!upload_) {
      ctx_.metrics.count_error("too_many_uploads");
      auto res = error_response(req, http::status::service_unavailable, "too_many_uploads",
                                fmt::format("{} uploads are in progress, this server's limit (--max-uploads); "
                                            "retry after a moment",
                                            ctx_.uploads.max()));
      res.set(http::field::retry_after, "1");
      send_and_close(std::move(res));
      return false;
    }
  }
  return true;
}

void HttpSession::read_body() {
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
}

void HttpSession::on_body(beast::error_code ec) {
  if (ec) {
    on_read_error(ec);
    return;
  }
  deadline_.cancel();
  ++request_number_;  // a deadline already due does nothing
  handle(parser_->release());
}

void HttpSession::on_read_error(beast::error_code ec) {
  const auto& l = ctx_.config.limits;
  Request dummy;
  dummy.keep_alive(false);
  if (timed_out_ && reads_ > 1 && !parser_->got_some() && buffer_.size() == 0) {
    // A kept-alive connection that sent nothing of a next request is idle, not slow: it is closed
    // without an answer, which its client would read as the answer to the request it sends next.
    close();
    return;
  }
  if (timed_out_) {
    ctx_.metrics.count_error("request_timeout");
    const bool head = !parser_->is_header_done();
    send_and_close(error_response(
        dummy, http::status::request_timeout, "request_timeout",
        head ? fmt::format("no complete request head within {} s (--request-head-timeout-s)", l.request_head_timeout_s)
             : fmt::format("the request body did not arrive within {} s (--http-timeout-s)", l.http_timeout_s)));
    return;
  }
  if (ec == http::error::body_limit) {
    refuse_body(parser_->get());
    return;
  }
  if (ec == http::error::header_limit) {
    ctx_.metrics.count_error("bad_request");
    send_and_close(error_response(dummy, http::status::request_header_fields_too_large, "bad_request",
                                  "request headers are larger than 16 KiB"));
    return;
  }
  if (ec == http::error::buffer_overflow) {
    // A chunk-size line (its chunk extensions) or a trailer that does not end: Beast 1.74 would
    // buffer it byte for byte; the buffer's cap stops it.
    ctx_.metrics.count_error("bad_request");
    send_and_close(error_response(
        dummy, http::status::bad_request, "bad_request",
        fmt::format("a chunk-size line (with its chunk extensions) or a trailer is longer than {} bytes",
                    l.max_request_buffer_bytes)));
    return;
  }
  if (is_parse_error(ec)) {
    ctx_.metrics.count_error("bad_request");
    send_and_close(
        error_response(dummy, http::status::bad_request, "bad_request", fmt::format("malformed HTTP request: {}", ec.message())));
    return;
  }
  close();  // end of stream, reset, the backstop timeout: nothing to answer
}

void HttpSession::send_and_close(Response response) {
  response.keep_alive(false);
  send(std::move(response), true);
}

void HttpSession::refuse_body(const Request& request) {
  ctx_.metrics.count_error("payload_too_large");
  send(error_response(
           request, http::status::payload_too_large, "payload_too_large",
           fmt::format("the body is larger than {} bytes ({})", body_limit_.bytes, body_limit_.why)),
       true);
}

void HttpSession::handle(Request request) {
  const Route route = route_for(request);
  if (route == Route::kStream && beast::websocket::is_upgrade(request)) {
    StreamEndpoint endpoint(ctx_);
    upgrade(std::move(request), endpoint);
    return;
  }
  if (route == Route::kCall && beast::websocket::is_upgrade(request)) {
    CallEndpoint endpoint(ctx_);
    upgrade(std::move(request), endpoint);
    return;
  }
  if (route == Route::kRealtime && beast::websocket::is_upgrade(request)) {
    RealtimeEndpoint endpoint(ctx_);
    upgrade(std::move(request), endpoint);
    return;
  }
  if ((route == Route::kTwilio || route == Route::kTwilioListen) && beast::websocket::is_upgrade(request)) {
    TwilioEndpoint endpoint(ctx_, route == Route::kTwilioListen);
    upgrade(std::move(request), endpoint);
    return;
  }
  if ((route == Route::kTelnyx || route == Route::kTelnyxListen) && beast::websocket::is_upgrade(request)) {
    TelnyxEndpoint endpoint(ctx_, route == Route::kTelnyxListen);
    upgrade(std::move(request), endpoint);
    return;
  }
  if ((route == Route::kVonage || route == Route::kVonageListen) && beast::websocket::is_upgrade(request)) {
    VonageEndpoint endpoint(ctx_, route == Route::kVonageListen);
    upgrade(std::move(request), endpoint);
    return;
  }
  if ((route == Route::kAsterisk || route == Route::kAsteriskListen) && beast::websocket::is_upgrade(request)) {
    AsteriskEndpoint endpoint(ctx_, route == Route::kAsteriskListen);
    upgrade(std::move(request), endpoint);
    return;
  }
  if ((route == Route::kJambonz || route == Route::kJambonzListen) && beast::websocket::is_upgrade(request)) {
    JambonzEndpoint endpoint(ctx_, route == Route::kJambonzListen);
    upgrade(std::move(request), endpoint);
    return;
  }
  if ((route == Route::kFreeswitch || route == Route::kFreeswitchListen) && beast::websocket::is_upgrade(request)) {
    FreeswitchEndpoint endpoint(ctx_, route == Route::kFreeswitchListen);
    upgrade(std::move(request), endpoint);
    return;
  }
  if (route == Route::kAudioSocket && beast::websocket::is_upgrade(request)) {
    AudioSocketEndpoint endpoint(ctx_);
    upgrade(std::move(request), endpoint);
    return;
  }
  if (route == Route::kTts && beast::websocket::is_upgrade(request)) {
    TtsEndpoint endpoint(ctx_);
    upgrade(std::move(request), endpoint);
    return;
  }
  if (route == Route::kVad || route == Route::kTranscribe || route == Route::kOpenAiTranscriptions) {
    // Token and Origin were checked with the head (check_head), and the upload holds its slot.
    start_audio_job(std::move(request), route);
    return;
  }
  if (route == Route::kTts && request.method() == http::verb::post) {
    if (auto refusal = check_access(ctx_, request)) {
      send(std::move(*refusal));
      return;
    }
    start_tts(std::move(request));
    return;
  }
  if (route == Route::kOpenAiSpeech) {
    // OpenAI's body becomes POST /v1/tts's, which answers it as its own.
    if (auto refusal = check_access(ctx_, request)) {
      send(std::move(*refusal));
      return;
    }
    try {
      request.body() = openai_speech_to_tts_body(ctx_.engine.config(), request.body());
    } catch (const OpenAiError& e) {
      ctx_.metrics.count_error(e.code.empty() ? "bad_request" : e.code);
      auto res = error_response(request, static_cast<http::status>(e.status), e.code, e.message);
      res.body() = openai_error_body(e.status, e.message, e.param, e.code);
      res.prepare_payload();
      send(std::move(res));
      return;
    }
    request.prepare_payload();
    start_tts(std::move(request));
    return;
  }
  auto res = immediate_response(ctx_, request, route);
  if (res.result_int() >= 400) ctx_.metrics.count_error(res.result_int() == 404 ? "not_found" : "bad_request");
  send(std::move(res));
}

void HttpSession::start_audio_job(Request request, Route route) {
  if (ctx_.draining.load()) {
    send(error_response(request, http::status::service_unavailable, "shutting_down", "the server is shutting down"));
    return;
  }
  ctx_.jobs_in_flight.fetch_add(1);
  auto req = std::make_shared<Request>(std::move(request));
  // A client that leaves while its upload is decoded and run stops the work: its job thread and
  // upload slot are free again at the next block (issue 35 D4).
  auto gone = std::make_shared<std::atomic<bool>>(false);
  hangup_ = HangupWatch::start(stream_.socket(), [gone] { gone->store(true, std::memory_order_relaxed); });
  net::post(ctx_.jobs, [self = shared_from_this(), req, route, gone] {
    const auto& limits = self->ctx_.config.limits;
    const std::string_view content_type = to_sv((*req)[http::field::content_type]);
    HttpAnswer answer =
        route == Route::kOpenAiTranscriptions
            ? run_openai_transcription(self->ctx_.engine, self->ctx_.metrics, req->body(), content_type,
                                       self->ctx_.aborting, limits.max_upload_s, gone.get())
            : run_audio_request(self->ctx_.engine, self->ctx_.metrics, req->body(),
                                target_query(to_sv(req->target())),
                                route == Route::kVad ? AudioEndpoint::kVad : AudioEndpoint::kTranscribe,
                                self->ctx_.aborting, limits.max_upload_s, content_type, gone.get());
    if (!answer.error_code.empty()) self->ctx_.metrics.count_error(answer.error_code);
    auto res = std::make_shared<Response>(static_cast<http::status>(answer.status), req->version());
    res->set(http::field::server, "brisvox/" BRISVOX_VERSION);
    res->set(http::field::content_type, answer.content_type);
    res->set(http::field::cache_control, "no-store");
    res->keep_alive(req->keep_alive());
    res->body() = std::move(answer.body);
    res->prepare_payload();
    add_cors_headers(self->ctx_, *req, *res);
    self->ctx_.jobs_in_flight.fetch_sub(1);
    net::post(self->stream_.get_executor(), [self, res] {
      if (self->hangup_) std::exchange(self->hangup_, nullptr)->stop();  // nothing else is pending on the socket
      self->send(std::move(*res));
    });
  });
}

void HttpSession::upgrade(Request request, WsEndpoint& endpoint) {
  Admission a = admit_upgrade(ctx_, request, endpoint, stream_.get_executor(), client_address());
  if (a.refusal) {
    a.refusal->keep_alive(false);
    send(std::move(*a.refusal), true);
    return;
  }
  auto connection = std::make_shared<WsConnection>(std::move(stream_), ctx_, std::move(a.handler), std::move(a.wakeup),
                                                   std::move(a.held), peer_);
  // The WebSocket leaves the HTTP connection count: it counts in limits.max_streams (or in its
  // voice's sessions) from here.
  slot_.release();
  ctx_.metrics.count_http_response(handler_, 101);
  if (ctx_.config.access_log) {
    Response switching{http::status::switching_protocols, request.version()};
    log_access(switching, 0);
  }
  connection->start(std::move(request));
}

void HttpSession::start_tts(Request request) {
  if (ctx_.draining.load()) {
    send(error_response(request, http::status::service_unavailable, "shutting_down", "the server is shutting down"));
    return;
  }
  auto exchange = std::make_shared<TtsHttpExchange>(
      stream_, ctx_, std::move(request), [self = shared_from_this()](std::optional<Response> answer, bool keep_alive) {
        if (answer) {
          self->send(std::move(*answer), !keep_alive);
        } else if (keep_alive) {
          self->read_request();
        } else {
          self->close();
        }
      });
  exchange->start();  // keeps itself alive until it has answered
}

void HttpSession::send(Response response, bool close_after) {
  // OpenAI's paths answer every error in OpenAI's shape, whoever refused the request (the token,
  // the upload gate, the body limit, the engine), so that its clients raise their own exceptions.
  if (response.result_int() >= 400 && is_openai_path(log_path_)) {
    response.body() = to_openai_error(response.result_int(), response.body());
    response.prepare_payload();
  }
  const bool close = close_after || response.need_eof();
  if (close) response.keep_alive(false);
  if (head_request_ && !response.body().empty()) {
    // HEAD: the headers of the GET answer (its Content-Length) without the body, so that a
    // kept-alive connection's next answer is not read as this one's body.
    const auto size = response.body().size();
    response.body().clear();
    response.content_length(size);
  }
  // The client's tag comes back on every answer to its request (POST /v1/vad, /v1/tts, ...).
  if (!log_tag_.empty()) response.set(boost::beast::string_view(kTagHeader.data(), kTagHeader.size()), log_tag_);
  ctx_.metrics.count_http_response(handler_, response.result_int());
  // Refusals of the token, the Origin or the Host are logged even without the access log: an
  // operator wants to see who was turned away, and why.
  const int status = response.result_int();
  if (ctx_.config.access_log || status == 401 || status == 403) log_access(response, response.body().size());
  response_ = std::make_shared<Response>(std::move(response));
  stream_.expires_after(std::chrono::seconds(ctx_.config.limits.http_timeout_s));
  http::async_write(stream_, *response_, [self = shared_from_this(), close](beast::error_code ec, std::size_t) {
    self->on_sent(close, ec);
  });
}

void HttpSession::log_access(const Response& response, std::size_t body_bytes) const {
  std::string code, message;
  if (response.result_int() >= 400) {
    // The answer's own error ({"error":{"code":..,"message":..}}): why a request was refused.
    const auto body = nlohmann::json::parse(response.body(), nullptr, /*allow_exceptions=*/false);
    if (body.is_object() && body.contains("error") && body["error"].is_object()) {
      // OpenAI's shape may hold a null code.
      const auto& e = body["error"];
      if (e.contains("code") && e["code"].is_string()) code = e["code"].get<std::string>();
      if (e.contains("message") && e["message"].is_string()) message = e["message"].get<std::string>();
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - head_time_).count();
  // Control characters of the path and of the reason (both may quote the client) are not written
  // as they are.
  std::string path = log_path_;
  for (std::string* text : {&path, &message}) {
    for (char& ch : *text) {
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
    }
  }
  const int status = response.result_int();
  // 401 and 403 also say why (which token or Origin or Host rule refused the request).
  const bool why = (status == 401 || status == 403) && !message.empty();
  log_record(fmt::format("access: {} {} {} {} {} B {:.1f} ms{}{}{}", peer_, log_method_, path, status, body_bytes, ms,
                         code.empty() ? "" : " ", code, why ? ": " + message : std::string()),
             {{"client", std::string_view(peer_)},
              {"method", std::string_view(log_method_)},
              {"path", std::string_view(path)},
              {"status", std::int64_t{status}},
              {"bytes", static_cast<std::int64_t>(body_bytes)},
              {"ms", ms},
              {"code", std::string_view(code)},
              {"reason", std::string_view(why ? message : std::string_view())},
              {"tag", std::string_view(log_tag_)}});
}

void HttpSession::on_sent(bool close_after, beast::error_code ec) {
  response_.reset();
  upload_.reset();  // the upload's answer is out: its slot is free
  if (ec) {
    close();
  } else if (close_after) {
    deadline_.cancel();
    ++request_number_;
    if (slot_.refused() == ConnectionLimiter::Refusal::kNone) {
      linger(kLingerTime);
    } else if (ctx_.refusals_lingering.fetch_add(1) < kMaxLingeringRefusals) {
      lingering_refusal_ = true;
      discard_.resize(kRefusalDiscardBytes);
      stream_.expires_after(kRefusalLinger);
      linger(kRefusalLinger);
    } else {
      ctx_.refusals_lingering.fetch_sub(1);
      close();  // enough refusals linger already: this one's answer is written, the client may miss it
    }
  } else {
    read_request();
  }
}

void HttpSession::linger(std::chrono::milliseconds time) {
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  if (discard_.empty()) {
    discard_.resize(64 << 10);
    stream_.expires_after(time);
  }
  stream_.async_read_some(net::buffer(discard_),
                          [self = shared_from_this(), time](beast::error_code ec, std::size_t n) {
                            self->discarded_ += n;
                            if (ec || self->discarded_ > kLingerBytes) {
                              self->close();
                              return;
                            }
                            self->linger(time);
                          });
}

void HttpSession::close() {
  if (std::exchange(lingering_refusal_, false)) ctx_.refusals_lingering.fetch_sub(1);
  deadline_.cancel();
  ++request_number_;
  upload_.reset();
  slot_.release();
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
}

}  // namespace brisvox::server
