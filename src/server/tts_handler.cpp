#include "server/tts_handler.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>

#include "brisvox/audio/pcm.h"
#include "brisvox/error.h"
#include "server/messages.h"
#include "server/tts_admission.h"

namespace brisvox::server {

using Clock = std::chrono::steady_clock;
using OrderedJson = nlohmann::ordered_json;

namespace {

std::string dump(const OrderedJson& j) { return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace); }

std::string audio_message(const Event& e, std::size_t samples) {
  return fmt::format(R"({{"type":"audio","utterance":{},"sentence":{},"sentences":{},"start":{},"end":{},"samples":{}}})",
                     e.speech.utterance_id, e.speech.sentence_index, e.speech.sentence_count, e.start_s, e.end_s,
                     samples);
}

std::string end_message(const char* type, const Event& e) {
  return fmt::format(R"({{"type":"{}","utterance":{},"sentences":{},"duration":{}}})", type, e.speech.utterance_id,
                     e.speech.sentence_index, e.end_s);
}

// The piece of speech as it goes on the wire: pcm_s16le, sample for sample as piper-tts writes it.
std::string pcm_s16le(const std::vector<float>& samples) {
  std::string bytes(samples.size() * bytes_per_sample(SampleEncoding::kPcmS16le), '\0');
  encode_pcm(samples, SampleEncoding::kPcmS16le, std::as_writable_bytes(std::span(bytes.data(), bytes.size())));
  return bytes;
}

}  // namespace

TtsHandler::TtsHandler(ServerContext& ctx, TtsOptions options, std::string voice_name, Speech speech)
    : ctx_(ctx), options_(std::move(options)), voice_name_(std::move(voice_name)), speech_(std::move(speech)) {}

TtsHandler::~TtsHandler() { speech_.close(); }

WsSettings TtsHandler::settings() const {
  const ServerLimits& l = ctx_.config.limits;
  WsSettings s;
  s.kind = "tts stream";
  s.tag = options_.tag;
  s.text = {l.max_message_bytes,
            fmt::format("a message is larger than {} bytes (--max-message-bytes)", l.max_message_bytes)};
  s.binary = s.text;  // refused anyway (on_binary), unless it is too large to be read first
  s.pings_are_activity = true;
  s.write_stall_timeout = std::chrono::seconds(l.idle_timeout_s);
  return s;
}

void TtsHandler::on_open() {
  WsConnection& c = connection();
  ctx_.tts_metrics.ws_sessions_active.fetch_add(1);
  ctx_.tts_metrics.ws_sessions_total.fetch_add(1);
  c.log("tts stream {} open: {}, voice {}, {} Hz", c.id(), c.peer(), voice_name_, speech_.sample_rate_hz());
  send(tts_ready_message(c.id(),
                         TtsReady{options_.tag, voice_name_, speech_.sample_rate_hz(), options_.speech,
                                  speech_.max_text_bytes()},
                         ctx_.config.limits));
}

// --- reading -------------------------------------------------------------------------------------

void TtsHandler::on_binary(std::span<const std::byte> /*chunk*/, bool /*last*/) {
  connection().fail("bad_message", kCloseUnsupported,
                    "binary messages are not accepted on /v1/tts: send {\"type\":\"speak\",\"text\":\"...\"} as text");
}

void TtsHandler::on_text(std::string message) {
  const TtsMessage m = parse_tts_message(message);
  if (!m.ok) {
    ctx_.metrics.count_error("bad_message");
    send(error_message("bad_message", m.error));
    return;
  }
  switch (m.type) {
    case TtsMessageType::kSpeak:
      try {
        const std::uint32_t id = speech_.speak(m.text);
        last_spoken_ = id;
        accepted_[id] = Clock::now();
        ctx_.tts_metrics.ws_utterances.fetch_add(1, std::memory_order_relaxed);
        send(fmt::format(R"({{"type":"queued","utterance":{}}})", id));
      } catch (const Error& e) {
        // Bad text, or too many queued: this message is refused, the session goes on.
        const Refusal r = tts_refusal(e);
        ctx_.metrics.count_error(r.code);
        send(error_message(r.code, r.message));
      }
      break;
    case TtsMessageType::kCancel:
      cancelled_upto_ = std::max(cancelled_upto_, speech_.cancel());
      // Barge-in: cancelled audio still waiting for the socket goes now (a message being written
      // is finished, and so is the audio its "audio" message announced).
      connection().purge(1, cancelled_upto_);
      break;
    case TtsMessageType::kClose:
      closing_when_done_ = true;
      end_code_ = kCloseNormal;
      end_reason_.clear();
      connection().pause_reading();
      maybe_finish_closing();
      break;
  }
}

