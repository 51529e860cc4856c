#include "server/stream_handler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "brisvox/error.h"
#include "brisvox/plural.h"
#include "server/control_message.h"
#include "server/messages.h"

namespace brisvox::server {

namespace beast = boost::beast;
using Clock = std::chrono::steady_clock;

namespace {

// How often held audio is retried when no engine progress wakes the handler first. A frame is
// 32 ms; 5 ms keeps the added delay small without spinning.
constexpr auto kRetryInterval = std::chrono::milliseconds(5);

// About 250 ms of audio per read.
std::size_t read_chunk_bytes(const AudioRequest& r) {
  const double quarter_second =
      static_cast<double>(bytes_per_sample(r.encoding)) * static_cast<double>(r.stream.sample_rate_hz) / 4.0;
  return static_cast<std::size_t>(std::clamp(quarter_second, 512.0, 65536.0));
}

// The engine stream of a session: the request's pipeline with the server's engine buffer.
Stream open_engine_stream(ServerContext& ctx, const AudioRequest& request, std::function<void()> on_events) {
  StreamConfig config = request.stream;
  config.buffer_ms = ctx.config.limits.engine_buffer_ms;
  config.on_events = std::move(on_events);
  return ctx.engine.open_stream(config);
}

// An engine that is full or stopping is a reason to come back later; anything else is not.
bool engine_busy(const Error& e) { return e.code() == ErrorCode::kOverloaded || e.code() == ErrorCode::kClosed; }

}  // namespace

StreamHandler::StreamHandler(ServerContext& ctx, const boost::asio::any_io_executor& strand, AudioRequest request,
                             Stream stream, std::function<void()> on_events)
    : ctx_(ctx),
      request_(std::move(request)),
      stream_(std::move(stream)),
      on_events_(std::move(on_events)),
      decoder_(request_.encoding, request_.stream.sample_rate_hz),
      rate_(ctx.config.limits.max_rate, ctx.config.limits.burst_s),
      read_chunk_bytes_(read_chunk_bytes(request_)),
      retry_timer_(strand) {
  decoded_.resize(decoder_.max_samples_for(read_chunk_bytes_));
  const auto limit = static_cast<std::size_t>(static_cast<double>(request_.stream.sample_rate_hz) *
                                              ctx.config.limits.pending_ms / 1000.0);
  pending_limit_samples_ = std::max(limit, 2 * decoded_.size());
  pending_.reserve(pending_limit_samples_);
}

StreamHandler::~StreamHandler() {
  stream_.close();
  discard_held(AudioLoss::kDisconnected);  // nothing left unless the connection never ended (the server stopped)
}

WsSettings StreamHandler::settings() const {
  const ServerLimits& l = ctx_.config.limits;
  const std::size_t max_text = std::min(l.max_control_bytes, l.max_message_bytes);
  WsSettings s;
  s.kind = "stream";
  s.tag = request_.tag;
  s.read_chunk_bytes = read_chunk_bytes_;
  s.text = {max_text,
            fmt::format("a text message is larger than {} bytes (control messages are small JSON objects)", max_text)};
  s.binary = {l.max_message_bytes,
              fmt::format("a binary message is larger than {} bytes (send audio in smaller messages)",
                          l.max_message_bytes)};
  s.pings_are_activity = false;
  return s;
}

void StreamHandler::on_open() {
  WsConnection& c = connection();
  ctx_.metrics.websocket_sessions_active.fetch_add(1);
  ctx_.metrics.websocket_sessions_total.fetch_add(1);
  c.log("stream {} open: {}, {} Hz {}, model {} Hz{}", c.id(), c.peer(), request_.stream.sample_rate_hz,
        to_string(request_.encoding), stream_.model_rate_hz(),
        request_.stream.vad.emit_probabilities ? ", events=vad" : "");
  send(ready_message(c.id(), request_, stream_.config(), ctx_.config.limits));
}

// --- reading -------------------------------------------------------------------------------------

void StreamHandler::on_text(std::string message) {
  if (end_ == EndRequest::kClose) return;  // ending: input is ignored
  handle_control(message);
  advance();
}

void StreamHandler::on_binary(std::span<const std::byte> chunk, bool /*last*/) {
  if (end_ == EndRequest::kClose) return;
  handle_audio(chunk);
  advance();
}

void StreamHandler::handle_control(const std::string& text) {
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
      end_code_ = kCloseNormal;
      end_reason_.clear();
      break;
    case ControlType::kReset:
      // Everything of the current stream goes: held audio, a partial sample, unread events.
      stream_.close();
      discard_held(AudioLoss::kReset);
      decoder_.reset();
      offset_s_ = 0;
      stream_samples_ = 0;
      if (reopen_engine_stream()) send(reset_message());
      break;
  }
}

