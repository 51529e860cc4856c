#include "server/media_stream_front.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>

#include "brisvox/error.h"
#include "server/access_policy.h"
#include "server/call_app_messages.h"
#include "server/call_handler.h"
#include "server/messages.h"
#include "server/query_params.h"

namespace brisvox::server {

using Clock = std::chrono::steady_clock;

namespace {

// Our marks' names: the prefix and a number; 0 for any other name.
constexpr std::string_view kMarkPrefix = "bv-";
std::uint64_t mark_number(std::string_view name) {
  if (name.substr(0, kMarkPrefix.size()) != kMarkPrefix) return 0;
  name.remove_prefix(kMarkPrefix.size());
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  return ec == std::errc() && end == name.data() + name.size() ? n : 0;
}

}  // namespace

MediaStreamFront::MediaStreamFront(ServerContext& ctx, const boost::asio::any_io_executor& strand,
                                   std::unique_ptr<StreamDialect> dialect, bool listen_only,
                                   bool authorized, std::string upgrade_token,
                                   std::vector<std::pair<std::string, std::string>> parameters)
    : ctx_(ctx),
      strand_(strand),
      dialect_(std::move(dialect)),
      kind_(fmt::format("{} call", to_string(dialect_->provider()))),
      metrics_(ctx.telephony_metrics[dialect_->provider()]),
      listen_only_(listen_only),
      authorized_(authorized),
      chunker_(dialect_->min_media_bytes(), dialect_->silence(), dialect_->exact_media()),
      carried_token_(std::move(upgrade_token)),
      upgrade_parameters_(std::move(parameters)),
      pace_timer_(strand) {}

MediaStreamFront::~MediaStreamFront() {
  if (link_) link_->finish({});
}

void MediaStreamFront::adjust(WsSettings& s) const {
  s.text = {kMaxMessageBytes,
            fmt::format("a message is larger than {} bytes: not {}'s", kMaxMessageBytes, dialect_->name())};
  s.error_messages = false;  // the providers take only media, mark and clear
  s.subprotocol = std::string(dialect_->subprotocol());
  // The providers ping nothing and send media every 20 ms; a stream with nothing for idle_timeout_s
  // is gone.
}

void MediaStreamFront::on_open(WsConnection& c, CallControl& call, const CallReady& /*ready*/) {
  c_ = &c;
  call_ = &call;
  // The provider speaks first (connected, start); nothing is sent before.
}

// --- the provider's messages --------------------------------------------------------------------

void MediaStreamFront::on_text(std::string message, CallControl& call) {
  if (stopped_) return;
  handle(dialect_->parse(message), call);
}

void MediaStreamFront::handle(StreamMessage m, CallControl& call) {
  if (!m.ok) return fail(TelephonyError::kBadMessage, m.error);
  if (started_ && !m.stream_sid.empty() && m.stream_sid != stream_sid_ && m.event != StreamEvent::kStart) {
    return fail(TelephonyError::kBadMessage, fmt::format("a {} message names another stream", m.event_name));
  }
  switch (m.event) {
    case StreamEvent::kConnected:
      if (connected_ || started_) return fail(TelephonyError::kOutOfOrder, "connected after the stream began");
      connected_ = true;
      if (!m.auth_token.empty()) carried_token_ = std::move(m.auth_token);
      return;
    case StreamEvent::kStart:
      if (started_) return fail(TelephonyError::kOutOfOrder, "a second start");
      return start(m);
    case StreamEvent::kMedia:
      if (!started_) return fail(TelephonyError::kOutOfOrder, "media before start");
      // Only the inbound track is the caller; a stream of both tracks adds the outbound.
      if (!dialect_->caller_track(m.track)) {
        ++ignored_media_;
        return;
      }
      call.audio(std::as_bytes(std::span(m.payload.data(), m.payload.size())));
      return;
    case StreamEvent::kDtmf:
      if (!started_) return fail(TelephonyError::kOutOfOrder, "dtmf before start");
      metrics_.dtmf.fetch_add(1, std::memory_order_relaxed);
      to_app(dtmf_message(m.digit));
      return;
    case StreamEvent::kMark: {
      if (!started_) return fail(TelephonyError::kOutOfOrder, "mark before start");
      const auto it = held_.find(mark_number(m.mark_name));
      if (it == held_.end()) return;  // not one of ours, or its reply already ended otherwise
      Held h = std::move(it->second);
      held_.erase(it);
      if (h.speak_done && (h.cleared || m.mark_cleared)) {
        // Dropped by a clear, not played: the reply was not heard to its end.
        to_app(interrupted_message(h.id_json, h.duration_ms, "barge_in", std::nullopt));
      } else {
        to_app(std::move(h.message));
      }
      return;
    }
    case StreamEvent::kStop:
      return stop(call, "stop (the caller hung up or the stream was stopped)");
    case StreamEvent::kCleared:
      // What the provider had not played is gone, and with it the marks behind it (Vonage echoes
      // no notify of dropped audio): each reply so cleared was interrupted, not heard to its end.
      if (!started_) return fail(TelephonyError::kOutOfOrder, fmt::format("{} before the start", m.event_name));
      end_cleared();
      return;
    case StreamEvent::kError:
      // The provider's own trouble (a frame of ours it refused, ...): the log's. It ends the stream
      // itself, with stop, where it has to.
      c_->log("{} {}: {} reports an error: {}", kind_, c_->id(), dialect_->name(), m.report);
      return;
    case StreamEvent::kUnknown:
      return;  // an event the provider added later: not the call's
  }
}

void MediaStreamFront::stop(CallControl& call, std::string_view how) {
  stopped_ = true;
  if (end_reason_.empty()) end_reason_ = "caller_hangup";  // not after the application's hangup
  held_.clear();  // the provider echoes nothing more
  chunker_.clear();
  c_->log("{} {}: {}", kind_, c_->id(), how);
  call.end(kCloseNormal, "", /*drop_speech=*/true);
}

void MediaStreamFront::on_binary(std::span<const std::byte> chunk, bool last, CallControl& call) {
  if (stopped_) return;
  if (dialect_->framed_binary()) {
    for (StreamMessage& m : dialect_->read_binary(chunk)) {
      handle(std::move(m), call);
      if (stopped_ || !c_->is_open()) return;
    }
    return;
  }
  const bool empty_message = last && binary_bytes_ == 0 && chunk.empty();
  binary_bytes_ = last ? 0 : binary_bytes_ + chunk.size();
  if (empty_message && started_ && dialect_->empty_binary_is_stop()) {
    return stop(call, fmt::format("{}'s graceful shutdown (an empty binary frame)", dialect_->name()));
  }
  if (!dialect_->binary_audio()) {
    return fail(TelephonyError::kBadMessage, fmt::format("a binary message ({} sends JSON text)", dialect_->name()));
  }
  if (!started_) {
    const std::optional<StreamMessage> implied = dialect_->start_on_audio();
    if (!implied) return fail(TelephonyError::kOutOfOrder, "audio before the stream's first text message");
    start(*implied);
    if (!started_) return;  // refused (no token)
  }
  // A message may come in several chunks: the call's decoder keeps a split sample for the next.
  call.audio(chunk);
}

void MediaStreamFront::start(const StreamMessage& m) {
  if (const std::string why = dialect_->check_format(m.start); !why.empty()) {
    return fail(TelephonyError::kBadMediaFormat, why);
  }
  std::vector<std::pair<std::string, std::string>> parameters = std::move(upgrade_parameters_);
  std::string_view token = carried_token_;
  for (const auto& [name, value] : m.start.custom_parameters) {
    if (name == "token") {
      token = value;
    } else {
      parameters.emplace_back(name, value);
    }
  }
  if (!authorized_ && !token_equals(ctx_.config.token, token)) {
    return fail(TelephonyError::kUnauthorized, token.empty() ? dialect_->no_token() : dialect_->wrong_token());
  }
  // The application named by the call's last "app" parameter (it goes on to the application too).
  std::string_view app_name;
  for (const auto& [name, value] : parameters) {
    if (name == kAppParameter) app_name = value;
  }
  std::string why;
  const AppUrl* app = ctx_.call_apps.pick(app_name, why);
  if (app == nullptr) return fail(TelephonyError::kAppUnavailable, why);
  app_url_ = *app;
  started_ = true;
  dialect_->started(m.start);
  stream_sid_ = m.start.stream_sid;
  call_sid_ = m.start.call_sid;
  metrics_.calls_total.fetch_add(1, std::memory_order_relaxed);
  metrics_.calls_active.fetch_add(1, std::memory_order_relaxed);
  c_->log("{} {} start: {} {}, {} {}, tracks {}, {}; application {}", kind_, c_->id(), dialect_->call_id_name(),
          call_sid_.empty() ? "-" : call_sid_, dialect_->stream_id_name(), stream_sid_.empty() ? "-" : stream_sid_,
          m.start.tracks.empty() ? "-" : fmt::format("{}", fmt::join(m.start.tracks, ",")),
          listen_only_ ? "listen-only" : "bidirectional", app_url_.text);
  link_ = std::make_shared<CallAppLink>(strand_, app_url_, static_cast<CallAppLink::Listener*>(this));
  link_->send(call_start_message(CallStartInfo{to_string(dialect_->provider()), call_sid_, stream_sid_,
                                               m.start.account_sid, listen_only_, &parameters, c_->id()}));
  link_->start();
}

void MediaStreamFront::end_cleared() {
  for (auto it = held_.begin(); it != held_.end();) {
    if (!it->second.cleared) {
      ++it;
      continue;
    }
    Held h = std::move(it->second);
    it = held_.erase(it);
    to_app(h.speak_done ? interrupted_message(h.id_json, h.duration_ms, "barge_in", std::nullopt)
                        : std::move(h.message));
  }
}

void MediaStreamFront::fail(TelephonyError error, const std::string& why) {
  if (!c_->is_open()) return;
  metrics_.count(error);
  if (end_reason_.empty()) {
    end_reason_ = error == TelephonyError::kAppUnavailable ? "app_gone" : "error";
    end_detail_ = why;
  }
  // The log line and the close say it (a provider reads no error message; settings().error_messages).
  c_->fail(to_string(error), error == TelephonyError::kAppUnavailable ? kCloseInternal : kClosePolicy, why);
}

// --- the application -----------------------------------------------------------------------------

void MediaStreamFront::to_app(std::string message) {
  if (link_) link_->send(std::move(message));  // a full queue fails the link: on_app_gone ends the call
}

void MediaStreamFront::on_app_message(std::string text) {
  if (!c_->is_open()) return;
  const AppMessage m = parse_app_message(text);
  if (!m.ok) {
    metrics_.count(TelephonyError::kAppBadMessage);
    ctx_.metrics.count_error("bad_message");
    to_app(error_message("bad_message", m.error));
    return;
  }
  switch (m.type) {
    case AppMessageType::kSpeak:
      if (answerable_since_) {
        const std::chrono::duration<double, std::micro> waited = std::chrono::steady_clock::now() - *answerable_since_;
        metrics_.app_round_trip.record(waited.count());
        answerable_since_.reset();
      }
      if (listen_only_) {
        to_app(speak_error_message("listen_only", dialect_->listen_only(), m.call.id));
        return;
      }
      call_->speak(m.call);
      return;
    case AppMessageType::kCancel:
      call_->cancel();
      return;
    case AppMessageType::kMark:
      call_->mark(m.call.name);
      return;
    case AppMessageType::kHangup:
      if (end_reason_.empty()) end_reason_ = "app_hangup";
      c_->log("{} {}: the application hung up", kind_, c_->id());
      // What is being spoken is finished (a goodbye), then the stream closes.
      call_->end(kCloseNormal, "", /*drop_speech=*/false);
      return;
  }
}

void MediaStreamFront::on_app_gone(std::string why) {
  link_.reset();
  fail(TelephonyError::kAppUnavailable, fmt::format("the application at {} {}", app_url_.text, why));
}

// --- the call's output ---------------------------------------------------------------------------

void MediaStreamFront::event(std::string message, SendQueue::Kind kind) {
  // A vad probability per frame is the droppable kind; the application asked for none of those.
  if (kind == SendQueue::Kind::kDroppable) return;
  to_app(std::move(message));
}

void MediaStreamFront::audio(std::uint32_t utterance, std::string bytes) {
  if (listen_only_ || !started_) return;  // never sent on a listen-only stream (speak is refused there)
  for (MediaChunker::Piece& p : chunker_.push(utterance, std::move(bytes))) send_media(p.utterance, std::move(p.bytes));
}

void MediaStreamFront::send_media(std::uint32_t utterance, std::string bytes) {
  if (dialect_->paced()) return send_paced(Paced{utterance, std::move(bytes), {}});
  if (!media_open_) {
    media_open_ = true;
    if (std::string before = dialect_->before_media(); !before.empty()) {
      SendQueue::Message m{std::move(before), false, utterance};
      c_->send(std::move(m));
    }
  }
  const std::size_t n = bytes.size();
  SendQueue::Message m{dialect_->media(stream_sid_, bytes), dialect_->binary_media(), utterance};
  m.content_bytes = n;
  c_->send(std::move(m));
}

std::size_t MediaStreamFront::purge(std::uint32_t first, std::uint32_t last) {
  std::size_t dropped = 0;
  c_->purge(first, last, &dropped);
  // A paced provider's audio not yet sent goes too; the application's messages behind it still go
  // (speak_done's place is taken by the interrupted the call sends).
  for (Paced& p : paced_) {
    if (!p.media.empty() && p.utterance >= first && p.utterance <= last) {
      dropped += p.media.size();
      paced_bytes_ -= p.media.size();
      p.media.clear();
    }
  }
  std::erase_if(paced_, [](const Paced& p) { return p.media.empty() && p.to_app.empty(); });
  return dropped + chunker_.drop(first, last);
}

void MediaStreamFront::stopped() {
  if (listen_only_ || !started_ || stopped_) return;
  chunker_.clear();  // what the clear drops at the provider is not sent at all
  // A provider that plays what arrives at once has nothing queued to clear (AudioSocket): the
  // purge of what was not yet sent is the barge-in.
  if (std::string clear = dialect_->clear(stream_sid_); !clear.empty()) c_->send(std::move(clear));
  media_open_ = false;
  metrics_.clears.fetch_add(1, std::memory_order_relaxed);
  for (auto& [name, h] : held_) h.cleared = true;
  if (dialect_->clear_drops_marks()) end_cleared();
}

MediaStreamFront::Held& MediaStreamFront::hold(std::uint32_t utterance, std::string message, bool speak_done) {
  if (held_.size() >= kMaxHeld) {
    to_app(std::move(held_.begin()->second.message));
    held_.erase(held_.begin());
  }
  const std::uint64_t number = next_mark_++;
  Held h;
  h.utterance = utterance;
  h.speak_done = speak_done;
  h.sent = Clock::now();
  h.message = std::move(message);
  Held& held = held_.emplace(number, std::move(h)).first->second;
  // The mark follows all of the audio before it.
  for (MediaChunker::Piece& p : chunker_.flush()) send_media(p.utterance, std::move(p.bytes));
  c_->send(dialect_->mark(stream_sid_, fmt::format("{}{}", kMarkPrefix, number)));
  media_open_ = false;
  return held;
}

void MediaStreamFront::send_unconfirmed(std::string message) {
  // All of the audio before it goes first.
  for (MediaChunker::Piece& p : chunker_.flush()) send_media(p.utterance, std::move(p.bytes));
  if (dialect_->paced() && !paced_.empty()) return send_paced(Paced{paced_.back().utterance, {}, std::move(message)});
  to_app(std::move(message));
}

void MediaStreamFront::send_paced(Paced p) {
  paced_bytes_ += p.media.size();
  paced_.push_back(std::move(p));
  pace();
}

void MediaStreamFront::pace() {
  if (!c_->is_open()) return;
  const auto now = Clock::now();
  while (!paced_.empty()) {
    Paced& p = paced_.front();
    if (!p.media.empty()) {
      // The audio sent so far plays until paced_until_: the next goes kPacedLead before that.
      if (paced_until_ - now > kPacedLead) break;
      const auto duration = std::chrono::microseconds(static_cast<std::int64_t>(
          1e6 * static_cast<double>(p.media.size()) / static_cast<double>(dialect_->media_bytes_per_s())));
      paced_until_ = std::max(paced_until_, now) + duration;
      const std::size_t n = p.media.size();
      SendQueue::Message m{dialect_->media(stream_sid_, p.media), dialect_->binary_media(), p.utterance};
      m.content_bytes = n;
      paced_bytes_ -= n;
      c_->send(std::move(m));
    }
    if (!p.to_app.empty()) to_app(std::move(p.to_app));
    paced_.pop_front();
  }
  if (paced_.empty() || pace_timer_armed_) return;
  pace_timer_armed_ = true;
  pace_timer_.expires_at(paced_until_ - kPacedLead);
  pace_timer_.async_wait([self = c_->shared_from_this(), this](const boost::system::error_code& ec) {
    pace_timer_armed_ = false;
    if (!ec) pace();
  });
}

void MediaStreamFront::speak_done(std::uint32_t utterance, std::string_view id_json, double duration_ms) {
  std::string message = speak_done_message(id_json, duration_ms);
  if (listen_only_ || !started_ || stopped_) return to_app(std::move(message));
  if (!dialect_->echoes_marks()) return send_unconfirmed(std::move(message));
  // Its fields are kept for the "interrupted" that replaces it if a clear drops its audio.
  Held& h = hold(utterance, std::move(message), true);
  h.id_json = id_json;
  h.duration_ms = duration_ms;
}

void MediaStreamFront::mark_reached(std::uint32_t utterance, std::string message) {
  if (listen_only_ || !started_ || stopped_) return to_app(std::move(message));
  if (!dialect_->echoes_marks()) return send_unconfirmed(std::move(message));
  hold(utterance, std::move(message), false);
}

void MediaStreamFront::interrupted(std::uint32_t utterance, std::string message) {
  // A reply all sent and still playing when the caller barged in: its speak_done is not owed.
  std::erase_if(held_, [&](const auto& p) { return p.second.speak_done && p.second.utterance == utterance; });
  to_app(std::move(message));
}

std::size_t MediaStreamFront::queued_bytes() const {
  return chunker_.held_bytes() + paced_bytes_ + (c_ != nullptr ? c_->queued_bytes() : 0);
}

bool MediaStreamFront::busy() const {
  if (!paced_.empty()) return true;  // a goodbye being paced out
  // A close waits for the provider to play what it has (its marks' echoes), not forever.
  const auto now = Clock::now();
  return std::any_of(held_.begin(), held_.end(), [&](const auto& p) { return now - p.second.sent < kMarkEchoWait; });
}

void MediaStreamFront::closing() {
  if (end_reason_ != "app_hangup" || listen_only_ || !started_ || stopped_) return;
  if (std::string m = dialect_->hangup(); !m.empty()) c_->send(SendQueue::Message{std::move(m), dialect_->binary_media()});
}

void MediaStreamFront::on_closed(std::string_view why, bool /*opened*/) {
  pace_timer_.cancel();
  paced_.clear();
  if (started_) metrics_.calls_active.fetch_sub(1, std::memory_order_relaxed);
  if (!link_) return;
  std::string reason = end_reason_;
  if (reason.empty() && dialect_->close_is_hangup() && c_->peer_close_code() == kCloseNormal) {
    reason = "caller_hangup";
    c_->log("{} {}: {} closed the socket (the caller hung up)", kind_, c_->id(), dialect_->name());
  }
  if (reason.empty()) {
    const bool going_away = why.empty() && c_->close_code() == kCloseGoingAway;
    reason = going_away ? "shutdown" : "provider_gone";
    if (!going_away) end_detail_ = why.empty() ? fmt::format("closed with code {}", c_->close_code()) : std::string(why);
  }
  link_->finish(call_end_message(reason, end_detail_));
  link_.reset();
  c_->log("{} {} ended for the application: {}{}", kind_, c_->id(), reason,
          ignored_media_ > 0 ? fmt::format(" ({} media messages of another track ignored)", ignored_media_) : "");
}

// --- admission -----------------------------------------------------------------------------------

std::optional<Refusal> read_l16_query(std::string_view query, std::string_view path, std::string_view more,
                                      std::string_view rate_hint, int& rate_hz) {
  try {
    for (const auto& [key, value] : parse_query_string(query)) {
      if (key == "rate") {
        rate_hz = value == "8000" ? 8000 : value == "16000" ? 16000 : 0;
      } else if (key != "token") {
        return Refusal{400, "bad_request", fmt::format("unknown key \"{}\": {} takes rate and token{}", key, path, more)};
      }
    }
  } catch (const Error& e) {
    return Refusal{400, "bad_request", e.what()};
  }
  if (rate_hz == 0) return Refusal{400, "bad_request", fmt::format("rate must be 8000 or 16000 ({})", rate_hint)};
  return std::nullopt;
}

std::optional<Refusal> telephony_call_request(ServerContext& ctx, const std::string& audio_query,
                                              CallRequest& request) {
  if (ctx.call_apps.empty()) {
    return Refusal{503, "no_call_app",
                   "this server takes telephony calls only with an application to drive them: start it with "
                   "--call-app ws://HOST:PORT/PATH (docs/TELEPHONY.md)"};
  }
  // The pipeline is what the server has models for, the VAD at the server's rate for calls.
  std::string query = audio_query;
  if (ctx.config.phone_model_rate_hz != 0) query += fmt::format("&model_rate={}", ctx.config.phone_model_rate_hz);
  bool turn = false, stt = false;
  for (const ModelSpec& model : ctx.engine.config().models) {
    turn = turn || model.family == ModelFamily::kSmartTurn;
    stt = stt || model.family == ModelFamily::kWhisper;
  }
  if (turn || stt) query += std::string("&events=") + (turn ? "turn" : "") + (turn && stt ? "," : "") + (stt ? "transcript" : "");
  if (stt && ctx.config.stt_window == WhisperWindow::kFit) query += "&window=fit";
  try {
    request = parse_call_request(query);
    check_stream_models(ctx.engine.config(), request.audio.stream);
  } catch (const Error& e) {
    return Refusal{500, "internal", e.what()};
  }
  return std::nullopt;
}

}  // namespace brisvox::server
