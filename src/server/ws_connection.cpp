#include "server/ws_connection.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/websocket/error.hpp>
#include <utility>

#if defined(__linux__)
#include <linux/sockios.h>
#include <sys/ioctl.h>
#endif

#include "server/messages.h"

namespace brisvox::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using Clock = std::chrono::steady_clock;

namespace {

// While the kernel send buffer is full, how often the connection looks again: from the first to
// the last, doubling (a client that reads again is served within 50 ms; one that never reads costs
// 20 wake-ups a second).
constexpr auto kWriteRetryFirst = std::chrono::milliseconds(2);
constexpr auto kWriteRetryLast = std::chrono::milliseconds(50);
// A frame header is at most 10 bytes (from a server: no mask).
constexpr std::ptrdiff_t kFrameHeaderBytes = 10;

std::string truncate_reason(std::string reason) {
  if (reason.size() > 120) reason.resize(120);  // a close frame's reason is at most 123 bytes
  return reason;
}

}  // namespace

WsConnection::WsConnection(beast::tcp_stream&& socket, ServerContext& ctx, std::unique_ptr<WsHandler> handler,
                           std::shared_ptr<EngineWakeup> wakeup, std::vector<std::shared_ptr<void>> held,
                           std::string peer)
    : ws_(std::move(socket)),
      ctx_(ctx),
      id_(ctx.next_session_id.fetch_add(1)),
      peer_(std::move(peer)),
      wakeup_(std::move(wakeup)),
      held_(std::move(held)),
      settings_(handler->settings()),  // before handler_ takes it (members are made in this order)
      queue_(ctx.config.limits.send_queue_messages, ctx.config.limits.send_queue_bytes),
      send_room_bytes_(static_cast<std::size_t>(ctx.config.limits.ws_send_buffer_bytes)),
      write_timer_(ws_.get_executor()),
      idle_timer_(ws_.get_executor()),
      close_timer_(ws_.get_executor()),
      handler_(std::move(handler)) {
  handler_->connection_ = this;
  read_buf_.resize(settings_.read_chunk_bytes);
}

WsConnection::~WsConnection() {
  if (wakeup_) wakeup_->detach();
}

void WsConnection::start(beast::http::request<beast::http::string_body> upgrade) {
  wakeup_->attach(weak_from_this());
  apply_socket_options();
  ws_.async_accept(upgrade, beast::bind_front_handler(&WsConnection::on_accept, shared_from_this()));
}

void WsConnection::apply_socket_options() {
  // The socket's own timeout off (the websocket's apply from the upgrade on): 10 s for the
  // handshake, no idle timeout or keep-alive pings from Beast (the connection's idle timer).
  beast::get_lowest_layer(ws_).expires_never();
  websocket::stream_base::timeout timeouts{};
  timeouts.handshake_timeout = std::chrono::seconds(10);
  timeouts.idle_timeout = websocket::stream_base::none();
  timeouts.keep_alive_pings = false;
  ws_.set_option(timeouts);
  ws_.set_option(websocket::stream_base::decorator([protocol = settings_.subprotocol](websocket::response_type& res) {
    res.set(beast::http::field::server, "brisvox/" BRISVOX_VERSION);
    if (!protocol.empty()) res.set(beast::http::field::sec_websocket_protocol, protocol);
  }));
  // A bounded kernel send buffer: what a client does not read waits in the bounded, counted queue
  // (and then in the engine) instead of in kernel memory that Linux would grow to megabytes.
  beast::error_code ignored;
  auto& socket = beast::get_lowest_layer(ws_).socket();
  socket.set_option(net::socket_base::send_buffer_size(ctx_.config.limits.ws_send_buffer_bytes), ignored);
  // The kernel caps SO_SNDBUF (net.core.wmem_max) and reports back twice what it granted: write
  // only below half of what it really holds, whatever was configured (send_room()).
  net::socket_base::send_buffer_size granted;
  socket.get_option(granted, ignored);
  if (!ignored && granted.value() > 0) {
    send_room_bytes_ = std::min(send_room_bytes_, static_cast<std::size_t>(granted.value()) / 2);
  }
  min_fragment_bytes_ = std::min<std::size_t>(4096, send_room_bytes_ / 2);
  ws_.read_message_max(0);   // messages are counted here (they are read in chunks)
  ws_.auto_fragment(false);  // one frame per write: do_write() sizes them
  if (settings_.pings_are_activity) {
    ws_.control_callback([this](websocket::frame_type, beast::string_view) { last_activity_ = Clock::now(); });
  }
}

