#include "server/hangup_watch.h"

#include <sys/socket.h>

#include <cerrno>

namespace brisvox::server {

std::shared_ptr<HangupWatch> HangupWatch::start(boost::asio::ip::tcp::socket& socket, std::function<void()> on_gone) {
  std::shared_ptr<HangupWatch> watch(new HangupWatch(socket, std::move(on_gone)));
  watch->wait();
  return watch;
}

void HangupWatch::wait() {
  socket_.async_wait(boost::asio::socket_base::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
    if (self->stopped_ || ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
      char probe = 0;
      const ssize_t n = ::recv(self->socket_.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) return;  // a pipelined request: the client is there
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        self->wait();
        return;
      }
    }
    self->stopped_ = true;
    if (auto on_gone = std::move(self->on_gone_)) on_gone();
  });
}

void HangupWatch::stop() {
  if (stopped_) return;
  stopped_ = true;
  on_gone_ = nullptr;  // what it holds (its owner) goes now, not when the cancelled wait completes
  boost::system::error_code ignored;
  socket_.cancel(ignored);
}

}  // namespace brisvox::server
