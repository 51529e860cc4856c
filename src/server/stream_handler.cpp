#include "server/stream_handler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "brisvox/error.h"
#include "brisvox/plural.h"
#include "server/engine_retry.h"
#include "server/control_message.h"
#include "server/messages.h"

namespace brisvox::server {

namespace beast = boost::beast;
using Clock = std::chrono::steady_clock;

namespace {


// The engine stream of a session: the request's pipeline with the server's engine buffer.
Stream open_engine_stream(ServerContext& ctx, const AudioRequest& request, std::function<void()> on_events) {
  StreamConfig config = request.stream;
  config.buffer_ms = ctx.config.limits.engine_buffer_ms;
  config.on_events = std::move(on_events);
  return ctx.engine.open_stream(config);
}


}  // namespace

StreamHandler::StreamHandler(ServerContext& ctx, const boost::asio::any_io_executor& strand, AudioRequest request,
                             Stream stream, std::function<void()> on_events)
    : ctx_(ctx),
      request_(std::move(request)),
      stream_(std::move(stream)),
      on_events_(std::move(on_events)),
      ingress_(ctx, request_.encoding, request_.stream.sample_rate_hz),
      retry_timer_(strand) {}

StreamHandler::~StreamHandler() {
  stream_.close();
  ingress_.discard(AudioLoss::kDisconnected);  // nothing left unless the connection never ended (the server stopped)
}

WsSettings StreamHandler::settings() const {
  const ServerLimits& l = ctx_.config.limits;
  const std::size_t max_text = std::min(l.max_control_bytes, l.max_message_bytes);
  WsSettings s;
  s.kind = "stream";
  s.tag = request_.tag;
  s.read_chunk_bytes = ingress_.read_chunk_bytes();
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
  const std::uint64_t before = ingress_.samples();
  if (auto failure = ingress_.receive(chunk)) {
    connection().fail(failure->code, failure->close_code, failure->message);
    return;
  }
  stream_samples_ += ingress_.samples() - before;
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
      ingress_.discard(AudioLoss::kReset);
      ingress_.reset_decoder();
      offset_s_ = 0;
      stream_samples_ = 0;
      if (reopen_engine_stream()) send(reset_message());
      break;
  }
}

// --- the engine side -----------------------------------------------------------------------------

void StreamHandler::advance() {
  WsConnection& c = connection();
  if (!c.is_open()) return;
  switch (ingress_.feed(stream_, c)) {
    case AudioIngress::Flow::kFailed:
      return;
    case AudioIngress::Flow::kHeld:
      arm_retry(kEngineRetryInterval);
      return;
    case AudioIngress::Flow::kClear:
      break;
  }
  if (end_ != EndRequest::kNone) {
    c.pause_reading();
    // A resampled stream's flush() may wait for room for the resampler's tail: never on the strand.
    if (!flush_called_) {
      if (!stream_.can_flush()) {
        arm_retry(kEngineRetryInterval);
        return;
      }
      flush_called_ = true;
      stream_.flush();  // the final events follow, then kEndOfStream (on_engine_events)
    }
    return;
  }
  if (const auto wait = ingress_.pace(); wait.count() > 0) {
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
    case EventType::kTranscriptPartial: {
      const std::optional<Transcript> t = stream_.read_transcript(e);
      if (t) send(transcript_partial_message(timeline_s(e.start_s), timeline_s(e.end_s), *t));
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
  ingress_.discard(connection().ending());
  if (!opened) return;
  ctx_.metrics.websocket_sessions_active.fetch_sub(1);
  const WsConnection& c = connection();
  if (why.empty()) {
    c.log("stream {} closed: code {}{}{}, {:.2f} s of audio, {}", c.id(), c.close_code(),
          c.close_reason().empty() ? "" : " ", c.close_reason(), ingress_.seconds(), count_of(num_segments_, "segment"));
  } else {
    c.log("stream {} closed: {}, {:.2f} s of audio, {}", c.id(), why, ingress_.seconds(),
          count_of(num_segments_, "segment"));
  }
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
