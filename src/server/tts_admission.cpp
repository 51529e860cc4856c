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

TtsAdmission open_tts_speech(ServerContext& ctx, const TtsOptions& options, std::function<void()> on_events) {
  TtsAdmission a;
  const std::optional<TtsVoice> voice = server_voice(ctx.engine.config());
  if (!voice) {
    a.refusal = Refusal{404, "tts_unavailable",
                        "this server has no text-to-speech voice: start it with --tts-voice NAME|PATH "
                        "(brisvox voices lists the installed ones)"};
    return a;
  }
  if (!voice_matches(options.voice, *voice)) {
    a.refusal = Refusal{404, "unknown_voice",
                        fmt::format("this server speaks with voice '{}' only (asked for '{}'); leave \"voice\" out "
                                    "or name that one",
                                    voice->name, options.voice)};
    return a;
  }
  if (ctx.draining.load()) {
    a.refusal = Refusal{503, "shutting_down", "the server is shutting down"};
    return a;
  }
  SpeechConfig config = options.speech;
  config.model = voice->model;
  config.on_events = std::move(on_events);
  try {
    a.speech = ctx.engine.open_speech(config);
  } catch (const Error& e) {
    a.refusal = tts_refusal(e);
  }
  return a;
}

}  // namespace brisvox::server
