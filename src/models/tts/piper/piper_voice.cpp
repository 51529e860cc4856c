#include "brisvox/models/tts/piper_voice.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "brisvox/error.h"

namespace brisvox {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kBadModel, fmt::format("'{}' is not a Piper voice config: {}", path, what));
}

const json& field(const std::string& path, const json& obj, const char* name, const char* where) {
  const auto it = obj.find(name);
  if (it == obj.end()) bad(path, fmt::format("{} has no \"{}\"", where, name));
  return *it;
}

template <typename T>
T number(const std::string& path, const json& v, const char* name) {
  if (!v.is_number()) bad(path, fmt::format("\"{}\" is not a number", name));
  return v.get<T>();
}

}  // namespace

PiperVoiceConfig load_piper_voice_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::kIo, fmt::format("cannot open Piper voice config '{}' (a voice is VOICE.onnx with "
                                            "VOICE.onnx.json beside it)",
                                            path));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  json j;
  try {
    j = json::parse(buf.str());
  } catch (const json::exception& e) {
    bad(path, fmt::format("invalid JSON ({})", e.what()));
  }
  if (!j.is_object()) bad(path, "the top level is not an object");

  PiperVoiceConfig c;
  c.config_path = path;
  try {
    c.sample_rate_hz = number<int>(path, field(path, field(path, j, "audio", "the file"), "sample_rate", "\"audio\""),
                                   "audio.sample_rate");
    if (c.sample_rate_hz < 1000 || c.sample_rate_hz > 192000) {
      bad(path, fmt::format("audio.sample_rate {} is out of range", c.sample_rate_hz));
    }
    c.phoneme_type = j.value("phoneme_type", std::string("espeak"));
    const auto& espeak = j.find("espeak");
    if (espeak != j.end() && espeak->is_object() && espeak->contains("voice")) {
      c.espeak_voice = espeak->at("voice").get<std::string>();
    }
    c.num_symbols = number<int>(path, field(path, j, "num_symbols", "the file"), "num_symbols");
    c.num_speakers = number<int>(path, field(path, j, "num_speakers", "the file"), "num_speakers");
    if (c.num_speakers < 1) bad(path, fmt::format("num_speakers {} is < 1", c.num_speakers));
    if (const auto it = j.find("speaker_id_map"); it != j.end() && it->is_object()) {
      for (const auto& [name, id] : it->items()) c.speaker_id_map[name] = number<int>(path, id, "speaker_id_map");
    }
    c.default_speaker_id = j.value("default_speaker_id", 0);
    if (const auto it = j.find("inference"); it != j.end() && it->is_object()) {
      c.scales.noise_scale = it->value("noise_scale", c.scales.noise_scale);
      c.scales.length_scale = it->value("length_scale", c.scales.length_scale);
      c.scales.noise_w_scale = it->value("noise_w", c.scales.noise_w_scale);
    }
    c.hop_length = j.value("hop_length", 256);
    if (c.hop_length < 1) bad(path, "hop_length < 1");
    const json& map = field(path, j, "phoneme_id_map", "the file");
    if (!map.is_object()) bad(path, "\"phoneme_id_map\" is not an object");
    for (const auto& [phoneme, ids] : map.items()) {
      if (!ids.is_array() || ids.empty()) bad(path, fmt::format("phoneme_id_map[\"{}\"] is not a list of ids", phoneme));
      auto& out = c.phoneme_id_map[phoneme];
      for (const auto& id : ids) {
        const auto v = number<std::int64_t>(path, id, "phoneme_id_map");
        if (v < 0 || (c.num_symbols > 0 && v >= c.num_symbols)) {
          bad(path, fmt::format("phoneme_id_map[\"{}\"] has id {} outside [0, num_symbols {})", phoneme, v, c.num_symbols));
        }
        out.push_back(v);
      }
    }
    for (const char* required : {"^", "$", "_"}) {
      if (c.phoneme_id_map.count(required) == 0) bad(path, fmt::format("phoneme_id_map has no \"{}\"", required));
    }
    if (const auto it = j.find("vowel_clusters"); it != j.end() && it->is_array()) {
      for (const auto& cluster : *it) c.vowel_clusters.push_back(cluster.get<std::vector<std::string>>());
    }
  } catch (const json::exception& e) {
    bad(path, fmt::format("a field has the wrong type ({})", e.what()));
  }
  if (c.phoneme_type != "espeak") {
    throw Error(ErrorCode::kModelMismatch,
                fmt::format("Piper voice '{}' uses phoneme_type \"{}\"; brisvox supports \"espeak\" voices only", path,
                            c.phoneme_type));
  }
  if (c.espeak_voice.empty()) bad(path, "an espeak voice needs \"espeak\": {\"voice\": ...}");
  return c;
}

PhonemeIds phonemes_to_ids(const std::vector<std::string>& phonemes, const PiperVoiceConfig& voice) {
  PhonemeIds out;
  const auto& map = voice.phoneme_id_map;
  const auto& pad = map.at("_");
  const auto& bos = map.at("^");
  const auto& eos = map.at("$");
  out.ids.reserve(2 * phonemes.size() + 3);
  out.ids.insert(out.ids.end(), bos.begin(), bos.end());
  out.ids.insert(out.ids.end(), pad.begin(), pad.end());
  for (const auto& p : phonemes) {
    const auto it = map.find(p);
    if (it == map.end()) {
      out.missing.push_back(p);
      continue;
    }
    out.ids.insert(out.ids.end(), it->second.begin(), it->second.end());
    out.ids.insert(out.ids.end(), pad.begin(), pad.end());
  }
  out.ids.insert(out.ids.end(), eos.begin(), eos.end());
  return out;
}

}  // namespace brisvox
