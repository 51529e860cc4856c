// Accepts TCP connections on one address and gives each its own strand and HttpSession.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <string>

#include "server/server_context.h"

namespace brisvox::server {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // Binds and listens now: Error(kIo) naming the address if it cannot (in use, bad host).
  Listener(boost::asio::io_context& ioc, const std::string& host, int port, ServerContext& ctx);

  int port() const noexcept { return port_; }
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
  ServerContext& ctx_;
  std::string host_;
  int port_ = 0;
};

}  // namespace brisvox::server
