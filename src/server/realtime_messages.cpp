#include "server/realtime_messages.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "server/base64.h"
#include "server/peer_json.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

std::string dump(const OrderedJson& j) { return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace); }

RealtimeProblem invalid_value(std::string param, std::string message) {
  return RealtimeProblem{"invalid_value", std::move(message), std::move(param)};
}

// An optional field of `obj`: null when absent.
const Json* field(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::optional<RealtimeProblem> read_integer_ms(const Json& obj, const char* key, int max, int& out,
                                               const std::string& where) {
  const Json* v = field(obj, key);
  if (v == nullptr) return std::nullopt;
  const std::string param = where + "." + key;
  if (!v->is_number_integer() && !(v->is_number_float() && std::trunc(v->get<double>()) == v->get<double>())) {
    return invalid_value(param, fmt::format("Invalid type for '{}': expected an integer number of milliseconds.", param));
  }
  const double ms = v->get<double>();
  if (ms < 0 || ms > max) {
    return invalid_value(param, fmt::format("Invalid value for '{}': {} is outside 0 to {}.", param, ms, max));
  }
  out = static_cast<int>(ms);
  return std::nullopt;
}

std::optional<RealtimeProblem> read_format(const Json& format, RealtimeSession& s) {
  const std::string where = "session.audio.input.format";
  if (!format.is_object()) return invalid_value(where, fmt::format("'{}' must be an object such as {{\"type\": \"audio/pcm\", \"rate\": 24000}}.", where));
  std::string type;
  if (const Json* t = field(format, "type")) {
    if (!t->is_string()) return invalid_value(where + ".type", fmt::format("'{}.type' must be a string.", where));
    type = t->get<std::string>();
  } else {
    type = "audio/pcm";
  }
  if (type == "audio/pcm") {
    if (const Json* rate = field(format, "rate"); rate != nullptr && !(rate->is_number() && rate->get<double>() == 24000)) {
      return invalid_value(where + ".rate", "Invalid value for 'session.audio.input.format.rate': audio/pcm is 24000 Hz only.");
    }
    s.encoding = SampleEncoding::kPcmS16le;
    s.sample_rate_hz = 24000;
  } else if (type == "audio/pcmu" || type == "audio/pcma") {
    s.encoding = type == "audio/pcmu" ? SampleEncoding::kMulaw : SampleEncoding::kAlaw;
    s.sample_rate_hz = 8000;
  } else {
    return invalid_value(where + ".type",
                         fmt::format("Invalid value: {}. Supported values are: 'audio/pcm', 'audio/pcmu' and 'audio/pcma'.",
                                     json_quoted(type)));
  }
  return std::nullopt;
}

std::optional<RealtimeProblem> read_turn_detection(const Json& td, RealtimeSession& s) {
  const std::string where = "session.audio.input.turn_detection";
  if (td.is_null()) {
    s.turn_detection.reset();
    return std::nullopt;
  }
  if (!td.is_object()) return invalid_value(where, fmt::format("'{}' must be an object or null.", where));
  const Json* type = field(td, "type");
  if (type == nullptr || !type->is_string()) {
    return invalid_value(where + ".type", fmt::format("'{}.type' is required: \"server_vad\".", where));
  }
  if (*type != "server_vad" && *type != "semantic_vad") {
    return invalid_value(where + ".type",
                         fmt::format("Invalid value: {}. Supported values are: 'server_vad' and 'semantic_vad'.",
                                     json_quoted(type->get<std::string>())));
  }
  RealtimeVad vad = s.turn_detection.value_or(RealtimeVad{});
  if (*type == "semantic_vad") {
    vad.type = RealtimeVad::Type::kSemanticVad;
    if (const Json* e = field(td, "eagerness")) {
      if (!e->is_string() || (*e != "low" && *e != "medium" && *e != "high" && *e != "auto")) {
        return invalid_value(where + ".eagerness", "Invalid value for 'eagerness'. Supported values are: 'low', "
                                                   "'medium', 'high' and 'auto'.");
      }
      vad.eagerness = e->get<std::string>();
    }
    s.turn_detection = vad;
    return std::nullopt;
  }
  vad.type = RealtimeVad::Type::kServerVad;
  if (const Json* t = field(td, "threshold")) {
    if (!t->is_number() || !(t->get<double>() >= 0.0 && t->get<double>() <= 1.0)) {
      return invalid_value(where + ".threshold", fmt::format("'{}.threshold' must be a number from 0.0 to 1.0.", where));
    }
    vad.threshold = t->get<double>();
  }
  if (auto p = read_integer_ms(td, "prefix_padding_ms", kMaxRealtimePaddingMs, vad.prefix_padding_ms, where)) return p;
  if (auto p = read_integer_ms(td, "silence_duration_ms", kMaxRealtimeSilenceMs, vad.silence_duration_ms, where)) {
    return p;
  }
  s.turn_detection = vad;
  return std::nullopt;
}

std::optional<RealtimeProblem> read_short_string(const Json& obj, const char* key, std::size_t max, std::string& out,
                                                 const std::string& where) {
  const Json* v = field(obj, key);
  if (v == nullptr) return std::nullopt;
  const std::string param = where + "." + key;
  if (v->is_null()) {
    out.clear();
    return std::nullopt;
  }
  if (!v->is_string()) return invalid_value(param, fmt::format("'{}' must be a string.", param));
  if (v->get_ref<const std::string&>().size() > max) {
    return invalid_value(param, fmt::format("'{}' is longer than {} bytes.", param, max));
  }
  out = v->get<std::string>();
  return std::nullopt;
}

std::optional<RealtimeProblem> read_transcription(const Json& tr, RealtimeSession& s) {
  const std::string where = "session.audio.input.transcription";
  if (tr.is_null()) {
    s.transcription.reset();
    return std::nullopt;
  }
  if (!tr.is_object()) return invalid_value(where, fmt::format("'{}' must be an object or null.", where));
  RealtimeTranscription t = s.transcription.value_or(RealtimeTranscription{});
  if (auto p = read_short_string(tr, "model", kMaxRealtimeModelBytes, t.model, where)) return p;
  if (auto p = read_short_string(tr, "language", kMaxRealtimeLanguageBytes, t.language, where)) return p;
  if (auto p = read_short_string(tr, "prompt", kMaxRealtimePromptBytes, t.prompt, where)) return p;
  if (t.model.empty()) return invalid_value(where + ".model", fmt::format("'{}.model' is required.", where));
  s.transcription = std::move(t);
  return std::nullopt;
}

std::optional<RealtimeProblem> read_session(const Json& j, RealtimeSession& s) {
  const Json* session = field(j, "session");
  if (session == nullptr || !session->is_object()) {
    return RealtimeProblem{"missing_required_parameter", "session.update needs a 'session' object.", "session"};
  }
  if (const Json* type = field(*session, "type"); type != nullptr && *type != "transcription") {
    return invalid_value("session.type",
                         "brisvox serves transcription sessions: session.type must be \"transcription\" "
                         "(connect with ?intent=transcription).");
  }
  const Json* audio = field(*session, "audio");
  if (audio == nullptr || audio->is_null()) return std::nullopt;
  if (!audio->is_object()) return invalid_value("session.audio", "'session.audio' must be an object.");
  const Json* input = field(*audio, "input");
  if (input == nullptr || input->is_null()) return std::nullopt;
  if (!input->is_object()) return invalid_value("session.audio.input", "'session.audio.input' must be an object.");
  if (const Json* format = field(*input, "format"); format != nullptr && !format->is_null()) {
    if (auto p = read_format(*format, s)) return p;
  }
  if (const Json* td = field(*input, "turn_detection")) {
    if (auto p = read_turn_detection(*td, s)) return p;
  }
  if (const Json* tr = field(*input, "transcription")) {
    if (auto p = read_transcription(*tr, s)) return p;
  }
  // noise_reduction: brisvox filters nothing; session.updated says so (null).
  return std::nullopt;
}

}  // namespace

