// One TCP connection speaking HTTP/1.1: reads requests (keep-alive), answers them through the
// router, runs POST /v1/vad on a job thread, and hands a WebSocket upgrade to a WsConnection.
// Everything runs on the connection's strand.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>

#include "server/connection_limits.h"
#include "server/query_params.h"
#include "server/router.h"
#include "server/server_context.h"
#include "server/ws_admission.h"

namespace brisvox::server {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // `slot`: this connection's place under limits.max_connections; a refused slot makes run()
  // answer 503 "too_many_connections" and close.
  HttpSession(boost::asio::ip::tcp::socket&& socket, ServerContext& ctx, ConnectionLimiter::Slot slot);
  void run();

 private:
  void refuse_connection();
  std::string client_address() const;  // the peer's IP address (limits per client)
  void read_request();
  // The request's deadline: the head within limits.request_head_timeout_s, the whole request
  // within limits.http_timeout_s; past it the read is cancelled and answered 408.
  void arm_deadline(std::chrono::seconds after);
  void on_header(boost::beast::error_code ec);
  // A read that failed: 400/408/413/431 with close where there is something to answer.
  void on_read_error(boost::beast::error_code ec);
  // Checks of the request head before its body is read: Host, absolute-form target, the access
  // and upload limits of the audio routes. False: a refusal was sent.
  bool check_head();
  void send_and_close(Response response);
  void log_access(const Response& response, std::size_t body_bytes) const;
  void read_body();
  void on_body(boost::beast::error_code ec);
  void handle(Request request);
  void refuse_body(const Request& request);  // 413, then linger
  // POST /v1/vad, /v1/transcribe and /v1/audio/transcriptions: decoded and run on a job thread
  // (never on this strand).
  void start_audio_job(Request request, Route route);
  // A WebSocket upgrade to `endpoint` (/v1/stream, /v1/tts): admitted (ws_admission.h), the socket
  // goes to a WsConnection running the endpoint's handler; refused, the refusal is answered.
  void upgrade(Request request, WsEndpoint& endpoint);
  void start_tts(Request request);  // POST /v1/tts (tts_http.h)
  void send(Response response, bool close_after = false);
  void on_sent(bool close, boost::beast::error_code ec);
  // After refusing a body: stop sending, read and discard what the client still sends (for a
  // while), so that it sees the answer instead of a connection reset.
  void linger(std::chrono::milliseconds time);
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;  // at most limits.max_request_buffer_bytes
  ServerContext& ctx_;
  std::string peer_;
  ConnectionLimiter::Slot slot_;
  boost::asio::steady_timer deadline_;
  std::uint64_t request_number_ = 0;  // a deadline fires only for its own request
  std::uint64_t reads_ = 0;           // request heads waited for on this connection
  bool timed_out_ = false;
  bool head_request_ = false;          // HEAD: the answer's body is not sent
  BodyLimit body_limit_{0, ""};        // of the request's route (router.h)
  std::shared_ptr<void> upload_;               // a unit of ctx.uploads, held until the answer is sent
  std::shared_ptr<class HangupWatch> hangup_;  // while an upload's job runs: its client leaving stops it
  // For the access log (and 401/403 lines): the request's method, path and tag, and when its head came.
  std::string_view handler_ = "none";  // route_name() of the request, for the HTTP metrics
  std::string log_method_ = "-";
  std::string log_path_ = "-";
  std::string log_tag_;  // the request's valid ?tag= (request_tag.h), "" if none
  std::chrono::steady_clock::time_point head_time_ = std::chrono::steady_clock::now();
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<Response> response_;  // kept alive while it is written
  boost::beast::http::response<boost::beast::http::empty_body> continue_;
  std::vector<char> discard_;
  bool lingering_refusal_ = false;  // counted in ctx.refusals_lingering until close()
  std::size_t discarded_ = 0;
};

}  // namespace brisvox::server
