#include "server/ws_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/version.hpp>
#include <boost/beast/websocket/error.hpp>
#include <cmath>

#if defined(__linux__)
#include <linux/sockios.h>
#include <sys/ioctl.h>
#endif

#include "brisvox/plural.h"
#include "brisvox/error.h"
#include "server/control_message.h"
#include "server/messages.h"
#include "server/server_log.h"
#include "server/ws_options.h"

namespace brisvox::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using Clock = std::chrono::steady_clock;

namespace {

// Close codes (RFC 6455 section 7.4.1).
constexpr std::uint16_t kCloseNormal = 1000;
constexpr std::uint16_t kCloseGoingAway = 1001;
constexpr std::uint16_t kCloseBadData = 1007;
constexpr std::uint16_t kClosePolicy = 1008;
constexpr std::uint16_t kCloseTooBig = 1009;
constexpr std::uint16_t kCloseInternal = 1011;
constexpr std::uint16_t kCloseTryLater = 1013;

// How often held audio is retried when no engine progress wakes the session first. A frame is
// 32 ms; 5 ms keeps the added delay small without spinning.
constexpr auto kRetryInterval = std::chrono::milliseconds(5);

// While the kernel send buffer is full, how often the session looks again: from the first to the
// last, doubling (a client that reads again is served within 50 ms; one that never reads costs 20
// wake-ups a second).
constexpr auto kWriteRetryFirst = std::chrono::milliseconds(2);
constexpr auto kWriteRetryLast = std::chrono::milliseconds(50);

std::size_t read_chunk_bytes(const AudioRequest& r) {
  const double quarter_second =
      static_cast<double>(bytes_per_sample(r.encoding)) * static_cast<double>(r.stream.sample_rate_hz) / 4.0;
  return static_cast<std::size_t>(std::clamp(quarter_second, 512.0, 65536.0));
}

std::string truncate_reason(std::string reason) {
  if (reason.size() > 120) reason.resize(120);  // a close frame's reason is at most 123 bytes
  return reason;
}

}  // namespace

WsSession::WsSession(beast::tcp_stream&& socket, ServerContext& ctx, AudioRequest request, Stream stream,
                     std::shared_ptr<EngineWakeup> wakeup, std::string peer)
    : ws_(std::move(socket)),
      ctx_(ctx),
      request_(std::move(request)),
      id_(ctx.next_session_id.fetch_add(1)),
      peer_(std::move(peer)),
      stream_(std::move(stream)),
      wakeup_(std::move(wakeup)),
      model_rate_hz_(stream_.model_rate_hz()),
      decoder_(request_.encoding, request_.stream.sample_rate_hz),
      rate_(ctx.config.limits.max_rate, ctx.config.limits.burst_s),
      queue_(ctx.config.limits.send_queue_messages, ctx.config.limits.send_queue_bytes),
      read_chunk_bytes_(read_chunk_bytes(request_)),
      retry_timer_(ws_.get_executor()),
      idle_timer_(ws_.get_executor()),
      close_timer_(ws_.get_executor()),
      write_timer_(ws_.get_executor()) {
  read_buf_.resize(read_chunk_bytes_);
  decoded_.resize(decoder_.max_samples_for(read_chunk_bytes_));
  const auto limit = static_cast<std::size_t>(static_cast<double>(request_.stream.sample_rate_hz) *
                                              ctx.config.limits.pending_ms / 1000.0);
  pending_limit_samples_ = std::max(limit, 2 * decoded_.size());
  pending_.reserve(pending_limit_samples_);
  send_room_bytes_ = static_cast<std::size_t>(ctx.config.limits.ws_send_buffer_bytes);
}

WsSession::~WsSession() {
  if (wakeup_) wakeup_->detach();
  stream_.close();
  discard_held(loss_reason_);  // nothing left unless the session never finished (the server stopped)
  ctx_.streams_open.fetch_sub(1);
}