void StreamHandler::handle_audio(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  ctx_.metrics.audio_bytes_received.fetch_add(bytes.size(), std::memory_order_relaxed);
  std::size_t n = 0;
  try {
    n = decoder_.decode(bytes, decoded_);
  } catch (const Error& e) {
    connection().fail(to_string(e.code()), kCloseBadData, e.what());
    return;
  }
  const double audio_s = static_cast<double>(n) / request_.stream.sample_rate_hz;
  rate_.consume(audio_s);
  const std::size_t held = pending_.size() - pending_begin_;
  if (held + n > pending_limit_samples_) {
    const ServerLimits& l = ctx_.config.limits;
    connection().fail(
        "rate_limited", kClosePolicy,
        fmt::format("{:.2f} s of audio is waiting for the engine, more than the {} ms the server holds per stream; "
                    "send audio at most {} x real time and in messages of at most {} ms",
                    static_cast<double>(held + n) / request_.stream.sample_rate_hz, l.pending_ms, l.max_rate,
                    l.pending_ms / 2));
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

// --- the engine side -----------------------------------------------------------------------------

void StreamHandler::push_pending() {
  while (pending_begin_ < pending_.size()) {
    // Only what the stream takes: a refused push would count as rejected samples and raise an
    // overload event, while nothing is lost here.
    const std::size_t room = std::min(stream_.writable(), pending_.size() - pending_begin_);
    if (room == 0) break;
    std::size_t accepted = 0;
    try {
      accepted = stream_.push(std::span(pending_.data() + pending_begin_, room));
    } catch (const Error& e) {
      connection().fail(to_string(e.code()), e.code() == ErrorCode::kBadAudio ? kCloseBadData : kCloseInternal,
                        e.what());
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

void StreamHandler::advance() {
  WsConnection& c = connection();
  if (!c.is_open()) return;
  push_pending();
  if (!c.is_open()) return;
  if (pending_begin_ < pending_.size()) {
    const auto held_for = Clock::now() - pending_since_;
    if (held_for > std::chrono::milliseconds(ctx_.config.limits.pending_timeout_ms)) {
      c.fail("overloaded", kCloseTryLater,
             fmt::format("the engine took none of this stream's audio for {} ms; try again later",
                         ctx_.config.limits.pending_timeout_ms));
      return;
    }
    c.pause_reading();
    arm_retry(kRetryInterval);
    return;
  }
  if (end_ != EndRequest::kNone) {
    c.pause_reading();
    // A resampled stream's flush() may wait for room for the resampler's tail: never on the strand.
    if (!flush_called_) {
      if (!stream_.can_flush()) {
        arm_retry(kRetryInterval);
        return;
      }
      flush_called_ = true;
      stream_.flush();  // the final events follow, then kEndOfStream (on_engine_events)
    }
    return;
  }
  if (const auto wait = rate_.wait_time(); wait.count() > 0) {
    c.pause_reading();
    arm_retry(wait);
    return;
  }
  c.resume_reading();
}

void StreamHandler::on_engine_events() {
  WsConnection& c = connection();
  if (!c.is_open()) return;
  Event events[32];
  for (std::size_t n; c.is_open() && (n = stream_.poll(events)) > 0;) {
    for (std::size_t i = 0; i < n && c.is_open(); ++i) handle_event(events[i]);
  }
  advance();
}

void StreamHandler::handle_event(const Event& e) {
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
    case EventType::kTtsInterrupted:
    case EventType::kTtsMark:
    case EventType::kBargeIn:
      break;  // speech sessions' and calls' events (tts_handler.cpp): never on a stream
  }
}

double StreamHandler::timeline_s(double stream_s) const {
  // Stream times are whole model samples (multiples of 62.5 us at 16 kHz); rounding the sum to
  // 0.1 us keeps them exact after an offset is added, so that 12 + 5.118 prints as 17.118.
  return std::round((offset_s_ + stream_s) * 1e7) / 1e7;
}

double StreamHandler::stream_time_s() const {
  return timeline_s(static_cast<double>(stream_samples_) / request_.stream.sample_rate_hz);
}

void StreamHandler::on_end_of_stream() {
  flush_called_ = false;
  if (end_ == EndRequest::kFlush) {
    // The utterance is over; the socket stays open and the timeline goes on in a fresh stream.
    const double end_s = stream_time_s();
    send(flushed_message(end_s));
    offset_s_ = end_s;
    stream_samples_ = 0;
    end_ = EndRequest::kNone;
    reopen_engine_stream();
  } else if (end_ == EndRequest::kClose) {
    connection().close(end_code_, end_reason_);
  }
}

bool StreamHandler::reopen_engine_stream() {
  stream_.close();
  try {
    stream_ = open_engine_stream(ctx_, request_, on_events_);
    return true;
  } catch (const Error& e) {
    connection().fail(to_string(e.code()), engine_busy(e) ? kCloseTryLater : kCloseInternal, e.what());
    return false;
  }
}

void StreamHandler::arm_retry(std::chrono::microseconds delay) {
  if (retry_armed_) return;
  retry_armed_ = true;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait([self = connection().shared_from_this(), this](beast::error_code ec) {
    retry_armed_ = false;
    if (ec) return;
    // Events may be waiting even without a wake-up (one could not be posted): poll as well.
    on_engine_events();
  });
}

void StreamHandler::send(std::string message, SendQueue::Kind kind) { connection().send(std::move(message), kind); }

std::string StreamHandler::dropped_report(std::uint64_t num_dropped) { return overload_message(0, 0, num_dropped); }

// --- ending --------------------------------------------------------------------------------------

void StreamHandler::on_going_away() {
  // Audio already read is analysed and its final events sent; nothing more is read.
  end_ = EndRequest::kClose;
  end_code_ = kCloseGoingAway;
  end_reason_ = "going away";
  advance();
}

void StreamHandler::on_closing() { retry_timer_.cancel(); }

void StreamHandler::on_closed(std::string_view why, bool opened) {
  retry_timer_.cancel();
  stream_.close();
  switch (connection().ending()) {
    case WsConnection::Ending::kDisconnected:
      discard_held(AudioLoss::kDisconnected);
      break;
    case WsConnection::Ending::kFailed:
      discard_held(AudioLoss::kError);
      break;
    case WsConnection::Ending::kAborted:
      discard_held(AudioLoss::kShutdown);
      break;
  }
  if (!opened) return;
  ctx_.metrics.websocket_sessions_active.fetch_sub(1);
  const WsConnection& c = connection();
  if (why.empty()) {
    c.log("stream {} closed: code {}{}{}, {:.2f} s of audio, {}", c.id(), c.close_code(),
          c.close_reason().empty() ? "" : " ", c.close_reason(), total_audio_s_, count_of(num_segments_, "segment"));
  } else {
    c.log("stream {} closed: {}, {:.2f} s of audio, {}", c.id(), why, total_audio_s_,
          count_of(num_segments_, "segment"));
  }
}

void StreamHandler::discard_held(AudioLoss why) {
  const std::size_t held = pending_.size() - pending_begin_;
  if (held > 0) ctx_.metrics.count_loss(why, held);
  pending_.clear();
  pending_begin_ = 0;
}

// --- admission -----------------------------------------------------------------------------------

std::optional<Refusal> StreamEndpoint::parse(const Request& upgrade) {
  try {
    request_ = parse_audio_request(target_query(to_sv(upgrade.target())), AudioEndpoint::kStream);
    check_stream_models(ctx_.engine.config(), request_.stream);
  } catch (const Error& e) {
    return Refusal{400, "bad_request", e.what()};
  }
  return std::nullopt;
}

std::variant<std::unique_ptr<WsHandler>, Refusal> StreamEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                       std::function<void()> on_events) {
  Stream stream;
  try {
    stream = open_engine_stream(ctx_, request_, on_events);
  } catch (const Error& e) {
    if (engine_busy(e)) return Refusal{503, std::string(to_string(e.code())), e.what()};
    return Refusal{400, "bad_request", e.what()};
  }
  return std::make_unique<StreamHandler>(ctx_, strand, std::move(request_), std::move(stream), std::move(on_events));
}

}  // namespace brisvox::server
