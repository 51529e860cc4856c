#include "server/http_session.h"

#include <fmt/format.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "brisvox/error.h"
#include "server/query_params.h"
#include "server/stream_admission.h"
#include "server/tts_admission.h"
#include "server/tts_http.h"
#include "server/tts_ws_session.h"
#include "server/vad_request.h"
#include "server/ws_session.h"

namespace brisvox::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr std::size_t kHeaderLimit = 16 << 10;
constexpr std::size_t kLingerBytes = std::size_t{256} << 20;
constexpr auto kLingerTime = std::chrono::seconds(5);

std::string peer_name(const net::ip::tcp::socket& socket) {
  beast::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

}  // namespace

HttpSession::HttpSession(net::ip::tcp::socket&& socket, ServerContext& ctx)
    : stream_(std::move(socket)), ctx_(ctx), peer_(peer_name(stream_.socket())) {}

void HttpSession::run() {
  net::dispatch(stream_.get_executor(), beast::bind_front_handler(&HttpSession::read_request, shared_from_this()));
}

void HttpSession::read_request() {
  if (ctx_.draining.load()) {
    close();
    return;
  }
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  parser_->body_limit(ctx_.config.limits.max_body_bytes);
  stream_.expires_after(std::chrono::seconds(ctx_.config.limits.http_timeout_s));
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

void HttpSession::on_header(beast::error_code ec) {
  if (ec == http::error::body_limit) {
    // Beast compares Content-Length with the body limit as soon as the header is parsed.
    ctx_.metrics.http_requests.fetch_add(1, std::memory_order_relaxed);
    refuse_body(parser_->get());
    return;
  }
  if (ec) {
    if (ec == http::error::header_limit) {
      Request dummy;
      send(error_response(dummy, http::status::request_header_fields_too_large, "bad_request",
                          "request headers are larger than 16 KiB"),
           true);
      return;
    }
    close();  // end of stream, timeout, garbage: nothing to answer
    return;
  }
  ctx_.metrics.http_requests.fetch_add(1, std::memory_order_relaxed);
  const auto& req = parser_->get();
  if (const auto length = parser_->content_length(); length && *length > ctx_.config.limits.max_body_bytes) {
    refuse_body(req);
    return;
  }
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

void HttpSession::read_body() {
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
}

void HttpSession::on_body(beast::error_code ec) {
  if (ec == http::error::body_limit) {
    refuse_body(parser_->get());
    return;
  }
  if (ec) {
    close();
    return;
  }
  handle(parser_->release());
}

void HttpSession::refuse_body(const Request& request) {
  ctx_.metrics.count_error("payload_too_large");
  send(error_response(
           request, http::status::payload_too_large, "payload_too_large",
           fmt::format("the body is larger than {} bytes (--max-body-bytes)", ctx_.config.limits.max_body_bytes)),
       true);
}

void HttpSession::handle(Request request) {
  const Route route = route_for(request);
  if (route == Route::kStream && beast::websocket::is_upgrade(request)) {
    upgrade(std::move(request));
    return;
  }
  if (route == Route::kVad || route == Route::kTranscribe) {
    if (auto refusal = check_access(ctx_, request)) {
      send(std::move(*refusal));
      return;
    }
    start_audio_job(std::move(request), route == Route::kVad ? AudioEndpoint::kVad : AudioEndpoint::kTranscribe);
    return;
  }
  if (route == Route::kTts && (request.method() == http::verb::post || beast::websocket::is_upgrade(request))) {
    if (auto refusal = check_access(ctx_, request)) {
      send(std::move(*refusal));
      return;
    }
    if (request.method() == http::verb::post) {
      start_tts(std::move(request));
    } else {
      upgrade_tts(std::move(request));
    }
    return;
  }
  auto res = immediate_response(ctx_, request, route);
  if (res.result_int() >= 400) ctx_.metrics.count_error(res.result_int() == 404 ? "not_found" : "bad_request");
  send(std::move(res));
}

void HttpSession::start_audio_job(Request request, AudioEndpoint endpoint) {
  if (ctx_.draining.load()) {
    send(error_response(request, http::status::service_unavailable, "shutting_down", "the server is shutting down"));
    return;
  }
  ctx_.jobs_in_flight.fetch_add(1);
  auto req = std::make_shared<Request>(std::move(request));
  net::post(ctx_.jobs, [self = shared_from_this(), req, endpoint] {
    HttpAnswer answer = run_audio_request(self->ctx_.engine, self->ctx_.metrics, req->body(),
                                          target_query(to_sv(req->target())), endpoint, self->ctx_.aborting);
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
    net::post(self->stream_.get_executor(), [self, res] { self->send(std::move(*res)); });
  });
}

void HttpSession::upgrade(Request request) {
  Admission a = admit_stream(ctx_, request, stream_.get_executor());
  if (a.refusal) {
    a.refusal->keep_alive(false);
    send(std::move(*a.refusal), true);
    return;
  }
  auto session = std::make_shared<WsSession>(std::move(stream_), ctx_, std::move(a.request), std::move(a.stream),
                                             std::move(a.wakeup), peer_);
  session->start(std::move(request));
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

void HttpSession::upgrade_tts(Request request) {
  auto refuse = [&](int status, std::string_view code, std::string_view message) {
    ctx_.metrics.count_error(code);
    auto res = error_response(request, static_cast<http::status>(status), code, message);
    res.keep_alive(false);
    if (status == 503) res.set(http::field::retry_after, "1");
    send(std::move(res), true);
  };
  TtsOptions options;
  try {
    options = parse_tts_query(target_query(to_sv(request.target())));
  } catch (const Error& e) {
    refuse(400, "bad_request", e.what());
    return;
  }
  auto wakeup = std::make_shared<SpeechWakeup>(stream_.get_executor(), ctx_.gate);
  TtsAdmission a = open_tts_speech(ctx_, options, wakeup);
  if (a.refusal) {
    refuse(a.refusal->status, a.refusal->code, a.refusal->message);
    return;
  }
  const std::string voice = server_voice(ctx_.engine.config())->name;
  auto session = std::make_shared<TtsWsSession>(std::move(stream_), ctx_, std::move(options), voice,
                                                std::move(a.speech), std::move(wakeup), peer_);
  session->start(std::move(request));
}

void HttpSession::send(Response response, bool close_after) {
  const bool close = close_after || response.need_eof();
  if (close) response.keep_alive(false);
  response_ = std::make_shared<Response>(std::move(response));
  stream_.expires_after(std::chrono::seconds(ctx_.config.limits.http_timeout_s));
  http::async_write(stream_, *response_, [self = shared_from_this(), close](beast::error_code ec, std::size_t) {
    self->on_sent(close, ec);
  });
}

void HttpSession::on_sent(bool close_after, beast::error_code ec) {
  response_.reset();
  if (ec) {
    close();
  } else if (close_after) {
    linger();
  } else {
    read_request();
  }
}

void HttpSession::linger() {
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  if (discard_.empty()) {
    discard_.resize(64 << 10);
    stream_.expires_after(kLingerTime);
  }
  stream_.async_read_some(net::buffer(discard_), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
    self->discarded_ += n;
    if (ec || self->discarded_ > kLingerBytes) {
      self->close();
      return;
    }
    self->linger();
  });
}

void HttpSession::close() {
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
}

}  // namespace brisvox::server
