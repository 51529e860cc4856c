#include "server/twilio_front.h"

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

TwilioFront::TwilioFront(ServerContext& ctx, const boost::asio::any_io_executor& strand, AppUrl app,
                         bool listen_only, bool authorized)
    : ctx_(ctx),
      strand_(strand),
      metrics_(ctx.telephony_metrics[TelephonyProvider::kTwilio]),
      app_url_(std::move(app)),
      listen_only_(listen_only),
      authorized_(authorized) {}

TwilioFront::~TwilioFront() {
  if (link_) link_->finish({});
}

void TwilioFront::adjust(WsSettings& s) const {
  s.text = {kMaxMessageBytes, fmt::format("a message is larger than {} bytes: not Twilio's", kMaxMessageBytes)};
  s.error_messages = false;  // Twilio takes only media, mark and clear
  // Twilio pings nothing and sends media every 20 ms; a stream with nothing for idle_timeout_s is gone.
}

void TwilioFront::on_open(WsConnection& c, CallControl& call, const CallReady& /*ready*/) {
  c_ = &c;
  call_ = &call;
  // Twilio speaks first (connected, start); nothing is sent before.
}

// --- Twilio's messages ---------------------------------------------------------------------------

void TwilioFront::on_text(std::string message, CallControl& call) {
  if (stopped_) return;
  TwilioMessage m = parse_twilio_message(message);
  if (!m.ok) return fail(TelephonyError::kBadMessage, m.error);
  if (started_ && !m.stream_sid.empty() && m.stream_sid != stream_sid_ && m.event != TwilioEvent::kStart) {
    return fail(TelephonyError::kBadMessage, fmt::format("a {} message names another stream", m.event_name));
  }
  switch (m.event) {
    case TwilioEvent::kConnected:
      if (connected_ || started_) return fail(TelephonyError::kOutOfOrder, "connected after the stream began");
      connected_ = true;
      return;
    case TwilioEvent::kStart:
      if (started_) return fail(TelephonyError::kOutOfOrder, "a second start");
      return start(m);
    case TwilioEvent::kMedia:
      if (!started_) return fail(TelephonyError::kOutOfOrder, "media before start");
      // Only the inbound track is the caller; <Start><Stream track="both_tracks"> adds the outbound.
      if (!m.track.empty() && m.track != "inbound") {
        ++ignored_media_;
        return;
      }
      call.audio(std::as_bytes(std::span(m.payload.data(), m.payload.size())));
      return;
    case TwilioEvent::kDtmf:
      if (!started_) return fail(TelephonyError::kOutOfOrder, "dtmf before start");
      metrics_.dtmf.fetch_add(1, std::memory_order_relaxed);
      to_app(dtmf_message(m.digit));
      return;
    case TwilioEvent::kMark: {
      if (!started_) return fail(TelephonyError::kOutOfOrder, "mark before start");
      const auto it = held_.find(mark_number(m.mark_name));
      if (it == held_.end()) return;  // not one of ours, or its reply already ended otherwise
      Held h = std::move(it->second);
      held_.erase(it);
      if (h.speak_done && h.cleared) {
        // Dropped by a clear, not played: the reply was not heard to its end.
        to_app(interrupted_message(h.id_json, h.duration_ms, "barge_in", std::nullopt));
      } else {
        to_app(std::move(h.message));
      }
      return;
    }
    case TwilioEvent::kStop:
      stopped_ = true;
      if (end_reason_.empty()) end_reason_ = "caller_hangup";  // not after the application's hangup
      held_.clear();  // Twilio echoes nothing more
      c_->log("twilio call {}: stop (the caller hung up or the stream was stopped)", c_->id());
      call.end(kCloseNormal, "", /*drop_speech=*/true);
      return;
    case TwilioEvent::kUnknown:
      return;  // an event Twilio added later: not the call's
  }
}

void TwilioFront::on_binary(std::span<const std::byte> /*chunk*/, CallControl& /*call*/) {
  fail(TelephonyError::kBadMessage, "a binary message (Twilio sends JSON text)");
}

