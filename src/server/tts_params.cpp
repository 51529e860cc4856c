#include "server/tts_params.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>

#include "brisvox/error.h"
#include "server/query_params.h"
#include "server/request_tag.h"
#include "server/peer_json.h"

namespace brisvox::server {
namespace {

using Json = nlohmann::json;

[[noreturn]] void bad_tts_parameter(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, message); }

float number_of(const std::string& key, const Json& v) {
  if (!v.is_number()) bad_tts_parameter(fmt::format("\"{}\" must be a number", key));
  const double d = v.get<double>();
  if (!std::isfinite(d)) bad_tts_parameter(fmt::format("\"{}\" must be finite", key));
  return static_cast<float>(d);
}

bool bool_of(const std::string& key, const Json& v) {
  if (!v.is_boolean()) bad_tts_parameter(fmt::format("\"{}\" must be true or false", key));
  return v.get<bool>();
}

int int_of(const std::string& key, const Json& v, int lo, int hi) {
  if (!v.is_number_integer()) bad_tts_parameter(fmt::format("\"{}\" must be an integer", key));
  const auto i = v.get<long long>();
  if (i < lo || i > hi) bad_tts_parameter(fmt::format("\"{}\" must be {} to {}, got {}", key, lo, hi, i));
  return static_cast<int>(i);
}

float query_number(const std::string& key, const std::string& value) {
  try {
    std::size_t used = 0;
    const double d = std::stod(value, &used);
    if (used != value.size() || !std::isfinite(d)) throw std::invalid_argument(value);
    return static_cast<float>(d);
  } catch (const std::exception&) {
    bad_tts_parameter(fmt::format("query key '{}' must be a number, got '{}'", key, value));
  }
}

int query_int(const std::string& key, const std::string& value, int lo, int hi) {
  try {
    std::size_t used = 0;
    const long long i = std::stoll(value, &used);
    if (used != value.size()) throw std::invalid_argument(value);
    if (i < lo || i > hi) bad_tts_parameter(fmt::format("query key '{}' must be {} to {}, got {}", key, lo, hi, i));
    return static_cast<int>(i);
  } catch (const Error&) {
    throw;
  } catch (const std::exception&) {
    bad_tts_parameter(fmt::format("query key '{}' must be an integer, got '{}'", key, value));
  }
}

}  // namespace

std::optional<TtsVoice> server_voice(const EngineConfig& engine) {
  for (const ModelSpec& m : engine.models) {
    if (m.family != ModelFamily::kPiperTts) continue;
    return TtsVoice{m.name, std::filesystem::path(m.path).stem().string()};
  }
  return std::nullopt;
}

bool voice_matches(std::string_view requested, const TtsVoice& voice) {
  return requested.empty() || requested == voice.model || requested == voice.name;
}

TtsHttpRequest parse_tts_body(std::string_view body) {
  PeerJson parsed = parse_peer_json(body);
  if (!parsed.error.empty()) {
    bad_tts_parameter(fmt::format("the body is not valid JSON (UTF-8): {}; send an object such as {{\"text\": \"Hello.\"}}",
                     parsed.error));
  }
  const Json j = std::move(parsed.value);
  if (!j.is_object()) bad_tts_parameter("the body must be a JSON object such as {\"text\": \"Hello.\"}");
  TtsHttpRequest r;
  bool has_text = false;
  std::optional<bool> fast_start;
  for (const auto& [key, v] : j.items()) {
    if (key == "text") {
      if (!v.is_string()) bad_tts_parameter("\"text\" must be a string");
      r.text = v.get<std::string>();
      has_text = true;
    } else if (key == "voice") {
      if (!v.is_string()) bad_tts_parameter("\"voice\" must be a string");
      r.options.voice = v.get<std::string>();
    } else if (key == "sample_rate") {
      r.options.speech.sample_rate_hz = int_of(key, v, 0, 768000);
    } else if (key == "format") {
      const std::optional<AudioContainer> container =
          v.is_string() ? parse_audio_container(v.get_ref<const std::string&>()) : std::nullopt;
      if (!v.is_string() || (v != "raw" && !container)) {
        bad_tts_parameter("\"format\" must be \"wav\", \"flac\", \"mp3\", \"opus\" or \"raw\"");
      }
      r.options.raw = v == "raw";
      if (container) r.options.container = *container;
    } else if (key == "length_scale") {
      r.options.speech.voice_options[key] = number_of(key, v);
    } else if (key == "noise_scale") {
      r.options.speech.voice_options[key] = number_of(key, v);
    } else if (key == "noise_w_scale") {
      r.options.speech.voice_options[key] = number_of(key, v);
    } else if (key == "speaker_id") {
      r.options.speech.voice_options[key] = int_of(key, v, 0, 1 << 20);
    } else if (key == "volume") {
      r.options.speech.volume = number_of(key, v);
    } else if (key == "fast_start") {
      fast_start = bool_of(key, v);
    } else if (key == "stream_format") {
      if (!v.is_string() || (v != "audio" && v != "sse")) bad_tts_parameter("\"stream_format\" must be \"audio\" or \"sse\"");
      r.options.sse = v == "sse";
    } else {
      bad_tts_parameter(fmt::format("unknown key \"{}\" (text, voice, sample_rate, format, stream_format, length_scale, "
                       "noise_scale, noise_w_scale, speaker_id, volume, fast_start)",
                       key));
    }
  }
  if (!has_text) bad_tts_parameter("the body has no \"text\"");
  // A WAV answer is sent whole: Piper's sentences exactly. Chunked raw audio is streamed: the
  // first clause alone, so that the first bytes come sooner.
  r.options.speech.fast_start = fast_start.value_or(r.options.raw);
  return r;
}

