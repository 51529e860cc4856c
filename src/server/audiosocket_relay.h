// The AudioSocket port (serve --audiosocket-port; docs/TELEPHONY.md, "Asterisk (AudioSocket)"):
// Asterisk's AudioSocket application and channel connect to it over plain TCP, and each connection
// is relayed, byte for byte, over a loopback WebSocket to the server's own
// /v1/telephony/audiosocket (audiosocket_front.h), where the one call machinery reads its frames:
// what Asterisk sends goes there in binary messages as it arrives, and what comes back (the reply's
// audio frames, a hangup frame) is written to Asterisk as it is. The relay reads nothing of the
// protocol: the call's limits, metrics, drain and errors are the endpoint's.
//
// Ends: Asterisk closes its socket (the caller hung up) -> the WebSocket is closed normally; the
// WebSocket closes (the call ended: the application hung up, an error, a shutdown) -> Asterisk's
// socket is closed once what came before the close is written. Either side failing drops both.
//
// Threads: each relay on a strand of its own; the endpoint's connection is a server connection like
// any other. Backpressure both ways: the next read on one side waits for the write to the other.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <array>
#include <cstddef>
#include <memory>
#include <string>

namespace brisvox::server {

class AudioSocketRelay : public std::enable_shared_from_this<AudioSocketRelay> {
 public:
  // The largest WebSocket message the endpoint sends (an audio frame of 20 ms, or a hangup); a
  // larger one is not the endpoint's.
  static constexpr std::size_t kMaxMessageBytes = 64 << 10;

  // `asterisk`: the accepted connection (on its strand); `server`: where the endpoint listens;
  // `token`: the server's --token ("" without one).
  AudioSocketRelay(boost::asio::ip::tcp::socket asterisk, boost::asio::ip::tcp::endpoint server, std::string token);

  void start();

 private:
  void on_connect(boost::beast::error_code ec);
  void on_handshake(boost::beast::error_code ec);
  void read_asterisk();
  void on_asterisk_read(boost::beast::error_code ec, std::size_t n);
  void read_server();
  void on_server_read(boost::beast::error_code ec);
  void close_server();
  void drop(const std::string& why);

  boost::asio::ip::tcp::socket asterisk_;
  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  const boost::asio::ip::tcp::endpoint server_;
  const std::string token_;
  const std::string peer_;
  std::array<char, 4096> from_asterisk_{};
  boost::beast::flat_buffer from_server_;
  bool asterisk_ended_ = false;  // its socket is closed for reading: the WebSocket is closed after the write
  bool writing_server_ = false;
  bool closing_server_ = false;
  bool done_ = false;
};

}  // namespace brisvox::server
