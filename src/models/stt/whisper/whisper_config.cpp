#include "brisvox/models/stt/whisper_config.h"

#include <fmt/format.h>

#include "brisvox/error.h"

namespace brisvox {

int WhisperConfig::language_token(std::string_view code) const {
  for (const auto& l : languages) {
    if (l.code == code) return l.token;
  }
  return -1;
}

void WhisperConfig::validate(const std::string& source) const {
  const auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kBadModel, fmt::format("Whisper model '{}': {}", source, what));
  };
  const WhisperDims& d = dims;
  const std::pair<const char*, int> positive[] = {
      {"n_mels", d.n_mels},           {"n_audio_ctx", d.n_audio_ctx},   {"n_audio_state", d.n_audio_state},
      {"n_audio_head", d.n_audio_head}, {"n_audio_layer", d.n_audio_layer}, {"n_vocab", d.n_vocab},
      {"n_text_ctx", d.n_text_ctx},   {"n_text_state", d.n_text_state}, {"n_text_head", d.n_text_head},
      {"n_text_layer", d.n_text_layer}};
  for (const auto& [name, value] : positive) {
    if (value <= 0) fail(fmt::format("dimension {} is {}, expected a positive number", name, value));
  }
  if (d.n_text_state % d.n_text_head != 0) {
    fail(fmt::format("decoder width {} is not a multiple of its {} heads", d.n_text_state, d.n_text_head));
  }
  if (d.n_audio_state % d.n_audio_head != 0) {
    fail(fmt::format("encoder width {} is not a multiple of its {} heads", d.n_audio_state, d.n_audio_head));
  }
  if (d.n_audio_state != d.n_text_state) {
    fail(fmt::format("encoder width {} differs from decoder width {}", d.n_audio_state, d.n_text_state));
  }
  const auto check_id = [&](const char* name, int id) {
    if (id < 0 || id >= d.n_vocab) fail(fmt::format("token {} is {}, outside the vocabulary [0, {})", name, id, d.n_vocab));
  };
  check_id("eot", tokens.eot);
  check_id("sot", tokens.sot);
  check_id("translate", tokens.translate);
  check_id("transcribe", tokens.transcribe);
  check_id("sot_lm", tokens.sot_lm);
  check_id("sot_prev", tokens.sot_prev);
  check_id("no_speech", tokens.no_speech);
  check_id("no_timestamps", tokens.no_timestamps);
  check_id("timestamp_begin", tokens.timestamp_begin);
  check_id("blank", tokens.blank);
  if (tokens.timestamp_begin <= tokens.eot) fail("timestamp tokens do not follow the special tokens");
  for (const auto& l : languages) check_id(("language " + l.code).c_str(), l.token);
  for (int t : suppress_tokens) check_id("in suppress_tokens", t);
  for (int t : suppress_blank) check_id("in suppress_blank", t);
}

}  // namespace brisvox
