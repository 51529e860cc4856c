#include "server/tts_ws_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/version.hpp>
#include <boost/beast/websocket/error.hpp>
#include <nlohmann/json.hpp>

#include "brisvox/error.h"
#include "brisvox/audio/pcm.h"
#include "server/messages.h"
#include "server/server_log.h"
#include "server/tts_admission.h"
#include "server/ws_options.h"

namespace brisvox::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

namespace {

constexpr std::uint16_t kCloseNormal = 1000;
constexpr std::uint16_t kCloseGoingAway = 1001;
constexpr std::uint16_t kCloseUnsupported = 1003;
constexpr std::uint16_t kClosePolicy = 1008;
constexpr std::uint16_t kCloseTooBig = 1009;

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string audio_message(const Event& e, std::size_t samples) {
  return fmt::format(R"({{"type":"audio","utterance":{},"sentence":{},"sentences":{},"start":{},"end":{},"samples":{}}})",
                     e.speech.utterance_id, e.speech.sentence_index, e.speech.sentence_count, e.start_s, e.end_s,
                     samples);
}

std::string end_message(const char* type, const Event& e) {
  return fmt::format(R"({{"type":"{}","utterance":{},"sentences":{},"duration":{}}})", type, e.speech.utterance_id,
                     e.speech.sentence_index, e.end_s);
}

}  // namespace

TtsWsSession::TtsWsSession(beast::tcp_stream&& socket, ServerContext& ctx, TtsOptions options, std::string voice_name,
                           Speech speech, std::shared_ptr<EngineWakeup> wakeup, std::string peer)
    : ws_(std::move(socket)),
      ctx_(ctx),
      options_(std::move(options)),
      voice_name_(std::move(voice_name)),
      id_(ctx.next_session_id.fetch_add(1)),
      peer_(std::move(peer)),
      speech_(std::move(speech)),
      wakeup_(std::move(wakeup)),
      idle_timer_(ws_.get_executor()),
      close_timer_(ws_.get_executor()),
      write_timer_(ws_.get_executor()) {}

TtsWsSession::~TtsWsSession() {
  if (wakeup_) wakeup_->detach();
  speech_.close();
}

void TtsWsSession::start(beast::http::request<beast::http::string_body> upgrade) {
  wakeup_->attach(std::weak_ptr<EngineListener>(shared_from_this()));
  // Audio a client does not read waits in the session's bounded queue and then in the engine,
  // where it holds the synthesis back.
  apply_server_ws_options(ws_, ctx_.config.limits.ws_send_buffer_bytes);
  ws_.read_message_max(ctx_.config.limits.max_message_bytes);
  ws_.control_callback([this](websocket::frame_type, beast::string_view) { last_activity_ = Clock::now(); });
  ws_.async_accept(upgrade, beast::bind_front_handler(&TtsWsSession::on_accept, shared_from_this()));
}

void TtsWsSession::on_accept(beast::error_code ec) {
  if (ec) {
    finish(fmt::format("handshake failed: {}", ec.message()));
    return;
  }
  phase_ = Phase::kOpen;
  ctx_.sessions.add(id_, weak_from_this());
  ctx_.tts_metrics.ws_sessions_active.fetch_add(1);
  ctx_.tts_metrics.ws_sessions_total.fetch_add(1);
  log_stream("tts stream {} open: {}, voice {}, {} Hz", id_, peer_, voice_name_, speech_.sample_rate_hz());
  Json j;
  j["type"] = "ready";
  j["id"] = id_;
  Json c;
  c["voice"] = voice_name_;
  c["sample_rate"] = speech_.sample_rate_hz();
  c["encoding"] = "pcm_s16le";
  const SpeechConfig& s = options_.speech;
  // The voice's settings the client gave, as the query gave them (speaker_id an integer).
  for (const auto& [name, value] : s.voice_options) {
    if (name == "speaker_id") {
      c[name] = static_cast<std::int64_t>(value);
    } else {
      c[name] = static_cast<float>(value);
    }
  }
  c["volume"] = s.volume;
  c["fast_start"] = s.fast_start;
  j["config"] = c;
  if (!options_.tag.empty()) j["tag"] = options_.tag;
  j["limits"] = {{"max_text_bytes", speech_.max_text_bytes()},
                 {"max_queued", s.max_queued},
                 {"max_message_bytes", ctx_.config.limits.max_message_bytes},
                 {"idle_timeout_s", ctx_.config.limits.idle_timeout_s}};
  send(Outgoing{false, 0, dump(j)});
  last_activity_ = Clock::now();
  arm_idle_timer();
  if (ctx_.draining.load()) go_away();
  read_more();
}