void TwilioFront::start(const TwilioMessage& m) {
  if (const std::string why = check_media_format(m.start); !why.empty()) {
    return fail(TelephonyError::kBadMediaFormat, why);
  }
  std::vector<std::pair<std::string, std::string>> parameters;
  std::string_view token;
  for (const auto& [name, value] : m.start.custom_parameters) {
    if (name == "token") {
      token = value;
    } else {
      parameters.emplace_back(name, value);
    }
  }
  if (!authorized_ && !token_equals(ctx_.config.token, token)) {
    return fail(TelephonyError::kUnauthorized,
                token.empty() ? "no token: add <Parameter name=\"token\" value=\"...\"/> to the <Stream> "
                                "(Twilio drops a query string from its url)"
                              : "the stream's token parameter is not this server's --token");
  }
  started_ = true;
  stream_sid_ = m.start.stream_sid;
  call_sid_ = m.start.call_sid;
  metrics_.calls_total.fetch_add(1, std::memory_order_relaxed);
  metrics_.calls_active.fetch_add(1, std::memory_order_relaxed);
  c_->log("twilio call {} start: callSid {}, streamSid {}, tracks {}, {}; application {}", c_->id(),
          call_sid_.empty() ? "-" : call_sid_, stream_sid_, fmt::join(m.start.tracks, ","),
          listen_only_ ? "listen-only" : "bidirectional", app_url_.text);
  link_ = std::make_shared<CallAppLink>(strand_, app_url_, static_cast<CallAppLink::Listener*>(this));
  link_->send(call_start_message(CallStartInfo{"twilio", call_sid_, stream_sid_, m.start.account_sid, listen_only_,
                                               &parameters, c_->id()}));
  link_->start();
}

void TwilioFront::fail(TelephonyError error, const std::string& why) {
  if (!c_->is_open()) return;
  metrics_.count(error);
  if (end_reason_.empty()) {
    end_reason_ = error == TelephonyError::kAppUnavailable ? "app_gone" : "error";
    end_detail_ = why;
  }
  // The log line and the close say it (Twilio reads no error message; settings().error_messages).
  c_->fail(to_string(error), error == TelephonyError::kAppUnavailable ? kCloseInternal : kClosePolicy, why);
}

// --- the application -----------------------------------------------------------------------------

void TwilioFront::to_app(std::string message) {
  if (link_) link_->send(std::move(message));  // a full queue fails the link: on_app_gone ends the call
}

void TwilioFront::on_app_message(std::string text) {
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
      if (listen_only_) {
        to_app(speak_error_message("listen_only",
                                   "this stream is listen-only (<Start><Stream>): Twilio plays nothing back; use "
                                   "<Connect><Stream> and /v1/telephony/twilio to speak",
                                   m.call.id));
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
      c_->log("twilio call {}: the application hung up", c_->id());
      // What is being spoken is finished (a goodbye), then the stream closes.
      call_->end(kCloseNormal, "", /*drop_speech=*/false);
      return;
  }
}

void TwilioFront::on_app_gone(std::string why) {
  link_.reset();
  fail(TelephonyError::kAppUnavailable, fmt::format("the application at {} {}", app_url_.text, why));
}

// --- the call's output ---------------------------------------------------------------------------

void TwilioFront::event(std::string message, SendQueue::Kind kind) {
  // A vad probability per frame is the droppable kind; the application asked for none of those.
  if (kind == SendQueue::Kind::kDroppable) return;
  to_app(std::move(message));
}

void TwilioFront::audio(std::uint32_t utterance, std::string bytes) {
  if (listen_only_ || !started_) return;  // never sent on a listen-only stream (speak is refused there)
  const std::size_t n = bytes.size();
  SendQueue::Message m{twilio_media_message(stream_sid_, bytes), false, utterance};
  m.content_bytes = n;
  c_->send(std::move(m));
}

std::size_t TwilioFront::purge(std::uint32_t first, std::uint32_t last) {
  std::size_t dropped = 0;
  c_->purge(first, last, &dropped);
  return dropped;
}

void TwilioFront::stopped() {
  if (listen_only_ || !started_ || stopped_) return;
  c_->send(twilio_clear_message(stream_sid_));
  metrics_.clears.fetch_add(1, std::memory_order_relaxed);
  for (auto& [name, h] : held_) h.cleared = true;
}

TwilioFront::Held& TwilioFront::hold(std::uint32_t utterance, std::string message, bool speak_done) {
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
  c_->send(twilio_mark_message(stream_sid_, fmt::format("{}{}", kMarkPrefix, number)));
  return held;
}

