// Opening a text-to-speech session for a request of POST or WebSocket /v1/tts: the checks that
// come before any synthesis, each with its HTTP answer.
//   404 tts_unavailable  the server has no voice (brisvox serve --tts-voice)
//   404 unknown_voice    the request names another voice than the server's
//   503 shutting_down    the server or the engine is stopping
//   400 invalid_argument options the voice refuses (a rate, a scale, a speaker)
//   503 overloaded       the voice's speech sessions are all open (ModelSpec::max_pending)
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "brisvox/engine/engine.h"
#include "server/server_context.h"
#include "server/speech_wakeup.h"
#include "server/tts_params.h"

namespace brisvox::server {

struct TtsRefusal {
  int status = 400;
  std::string code;
  std::string message;
};

struct TtsAdmission {
  std::optional<TtsRefusal> refusal;  // set: answer it, nothing was opened
  Speech speech;                      // open, its on_events bound to the wake-up
};

TtsAdmission open_tts_speech(ServerContext& ctx, const TtsOptions& options, const std::shared_ptr<SpeechWakeup>& wakeup);

// The refusal for an Error from Speech::speak or a parser (400, 503, ...).
TtsRefusal tts_refusal(const Error& e, std::string_view parse_code = {});

}  // namespace brisvox::server