void WsSession::start(beast::http::request<beast::http::string_body> upgrade) {
  wakeup_->attach(weak_from_this());
  apply_server_ws_options(ws_, ctx_.config.limits.ws_send_buffer_bytes);
  beast::error_code ignored;
  auto& socket = beast::get_lowest_layer(ws_).socket();
  // The kernel caps SO_SNDBUF (net.core.wmem_max) and reports back twice what it granted: write
  // only below half of what it really holds, whatever was configured (socket_has_room()).
  net::socket_base::send_buffer_size granted;
  socket.get_option(granted, ignored);
  if (!ignored && granted.value() > 0) {
    send_room_bytes_ = std::min(send_room_bytes_, static_cast<std::size_t>(granted.value()) / 2);
  }
  ws_.read_message_max(0);  // the session counts message bytes itself (it reads in chunks)
  ws_.auto_fragment(false);
  // Pings and pongs are not activity: a client that only pings holds a stream slot without using it,
  // and is closed at the idle timeout like a silent one (issue 13). Time the server spends pacing the
  // client or finishing a flush still never counts (arm_idle_timer()).
  ws_.async_accept(upgrade, beast::bind_front_handler(&WsSession::on_accept, shared_from_this()));
}

void WsSession::on_accept(beast::error_code ec) {
  if (ec) {
    finish(fmt::format("handshake failed: {}", ec.message()));
    return;
  }
  phase_ = Phase::kOpen;
  ctx_.sessions.add(id_, weak_from_this());
  ctx_.metrics.websocket_sessions_active.fetch_add(1);
  ctx_.metrics.websocket_sessions_total.fetch_add(1);
  log_stream("stream {} open: {}, {} Hz {}, model {} Hz{}", id_, peer_, request_.stream.sample_rate_hz,
             to_string(request_.encoding), model_rate_hz_, request_.stream.vad.emit_probabilities ? ", events=vad" : "");
  send(ready_message(id_, request_, stream_.config(), ctx_.config.limits));
  last_activity_ = Clock::now();
  arm_idle_timer();
  if (ctx_.draining.load()) go_away();
  read_more();
}

// --- reading -------------------------------------------------------------------------------

void WsSession::read_more() {
  if (reading_ || phase_ != Phase::kOpen || end_ != EndRequest::kNone) return;
  if (pending_begin_ < pending_.size()) {
    arm_retry(kRetryInterval);
    return;
  }
  const auto wait = rate_.wait_time();
  if (wait.count() > 0) {
    arm_retry(wait);
    return;
  }
  reading_ = true;
  ws_.async_read_some(net::buffer(read_buf_.data(), read_chunk_bytes_),
                      beast::bind_front_handler(&WsSession::on_read, shared_from_this()));
}

void WsSession::on_read(beast::error_code ec, std::size_t bytes) {
  reading_ = false;
  if (ec) {
    if (phase_ == Phase::kClosing) {
      // The close handshake owns the connection now: its handler or the close timer finishes.
    } else if (ec == websocket::error::closed) {
      const auto& reason = ws_.reason();
      finish(fmt::format("closed by the client (code {}{}{})", static_cast<int>(reason.code),
                         reason.reason.empty() ? "" : ": ", reason.reason.c_str()));
    } else {
      finish(fmt::format("connection lost: {}", ec.message()));
    }
    return;
  }
  last_activity_ = Clock::now();
  if (phase_ != Phase::kOpen || end_ == EndRequest::kClose) return;  // ending: input is ignored
  message_bytes_ += bytes;
  const bool text = ws_.got_text();
  const auto& limits = ctx_.config.limits;
  // The message's size as far as known: the bytes read so far and the rest of the frame being read,
  // as its header announced it (Beast's read_size_hint gives the frame's remaining bytes while it is
  // being read, 1 or what it was given otherwise). An oversize message is refused at its first
  // chunk, not after it was read at the paced rate and analysed (issue 13: 2 MiB took 7.7 s).
  const std::size_t hint = ws_.is_message_done() ? 0 : ws_.read_size_hint(1);
  const std::uint64_t known = message_bytes_ + (hint > 1 ? hint : 0);
  if (known > limits.max_message_bytes || (text && known > limits.max_control_bytes)) {
    fail("message_too_large", kCloseTooBig,
         fmt::format("a {} message is larger than {} bytes ({})", text ? "text" : "binary",
                     text ? std::min(limits.max_control_bytes, limits.max_message_bytes) : limits.max_message_bytes,
                     text ? "control messages are small JSON objects" : "send audio in smaller messages"));
    return;
  }
  if (text) {
    text_buf_.append(reinterpret_cast<const char*>(read_buf_.data()), bytes);
    if (ws_.is_message_done()) {
      const std::string message = std::move(text_buf_);
      text_buf_.clear();
      message_bytes_ = 0;
      handle_control(message);
    }
  } else {
    handle_audio(std::span(read_buf_.data(), bytes));
    if (ws_.is_message_done()) message_bytes_ = 0;
  }
  advance();
}

