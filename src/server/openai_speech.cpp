#include "server/openai_speech.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>

#include "brisvox/audio/wav_writer.h"
#include "server/openai_api.h"
#include "server/peer_json.h"
#include "server/tts_params.h"

namespace brisvox::server {
namespace {

// OpenAI's stock voices: every one is the server's voice (brisvox serves one Piper voice).
constexpr std::array<std::string_view, 13> kStockVoices = {"alloy", "ash",  "ballad",  "coral", "echo",
                                                           "fable", "onyx", "nova",    "sage",  "shimmer",
                                                           "verse", "marin", "cedar"};

[[noreturn]] void refuse(int status, std::string message, std::string param, std::string code = "invalid_value") {
  throw OpenAiError{status, std::move(message), std::move(param), std::move(code)};
}

std::string cut(const std::string& s) { return s.size() > 40 ? s.substr(0, 40) + "..." : s; }

}  // namespace

std::string openai_speech_to_tts_body(const EngineConfig& engine, std::string_view body) {
  PeerJson parsed = parse_peer_json(body);
  if (!parsed.error.empty()) refuse(400, fmt::format("the body is not valid JSON: {}", parsed.error), "", "");
  const nlohmann::json& j = parsed.value;
  if (!j.is_object()) refuse(400, "the body must be a JSON object such as {\"model\":\"tts-1\",...}", "", "");
  auto string_field = [&](const char* key) -> std::optional<std::string> {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    if (!j[key].is_string()) refuse(400, fmt::format("'{}' must be a string", key), key);
    return j[key].get<std::string>();
  };
  const std::optional<TtsVoice> voice = server_voice(engine);
  const auto model = string_field("model");
  if (!model || model->empty()) refuse(400, "you must provide a model parameter (tts-1 or a model of GET /v1/models)", "model", "");
  if (!map_model_name(engine, ModelFamily::kPiperTts, *model)) {
    refuse(404,
           fmt::format("the model '{}' does not exist on this server: use tts-1 or a model of GET /v1/models{}",
                       cut(*model), voice ? "" : " (start the server with --tts-voice)"),
           "model", "model_not_found");
  }
  const auto input = string_field("input");
  if (!input) refuse(400, "you must provide the text to speak as 'input'", "input", "");
  const auto voice_name = string_field("voice");
  if (!voice_name || voice_name->empty()) refuse(400, "you must provide a voice (alloy, ... or this server's voice)", "voice", "");
  bool stock = false;
  for (std::string_view v : kStockVoices) stock = stock || v == *voice_name;
  if (!stock && !voice_matches(*voice_name, *voice)) {
    refuse(400,
           fmt::format("voice '{}' is not offered: use one of OpenAI's (alloy, ash, coral, echo, fable, onyx, nova, "
                       "sage, shimmer, ...) or '{}', all this server's one voice",
                       cut(*voice_name), voice->name),
           "voice");
  }
  // OpenAI's default is mp3; brisvox's, wav (no encoding to undo for most of its users).
  const std::string format = string_field("response_format").value_or("wav");
  if (format != "pcm" && !parse_audio_container(format)) {
    refuse(400,
           fmt::format("response_format '{}' is not offered by this server{}; use mp3, opus, flac, wav or pcm (24 kHz "
                       "16-bit mono little-endian)",
                       cut(format), format == "aac" ? ": it has no AAC encoder (none permissively licensed in Debian)" : ""),
           "response_format");
  }
  const std::string stream_format = string_field("stream_format").value_or("audio");
  if (stream_format != "audio" && stream_format != "sse") {
    refuse(400, fmt::format("Invalid value: '{}'. Supported values are: 'audio' and 'sse'.", cut(stream_format)),
           "stream_format");
  }
  double speed = 1.0;
  if (j.contains("speed") && !j["speed"].is_null()) {
    if (!j["speed"].is_number()) refuse(400, "'speed' must be a number from 0.25 to 4.0", "speed");
    speed = j["speed"].get<double>();
    if (!(speed >= 0.25 && speed <= 4.0)) refuse(400, fmt::format("speed {} is not from 0.25 to 4.0", speed), "speed");
  }
  nlohmann::json tts;
  tts["text"] = *input;
  tts["format"] = format == "pcm" ? "raw" : format;
  if (stream_format == "sse") tts["stream_format"] = "sse";
  tts["sample_rate"] = kOpenAiSpeechRateHz;
  if (speed != 1.0) tts["length_scale"] = 1.0 / speed;
  return tts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace brisvox::server
