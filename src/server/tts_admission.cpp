#include "server/tts_admission.h"

#include <fmt/format.h>

#include "brisvox/error.h"
#include "server/vad_request.h"

namespace brisvox::server {

Refusal tts_refusal(const Error& e, std::string_view parse_code) {
  if (!parse_code.empty()) return Refusal{400, std::string(parse_code), e.what()};
  const int status = e.code() == ErrorCode::kClosed ? 503 : http_status_for(e.code());
  return Refusal{status, e.code() == ErrorCode::kClosed ? "shutting_down" : std::string(to_string(e.code())),
                 e.what()};
}

std::variant<TtsVoice, Refusal> choose_voice(const ServerContext& ctx, const TtsOptions& options) {
  const std::optional<TtsVoice> voice = server_voice(ctx.engine.config());
  if (!voice) {
    return Refusal{404, "tts_unavailable",
                   "this server has no text-to-speech voice: start it with --tts-voice NAME|PATH "
                   "(brisvox voices lists the installed ones)"};
  }
  if (!voice_matches(options.voice, *voice)) {
    return Refusal{404, "unknown_voice",
                   fmt::format("this server speaks with voice '{}' only (asked for '{}'); leave \"voice\" out "
                               "or name that one",
                               voice->name, options.voice)};
  }
  if (ctx.draining.load()) return Refusal{503, "shutting_down", "the server is shutting down"};
  return *voice;
}

TtsAdmission open_tts_speech(ServerContext& ctx, const TtsOptions& options, std::function<void()> on_events) {
  TtsAdmission a;
  const std::variant<TtsVoice, Refusal> voice = choose_voice(ctx, options);
  if (const Refusal* r = std::get_if<Refusal>(&voice)) {
    a.refusal = *r;
    return a;
  }
  SpeechConfig config = options.speech;
  config.model = std::get<TtsVoice>(voice).model;
  config.on_events = std::move(on_events);
  try {
    a.speech = ctx.engine.open_speech(config);
  } catch (const Error& e) {
    a.refusal = tts_refusal(e);
  }
  return a;
}

}  // namespace brisvox::server
