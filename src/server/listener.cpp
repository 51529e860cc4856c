#include "server/listener.h"

#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "brisvox/error.h"
#include "server/server_log.h"

namespace brisvox::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

Listener::Listener(net::io_context& ioc, const std::string& host, int port, std::string_view option, Take take)
    : ioc_(ioc), acceptor_(net::make_strand(ioc)), retry_timer_(acceptor_.get_executor()), take_(std::move(take)),
      host_(host) {
  boost::system::error_code ec;
  tcp::resolver resolver(ioc);
  const auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    throw Error(ErrorCode::kIo, fmt::format("cannot resolve {} '{}': {}", option, host, ec.message()));
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  auto check = [&](const char* what) {
    if (ec) {
      throw Error(ErrorCode::kIo, fmt::format("cannot listen on {}:{} ({}: {})", host, port, what, ec.message()));
    }
  };
  acceptor_.open(endpoint.protocol(), ec);
  check("open");
  acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  check("reuse_address");
  acceptor_.bind(endpoint, ec);
  check("bind");
  acceptor_.listen(net::socket_base::max_listen_connections, ec);
  check("listen");
  port_ = acceptor_.local_endpoint().port();
}

std::string Listener::url() const {
  const bool v6 = host_.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}", v6 ? "[" : "", host_, v6 ? "]" : "", port_);
}

void Listener::start() { accept(); }

void Listener::stop() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->acceptor_.close(ignored);
  });
}

void Listener::accept() {
  // Each connection gets its own strand: its handlers never run concurrently, whatever the
  // number of io threads.
  acceptor_.async_accept(net::make_strand(ioc_),
                         [self = shared_from_this()](boost::system::error_code ec, tcp::socket socket) {
                           self->on_accept(ec, std::move(socket));
                         });
}

void Listener::on_accept(boost::system::error_code ec, tcp::socket socket) {
  if (!acceptor_.is_open()) return;
  if (!ec) {
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // events and frames are small and must not wait
    take_(std::move(socket));
    accept();
    return;
  }
  // Out of file descriptors or memory: retry shortly rather than spin on the error.
  log_server("accept failed: {}", ec.message());
  retry_timer_.expires_after(std::chrono::milliseconds(100));
  retry_timer_.async_wait([self = shared_from_this()](boost::system::error_code) { self->accept(); });
}

}  // namespace brisvox::server
