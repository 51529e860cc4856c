#include "server/call_handler.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "brisvox/audio/pcm.h"
#include "brisvox/error.h"
#include "brisvox/plural.h"
#include "server/engine_retry.h"
#include "server/call_protocol.h"
#include "server/messages.h"
#include "server/tts_admission.h"

namespace brisvox::server {

namespace beast = boost::beast;
using Clock = std::chrono::steady_clock;

namespace {

// How often a close waiting for the front (call_front.h busy()) looks again.
constexpr auto kCloseRecheck = std::chrono::milliseconds(100);
// Ended speaks kept to answer a barge-in that names one still playing.
constexpr std::size_t kEndedKept = 32;


// The call's speech side's kError (call.h): an utterance failed.
constexpr std::uint32_t kSpeechSide = 1;

}  // namespace

CallHandler::CallHandler(ServerContext& ctx, const boost::asio::any_io_executor& strand, CallRequest request,
                         std::string voice_name, Call call, std::unique_ptr<CallFront> front)
    : ctx_(ctx),
      front_(std::move(front)),
      request_(std::move(request)),
      voice_name_(std::move(voice_name)),
      call_(std::move(call)),
      ingress_(ctx, request_.audio.encoding, request_.audio.stream.sample_rate_hz),
      speech_rate_hz_(call_.speech_sample_rate_hz()),
      bytes_per_sample_(bytes_per_sample(request_.audio.encoding)),
      timer_(strand) {}

CallHandler::~CallHandler() {
  call_.close();
  ingress_.discard(AudioLoss::kDisconnected);  // nothing left unless the connection never ended (the server stopped)
}

WsSettings CallHandler::settings() const {
  const ServerLimits& l = ctx_.config.limits;
  WsSettings s;
  s.kind = front_->kind();
  s.tag = request_.audio.tag;
  s.read_chunk_bytes = ingress_.read_chunk_bytes();
  // A speak message carries its text: up to the voice's max_text_bytes, in a message as large as
  // --max-message-bytes allows.
  s.text = {l.max_message_bytes,
            fmt::format("a text message is larger than {} bytes (--max-message-bytes)", l.max_message_bytes)};
  s.binary = {l.max_message_bytes,
              fmt::format("a binary message is larger than {} bytes (send audio in smaller messages)",
                          l.max_message_bytes)};
  s.pings_are_activity = false;
  s.write_stall_timeout = std::chrono::seconds(l.idle_timeout_s);
  front_->adjust(s);
  return s;
}

void CallHandler::on_open() {
  WsConnection& c = connection();
  ctx_.metrics.websocket_sessions_active.fetch_add(1);
  ctx_.metrics.websocket_sessions_total.fetch_add(1);
  ctx_.call_metrics.sessions_active.fetch_add(1);
  ctx_.call_metrics.sessions_total.fetch_add(1);
  c.log("{} {} open: {}, {} Hz {}, model {} Hz, voice {}, barge-in {}", front_->kind(), c.id(), c.peer(),
        request_.audio.stream.sample_rate_hz, to_string(request_.audio.encoding), call_.model_rate_hz(), voice_name_,
        !request_.barge_in.enabled      ? std::string("off")
        : request_.barge_in.on_turn_end ? std::string("on turn end")
                                        : fmt::format("after {} ms of speech", request_.barge_in.min_speech_ms));
  front_->on_open(c, *this,
                  CallReady{request_, call_.listen_config(), voice_name_, speech_rate_hz_, call_.max_text_bytes()});
}

// --- the client's messages -----------------------------------------------------------------------

void CallHandler::on_text(std::string message) {
  if (closing_ && !front_->reads_while_closing()) return;  // ending: input is ignored
  front_->on_text(std::move(message), *this);
  advance();
}

void CallHandler::on_binary(std::span<const std::byte> chunk, bool last) {
  if (closing_) return;
  front_->on_binary(chunk, last, *this);
  advance();
}

bool CallHandler::audio(std::span<const std::byte> bytes) {
  if (closing_) return true;  // ending: input is ignored
  if (auto failure = ingress_.receive(bytes)) {
    connection().fail(failure->code, failure->close_code, failure->message);
    return false;
  }
  return true;
}

void CallHandler::cancel() {
  // Each stopped speak gets its "interrupted" with its kTtsCancelled; what waits for the socket
  // goes now.
  purge_stopped(call_.cancel());
  front_->stopped();
}

void CallHandler::mark(const std::string& name) {
  try {
    const std::uint32_t id = call_.mark();
    Speak& s = speaks_[id];
    s.mark = true;
    s.id = nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    last_spoken_ = id;
  } catch (const Error& e) {
    const Refusal r = tts_refusal(e);
    ctx_.metrics.count_error(r.code);
    send(error_message(r.code, r.message));
  }
}

void CallHandler::end(std::uint16_t code, std::string reason, bool drop_speech) {
  if (closing_) return;
  closing_ = true;
  end_code_ = code;
  end_reason_ = std::move(reason);
  if (drop_speech && last_spoken_ != 0) cancel();
  advance();  // a front may end the call outside on_text (an application's hangup)
}

void CallHandler::speak(const CallMessage& m) {
  try {
    const std::uint32_t id = call_.speak(m.text);
    Speak& s = speaks_[id];
    s.id = m.id.empty() ? std::to_string(id) : m.id;
    s.accepted = Clock::now();
    last_spoken_ = id;
    ++num_speaks_;
    ctx_.call_metrics.speaks.fetch_add(1, std::memory_order_relaxed);
  } catch (const Error& e) {
    // Bad text, or too many queued: this speak is refused, the call goes on.
    const Refusal r = tts_refusal(e);
    ctx_.metrics.count_error(r.code);
    send(speak_error_message(r.code, r.message, m.id));
  }
}

// --- the engine's side ---------------------------------------------------------------------------

void CallHandler::on_engine_events() {
  WsConnection& c = connection();
  if (!c.is_open()) return;
  Event events[32];
  while (c.is_open()) {
    // The caller's events always; the speech only while the socket keeps up (its back-pressure).
    const std::size_t n = call_.poll(events, front_->queued_bytes() < kMaxQueuedBytes);
    if (n == 0) break;
    for (std::size_t i = 0; i < n && c.is_open(); ++i) handle_event(events[i]);
  }
  if (!c.is_open()) return;
  if (const auto due = call_.next_due()) wake_at(*due);
  advance();
}

void CallHandler::handle_event(const Event& e) {
  const std::uint32_t id = e.speech.utterance_id;
  switch (e.type) {
    case EventType::kSpeechStart:
      send(speech_start_message(e.start_s));
      break;
    case EventType::kSpeechEnd:
      ++num_segments_;
      send(speech_end_message(e.start_s, e.end_s));
      break;
    case EventType::kVadProbability:
      send(vad_message(e.start_s, e.probability), SendQueue::Kind::kDroppable);
      break;
    case EventType::kOverload:
      send(overload_message(e.backlog_ms, e.rejected_samples, 0));
      break;
    case EventType::kTurnEnd:
      send(turn_end_message(e.start_s, e.end_s, e.probability, to_string(e.turn_reason)));
      front_->answerable();
      break;
    case EventType::kTurnIncomplete:
      send(turn_incomplete_message(e.start_s, e.end_s, e.probability));
      break;
    case EventType::kTranscript: {
      const std::optional<Transcript> t = call_.read_transcript(e);
      if (t) {
        send(transcript_message(e.start_s, e.end_s, *t));
        front_->answerable();
      }
      break;
    }
    case EventType::kTranscriptPartial: {
      const std::optional<Transcript> t = call_.read_transcript(e);
      if (t) send(transcript_partial_message(e.start_s, e.end_s, *t));
      break;
    }
    case EventType::kEndOfStream:
      caller_ended_ = true;
      break;
    case EventType::kError: {
      const std::string_view code = to_string(e.error_code);
      ctx_.metrics.count_error(code);
      if (e.payload_id != kSpeechSide) {  // a failed model run of the caller's stream: it goes on
        send(error_message(code, call_.last_error(e)));
        break;
      }
      const auto it = speaks_.find(id);
      ctx_.call_metrics.speaks_failed.fetch_add(1, std::memory_order_relaxed);
      send(speak_error_message(code, call_.last_error(e), it != speaks_.end() ? it->second.id : ""));
      end_speak(id);
      break;
    }
    case EventType::kTtsAudio:
      if (const auto it = speaks_.find(id); it != speaks_.end() && !it->second.ended) {
        speech_audio(e, it->second);
      } else {
        call_.read_audio_payload(e);  // nobody wants it: its room goes back to the synthesis
      }
      break;
    case EventType::kTtsEnd:
      if (const auto it = speaks_.find(id); it != speaks_.end() && !it->second.ended) {
        ctx_.call_metrics.speaks_done.fetch_add(1, std::memory_order_relaxed);
        front_->speak_done(id, it->second.id, e.end_s * 1000.0);
        end_speak(id);
      }
      break;
    case EventType::kTtsCancelled:
      interrupted(id, "cancel", nullptr);
      break;
    case EventType::kTtsInterrupted:
      interrupted(id, "barge_in", nullptr);
      break;
    case EventType::kBargeIn:
      barge_in(e);
      break;
    case EventType::kTtsMark:
      if (const auto it = speaks_.find(id); it != speaks_.end()) {
        std::string message = mark_message(it->second.id);
        speaks_.erase(it);
        front_->mark_reached(id, std::move(message));
      }
      break;
  }
}

void CallHandler::speech_audio(const Event& e, Speak& s) {
  const std::vector<float> samples = call_.read_audio_payload(e);
  if (samples.empty()) return;
  if (!s.started) {
    s.started = true;
    const std::chrono::duration<double, std::micro> waited = Clock::now() - s.accepted;
    ctx_.call_metrics.first_audio.record(waited.count());
    send(speak_started_message(s.id));
  }
  std::string bytes(samples.size() * bytes_per_sample_, '\0');
  encode_pcm(samples, request_.audio.encoding, std::as_writable_bytes(std::span(bytes.data(), bytes.size())));
  s.bytes_queued += bytes.size();
  speech_sent_s_ += static_cast<double>(samples.size()) / speech_rate_hz_;
  front_->audio(e.speech.utterance_id, std::move(bytes));
}

void CallHandler::barge_in(const Event& e) {
  ++num_barge_ins_;
  ctx_.call_metrics.barge_ins.fetch_add(1, std::memory_order_relaxed);
  // Every utterance spoken so far has stopped: none of their audio may follow.
  purge_stopped(last_spoken_);
  front_->stopped();
  if (e.speech.utterance_id != 0) interrupted(e.speech.utterance_id, "barge_in", &e);
}

void CallHandler::purge_stopped(std::uint32_t upto) {
  for (auto& [id, s] : speaks_) {
    if (id > upto) break;
    if (s.bytes_queued == 0) continue;
    s.bytes_queued -= std::min<std::uint64_t>(s.bytes_queued, front_->purge(id, id));
  }
}

double CallHandler::sent_ms(const Speak& s) const {
  return static_cast<double>(s.bytes_queued) / static_cast<double>(bytes_per_sample_) / speech_rate_hz_ * 1000.0;
}

void CallHandler::interrupted(std::uint32_t id, std::string_view reason, const Event* barge) {
  const auto it = speaks_.find(id);
  if (it == speaks_.end() || it->second.mark || it->second.interrupted) return;
  Speak& s = it->second;
  // Once per speak. A barge-in names the reply being heard, even one all sent (speak_done) and
  // still playing; the engine's own end of a stopped reply (kTtsInterrupted, kTtsCancelled) comes
  // only for one not ended yet.
  if (s.ended && barge == nullptr) return;
  s.interrupted = true;
  std::optional<std::pair<double, double>> at;
  if (barge != nullptr) at = std::pair(barge->start_s, barge->end_s);
  (reason == "cancel" ? ctx_.call_metrics.speaks_cancelled : ctx_.call_metrics.speaks_interrupted)
      .fetch_add(1, std::memory_order_relaxed);
  front_->interrupted(id, interrupted_message(s.id, sent_ms(s), reason, at));
  end_speak(id);
}

void CallHandler::end_speak(std::uint32_t id) {
  const auto it = speaks_.find(id);
  if (it == speaks_.end()) return;
  it->second.ended = true;
  // Forget the oldest ended speaks beyond the few a late barge-in may still name.
  std::size_t ended = 0;
  for (auto& [k, s] : speaks_) ended += s.ended ? 1 : 0;
  for (auto i = speaks_.begin(); ended > kEndedKept && i != speaks_.end();) {
    if (i->second.ended) {
      i = speaks_.erase(i);
      --ended;
    } else {
      ++i;
    }
  }
}

// --- flow ------------------------------------------------------------------------------------------

void CallHandler::advance() {
  WsConnection& c = connection();
  if (!c.is_open()) return;
  switch (ingress_.feed(call_, c)) {
    case AudioIngress::Flow::kFailed:
      return;
    case AudioIngress::Flow::kHeld:
      wake_at(Clock::now() + kEngineRetryInterval);
      return;
    case AudioIngress::Flow::kClear:
      break;
  }
  if (closing_) {
    if (front_->reads_while_closing()) {
      c.resume_reading();
    } else {
      c.pause_reading();
    }
    // The caller's final events first (a resampled stream's flush() may wait for room for the
    // resampler's tail: never on the strand), then what was spoken, then the close.
    if (!flush_called_) {
      if (!call_.can_flush()) {
        wake_at(Clock::now() + kEngineRetryInterval);
        return;
      }
      flush_called_ = true;
      call_.flush();
    }
    if (caller_ended_ && !busy()) {
      front_->closing();
      c.close(end_code_, end_reason_);
    } else if (caller_ended_ && front_->busy()) {
      wake_at(Clock::now() + kCloseRecheck);  // the front's wait has a deadline of its own
    }
    return;
  }
  if (const auto wait = ingress_.pace(); wait.count() > 0) {
    c.pause_reading();
    wake_at(Clock::now() + wait);
    return;
  }
  c.resume_reading();
}

void CallHandler::wake_at(Clock::time_point at) {
  if (timer_armed_ && timer_at_ <= at) return;
  timer_armed_ = true;
  timer_at_ = at;
  timer_.expires_at(at);
  timer_.async_wait([self = connection().shared_from_this(), this](beast::error_code ec) {
    if (ec == boost::asio::error::operation_aborted) return;  // re-armed sooner, or closing
    timer_armed_ = false;
    if (ec) return;
    // Events may be waiting even without a wake-up (one could not be posted): poll as well.
    on_engine_events();
  });
}

bool CallHandler::busy() const {
  const bool speaking = std::any_of(speaks_.begin(), speaks_.end(), [](const auto& p) { return !p.second.ended; });
  return speaking || !connection().nothing_to_send() || front_->busy();
}

void CallHandler::send(std::string message, SendQueue::Kind kind) { front_->event(std::move(message), kind); }

std::string CallHandler::dropped_report(std::uint64_t num_dropped) { return overload_message(0, 0, num_dropped); }

// --- ending ----------------------------------------------------------------------------------------

void CallHandler::on_going_away() {
  // The caller's audio already read is analysed and its final events sent, what was spoken is
  // finished; nothing more is read.
  closing_ = true;
  end_code_ = kCloseGoingAway;
  end_reason_ = "going away";
  advance();
}

void CallHandler::on_closing() {
  timer_.cancel();
  call_.close();  // nothing more is synthesised or analysed for this client
}

void CallHandler::on_closed(std::string_view why, bool opened) {
  timer_.cancel();
  call_.close();
  ingress_.discard(connection().ending());
  front_->on_closed(why, opened);
  if (!opened) return;
  ctx_.metrics.websocket_sessions_active.fetch_sub(1);
  ctx_.call_metrics.sessions_active.fetch_sub(1);
  const WsConnection& c = connection();
  c.log("{} {} closed: {}, {:.2f} s of the caller, {}, {} ({:.2f} s of speech sent), {}", front_->kind(), c.id(),
        why.empty() ? fmt::format("code {}", c.close_code()) : std::string(why), ingress_.seconds(),
        count_of(num_segments_, "segment"), count_of(num_speaks_, "speak"), speech_sent_s_,
        count_of(num_barge_ins_, "barge-in"));
}

// --- admission -----------------------------------------------------------------------------------

std::optional<Refusal> CallEndpoint::parse(const Request& upgrade) {
  try {
    request_ = parse_call_request(target_query(to_sv(upgrade.target())));
    check_stream_models(ctx_.engine.config(), request_.audio.stream);
  } catch (const Error& e) {
    return Refusal{400, "bad_request", e.what()};
  }
  return std::nullopt;
}

std::variant<std::unique_ptr<WsHandler>, Refusal> CallEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                     std::function<void()> on_events) {
  return open_call_handler(ctx_, strand, std::move(request_), std::move(on_events), std::make_unique<CallProtocol>(ctx_));
}