void WsSession::handle_control(const std::string& text) {
  const ControlMessage m = parse_control_message(text);
  if (!m.ok) {
    ctx_.metrics.count_error("bad_control");
    send(error_message("bad_control", m.error));
    return;
  }
  switch (m.type) {
    case ControlType::kFlush:
      end_ = EndRequest::kFlush;
      break;
    case ControlType::kClose:
      end_ = EndRequest::kClose;
      close_code_ = kCloseNormal;
      close_reason_.clear();
      break;
    case ControlType::kReset:
      // Everything of the current stream goes: held audio, a partial sample, unread events.
      stream_.close();
      discard_held(AudioLoss::kReset);
      decoder_.reset();
      offset_s_ = 0;
      stream_samples_ = 0;
      if (open_engine_stream()) send(reset_message());
      break;
  }
}

void WsSession::handle_audio(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  ctx_.metrics.audio_bytes_received.fetch_add(bytes.size(), std::memory_order_relaxed);
  std::size_t n = 0;
  try {
    n = decoder_.decode(bytes, decoded_);
  } catch (const Error& e) {
    fail(to_string(e.code()), kCloseBadData, e.what());
    return;
  }
  const double audio_s = static_cast<double>(n) / request_.stream.sample_rate_hz;
  rate_.consume(audio_s);
  const std::size_t held = pending_.size() - pending_begin_;
  if (held + n > pending_limit_samples_) {
    fail("rate_limited", kClosePolicy,
         fmt::format("{:.2f} s of audio is waiting for the engine, more than the {} ms the server holds per stream; "
                     "send audio at most {} x real time and in messages of at most {} ms",
                     static_cast<double>(held + n) / request_.stream.sample_rate_hz, ctx_.config.limits.pending_ms,
                     ctx_.config.limits.max_rate, ctx_.config.limits.pending_ms / 2));
    return;
  }
  if (pending_begin_ > 0 && pending_begin_ == pending_.size()) {
    pending_.clear();
    pending_begin_ = 0;
  }
  if (pending_begin_ == pending_.size()) pending_since_ = Clock::now();
  pending_.insert(pending_.end(), decoded_.begin(), decoded_.begin() + static_cast<std::ptrdiff_t>(n));
  ctx_.metrics.audio_samples_received.fetch_add(n, std::memory_order_relaxed);
  stream_samples_ += n;
  total_audio_s_ += audio_s;
}

// --- the engine side -------------------------------------------------------------------------

void WsSession::push_pending() {
  while (pending_begin_ < pending_.size()) {
    // Only what the stream takes: a refused push would count as rejected samples and raise an
    // overload event, while nothing is lost here.
    const std::size_t room = std::min(stream_.writable(), pending_.size() - pending_begin_);
    if (room == 0) break;
    std::size_t accepted = 0;
    try {
      accepted = stream_.push(std::span(pending_.data() + pending_begin_, room));
    } catch (const Error& e) {
      fail(to_string(e.code()), e.code() == ErrorCode::kBadAudio ? kCloseBadData : kCloseInternal, e.what());
      return;
    }
    pending_begin_ += accepted;
    if (accepted < room) break;
  }
  if (pending_begin_ == pending_.size()) {
    pending_.clear();
    pending_begin_ = 0;
  } else if (pending_begin_ > pending_.size() / 2) {
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(pending_begin_));
    pending_begin_ = 0;
  }
}