RealtimeClientEvent parse_realtime_event(std::string_view json_text, const RealtimeSession& current) {
  RealtimeClientEvent ev;
  PeerJson parsed = parse_peer_json(json_text);
  if (!parsed.error.empty()) {
    // nlohmann's message quotes the bytes it stopped at, which need not be UTF-8.
    ev.problem = RealtimeProblem{
        "invalid_json", printable(fmt::format("The message is not valid JSON: {}", parsed.error.substr(0, 200))), ""};
    return ev;
  }
  const Json& j = parsed.value;
  if (!j.is_object()) {
    ev.problem = RealtimeProblem{"invalid_json", "A client event must be a JSON object.", ""};
    return ev;
  }
  if (const Json* id = field(j, "event_id"); id != nullptr && id->is_string() &&
                                             id->get_ref<const std::string&>().size() <= kMaxRealtimeIdBytes) {
    ev.event_id = id->get<std::string>();
  }
  const Json* type = field(j, "type");
  if (type == nullptr || !type->is_string()) {
    ev.problem = RealtimeProblem{"missing_required_parameter", "A client event needs a 'type'.", "type"};
    return ev;
  }
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "session.update") {
    ev.type = RealtimeClientType::kSessionUpdate;
    ev.session = current;
    ev.problem = read_session(j, ev.session);
  } else if (t == "input_audio_buffer.append") {
    ev.type = RealtimeClientType::kAppend;
    const Json* audio = field(j, "audio");
    if (audio == nullptr || !audio->is_string()) {
      ev.problem = RealtimeProblem{"missing_required_parameter",
                                   "input_audio_buffer.append needs 'audio', the audio bytes in base64.", "audio"};
      return ev;
    }
    auto bytes = base64_decode(audio->get_ref<const std::string&>());
    if (!bytes) {
      ev.problem = invalid_value("audio", "'audio' is not valid base64.");
      return ev;
    }
    ev.audio = std::move(*bytes);
  } else if (t == "input_audio_buffer.commit") {
    ev.type = RealtimeClientType::kCommit;
  } else if (t == "input_audio_buffer.clear") {
    ev.type = RealtimeClientType::kClear;
  } else {
    ev.problem = invalid_value(
        "type", fmt::format("Invalid value: {}. A transcription session takes 'session.update', "
                            "'input_audio_buffer.append', 'input_audio_buffer.commit' and 'input_audio_buffer.clear'.",
                            json_quoted(t.size() > 64 ? t.substr(0, 64) + "..." : t)));
  }
  return ev;
}