std::variant<std::unique_ptr<WsHandler>, Refusal> open_call_handler(ServerContext& ctx,
                                                                    const boost::asio::any_io_executor& strand,
                                                                    CallRequest request,
                                                                    std::function<void()> on_events,
                                                                    std::unique_ptr<CallFront> front) {
  const std::variant<TtsVoice, Refusal> voice = choose_voice(ctx, request.voice);
  if (const Refusal* r = std::get_if<Refusal>(&voice)) return *r;
  CallConfig config;
  config.listen = request.audio.stream;
  config.listen.buffer_ms = ctx.config.limits.engine_buffer_ms;
  config.speak = request.voice.speech;
  config.speak.model = std::get<TtsVoice>(voice).model;
  config.barge_in = request.barge_in;
  config.playout_lead_ms = request.playout_lead_ms;
  config.on_events = std::move(on_events);
  Call call;
  try {
    call = ctx.engine.open_call(config);
  } catch (const Error& e) {
    if (engine_busy(e)) return Refusal{503, std::string(to_string(e.code())), e.what()};
    return Refusal{400, "bad_request", e.what()};
  }
  return std::make_unique<CallHandler>(ctx, strand, std::move(request), std::get<TtsVoice>(voice).name,
                                       std::move(call), std::move(front));
}

}  // namespace brisvox::server