// --- the engine's side ---------------------------------------------------------------------------

void TtsHandler::pump() {
  WsConnection& c = connection();
  Event e;
  while (c.is_open() && c.queued_bytes() < kMaxQueuedBytes && speech_.poll(std::span(&e, 1)) == 1) handle_event(e);
  maybe_finish_closing();
}

void TtsHandler::handle_event(const Event& e) {
  const std::uint32_t utterance = e.speech.utterance_id;
  switch (e.type) {
    case EventType::kTtsAudio: {
      if (utterance <= cancelled_upto_) return;  // cancelled: its payload is skipped by the next read
      const std::vector<float> samples = speech_.read_audio_payload(e);
      if (const auto it = accepted_.find(utterance); it != accepted_.end()) {
        const std::chrono::duration<double, std::micro> waited = Clock::now() - it->second;
        ctx_.tts_metrics.first_audio.record(waited.count());
        accepted_.erase(it);
      }
      ctx_.tts_metrics.add_audio(samples.size(), speech_.sample_rate_hz());
      audio_s_ += static_cast<double>(samples.size()) / speech_.sample_rate_hz();
      // Both tagged with the utterance, so that a cancel purges them; the PCM goes with its header.
      connection().send(SendQueue::Message{audio_message(e, samples.size()), false, utterance});
      connection().send(SendQueue::Message{pcm_s16le(samples), true, utterance, /*with_previous=*/true});
      return;
    }
    case EventType::kTtsEnd:
      end_utterance(utterance, ctx_.tts_metrics.utterances_done);
      send(end_message("done", e));
      return;
    case EventType::kTtsCancelled:
      end_utterance(utterance, ctx_.tts_metrics.utterances_cancelled);
      send(end_message("cancelled", e));
      return;
    case EventType::kError: {
      end_utterance(utterance, ctx_.tts_metrics.utterances_failed);
      const std::string_view code = to_string(e.error_code);
      ctx_.metrics.count_error(code);
      OrderedJson j;
      j["type"] = "error";
      j["code"] = std::string(code);
      j["message"] = speech_.last_error();
      j["utterance"] = utterance;
      send(dump(j));
      return;
    }
    default:
      return;
  }
}

void TtsHandler::end_utterance(std::uint32_t utterance, std::atomic<std::uint64_t>& outcome) {
  last_ended_ = utterance;
  accepted_.erase(utterance);
  outcome.fetch_add(1, std::memory_order_relaxed);
}

// --- ending --------------------------------------------------------------------------------------

bool TtsHandler::busy() const { return last_ended_ < last_spoken_ || !connection().nothing_to_send(); }

void TtsHandler::maybe_finish_closing() {
  if (!connection().is_open() || !closing_when_done_ || busy()) return;
  connection().close(end_code_, end_reason_);
}

void TtsHandler::on_going_away() {
  // What was spoken is finished; nothing more is read.
  closing_when_done_ = true;
  end_code_ = kCloseGoingAway;
  end_reason_ = "going away";
  connection().pause_reading();
  maybe_finish_closing();
}

void TtsHandler::on_closing() { speech_.close(); }  // nothing more is synthesised for this client

void TtsHandler::on_closed(std::string_view why, bool opened) {
  speech_.close();
  if (!opened) return;
  ctx_.tts_metrics.ws_sessions_active.fetch_sub(1);
  const WsConnection& c = connection();
  c.log("tts stream {} closed: {}, {} utterances, {:.2f} s of audio", c.id(),
        why.empty() ? fmt::format("code {}", c.close_code()) : std::string(why), last_spoken_, audio_s_);
}

// --- admission -----------------------------------------------------------------------------------

std::optional<Refusal> TtsEndpoint::parse(const Request& upgrade) {
  try {
    options_ = parse_tts_query(target_query(to_sv(upgrade.target())));
  } catch (const Error& e) {
    return Refusal{400, "bad_request", e.what()};
  }
  return std::nullopt;
}

std::variant<std::unique_ptr<WsHandler>, Refusal> TtsEndpoint::open(const boost::asio::any_io_executor& /*strand*/,
                                                                    std::function<void()> on_events) {
  TtsAdmission a = open_tts_speech(ctx_, options_, std::move(on_events));
  if (a.refusal) return std::move(*a.refusal);
  std::string voice = server_voice(ctx_.engine.config())->name;
  return std::make_unique<TtsHandler>(ctx_, std::move(options_), std::move(voice), std::move(a.speech));
}

}  // namespace brisvox::server
