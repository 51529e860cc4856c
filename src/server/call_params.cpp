#include "server/call_params.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "brisvox/error.h"
#include "server/peer_json.h"

namespace brisvox::server {
namespace {

[[noreturn]] void bad_call_parameter(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, message); }

constexpr std::string_view kCallKeys =
    "voice, length_scale, noise_scale, noise_w_scale, speaker_id, volume, fast_start, barge_in, barge_in_min_ms, "
    "barge_in_on, playout_lead_ms";
constexpr std::size_t kMaxIdBytes = 256;

int int_in(const std::string& key, const std::string& value, int lo, int hi) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used == value.size() && v >= lo && v <= hi) return static_cast<int>(v);
  } catch (const std::exception&) {
  }
  bad_call_parameter(fmt::format("query key '{}' must be an integer {} to {}, got '{}'", key, lo, hi, value));
}

}  // namespace

CallRequest parse_call_request(std::string_view query) {
  CallRequest r;
  QueryParams caller;
  for (auto& [key, value] : parse_query_string(query)) {
    if (parse_voice_setting(key, value, r.voice)) continue;
    if (key == "barge_in") {
      r.barge_in.enabled = parse_query_bool(key, value);
    } else if (key == "barge_in_min_ms") {
      r.barge_in.min_speech_ms = int_in(key, value, 32, 10000);
    } else if (key == "barge_in_on") {
      if (value != "speech" && value != "turn_end") {
        bad_call_parameter(fmt::format("query key 'barge_in_on' must be speech or turn_end, got '{}'", value));
      }
      r.barge_in.on_turn_end = value == "turn_end";
    } else if (key == "playout_lead_ms") {
      r.playout_lead_ms = int_in(key, value, 0, 60000);
    } else {
      caller.emplace(key, std::move(value));
    }
  }
  r.audio = parse_audio_request(caller, AudioEndpoint::kCall, kCallKeys);
  r.voice.tag = r.audio.tag;
  if (r.barge_in.enabled && r.barge_in.on_turn_end && !r.audio.stream.turn) {
    bad_call_parameter("barge_in_on=turn_end interrupts when the caller's turn ends: add events=turn");
  }
  return r;
}

CallMessage parse_call_message(std::string_view json_text) {
  using Json = nlohmann::json;
  CallMessage m;
  const Json j = parse_peer_json(json_text).value;
  if (j.is_discarded()) {
    m.error = "a message must be JSON: {\"type\":\"speak\",\"text\":\"...\"}, {\"type\":\"cancel\"}, "
              "{\"type\":\"mark\",\"name\":\"...\"} or {\"type\":\"close\"}";
    return m;
  }
  const auto type = j.is_object() ? j.find("type") : j.end();
  if (!j.is_object() || type == j.end() || !type->is_string()) {
    m.error = "a message must be a JSON object with a \"type\": speak, cancel, mark or close";
    return m;
  }
  const std::string t = type->get<std::string>();
  if (t == "speak") {
    const auto text = j.find("text");
    if (text == j.end() || !text->is_string()) {
      m.error = "a speak message needs \"text\" (a string)";
      return m;
    }
    m.type = CallMessageType::kSpeak;
    m.text = text->get<std::string>();
    if (const auto id = j.find("id"); id != j.end()) {
      const bool short_string = id->is_string() && id->get_ref<const std::string&>().size() <= kMaxIdBytes;
      if (!short_string && !id->is_number_integer()) {
        m.error = fmt::format("a speak message's \"id\" must be a string of at most {} bytes or an integer", kMaxIdBytes);
        return m;
      }
      m.id = id->dump(-1, ' ', false, Json::error_handler_t::replace);
    }
  } else if (t == "cancel") {
    m.type = CallMessageType::kCancel;
  } else if (t == "mark") {
    const auto name = j.find("name");
    if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().size() > kMaxIdBytes) {
      m.error = fmt::format("a mark message needs \"name\" (a string of at most {} bytes)", kMaxIdBytes);
      return m;
    }
    m.type = CallMessageType::kMark;
    m.name = name->get<std::string>();
  } else if (t == "close") {
    m.type = CallMessageType::kClose;
  } else {
    m.error = fmt::format("unknown message type '{}': speak, cancel, mark or close", t);
    return m;
  }
  m.ok = true;
  return m;
}

}  // namespace brisvox::server
