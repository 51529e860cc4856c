#include "server/messages.h"

#include "brisvox/formats/result_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>

namespace brisvox::server {
namespace {

using OrderedJson = nlohmann::ordered_json;

std::string dump(const OrderedJson& j) { return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace); }

// A speech session's settings, as /v1/tts's ready message and /v1/call's say them: the voice's
// settings as the client gave them (speaker_id an integer).
OrderedJson speech_settings(std::string_view voice, int sample_rate_hz, std::string_view encoding, const SpeechConfig& s) {
  OrderedJson j;
  j["voice"] = voice;
  j["sample_rate"] = sample_rate_hz;
  j["encoding"] = encoding;
  for (const auto& [name, value] : s.voice_options) {
    if (name == "speaker_id") {
      j[name] = static_cast<std::int64_t>(value);
    } else {
      j[name] = static_cast<float>(value);
    }
  }
  j["volume"] = s.volume;
  j["fast_start"] = s.fast_start;
  return j;
}

// A stream's effective configuration, as /v1/stream's ready message and /v1/call's say it.
OrderedJson stream_config(const AudioRequest& request, const StreamConfig& s) {
  const SegmenterParams& p = s.vad.params;
  OrderedJson c;
  c["sample_rate"] = s.sample_rate_hz;
  c["encoding"] = to_string(request.encoding);
  c["model_rate"] = s.vad.model_rate_hz;
  c["events"] = OrderedJson::array();
  if (s.vad.emit_probabilities) c["events"].push_back("vad");
  if (s.turn) {
    c["events"].push_back("turn");
    c["stop_ms"] = s.turn->params.stop_ms;
    c["pre_speech_ms"] = s.turn->params.pre_speech_ms;
    c["max_silence_ms"] = s.turn->params.max_silence_ms;
    c["turn_threshold"] = s.turn->params.turn_threshold;
  }
  if (s.stt) {
    c["events"].push_back("transcript");
    c["language"] = s.stt->decode.language.empty() ? "auto" : s.stt->decode.language;
    c["language_detection"] = to_string(s.stt->language_detection);
    c["window"] = to_string(s.stt->window);
    c["beam_size"] = s.stt->decode.beam_size;
    c["best_of"] = s.stt->decode.best_of;
    c["temperatures"] = s.stt->fallback.temperatures;
    if (!s.stt->decode.prompt.empty()) c["prompt"] = s.stt->decode.prompt;
    if (!s.stt->decode.hotwords.empty()) c["hotwords"] = s.stt->decode.hotwords;
    c["word_timestamps"] = s.stt->word_timestamps;
    c["partial_ms"] = s.stt->partial_interval_ms;
  }
  c["threshold"] = p.threshold;
  c["neg_threshold"] = p.effective_neg_threshold();
  c["min_speech_ms"] = p.min_speech_ms;
  c["max_speech_s"] = p.max_speech_s;  // infinity (no limit) is printed as null
  c["min_silence_ms"] = p.min_silence_ms;
  c["speech_pad_ms"] = p.speech_pad_ms;
  c["min_silence_at_max_speech_ms"] = p.min_silence_at_max_speech_ms;
  c["use_max_poss_sil_at_max_speech"] = p.use_max_poss_sil_at_max_speech;
  return c;
}

OrderedJson audio_limits(const ServerLimits& limits) {
  OrderedJson l;
  l["max_message_bytes"] = limits.max_message_bytes;
  l["max_rate"] = limits.max_rate;
  l["burst_s"] = limits.burst_s;
  l["idle_timeout_s"] = limits.idle_timeout_s;
  return l;
}

}  // namespace

std::string ready_message(std::uint64_t session_id, const AudioRequest& request, const StreamConfig& s,
                          const ServerLimits& limits) {
  OrderedJson j;
  j["type"] = "ready";
  j["id"] = session_id;
  if (!request.tag.empty()) j["tag"] = request.tag;
  j["config"] = stream_config(request, s);
  j["limits"] = audio_limits(limits);
  return dump(j);
}

std::string call_ready_message(std::uint64_t session_id, const CallReady& call, const ServerLimits& limits) {
  OrderedJson j;
  j["type"] = "ready";
  j["id"] = session_id;
  if (!call.request.audio.tag.empty()) j["tag"] = call.request.audio.tag;
  OrderedJson c = stream_config(call.request.audio, call.stream);
  const SpeechConfig& v = call.request.voice.speech;
  c["speech"] = speech_settings(call.voice, call.speech_rate_hz, to_string(call.request.audio.encoding), v);
  const BargeInOptions& b = call.request.barge_in;
  c["barge_in"] = {{"enabled", b.enabled}, {"min_ms", b.min_speech_ms}, {"on", b.on_turn_end ? "turn_end" : "speech"}};
  c["playout_lead_ms"] = call.request.playout_lead_ms;
  j["config"] = std::move(c);
  OrderedJson l = audio_limits(limits);
  l["max_text_bytes"] = call.max_text_bytes;
  l["max_queued"] = v.max_queued;
  j["limits"] = std::move(l);
  return dump(j);
}