// --- server events --------------------------------------------------------------------------------

namespace {

OrderedJson session_object(const RealtimeSession& s, std::string_view session_id) {
  OrderedJson format;
  switch (s.encoding) {
    case SampleEncoding::kMulaw: format = {{"type", "audio/pcmu"}}; break;
    case SampleEncoding::kAlaw: format = {{"type", "audio/pcma"}}; break;
    default: format = {{"type", "audio/pcm"}, {"rate", s.sample_rate_hz}}; break;
  }
  OrderedJson transcription = nullptr;
  if (s.transcription) {
    transcription = {{"model", s.transcription->model},
                     {"language", s.transcription->language.empty() ? OrderedJson(nullptr)
                                                                    : OrderedJson(s.transcription->language)},
                     {"prompt", s.transcription->prompt}};
  }
  OrderedJson turn = nullptr;
  if (s.turn_detection && s.turn_detection->type == RealtimeVad::Type::kSemanticVad) {
    turn = {{"type", "semantic_vad"}, {"eagerness", s.turn_detection->eagerness}};
  } else if (s.turn_detection) {
    turn = {{"type", "server_vad"},
            {"threshold", s.turn_detection->threshold},
            {"prefix_padding_ms", s.turn_detection->prefix_padding_ms},
            {"silence_duration_ms", s.turn_detection->silence_duration_ms}};
  }
  return OrderedJson{{"type", "transcription"},
                     {"object", "realtime.session"},
                     {"id", session_id},
                     {"audio",
                      {{"input",
                        {{"format", format},
                         {"noise_reduction", nullptr},
                         {"transcription", transcription},
                         {"turn_detection", turn}}}}},
                     {"include", nullptr}};
}

OrderedJson head(std::string_view type, std::string_view event_id) {
  return OrderedJson{{"type", type}, {"event_id", event_id}};
}

OrderedJson null_or(std::string_view s) { return s.empty() ? OrderedJson(nullptr) : OrderedJson(s); }

}  // namespace

