// What a text-to-speech client asks for (docs/PROTOCOL.md, "Text to speech"): the JSON body of
// POST /v1/tts, the query of the WebSocket /v1/tts, and the JSON messages sent on that socket.
//
// Every key is checked, as for the audio endpoints: an unknown key, a value of the wrong type or
// out of range is an Error(kInvalidArgument) naming the key (answered 400 "bad_request"). The text
// itself is checked by the engine (Speech::speak: empty, too long, invalid UTF-8, control
// characters). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "brisvox/audio/wav_writer.h"
#include "brisvox/engine/engine.h"

namespace brisvox::server {

// The server's voice: the kPiperTts entry of its engine (brisvox serve --tts-voice).
struct TtsVoice {
  std::string model;  // its registry name ("tts")
  std::string name;   // the voice file's name without ".onnx" ("en_US-joe-medium")
};
// Null when the server has no voice (then /v1/tts answers 404 "tts_unavailable").
std::optional<TtsVoice> server_voice(const EngineConfig& engine);
// Whether a request's "voice" names the server's: empty, its registry name or its voice name.
bool voice_matches(std::string_view requested, const TtsVoice& voice);

struct TtsOptions {
  SpeechConfig speech;     // model left "tts"; sample rate, scales, speaker, volume as asked
  std::string voice;       // as asked ("" when not given): check with voice_matches
  bool raw = false;        // POST: format=raw (chunked pcm_s16le as it is made); else a file:
  AudioContainer container = AudioContainer::kWav;  // the file's container (format=wav|flac|mp3|opus)
  // POST: stream_format=sse: the audio as server-sent events (OpenAI's speech.audio.delta, base64;
  // then speech.audio.done), raw pieces as they are made, a file as one delta.
  bool sse = false;
  std::string tag;         // WebSocket: the client's call id (request_tag.h); "" when not given
};

struct TtsHttpRequest {
  TtsOptions options;
  std::string text;
};

// POST /v1/tts: {"text": "...", "voice", "sample_rate", "format": "wav"|"flac"|"mp3"|"opus"|"raw",
// "stream_format": "audio"|"sse", "length_scale", "noise_scale", "noise_w_scale", "speaker_id", "volume",
// "fast_start": true|false};
// "text" is required. fast_start defaults to true for "raw" (streamed) and false for a file (sent
// whole).
TtsHttpRequest parse_tts_body(std::string_view body);
// WebSocket /v1/tts?voice=&sample_rate=&length_scale=&noise_scale=&noise_w_scale=&speaker_id=
// &volume=&fast_start=1|0&tag= (and token=, checked elsewhere).
TtsOptions parse_tts_query(std::string_view query);
// POST /v1/tts's query: only `tag` (checked as everywhere) and `token`; its options are in the body.
// Throws Error(kInvalidArgument).
void check_tts_post_query(std::string_view query);
// One query key of a voice's settings (voice, length_scale, noise_scale, noise_w_scale,
// speaker_id, volume, fast_start) into `o`: false when `key` is none of them (/v1/call shares
// them). Error(kInvalidArgument) naming the key for a bad value.
bool parse_voice_setting(const std::string& key, const std::string& value, TtsOptions& o);

// Messages a client sends on the WebSocket: {"type":"speak","text":"..."}, {"type":"cancel"},
// {"type":"close"}. Other fields are ignored (a client's own ids).
enum class TtsMessageType { kSpeak, kCancel, kClose };
struct TtsMessage {
  bool ok = false;
  TtsMessageType type = TtsMessageType::kSpeak;
  std::string text;   // kSpeak
  std::string error;  // !ok: what was wrong
};
// Never throws.
TtsMessage parse_tts_message(std::string_view json_text);

}  // namespace brisvox::server
