// One TCP connection speaking HTTP/1.1: reads requests (keep-alive), answers them through the
// router, runs POST /v1/vad on a job thread, and hands a WebSocket upgrade to a WsSession.
// Everything runs on the connection's strand.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <memory>
#include <optional>
#include <string>

#include "server/query_params.h"
#include "server/router.h"
#include "server/server_context.h"

namespace brisvox::server {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, ServerContext& ctx);
  void run();

 private:
  void read_request();
  void on_header(boost::beast::error_code ec);
  void read_body();
  void on_body(boost::beast::error_code ec);
  void handle(Request request);
  void refuse_body(const Request& request);  // 413, then linger
  // POST /v1/vad and /v1/transcribe: decoded and run on a job thread (never on this strand).
  void start_audio_job(Request request, AudioEndpoint endpoint);
  void upgrade(Request request);
  void start_tts(Request request);    // POST /v1/tts (tts_http.h)
  void upgrade_tts(Request request);  // WebSocket /v1/tts (tts_ws_session.h)
  void send(Response response, bool close_after = false);
  void on_sent(bool close, boost::beast::error_code ec);
  // After refusing a body: stop sending, read and discard what the client still sends (for a
  // while), so that it sees the answer instead of a connection reset.
  void linger();
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  ServerContext& ctx_;
  std::string peer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<Response> response_;  // kept alive while it is written
  boost::beast::http::response<boost::beast::http::empty_body> continue_;
  std::vector<char> discard_;
  std::size_t discarded_ = 0;
};

}  // namespace brisvox::server