void WsSession::advance() {
  if (phase_ != Phase::kOpen) return;
  push_pending();
  if (phase_ != Phase::kOpen) return;
  if (pending_begin_ < pending_.size()) {
    const auto held_for = Clock::now() - pending_since_;
    if (held_for > std::chrono::milliseconds(ctx_.config.limits.pending_timeout_ms)) {
      fail("overloaded", kCloseTryLater,
           fmt::format("the engine took none of this stream's audio for {} ms; try again later",
                       ctx_.config.limits.pending_timeout_ms));
      return;
    }
    arm_retry(kRetryInterval);
    return;
  }
  if (end_ != EndRequest::kNone) {
    if (!flush_called_) {
      // A resampled stream's flush() may wait for room for the resampler's tail: never on the strand.
      if (!stream_.can_flush()) {
        arm_retry(kRetryInterval);
        return;
      }
      flush_called_ = true;
      stream_.flush();  // the final events follow, then kEndOfStream (on_engine_events)
    }
    return;
  }
  read_more();
}

void WsSession::on_engine_events() {
  if (phase_ != Phase::kOpen) return;
  Event events[32];
  for (std::size_t n; phase_ == Phase::kOpen && (n = stream_.poll(events)) > 0;) {
    for (std::size_t i = 0; i < n && phase_ == Phase::kOpen; ++i) handle_event(events[i]);
  }
  advance();
}

void WsSession::handle_event(const Event& e) {
  switch (e.type) {
    case EventType::kSpeechStart:
      send(speech_start_message(timeline_s(e.start_s)));
      break;
    case EventType::kSpeechEnd:
      ++num_segments_;
      send(speech_end_message(timeline_s(e.start_s), timeline_s(e.end_s)));
      break;
    case EventType::kVadProbability:
      send(vad_message(timeline_s(e.start_s), e.probability), SendQueue::Kind::kDroppable);
      break;
    case EventType::kOverload:
      send(overload_message(e.backlog_ms, e.rejected_samples, 0));
      break;
    case EventType::kError: {
      // A failed model run: the frame counts as silence and the stream goes on.
      const std::string_view code = to_string(e.error_code);
      ctx_.metrics.count_error(code);
      send(error_message(code, stream_.last_error()));
      break;
    }
    case EventType::kEndOfStream:
      on_end_of_stream();
      break;
    case EventType::kTurnEnd:
      send(turn_end_message(timeline_s(e.start_s), timeline_s(e.end_s), e.probability, to_string(e.turn_reason)));
      break;
    case EventType::kTurnIncomplete:
      send(turn_incomplete_message(timeline_s(e.start_s), timeline_s(e.end_s), e.probability));
      break;
    case EventType::kTranscript: {
      const std::optional<Transcript> t = stream_.read_transcript(e);
      if (t) send(transcript_message(timeline_s(e.start_s), timeline_s(e.end_s), *t));
      break;
    }
    case EventType::kTtsAudio:
    case EventType::kTtsEnd:
    case EventType::kTtsCancelled:
      break;  // speech sessions' events (tts_ws_session.cpp): never on a stream
  }
}

double WsSession::timeline_s(double stream_s) const {
  // Stream times are whole model samples (multiples of 62.5 us at 16 kHz); rounding the sum to
  // 0.1 us keeps them exact after an offset is added, so that 12 + 5.118 prints as 17.118.
  return std::round((offset_s_ + stream_s) * 1e7) / 1e7;
}

double WsSession::stream_time_s() const {
  return timeline_s(static_cast<double>(stream_samples_) / request_.stream.sample_rate_hz);
}

void WsSession::on_end_of_stream() {
  flush_called_ = false;
  if (end_ == EndRequest::kFlush) {
    // The utterance is over; the socket stays open and the timeline goes on in a fresh stream.
    const double end_s = stream_time_s();
    send(flushed_message(end_s));
    offset_s_ = end_s;
    stream_samples_ = 0;
    end_ = EndRequest::kNone;
    open_engine_stream();
  } else if (end_ == EndRequest::kClose) {
    begin_close(close_code_, close_reason_);
  }
}

bool WsSession::open_engine_stream() {
  StreamConfig config = request_.stream;
  config.buffer_ms = ctx_.config.limits.engine_buffer_ms;
  config.on_events = wakeup_->callback();
  stream_.close();
  try {
    stream_ = ctx_.engine.open_stream(config);
    return true;
  } catch (const Error& e) {
    const bool busy = e.code() == ErrorCode::kOverloaded || e.code() == ErrorCode::kClosed;
    fail(to_string(e.code()), busy ? kCloseTryLater : kCloseInternal, e.what());
    return false;
  }
}