// --- reading -------------------------------------------------------------------------------------

void TtsWsSession::read_more() {
  if (reading_ || phase_ != Phase::kOpen || closing_when_done_) return;
  reading_ = true;
  ws_.async_read(read_buf_, beast::bind_front_handler(&TtsWsSession::on_read, shared_from_this()));
}

void TtsWsSession::on_read(beast::error_code ec, std::size_t /*bytes*/) {
  reading_ = false;
  if (ec) {
    if (phase_ == Phase::kClosing) return;  // the close handshake or its timer finishes
    if (ec == websocket::error::message_too_big) {
      fail("message_too_large", kCloseTooBig,
           fmt::format("a message is larger than {} bytes (--max-message-bytes)", ctx_.config.limits.max_message_bytes));
      return;
    }
    if (ec == websocket::error::closed) {
      finish(fmt::format("closed by the client (code {})", static_cast<int>(ws_.reason().code)));
    } else {
      finish(fmt::format("connection lost: {}", ec.message()));
    }
    return;
  }
  last_activity_ = Clock::now();
  const bool text = ws_.got_text();
  std::string message = beast::buffers_to_string(read_buf_.data());
  read_buf_.consume(read_buf_.size());
  if (phase_ != Phase::kOpen) return;
  if (!text) {
    fail("bad_message", kCloseUnsupported,
         "binary messages are not accepted on /v1/tts: send {\"type\":\"speak\",\"text\":\"...\"} as text");
    return;
  }
  handle_message(message);
  read_more();
}

