// The WebSocket settings every server session shares (/v1/stream and /v1/tts): the socket's own
// timeout off (the websocket's apply from the upgrade on), 10 s for the handshake, no idle timeout
// or keep-alive pings from Beast (each session keeps its own idle timer), the Server header, and a
// bounded kernel send buffer, so that audio a client does not read waits in the session's bounded
// queue (and then in the engine) instead of in the kernel.
#pragma once

#include <chrono>

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/websocket/stream.hpp>

namespace brisvox::server {

inline void apply_server_ws_options(boost::beast::websocket::stream<boost::beast::tcp_stream>& ws,
                                    int send_buffer_bytes) {
  namespace beast = boost::beast;
  namespace websocket = beast::websocket;
  beast::get_lowest_layer(ws).expires_never();
  beast::error_code ignored;
  beast::get_lowest_layer(ws).socket().set_option(boost::asio::socket_base::send_buffer_size(send_buffer_bytes),
                                                  ignored);
  websocket::stream_base::timeout timeouts{};
  timeouts.handshake_timeout = std::chrono::seconds(10);
  timeouts.idle_timeout = websocket::stream_base::none();
  timeouts.keep_alive_pings = false;
  ws.set_option(timeouts);
  ws.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(beast::http::field::server, "brisvox/" BRISVOX_VERSION); }));
}

}  // namespace brisvox::server
