// Notices a client that closes its connection while the server is still working on its request
// (a long POST /v1/tts, an upload being decoded), so that the engine work stops for nobody instead
// of running on for minutes (issue 35 D4).
//
// It waits for the socket to become readable without reading: end of stream or an error means the
// client is gone; bytes (a pipelined next request) mean it is still there, and are left for the
// next read. Everything runs on the connection's strand.
//
//   auto watch = HangupWatch::start(socket, [self] { self->client_gone(); });
//   ...
//   watch->stop();  // before the answer is written: cancels the wait
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>

namespace brisvox::server {

class HangupWatch : public std::enable_shared_from_this<HangupWatch> {
 public:
  // `socket` must outlive the watch's wait (stop() before it goes); no other read may be pending
  // on it. `on_gone` runs at most once, on the socket's executor, unless stop() ran first.
  static std::shared_ptr<HangupWatch> start(boost::asio::ip::tcp::socket& socket, std::function<void()> on_gone);

  // Cancels the wait (socket.cancel(): call it when no other operation is pending on the socket).
  void stop();

 private:
  HangupWatch(boost::asio::ip::tcp::socket& socket, std::function<void()> on_gone)
      : socket_(socket), on_gone_(std::move(on_gone)) {}
  void wait();

  boost::asio::ip::tcp::socket& socket_;
  std::function<void()> on_gone_;
  bool stopped_ = false;
};

}  // namespace brisvox::server