std::string realtime_session_json(const RealtimeSession& s, std::string_view session_id) {
  return dump(session_object(s, session_id));
}

std::string realtime_session_event(std::string_view type, std::string_view event_id, const RealtimeSession& s,
                                   std::string_view session_id) {
  OrderedJson j = head(type, event_id);
  j["session"] = session_object(s, session_id);
  return dump(j);
}

std::string realtime_speech_started(std::string_view event_id, long long audio_start_ms, std::string_view item_id) {
  OrderedJson j = head("input_audio_buffer.speech_started", event_id);
  j["audio_start_ms"] = audio_start_ms;
  j["item_id"] = item_id;
  return dump(j);
}

std::string realtime_speech_stopped(std::string_view event_id, long long audio_end_ms, std::string_view item_id) {
  OrderedJson j = head("input_audio_buffer.speech_stopped", event_id);
  j["audio_end_ms"] = audio_end_ms;
  j["item_id"] = item_id;
  return dump(j);
}

std::string realtime_committed(std::string_view event_id, std::string_view item_id,
                               std::string_view previous_item_id) {
  OrderedJson j = head("input_audio_buffer.committed", event_id);
  j["previous_item_id"] = null_or(previous_item_id);
  j["item_id"] = item_id;
  return dump(j);
}

std::string realtime_cleared(std::string_view event_id) { return dump(head("input_audio_buffer.cleared", event_id)); }

std::string realtime_transcription_delta(std::string_view event_id, std::string_view item_id,
                                         std::string_view delta) {
  OrderedJson j = head("conversation.item.input_audio_transcription.delta", event_id);
  j["item_id"] = item_id;
  j["content_index"] = 0;
  j["delta"] = delta;
  return dump(j);
}

std::string realtime_transcription_completed(std::string_view event_id, std::string_view item_id,
                                             std::string_view transcript, double seconds) {
  OrderedJson j = head("conversation.item.input_audio_transcription.completed", event_id);
  j["item_id"] = item_id;
  j["content_index"] = 0;
  j["transcript"] = transcript;
  j["usage"] = {{"type", "duration"}, {"seconds", std::round(seconds * 1000.0) / 1000.0}};
  return dump(j);
}

std::string realtime_transcription_failed(std::string_view event_id, std::string_view item_id,
                                          std::string_view code, std::string_view message) {
  OrderedJson j = head("conversation.item.input_audio_transcription.failed", event_id);
  j["item_id"] = item_id;
  j["content_index"] = 0;
  j["error"] = {{"type", "transcription_error"}, {"code", null_or(code)}, {"message", message}, {"param", nullptr}};
  return dump(j);
}

std::string realtime_error(std::string_view event_id, std::string_view type, const RealtimeProblem& problem,
                           std::string_view client_event_id) {
  OrderedJson j = head("error", event_id);
  j["error"] = {{"type", type},
                {"code", null_or(problem.code)},
                {"message", problem.message},
                {"param", null_or(problem.param)},
                {"event_id", null_or(client_event_id)}};
  return dump(j);
}

}  // namespace brisvox::server