std::string tts_ready_message(std::uint64_t session_id, const TtsReady& tts, const ServerLimits& limits) {
  OrderedJson j;
  j["type"] = "ready";
  j["id"] = session_id;
  j["config"] = speech_settings(tts.voice, tts.sample_rate_hz, "pcm_s16le", tts.speech);
  if (!tts.tag.empty()) j["tag"] = tts.tag;
  j["limits"] = {{"max_text_bytes", tts.max_text_bytes},
                 {"max_queued", tts.speech.max_queued},
                 {"max_message_bytes", limits.max_message_bytes},
                 {"idle_timeout_s", limits.idle_timeout_s}};
  return dump(j);
}

std::string speech_start_message(double start_s) {
  return fmt::format(R"({{"type":"speech_start","start":{}}})", start_s);
}

std::string speech_end_message(double start_s, double end_s) {
  return fmt::format(R"({{"type":"speech_end","start":{},"end":{}}})", start_s, end_s);
}

std::string turn_end_message(double start_s, double end_s, float probability, std::string_view reason) {
  if (probability < 0.0f) {
    return fmt::format(R"({{"type":"turn_end","start":{},"end":{},"probability":null,"reason":"{}"}})", start_s, end_s,
                       reason);
  }
  return fmt::format(R"({{"type":"turn_end","start":{},"end":{},"probability":{},"reason":"{}"}})", start_s, end_s,
                     probability, reason);
}

std::string turn_incomplete_message(double start_s, double end_s, float probability) {
  return fmt::format(R"({{"type":"turn_incomplete","start":{},"end":{},"probability":{}}})", start_s, end_s,
                     probability);
}

std::string transcript_message(double start_s, double end_s, const Transcript& t) {
  OrderedJson j;
  j["type"] = "transcript";
  j["start"] = start_s;
  j["end"] = end_s;
  j["text"] = t.text;
  j["avg_logprob"] = t.avg_logprob;
  j["no_speech_prob"] = t.no_speech_prob;
  j["no_speech"] = t.no_speech;
  j["language"] = t.language;
  j["language_probability"] = t.language_probability;
  if (!t.words.empty()) j["words"] = OrderedJson::parse(words_json(t.words));
  return dump(j);
}

std::string transcript_partial_message(double start_s, double end_s, const Transcript& t) {
  OrderedJson j;
  j["type"] = "transcript_partial";
  j["start"] = start_s;
  j["end"] = end_s;
  j["text"] = t.text;
  j["unstable"] = t.unstable;
  j["language"] = t.language;
  return dump(j);
}

std::string vad_message(double frame_start_s, float probability) {
  return fmt::format(R"({{"type":"vad","t":{},"p":{}}})", frame_start_s, probability);
}

std::string overload_message(std::uint32_t backlog_ms, std::uint64_t rejected_samples, std::uint64_t dropped_messages) {
  return fmt::format(R"({{"type":"overload","backlog_ms":{},"rejected_samples":{},"dropped_messages":{}}})", backlog_ms,
                     rejected_samples, dropped_messages);
}

std::string error_message(std::string_view code, std::string_view message) {
  OrderedJson j;
  j["type"] = "error";
  j["code"] = std::string(code);
  j["message"] = std::string(message);
  return dump(j);
}

std::string flushed_message(double end_s) { return fmt::format(R"({{"type":"flushed","end":{}}})", end_s); }

std::string reset_message() { return R"({"type":"reset"})"; }

std::string http_error_body(std::string_view code, std::string_view message) {
  OrderedJson j;
  j["error"]["code"] = std::string(code);
  j["error"]["message"] = std::string(message);
  return dump(j) + "\n";
}


std::string speak_started_message(std::string_view id_json) {
  return fmt::format(R"({{"type":"speak_started","id":{}}})", id_json);
}

std::string speak_done_message(std::string_view id_json, double duration_ms) {
  return fmt::format(R"({{"type":"speak_done","id":{},"duration_ms":{}}})", id_json, std::round(duration_ms * 10) / 10);
}

std::string interrupted_message(std::string_view id_json, double sent_ms, std::string_view reason,
                                const std::optional<std::pair<double, double>>& barge_in) {
  const double ms = std::round(sent_ms * 10) / 10;
  if (!barge_in) {
    return fmt::format(R"({{"type":"interrupted","id":{},"sent_ms":{},"reason":"{}"}})", id_json, ms, reason);
  }
  return fmt::format(R"({{"type":"interrupted","id":{},"sent_ms":{},"reason":"{}","speech_start":{},"at":{}}})",
                     id_json, ms, reason, barge_in->first, barge_in->second);
}

std::string mark_message(std::string_view name_json) {
  return fmt::format(R"({{"type":"mark","name":{}}})", name_json);
}

std::string speak_error_message(std::string_view code, std::string_view message, std::string_view id_json) {
  OrderedJson j;
  j["type"] = "error";
  j["code"] = std::string(code);
  j["message"] = std::string(message);
  std::string out = dump(j);
  if (!id_json.empty()) out.insert(out.size() - 1, fmt::format(R"(,"id":{})", id_json));
  return out;
}
}  // namespace brisvox::server
