// The server's WebSocket client connection to a call's application (serve --call-app URL): one
// per telephony call, opened when the provider's stream starts. brisvox speaks the duplex call
// protocol on it (docs/TELEPHONY.md, "The application side"): it sends call_start, the call's
// events and call_end; the application sends speak, cancel, mark and hangup. The application
// never gets audio.
//
// Bounded, as every peer (docs/RELIABILITY.md): a message from the application is at most
// kMaxAppMessageBytes (a longer one ends the link); what waits to be written to it is at most
// kMaxQueuedMessages / kMaxQueuedBytes, and an application that does not keep up is dropped rather
// than let the call's events pile up; the connect and the handshakes have kConnectTimeout.
//
// Threads: everything on the strand it is given, the call's connection's, so its listener (the
// call's front) is called on the call's strand. The link keeps itself alive while an operation is
// pending; detach() (or finish()) tells it the listener is gone.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/app_url.h"

namespace brisvox::server {

class CallAppLink : public std::enable_shared_from_this<CallAppLink> {
 public:
  static constexpr std::size_t kMaxAppMessageBytes = 64 << 10;
  static constexpr std::size_t kMaxQueuedMessages = 1024;
  static constexpr std::size_t kMaxQueuedBytes = 1 << 20;
  static constexpr std::chrono::seconds kConnectTimeout{5};

  class Listener {
   public:
    virtual void on_app_open() = 0;
    virtual void on_app_message(std::string text) = 0;
    // The link has failed or the application closed it: `why`, for the operator.
    virtual void on_app_gone(std::string why) = 0;

   protected:
    ~Listener() = default;
  };

  CallAppLink(const boost::asio::any_io_executor& strand, AppUrl url, Listener* listener);

  // Resolves, connects and handshakes; then writes what was queued and reads.
  void start();
  // Queues a text message (before the link is open too). False when the queue is full: the link is
  // failed (on_app_gone follows).
  bool send(std::string text);
  // The call has ended: writes what is queued and `last`, then closes; the listener is not called
  // again.
  void finish(std::string last);
  bool is_open() const noexcept { return open_; }

 private:
  void on_resolve(boost::beast::error_code ec, boost::asio::ip::tcp::resolver::results_type results);
  void on_connect(boost::beast::error_code ec);
  void on_handshake(boost::beast::error_code ec);
  void read_more();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  void write_more();
  void on_write(boost::beast::error_code ec);
  void close_when_written();
  void fail(std::string why);

  boost::asio::ip::tcp::resolver resolver_;
  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  const AppUrl url_;
  Listener* listener_;
  boost::beast::flat_buffer read_buf_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  bool open_ = false;
  bool writing_ = false;
  bool finishing_ = false;
  bool closed_ = false;  // failed, or the close has begun
};

}  // namespace brisvox::server