void WsConnection::on_accept(beast::error_code ec) {
  if (ec) {
    finish(fmt::format("handshake failed: {}", ec.message()));
    return;
  }
  phase_ = Phase::kOpen;
  ctx_.sessions.add(id_, weak_from_this());
  handler_->on_open();
  last_activity_ = Clock::now();
  arm_idle_timer();
  if (ctx_.draining.load()) go_away();
  read_more();
}

// --- reading -------------------------------------------------------------------------------------

void WsConnection::resume_reading() {
  reading_paused_ = false;
  read_more();
}

void WsConnection::read_more() {
  if (reading_ || reading_paused_ || phase_ != Phase::kOpen) return;
  reading_ = true;
  ws_.async_read_some(net::buffer(read_buf_), beast::bind_front_handler(&WsConnection::on_read, shared_from_this()));
}

void WsConnection::on_read(beast::error_code ec, std::size_t bytes) {
  reading_ = false;
  if (ec) {
    if (phase_ == Phase::kClosing) {
      // The close handshake owns the connection now: its handler or the close timer finishes.
    } else if (ec == websocket::error::closed) {
      const auto& reason = ws_.reason();
      peer_close_code_ = static_cast<std::uint16_t>(reason.code);
      finish(fmt::format("closed by the client (code {}{}{})", static_cast<int>(reason.code),
                         reason.reason.empty() ? "" : ": ", reason.reason.c_str()));
    } else {
      finish(fmt::format("connection lost: {}", ec.message()));
    }
    return;
  }
  last_activity_ = Clock::now();
  if (phase_ != Phase::kOpen) return;
  message_bytes_ += bytes;
  const bool text = ws_.got_text();
  // The message's size as far as known: the bytes read so far and the rest of the frame being
  // read, as its header announced it (Beast's read_size_hint gives the frame's remaining bytes
  // while it is being read, 1 or what it was given otherwise).
  const bool done = ws_.is_message_done();
  const std::size_t hint = done ? 0 : ws_.read_size_hint(1);
  const MessageLimit& limit = text ? settings_.text : settings_.binary;
  if (message_bytes_ + (hint > 1 ? hint : 0) > limit.max_bytes) {
    fail("message_too_large", kCloseTooBig, limit.refusal);
    return;
  }
  if (done) message_bytes_ = 0;
  if (text) {
    text_buf_.append(reinterpret_cast<const char*>(read_buf_.data()), bytes);
    if (done) handler_->on_text(std::exchange(text_buf_, std::string()));
  } else {
    handler_->on_binary(std::span(read_buf_.data(), bytes), done);
  }
  read_more();
}

void WsConnection::arm_idle_timer() {
  const auto timeout = std::chrono::seconds(ctx_.config.limits.idle_timeout_s);
  idle_timer_.expires_at(last_activity_ + timeout);
  idle_timer_.async_wait([self = shared_from_this(), timeout](beast::error_code ec) {
    if (ec || self->phase_ != Phase::kOpen) return;
    // Idle means the client has sent nothing while the server was waiting for it: time the
    // handler had reading paused (pacing the client, finishing a flush) or was busy for the
    // client (speaking) does not count.
    if (!self->reading_ || self->handler_->busy()) self->last_activity_ = Clock::now();
    if (Clock::now() - self->last_activity_ >= timeout) {
      self->fail("idle_timeout", kClosePolicy,
                 fmt::format("no message for {} s (--idle-timeout-s)", self->ctx_.config.limits.idle_timeout_s));
      return;
    }
    self->arm_idle_timer();
  });
}

// --- writing -------------------------------------------------------------------------------------

void WsConnection::send(std::string text, SendQueue::Kind kind) { send(SendQueue::Message{std::move(text)}, kind); }