// --- timers ------------------------------------------------------------------------------------

void WsSession::arm_retry(std::chrono::microseconds delay) {
  if (retry_armed_) return;
  retry_armed_ = true;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    self->retry_armed_ = false;
    if (ec) return;
    // Events may be waiting even without a wake-up (one could not be posted): poll as well.
    self->on_engine_events();
  });
}

void WsSession::arm_idle_timer() {
  const auto timeout = std::chrono::seconds(ctx_.config.limits.idle_timeout_s);
  idle_timer_.expires_at(last_activity_ + timeout);
  idle_timer_.async_wait([self = shared_from_this(), timeout](beast::error_code ec) {
    if (ec || self->phase_ != Phase::kOpen) return;
    // Idle means the client has sent nothing while the server was waiting for it; time spent
    // pacing the client or finishing a flush does not count.
    if (!self->reading_) self->last_activity_ = Clock::now();
    if (Clock::now() - self->last_activity_ >= timeout) {
      self->fail("idle_timeout", kClosePolicy,
                 fmt::format("no message for {} s (--idle-timeout-s)", self->ctx_.config.limits.idle_timeout_s));
      return;
    }
    self->arm_idle_timer();
  });
}

// --- writing -----------------------------------------------------------------------------------

void WsSession::send(std::string message, SendQueue::Kind kind) {
  if (phase_ != Phase::kOpen) return;
  switch (queue_.push(std::move(message), kind)) {
    case SendQueue::Result::kQueued:
      break;
    case SendQueue::Result::kDropped:
      ctx_.metrics.messages_dropped.fetch_add(1, std::memory_order_relaxed);
      break;
    case SendQueue::Result::kOverflow:
      // A speech event would be lost: end the session rather than drop it. The queue cannot take
      // an error event; the close frame says why.
      ctx_.metrics.count_error("slow_reader");
      log_stream("stream {}: the client reads too slowly: {} messages, {} bytes waiting", id_, queue_.size(),
                 queue_.bytes());
      queue_.discard(/*keep_front=*/writing_);
      loss_reason_ = AudioLoss::kError;
      begin_close(kClosePolicy, "slow reader");
      return;
  }
  do_write();
}

bool WsSession::report_drops() {
  const std::uint64_t dropped = queue_.take_unreported_drops();
  if (dropped == 0) return false;
  send(overload_message(0, 0, dropped));
  return true;
}

