#include "server/audiosocket_relay.h"

#include <fmt/format.h>

#include <boost/asio/write.hpp>
#include <boost/beast/websocket/error.hpp>

#include "server/server_log.h"

namespace brisvox::server {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = boost::asio::ip::tcp;

namespace {

constexpr std::chrono::seconds kRelayConnectTimeout{5};
constexpr const char* kRelayTarget = "/v1/telephony/audiosocket";

std::string relay_peer_text(const tcp::socket& s) {
  boost::system::error_code ec;
  const auto ep = s.remote_endpoint(ec);
  return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

}  // namespace

AudioSocketRelay::AudioSocketRelay(tcp::socket asterisk, tcp::endpoint server, std::string token)
    : asterisk_(std::move(asterisk)),
      ws_(asterisk_.get_executor()),
      server_(std::move(server)),
      token_(std::move(token)),
      peer_(relay_peer_text(asterisk_)) {}

void AudioSocketRelay::start() {
  beast::get_lowest_layer(ws_).expires_after(kRelayConnectTimeout);
  beast::get_lowest_layer(ws_).async_connect(server_,
                                             [self = shared_from_this()](beast::error_code ec) { self->on_connect(ec); });
}

void AudioSocketRelay::on_connect(beast::error_code ec) {
  if (ec) return drop(fmt::format("the server's own endpoint is unreachable ({})", ec.message()));
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ignored);
  beast::get_lowest_layer(ws_).expires_never();
  ws_.set_option(websocket::stream_base::timeout{kRelayConnectTimeout, websocket::stream_base::none(), false});
  ws_.set_option(websocket::stream_base::decorator([token = token_](websocket::request_type& req) {
    req.set(beast::http::field::user_agent, "brisvox-audiosocket-relay/" BRISVOX_VERSION);
    if (!token.empty()) req.set(beast::http::field::authorization, "Bearer " + token);
  }));
  ws_.read_message_max(kMaxMessageBytes);
  const std::string host = server_.address().is_v6() ? fmt::format("[{}]:{}", server_.address().to_string(), server_.port())
                                                     : fmt::format("{}:{}", server_.address().to_string(), server_.port());
  ws_.async_handshake(host, kRelayTarget, [self = shared_from_this()](beast::error_code e) { self->on_handshake(e); });
}

void AudioSocketRelay::on_handshake(beast::error_code ec) {
  // Refused (the server's call limits, no --call-app, shutting down): the endpoint's log says why.
  if (ec) return drop(fmt::format("the server refused the call ({})", ec.message()));
  ws_.binary(true);
  read_asterisk();
  read_server();
}

void AudioSocketRelay::read_asterisk() {
  asterisk_.async_read_some(boost::asio::buffer(from_asterisk_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->on_asterisk_read(ec, n);
                            });
}

void AudioSocketRelay::on_asterisk_read(beast::error_code ec, std::size_t n) {
  if (done_) return;
  if (ec == boost::asio::error::eof) {
    asterisk_ended_ = true;  // Asterisk hung up: the call's normal end
    return close_server();
  }
  if (ec) return drop(fmt::format("Asterisk's connection failed ({})", ec.message()));
  writing_server_ = true;
  ws_.async_write(boost::asio::buffer(from_asterisk_.data(), n), [self = shared_from_this()](beast::error_code e,
                                                                                             std::size_t) {
    self->writing_server_ = false;
    if (self->done_) return;
    if (e) return self->drop(fmt::format("the call's connection failed ({})", e.message()));
    if (self->closing_server_) return self->close_server();
    self->read_asterisk();
  });
}

void AudioSocketRelay::close_server() {
  closing_server_ = true;
  if (writing_server_) return;  // after the write in flight
  ws_.async_close(websocket::close_code::normal, [self = shared_from_this()](beast::error_code) {
    // The server's answer to the close ends the read loop, which closes Asterisk's socket.
  });
}

void AudioSocketRelay::read_server() {
  ws_.async_read(from_server_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->on_server_read(ec);
  });
}

void AudioSocketRelay::on_server_read(beast::error_code ec) {
  if (done_) return;
  if (ec == websocket::error::closed) {
    // The call has ended; what it sent before the close is written.
    done_ = true;
    beast::error_code ignored;
    asterisk_.shutdown(tcp::socket::shutdown_both, ignored);
    asterisk_.close(ignored);
    if (ws_.reason().code != websocket::close_code::normal && ws_.reason().code != websocket::close_code::going_away) {
      log_server("audiosocket {}: the call ended with close {} ({})", peer_, static_cast<int>(ws_.reason().code),
                 std::string(ws_.reason().reason.data(), ws_.reason().reason.size()));
    }
    return;
  }
  if (ec) return drop(fmt::format("the call's connection failed ({})", ec.message()));
  boost::asio::async_write(asterisk_, from_server_.data(), [self = shared_from_this()](beast::error_code e, std::size_t n) {
    if (self->done_) return;
    if (e) return self->drop(fmt::format("writing to Asterisk failed ({})", e.message()));
    self->from_server_.consume(n);
    self->read_server();
  });
}

void AudioSocketRelay::drop(const std::string& why) {
  if (done_) return;
  done_ = true;
  log_server("audiosocket {}: {}", peer_, why);
  beast::error_code ignored;
  asterisk_.close(ignored);
  beast::get_lowest_layer(ws_).socket().close(ignored);
}

}  // namespace brisvox::server