void WsConnection::send(SendQueue::Message message, SendQueue::Kind kind) {
  if (phase_ != Phase::kOpen) return;
  switch (queue_.push(std::move(message), kind)) {
    case SendQueue::Result::kQueued:
      break;
    case SendQueue::Result::kDropped:
      ctx_.metrics.messages_dropped.fetch_add(1, std::memory_order_relaxed);
      break;
    case SendQueue::Result::kOverflow:
      // A required message would be lost: end the connection rather than drop it. The queue cannot
      // take an error event; the close frame says why.
      ctx_.metrics.count_error("slow_reader");
      log("{} {}: the client reads too slowly: {} messages, {} bytes waiting", settings_.kind, id_, queue_.size(),
          queue_.bytes());
      queue_.discard(/*keep_front=*/writing_a_message());
      ending_ = Ending::kFailed;
      close(kClosePolicy, "slow reader");
      return;
  }
  do_write();
}

std::size_t WsConnection::purge(std::uint64_t first_tag, std::uint64_t last_tag, std::size_t* bytes_dropped) {
  return queue_.purge(first_tag, last_tag, /*keep_front=*/writing_a_message(), bytes_dropped);
}

bool WsConnection::report_dropped() {
  const std::uint64_t dropped = queue_.take_unreported_drops();
  if (dropped == 0) return false;
  std::string report = handler_->dropped_report(dropped);
  if (report.empty()) return false;
  send(std::move(report));
  return true;
}

void WsConnection::do_write() {
  if (writing_ || queue_.empty() || close_started_ || write_timer_armed_ || phase_ == Phase::kClosed) return;
  const SendQueue::Message& m = queue_.front();
  const std::size_t left = m.data.size() - front_written_;
  const std::ptrdiff_t room = send_room();
  // The rest of the message if it fits, else as much as fits in one fragment (a message larger
  // than the whole room is written in pieces); never a write the kernel cannot take at once.
  const std::size_t n = room < 0 ? 0 : std::min(left, static_cast<std::size_t>(room));
  if (room < 0 || (n < left && n < min_fragment_bytes_)) {
    wait_for_room();
    return;
  }
  write_backoff_ = std::chrono::milliseconds(0);
  writing_ = true;
  if (front_written_ == 0) ws_.binary(m.binary);
  ws_.async_write_some(n == left, net::buffer(m.data.data() + front_written_, n),
                       [self = shared_from_this(), n](beast::error_code ec, std::size_t) { self->on_write(ec, n); });
}

void WsConnection::wait_for_room() {
  // Keep Beast's write lock free: a ping read meanwhile gets its pong written at once, and the
  // read loop goes on. The messages wait in the bounded queue.
  const auto now = Clock::now();
  if (write_backoff_.count() == 0) {
    stalled_since_ = now;
  } else if (settings_.write_stall_timeout.count() > 0 && now - stalled_since_ >= settings_.write_stall_timeout) {
    log("{} {}: the client has not read for {} s: dropped", settings_.kind, id_, settings_.write_stall_timeout.count());
    ctx_.metrics.count_error("slow_reader");
    ending_ = Ending::kFailed;
    drop_connection();
    finish("slow reader");
    return;
  }
  write_backoff_ = std::clamp(2 * write_backoff_, std::chrono::milliseconds(kWriteRetryFirst), kWriteRetryLast);
  write_timer_armed_ = true;
  write_timer_.expires_after(write_backoff_);
  write_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    self->write_timer_armed_ = false;
    if (!ec) self->do_write();
  });
}

std::ptrdiff_t WsConnection::send_room() {
  const auto room = static_cast<std::ptrdiff_t>(send_room_bytes_);
#if defined(SIOCOUTQ)
  // Bytes in the send queue (unsent and unacknowledged). Linux reserves twice the SO_SNDBUF asked
  // for (bookkeeping included); writing only below what was asked leaves room for a pong or a
  // close frame whatever the client reads.
  int queued = 0;
  auto& socket = beast::get_lowest_layer(ws_).socket();
  if (!socket.is_open() || ::ioctl(socket.native_handle(), SIOCOUTQ, &queued) != 0) return room;
  return queued <= 0 ? room - kFrameHeaderBytes : room - queued - kFrameHeaderBytes;
#else
  return room;
#endif
}

