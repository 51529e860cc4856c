#include "server/call_app_link.h"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket/error.hpp>


namespace brisvox::server {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = boost::asio::ip::tcp;

CallAppLink::CallAppLink(const boost::asio::any_io_executor& strand, AppUrl url, Listener* listener)
    : resolver_(strand), ws_(strand), url_(std::move(url)), listener_(listener) {}

void CallAppLink::start() {
  beast::get_lowest_layer(ws_).expires_after(kConnectTimeout);
  resolver_.async_resolve(url_.host, url_.port,
                          [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
                            self->on_resolve(ec, std::move(results));
                          });
}

void CallAppLink::on_resolve(beast::error_code ec, tcp::resolver::results_type results) {
  if (closed_) return;
  if (ec) return fail(fmt::format("could not be resolved ({})", ec.message()));
  beast::get_lowest_layer(ws_).async_connect(
      results, [self = shared_from_this()](beast::error_code e, const tcp::endpoint&) { self->on_connect(e); });
}

void CallAppLink::on_connect(beast::error_code ec) {
  if (closed_) return;
  if (ec) return fail(fmt::format("is unreachable ({})", ec.message()));
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ignored);
  // The handshakes have kConnectTimeout; the idle link has none (a call may be quiet for long).
  beast::get_lowest_layer(ws_).expires_never();
  ws_.set_option(websocket::stream_base::timeout{kConnectTimeout, websocket::stream_base::none(), false});
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::request_type& req) { req.set(beast::http::field::user_agent, "brisvox/" BRISVOX_VERSION); }));
  ws_.read_message_max(kMaxAppMessageBytes);
  const std::string host = url_.host.find(':') != std::string::npos ? "[" + url_.host + "]:" + url_.port
                                                                     : url_.host + ":" + url_.port;
  ws_.async_handshake(host, url_.target, [self = shared_from_this()](beast::error_code e) { self->on_handshake(e); });
}

void CallAppLink::on_handshake(beast::error_code ec) {
  if (closed_) return;
  if (ec) return fail(fmt::format("refused the WebSocket handshake ({})", ec.message()));
  open_ = true;
  ws_.text(true);
  if (listener_ != nullptr) listener_->on_app_open();
  read_more();
  write_more();
}

void CallAppLink::read_more() {
  ws_.async_read(read_buf_, [self = shared_from_this()](beast::error_code ec, std::size_t n) { self->on_read(ec, n); });
}

void CallAppLink::on_read(beast::error_code ec, std::size_t /*bytes*/) {
  if (closed_) return;
  if (ec == websocket::error::closed) return fail("closed the connection");
  if (ec == websocket::error::message_too_big) {
    return fail(fmt::format("sent a message larger than {} bytes", kMaxAppMessageBytes));
  }
  if (ec) return fail(fmt::format("dropped the connection ({})", ec.message()));
  if (!ws_.got_text()) {
    read_buf_.consume(read_buf_.size());
    return fail("sent a binary message (the call protocol is JSON text)");
  }
  std::string text = beast::buffers_to_string(read_buf_.data());
  read_buf_.consume(read_buf_.size());
  if (listener_ != nullptr) listener_->on_app_message(std::move(text));
  if (!closed_) read_more();
}

bool CallAppLink::send(std::string text) {
  if (closed_ || finishing_) return false;
  if (queue_.size() >= kMaxQueuedMessages || queued_bytes_ + text.size() > kMaxQueuedBytes) {
    fail(fmt::format("does not keep up: {} messages ({} bytes) wait to be written to it", queue_.size(),
                     queued_bytes_));
    return false;
  }
  queued_bytes_ += text.size();
  queue_.push_back(std::move(text));
  write_more();
  return true;
}

void CallAppLink::write_more() {
  if (!open_ || writing_ || closed_) return;
  if (queue_.empty()) {
    if (finishing_) close_when_written();
    return;
  }
  writing_ = true;
  ws_.async_write(boost::asio::buffer(queue_.front()),
                  [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
}

void CallAppLink::on_write(beast::error_code ec) {
  writing_ = false;
  if (closed_) return;
  if (ec) return fail(fmt::format("dropped the connection ({})", ec.message()));
  queued_bytes_ -= queue_.front().size();
  queue_.pop_front();
  write_more();
}

void CallAppLink::finish(std::string last) {
  listener_ = nullptr;
  if (closed_ || finishing_) return;
  if (!open_) {  // still connecting: nothing was said, nothing is owed
    fail("");
    return;
  }
  if (!last.empty()) {
    queued_bytes_ += last.size();
    queue_.push_back(std::move(last));
  }
  finishing_ = true;
  write_more();
}

void CallAppLink::close_when_written() {
  closed_ = true;
  ws_.async_close(websocket::close_code::normal, [self = shared_from_this()](beast::error_code) {});
}

void CallAppLink::fail(std::string why) {
  if (closed_) return;
  // The listener may drop its reference to the link from on_app_gone (called from send()).
  const std::shared_ptr<CallAppLink> keep = shared_from_this();
  closed_ = true;
  beast::error_code ignored;
  resolver_.cancel();
  beast::get_lowest_layer(ws_).socket().close(ignored);
  queue_.clear();
  queued_bytes_ = 0;
  if (Listener* l = std::exchange(listener_, nullptr); l != nullptr && !why.empty()) l->on_app_gone(std::move(why));
}

}  // namespace brisvox::server