void TtsWsSession::handle_message(const std::string& text) {
  const TtsMessage m = parse_tts_message(text);
  if (!m.ok) {
    ctx_.metrics.count_error("bad_message");
    send(Outgoing{false, 0, error_message("bad_message", m.error)});
    return;
  }
  switch (m.type) {
    case TtsMessageType::kSpeak:
      try {
        const std::uint32_t id = speech_.speak(m.text);
        last_spoken_ = id;
        accepted_[id] = Clock::now();
        ctx_.tts_metrics.ws_utterances.fetch_add(1, std::memory_order_relaxed);
        send(Outgoing{false, 0, fmt::format(R"({{"type":"queued","utterance":{}}})", id)});
      } catch (const Error& e) {
        // Bad text, or too many queued: this message is refused, the session goes on.
        const Refusal r = tts_refusal(e);
        ctx_.metrics.count_error(r.code);
        send(Outgoing{false, 0, error_message(r.code, r.message)});
      }
      break;
    case TtsMessageType::kCancel: {
      const std::uint32_t upto = speech_.cancel();
      cancelled_upto_ = std::max(cancelled_upto_, upto);
      // Barge-in: cancelled audio still waiting for the socket goes now (the one being written
      // finishes, so that its frame is whole).
      for (auto it = queue_.begin(); it != queue_.end();) {
        const bool in_flight = writing_ && it == queue_.begin();
        if (!in_flight && it->utterance != 0 && it->utterance <= cancelled_upto_) {
          queued_bytes_ -= it->data.size();
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
      break;
    }
    case TtsMessageType::kClose:
      closing_when_done_ = true;
      close_code_ = kCloseNormal;
      close_reason_.clear();
      maybe_finish_closing();
      break;
  }
}

// --- the engine's side ---------------------------------------------------------------------------

void TtsWsSession::on_engine_events() { pump(); }

void TtsWsSession::pump() {
  Event e;
  while (phase_ == Phase::kOpen && queued_bytes_ < kMaxQueuedBytes && speech_.poll(std::span(&e, 1)) == 1) {
    handle_event(e);
  }
  maybe_finish_closing();
}

void TtsWsSession::handle_event(const Event& e) {
  const std::uint32_t utterance = e.speech.utterance_id;
  switch (e.type) {
    case EventType::kTtsAudio: {
      if (utterance <= cancelled_upto_) return;  // cancelled: its payload is skipped by the next read
      const std::vector<float> samples = speech_.read_audio_payload(e);
      std::vector<std::int16_t> pcm(samples.size());
      std::ranges::transform(samples, pcm.begin(), float_to_s16);  // as piper-tts writes its audio
      if (const auto it = accepted_.find(utterance); it != accepted_.end()) {
        ctx_.tts_metrics.first_audio.record(std::chrono::duration<double, std::micro>(Clock::now() - it->second).count());
        accepted_.erase(it);
      }
      ctx_.tts_metrics.add_audio(pcm.size(), speech_.sample_rate_hz());
      audio_s_ += static_cast<double>(pcm.size()) / speech_.sample_rate_hz();
      send(Outgoing{false, utterance, audio_message(e, pcm.size())});
      send(Outgoing{true, utterance,
                    std::string(reinterpret_cast<const char*>(pcm.data()), pcm.size() * sizeof(std::int16_t))});
      return;
    }
    case EventType::kTtsEnd:
      last_ended_ = utterance;
      accepted_.erase(utterance);
      ctx_.tts_metrics.utterances_done.fetch_add(1, std::memory_order_relaxed);
      send(Outgoing{false, 0, end_message("done", e)});
      return;
    case EventType::kTtsCancelled:
      last_ended_ = utterance;
      accepted_.erase(utterance);
      ctx_.tts_metrics.utterances_cancelled.fetch_add(1, std::memory_order_relaxed);
      send(Outgoing{false, 0, end_message("cancelled", e)});
      return;
    case EventType::kError: {
      last_ended_ = utterance;
      accepted_.erase(utterance);
      ctx_.tts_metrics.utterances_failed.fetch_add(1, std::memory_order_relaxed);
      const std::string_view code = to_string(e.error_code);
      ctx_.metrics.count_error(code);
      Json j;
      j["type"] = "error";
      j["code"] = std::string(code);
      j["message"] = speech_.last_error();
      j["utterance"] = utterance;
      send(Outgoing{false, 0, dump(j)});
      return;
    }
    default:
      return;
  }
}

// --- writing -------------------------------------------------------------------------------------

void TtsWsSession::send(Outgoing message) {
  if (phase_ != Phase::kOpen) return;
  queued_bytes_ += message.data.size();
  queue_.push_back(std::move(message));
  do_write();
}

void TtsWsSession::do_write() {
  if (writing_ || queue_.empty() || close_started_ || phase_ == Phase::kClosed) return;
  writing_ = true;
  ws_.binary(queue_.front().binary);
  // A write the client does not take for idle_timeout_s: it stopped reading; drop it.
  write_timer_.expires_after(std::chrono::seconds(ctx_.config.limits.idle_timeout_s));
  write_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || !self->writing_ || self->phase_ == Phase::kClosed) return;
    self->log_stream("tts stream {}: the client has not read for {} s: dropped", self->id_,
               self->ctx_.config.limits.idle_timeout_s);
    self->ctx_.metrics.count_error("slow_reader");
    self->drop_connection();
    self->finish("slow reader");
  });
  ws_.async_write(net::buffer(queue_.front().data),
                  [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
}

void TtsWsSession::on_write(beast::error_code ec) {
  writing_ = false;
  write_timer_.cancel();
  if (ec) {
    if (phase_ != Phase::kClosed) finish(fmt::format("send failed: {}", ec.message()));
    return;
  }
  queued_bytes_ -= queue_.front().data.size();
  queue_.pop_front();
  if (phase_ == Phase::kClosing && queue_.empty()) {
    begin_close(close_code_, close_reason_);
    return;
  }
  do_write();
  pump();  // room again: more of the speech session
}

// --- ending ----------------------------------------------------------------------------------------

bool TtsWsSession::busy() const { return last_ended_ < last_spoken_ || !queue_.empty(); }

void TtsWsSession::maybe_finish_closing() {
  if (phase_ != Phase::kOpen || !closing_when_done_ || busy()) return;
  begin_close(close_code_, close_reason_);
}

void TtsWsSession::fail(std::string_view code, std::uint16_t close_code, const std::string& message) {
  if (phase_ != Phase::kOpen) return;
  ctx_.metrics.count_error(code);
  log_stream("tts stream {}: error [{}]: {}", id_, code, message);
  send(Outgoing{false, 0, error_message(code, message)});
  close_code_ = close_code;
  close_reason_ = std::string(code);
  phase_ = Phase::kClosing;  // the close frame follows the error message
  if (!writing_ && queue_.empty()) begin_close(close_code_, close_reason_);
}

void TtsWsSession::begin_close(std::uint16_t close_code, std::string reason) {
  if (close_started_ || phase_ == Phase::kClosed) return;
  if (phase_ == Phase::kOpen) phase_ = Phase::kClosing;
  if (writing_ || !queue_.empty()) return;  // on_write comes back here once the queue is written
  close_started_ = true;
  idle_timer_.cancel();
  speech_.close();  // nothing more is synthesised for this client
  close_timer_.expires_after(std::chrono::milliseconds(ctx_.config.limits.close_timeout_ms));
  close_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec && self->phase_ != Phase::kClosed) {
      self->drop_connection();
      self->finish("the peer did not complete the close handshake");
    }
  });
  if (reason.size() > 120) reason.resize(120);
  ws_.async_close(websocket::close_reason(static_cast<websocket::close_code>(close_code), reason),
                  [self = shared_from_this()](beast::error_code ec) {
                    self->finish(ec ? fmt::format("close handshake failed: {}", ec.message()) : std::string());
                  });
}

