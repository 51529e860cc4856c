// Opening a text-to-speech session for a request of POST or WebSocket /v1/tts: the checks that
// come before any synthesis, each with its HTTP answer.
//   404 tts_unavailable  the server has no voice (brisvox serve --tts-voice)
//   404 unknown_voice    the request names another voice than the server's
//   503 shutting_down    the server or the engine is stopping
//   400 invalid_argument options the voice refuses (a rate, a scale, a speaker)
//   503 overloaded       the voice's speech sessions are all open (ModelSpec::max_pending)
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <variant>

#include "brisvox/engine/engine.h"
#include "server/refusal.h"
#include "server/server_context.h"
#include "server/tts_params.h"

namespace brisvox::server {

struct TtsAdmission {
  std::optional<Refusal> refusal;  // set: answer it, nothing was opened
  Speech speech;                   // open, its on_events calling `on_events`
};

// `on_events`: the speech session's on_events (EngineWakeup::callback()).
TtsAdmission open_tts_speech(ServerContext& ctx, const TtsOptions& options, std::function<void()> on_events);

// The checks above that come before the engine is asked (the voice, the drain): the server's voice
// the request may speak with, or the refusal. /v1/call asks them too.
std::variant<TtsVoice, Refusal> choose_voice(const ServerContext& ctx, const TtsOptions& options);

// The refusal for an Error from Speech::speak or a parser (400, 503, ...).
Refusal tts_refusal(const Error& e, std::string_view parse_code = {});

}  // namespace brisvox::server