void WsSession::do_write() {
  if (writing_ || queue_.empty() || close_started_ || write_timer_armed_ || phase_ == Phase::kClosed) return;
  if (!socket_has_room(queue_.front().data.size())) {
    // Keep Beast's write lock free: a ping read meanwhile gets its pong written at once, and the
    // read loop goes on. The messages wait in the bounded queue (vad dropped, speech kept).
    write_backoff_ = std::clamp(2 * write_backoff_, std::chrono::milliseconds(kWriteRetryFirst), kWriteRetryLast);
    write_timer_armed_ = true;
    write_timer_.expires_after(write_backoff_);
    write_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      self->write_timer_armed_ = false;
      if (!ec) self->do_write();
    });
    return;
  }
  write_backoff_ = std::chrono::milliseconds(0);
  writing_ = true;
  ws_.text(true);
  ws_.async_write(net::buffer(queue_.front().data),
                  [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
}

bool WsSession::socket_has_room(std::size_t bytes) {
#if defined(SIOCOUTQ)
  // Bytes in the send queue (unsent and unacknowledged). Linux reserves twice the SO_SNDBUF asked
  // for (bookkeeping included); writing only below what was asked leaves room for a pong or a
  // close frame whatever the client reads.
  int queued = 0;
  auto& socket = beast::get_lowest_layer(ws_).socket();
  if (!socket.is_open() || ::ioctl(socket.native_handle(), SIOCOUTQ, &queued) != 0) return true;
  // A frame header is at most 10 bytes; an empty buffer takes any message.
  return queued <= 0 || static_cast<std::size_t>(queued) + bytes + 10 <= send_room_bytes_;
#else
  (void)bytes;
  return true;
#endif
}

void WsSession::on_write(beast::error_code ec) {
  writing_ = false;
  if (ec) {
    if (phase_ != Phase::kClosed) finish(fmt::format("send failed: {}", ec.message()));
    return;
  }
  queue_.pop();
  if (phase_ == Phase::kOpen && queue_.has_room_to_report() && report_drops()) return;  // send() wrote
  if (phase_ == Phase::kClosing && queue_.empty()) {
    start_close_handshake();
    return;
  }
  do_write();
}

// --- ending --------------------------------------------------------------------------------------

void WsSession::fail(std::string_view code, std::uint16_t close_code, const std::string& message) {
  if (phase_ != Phase::kOpen) return;
  ctx_.metrics.count_error(code);
  log_stream("stream {}: error [{}]: {}", id_, code, message);
  loss_reason_ = AudioLoss::kError;
  send(error_message(code, message));
  begin_close(close_code, std::string(code));
}

void WsSession::begin_close(std::uint16_t close_code, std::string reason) {
  if (phase_ != Phase::kOpen) return;
  report_drops();  // the client learns what it missed before the close
  phase_ = Phase::kClosing;
  close_code_ = close_code;
  close_reason_ = truncate_reason(std::move(reason));
  retry_timer_.cancel();
  idle_timer_.cancel();
  // A peer that reads nothing would keep the close frame behind its unread messages forever.
  close_timer_.expires_after(std::chrono::milliseconds(ctx_.config.limits.close_timeout_ms));
  close_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec && self->phase_ != Phase::kClosed) {
      self->drop_connection();
      self->finish("the peer did not complete the close handshake");
    }
  });
  if (!writing_ && queue_.empty()) start_close_handshake();
}

void WsSession::start_close_handshake() {
  if (close_started_) return;
  close_started_ = true;
  ws_.async_close(websocket::close_reason(static_cast<websocket::close_code>(close_code_), close_reason_),
                  [self = shared_from_this()](beast::error_code ec) {
                    self->finish(ec ? fmt::format("close handshake failed: {}", ec.message()) : std::string());
                  });
}

void WsSession::drop_connection() {
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  beast::get_lowest_layer(ws_).socket().close(ignored);
}

void WsSession::go_away() {
  net::post(ws_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ != Phase::kOpen || self->going_away_) return;
    self->going_away_ = true;
    // Audio already read is analysed and its final events sent; nothing more is read.
    self->end_ = EndRequest::kClose;
    self->close_code_ = kCloseGoingAway;
    self->close_reason_ = "going away";
    self->advance();
  });
}

void WsSession::abort() {
  net::post(ws_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == Phase::kClosed) return;
    self->drop_connection();
    self->loss_reason_ = AudioLoss::kShutdown;
    self->finish("aborted: the drain deadline passed");
  });
}

void WsSession::finish(std::string_view why) {
  if (phase_ == Phase::kClosed) return;
  const bool was_open = phase_ != Phase::kHandshake;
  phase_ = Phase::kClosed;
  retry_timer_.cancel();
  idle_timer_.cancel();
  close_timer_.cancel();
  write_timer_.cancel();
  wakeup_->detach();
  stream_.close();
  discard_held(loss_reason_);
  if (!close_started_) drop_connection();
  if (!was_open) return;
  ctx_.sessions.remove(id_);
  ctx_.metrics.websocket_sessions_active.fetch_sub(1);
  if (why.empty()) {
    log_stream("stream {} closed: code {}{}{}, {:.2f} s of audio, {}", id_, close_code_,
               close_reason_.empty() ? "" : " ", close_reason_, total_audio_s_, count_of(num_segments_, "segment"));
  } else {
    log_stream("stream {} closed: {}, {:.2f} s of audio, {}", id_, why, total_audio_s_, count_of(num_segments_, "segment"));
  }
}

void WsSession::discard_held(AudioLoss why) {
  const std::size_t held = pending_.size() - pending_begin_;
  if (held > 0) ctx_.metrics.count_loss(why, held);
  pending_.clear();
  pending_begin_ = 0;
}

}  // namespace brisvox::server