void WsConnection::on_write(beast::error_code ec, std::size_t written) {
  writing_ = false;
  if (ec) {
    // A reset or a closed pipe is the peer gone, whichever of the read and the write saw it first:
    // the log says so the same way.
    const bool lost = ec == net::error::connection_reset || ec == net::error::broken_pipe || ec == net::error::eof;
    if (phase_ != Phase::kClosed) finish(fmt::format("{}: {}", lost ? "connection lost" : "send failed", ec.message()));
    return;
  }
  front_written_ += written;
  if (front_written_ < queue_.front().data.size()) {
    do_write();  // the message's next fragment
    return;
  }
  front_written_ = 0;
  queue_.pop();
  if (phase_ == Phase::kOpen && queue_.has_room_to_report()) report_dropped();
  if (phase_ == Phase::kOpen) {
    handler_->on_sent();
    note_busy();
  }
  if (phase_ == Phase::kClosing && queue_.empty() && !writing_) {
    start_close_handshake();
    return;
  }
  do_write();
}

// --- ending --------------------------------------------------------------------------------------

std::string WsHandler::error_report(std::string_view code, const std::string& message) {
  return error_message(code, message);
}

void WsConnection::fail(std::string_view code, std::uint16_t close_code, const std::string& message) {
  if (phase_ != Phase::kOpen) return;
  ctx_.metrics.count_error(code);
  log("{} {}: error [{}]: {}", settings_.kind, id_, code, message);
  ending_ = Ending::kFailed;
  if (settings_.error_messages) send(handler_->error_report(code, message));
  close(close_code, std::string(code));
}

void WsConnection::close(std::uint16_t code, std::string reason) {
  if (phase_ != Phase::kOpen) return;
  report_dropped();  // the client learns what it missed before the close
  phase_ = Phase::kClosing;
  close_code_ = code;
  close_reason_ = truncate_reason(std::move(reason));
  idle_timer_.cancel();
  handler_->on_closing();
  // A peer that reads nothing would keep the close frame behind its unread messages forever.
  close_timer_.expires_after(std::chrono::milliseconds(ctx_.config.limits.close_timeout_ms));
  close_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec && self->phase_ != Phase::kClosed) {
      self->drop_connection();
      self->finish("the peer did not complete the close handshake");
    }
  });
  if (!writing_a_message() && queue_.empty()) start_close_handshake();
}

void WsConnection::start_close_handshake() {
  if (close_started_) return;
  close_started_ = true;
  ws_.async_close(websocket::close_reason(static_cast<websocket::close_code>(close_code_), close_reason_),
                  [self = shared_from_this()](beast::error_code ec) {
                    self->finish(ec ? fmt::format("close handshake failed: {}", ec.message()) : std::string());
                  });
}

void WsConnection::drop_connection() {
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  beast::get_lowest_layer(ws_).socket().close(ignored);
}

void WsConnection::on_engine_events() {
  if (phase_ != Phase::kOpen) return;
  handler_->on_engine_events();
  note_busy();
}

void WsConnection::note_busy() {
  // Sampled whenever the handler works for the client, not only when the idle timer fires: a call
  // that spoke for 15 s and then waited 5 s for its client had been "idle" for 20 s at the
  // timer's next expiry, and was closed while its client was still within the timeout.
  if (phase_ == Phase::kOpen && handler_->busy()) last_activity_ = Clock::now();
}

void WsConnection::go_away() {
  net::post(ws_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ != Phase::kOpen || self->going_away_) return;
    self->going_away_ = true;
    self->handler_->on_going_away();
  });
}

void WsConnection::abort() {
  net::post(ws_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == Phase::kClosed) return;
    self->drop_connection();
    self->ending_ = Ending::kAborted;
    self->finish("aborted: the drain deadline passed");
  });
}

void WsConnection::finish(std::string_view why) {
  if (phase_ == Phase::kClosed) return;
  const bool opened = phase_ != Phase::kHandshake;
  phase_ = Phase::kClosed;
  idle_timer_.cancel();
  close_timer_.cancel();
  write_timer_.cancel();
  wakeup_->detach();
  if (!close_started_) drop_connection();
  if (opened) ctx_.sessions.remove(id_);
  handler_->on_closed(why, opened);
}

}  // namespace brisvox::server