void TtsWsSession::arm_idle_timer() {
  const auto timeout = std::chrono::seconds(ctx_.config.limits.idle_timeout_s);
  idle_timer_.expires_at(last_activity_ + timeout);
  idle_timer_.async_wait([self = shared_from_this(), timeout](beast::error_code ec) {
    if (ec || self->phase_ != Phase::kOpen) return;
    // Idle means nothing to say and nothing said: time spent speaking does not count.
    if (self->busy()) self->last_activity_ = Clock::now();
    if (Clock::now() - self->last_activity_ >= timeout) {
      self->fail("idle_timeout", kClosePolicy,
                 fmt::format("no message for {} s (--idle-timeout-s)", self->ctx_.config.limits.idle_timeout_s));
      return;
    }
    self->arm_idle_timer();
  });
}

void TtsWsSession::go_away() {
  net::post(ws_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ != Phase::kOpen) return;
    // What was spoken is finished; nothing more is read.
    self->closing_when_done_ = true;
    self->close_code_ = kCloseGoingAway;
    self->close_reason_ = "going away";
    self->maybe_finish_closing();
  });
}

void TtsWsSession::abort() {
  net::post(ws_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == Phase::kClosed) return;
    self->drop_connection();
    self->finish("aborted: the drain deadline passed");
  });
}

void TtsWsSession::drop_connection() {
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  beast::get_lowest_layer(ws_).socket().close(ignored);
}

void TtsWsSession::finish(std::string_view why) {
  if (phase_ == Phase::kClosed) return;
  const bool was_open = phase_ != Phase::kHandshake;
  phase_ = Phase::kClosed;
  idle_timer_.cancel();
  close_timer_.cancel();
  write_timer_.cancel();
  wakeup_->detach();
  speech_.close();
  if (!close_started_) drop_connection();
  if (!was_open) return;
  ctx_.sessions.remove(id_);
  ctx_.tts_metrics.ws_sessions_active.fetch_sub(1);
  log_stream("tts stream {} closed: {}, {} utterances, {:.2f} s of audio", id_,
             why.empty() ? fmt::format("code {}", close_code_) : std::string(why), last_spoken_, audio_s_);
}

}  // namespace brisvox::server
