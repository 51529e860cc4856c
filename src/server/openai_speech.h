// POST /v1/audio/speech (OpenAI's text to speech, docs/OPENAI.md): its JSON body translated into
// the body of brisvox's POST /v1/tts, which then answers it (tts_http.h) exactly as its own.
#pragma once

#include <string>
#include <string_view>

#include "brisvox/engine/engine_config.h"

namespace brisvox::server {

// The sample rate of OpenAI's "pcm" (and of its "wav"): 24 kHz, 16-bit mono little-endian.
inline constexpr int kOpenAiSpeechRateHz = 24000;

// OpenAI's body {"model", "input", "voice", "response_format", "speed", "stream_format",
// "instructions"} as brisvox's {"text", "format", "sample_rate", "length_scale", "stream_format"}:
//   model: the server's Piper model name or tts-1, tts-1-hd, gpt-4o-mini-tts (else 404
//     model_not_found); input: the text (required); voice: the server's voice (its name or
//     registry name) or one of OpenAI's stock voices (alloy, ash, ..., all the server's one voice;
//     else 400); response_format: wav (the default here, not OpenAI's mp3), flac, mp3, opus (files
//     sent whole) or pcm (chunked as it is made); aac: 400 (no encoder); speed 0.25..4: Piper's
//     length_scale = 1/speed; stream_format: audio (the default) or sse (speech.audio.delta
//     events); instructions: ignored (Piper takes none). Other keys are ignored, as OpenAI does.
// Parsed with peer_json's depth bound. Throws OpenAiError (openai_api.h).
std::string openai_speech_to_tts_body(const EngineConfig& engine, std::string_view body);

}  // namespace brisvox::server
