// Accepts TCP connections on one address and hands each, on a strand of its own, to what serves it:
// an HttpSession on the server's port, an AudioSocketRelay on the AudioSocket port (server.cpp).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace brisvox::server {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // An accepted connection (TCP_NODELAY set), on its own strand.
  using Take = std::function<void(boost::asio::ip::tcp::socket)>;

  // Binds and listens now: Error(kIo) naming the address if it cannot (in use, bad host; `option`:
  // the option that names the host, "--host").
  Listener(boost::asio::io_context& ioc, const std::string& host, int port, std::string_view option, Take take);

  int port() const noexcept { return port_; }
  boost::asio::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
  std::string url() const;  // http://host:port
  void start();
  // Stops accepting (from any thread): new connections are refused by the kernel.
  void stop();

 private:
  void accept();
  void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;  // after a failed accept
  const Take take_;
  std::string host_;
  int port_ = 0;
};

}  // namespace brisvox::server