void TwilioFront::speak_done(std::uint32_t utterance, std::string_view id_json, double duration_ms) {
  std::string message = speak_done_message(id_json, duration_ms);
  if (listen_only_ || !started_ || stopped_) return to_app(std::move(message));
  // Its fields are kept for the "interrupted" that replaces it if a clear drops its audio.
  Held& h = hold(utterance, std::move(message), true);
  h.id_json = id_json;
  h.duration_ms = duration_ms;
}

void TwilioFront::mark_reached(std::uint32_t utterance, std::string message) {
  if (listen_only_ || !started_ || stopped_) return to_app(std::move(message));
  hold(utterance, std::move(message), false);
}

void TwilioFront::interrupted(std::uint32_t utterance, std::string message) {
  // A reply all sent and still playing when the caller barged in: its speak_done is not owed.
  std::erase_if(held_, [&](const auto& p) { return p.second.speak_done && p.second.utterance == utterance; });
  to_app(std::move(message));
}

std::size_t TwilioFront::queued_bytes() const { return c_ != nullptr ? c_->queued_bytes() : 0; }

bool TwilioFront::busy() const {
  // A close waits for Twilio to play what it has (its marks' echoes), not forever.
  const auto now = Clock::now();
  return std::any_of(held_.begin(), held_.end(), [&](const auto& p) { return now - p.second.sent < kMarkEchoWait; });
}

void TwilioFront::on_closed(std::string_view why, bool /*opened*/) {
  if (started_) metrics_.calls_active.fetch_sub(1, std::memory_order_relaxed);
  if (!link_) return;
  std::string reason = end_reason_;
  if (reason.empty()) {
    const bool going_away = why.empty() && c_->close_code() == kCloseGoingAway;
    reason = going_away ? "shutdown" : "provider_gone";
    if (!going_away) end_detail_ = why.empty() ? fmt::format("closed with code {}", c_->close_code()) : std::string(why);
  }
  link_->finish(call_end_message(reason, end_detail_));
  link_.reset();
  c_->log("twilio call {} ended for the application: {}{}", c_->id(), reason,
          ignored_media_ > 0 ? fmt::format(" ({} media messages of another track ignored)", ignored_media_) : "");
}

// --- admission -----------------------------------------------------------------------------------

std::optional<Refusal> TwilioEndpoint::parse(const Request& upgrade) {
  if (ctx_.config.call_app.empty()) {
    return Refusal{503, "no_call_app",
                   "this server takes telephony calls only with an application to drive them: start it with "
                   "--call-app ws://HOST:PORT/PATH (docs/TELEPHONY.md)"};
  }
  try {
    app_ = parse_app_url(ctx_.config.call_app);
  } catch (const Error& e) {
    return Refusal{503, "no_call_app", e.what()};
  }
  authorized_ = token_ok(ctx_.config.token, to_sv(upgrade[boost::beast::http::field::authorization]),
                         target_query(to_sv(upgrade.target())));
  // Twilio's audio is mu-law at 8000 Hz; the pipeline is what the server has models for.
  std::string query = "sample_rate=8000&encoding=mulaw";
  bool turn = false, stt = false;
  for (const ModelSpec& model : ctx_.engine.config().models) {
    turn = turn || model.family == ModelFamily::kSmartTurn;
    stt = stt || model.family == ModelFamily::kWhisper;
  }
  if (turn || stt) query += std::string("&events=") + (turn ? "turn" : "") + (turn && stt ? "," : "") + (stt ? "transcript" : "");
  try {
    request_ = parse_call_request(query);
    check_stream_models(ctx_.engine.config(), request_.audio.stream);
  } catch (const Error& e) {
    return Refusal{500, "internal", e.what()};
  }
  return std::nullopt;
}

std::variant<std::unique_ptr<WsHandler>, Refusal> TwilioEndpoint::open(const boost::asio::any_io_executor& strand,
                                                                       std::function<void()> on_events) {
  return open_call_handler(ctx_, strand, std::move(request_), std::move(on_events),
                           std::make_unique<TwilioFront>(ctx_, strand, app_, listen_only_, authorized_));
}

}  // namespace brisvox::server