bool parse_voice_setting(const std::string& key, const std::string& value, TtsOptions& o) {
  if (key == "voice") {
    o.voice = value;
  } else if (key == "length_scale" || key == "noise_scale" || key == "noise_w_scale") {
    o.speech.voice_options[key] = query_number(key, value);
  } else if (key == "speaker_id") {
    o.speech.voice_options[key] = query_int(key, value, 0, 1 << 20);
  } else if (key == "volume") {
    o.speech.volume = query_number(key, value);
  } else if (key == "fast_start") {
    o.speech.fast_start = parse_query_bool(key, value);
  } else {
    return false;
  }
  return true;
}

void check_tts_post_query(std::string_view query) {
  for (const auto& [key, value] : parse_query_string(query)) {
    if (key == "tag") {
      parse_tag(value);
    } else if (key != "token") {
      bad_tts_parameter(fmt::format("unknown query key '{}': POST /v1/tts takes its options in the JSON body; its query may "
                       "carry only tag and token",
                       key));
    }
  }
}

TtsOptions parse_tts_query(std::string_view query) {
  TtsOptions o;
  for (const auto& [key, value] : parse_query_string(query)) {
    if (parse_voice_setting(key, value, o)) continue;
    if (key == "sample_rate") {
      o.speech.sample_rate_hz = query_int(key, value, 0, 768000);
    } else if (key == "tag") {
      o.tag = parse_tag(value);
    } else if (key != "token") {
      bad_tts_parameter(fmt::format("unknown query key '{}' (voice, sample_rate, length_scale, noise_scale, noise_w_scale, "
                       "speaker_id, volume, fast_start, tag, token)",
                       key));
    }
  }
  return o;
}

TtsMessage parse_tts_message(std::string_view json_text) {
  TtsMessage m;
  const Json j = parse_peer_json(json_text).value;
  if (j.is_discarded()) {
    m.error = "a message must be JSON: {\"type\":\"speak\",\"text\":\"...\"}, {\"type\":\"cancel\"} or {\"type\":\"close\"}";
    return m;
  }
  const auto type = j.is_object() ? j.find("type") : j.end();
  if (!j.is_object() || type == j.end() || !type->is_string()) {
    m.error = "a message must be a JSON object with a \"type\": speak, cancel or close";
    return m;
  }
  if (*type == "speak") {
    const auto text = j.find("text");
    if (text == j.end() || !text->is_string()) {
      m.error = "a speak message needs \"text\" (a string)";
      return m;
    }
    m.type = TtsMessageType::kSpeak;
    m.text = text->get<std::string>();
  } else if (*type == "cancel") {
    m.type = TtsMessageType::kCancel;
  } else if (*type == "close") {
    m.type = TtsMessageType::kClose;
  } else {
    m.error = fmt::format("unknown message type '{}': speak, cancel or close", type->get<std::string>());
    return m;
  }
  m.ok = true;
  return m;
}

}  // namespace brisvox::server
