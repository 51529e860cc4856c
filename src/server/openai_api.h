// OpenAI's audio API on `brisvox serve` (docs/OPENAI.md): the translation between its requests
// and answers and brisvox's. Pure functions only; the routes' handlers (openai_transcription.h)
// run the engine through the same upload path as POST /v1/transcribe.
//
// Errors on these routes are OpenAI's shape, {"error":{"message","type","param","code"}}, with
// OpenAI's status codes, so that the official clients raise their own exception types.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/offline.h"

namespace brisvox::server {

// The body of an OpenAI error: `type` from the status (400, 404, 413, 415: "invalid_request_error";
// 401: "invalid_request_error" as OpenAI answers a wrong key; 429, 503: "server_error" ...);
// `param` null when empty; `code` null when empty.
std::string openai_error_body(int status, std::string_view message, std::string_view param = {},
                              std::string_view code = {});
std::string_view openai_error_type(int status);

// A brisvox error body ({"error":{"code","message"}}, messages.h) in OpenAI's shape: its code and
// message kept, the type from `status`. A body already in OpenAI's shape (it has a "type") or not
// an error object comes back as it is.
std::string to_openai_error(int status, std::string_view body);

// The configured model for a model name a client sends: one of the engine's own model names of
// `family`, or one of OpenAI's stock names of that kind (whisper-1, gpt-4o-transcribe,
// gpt-4o-mini-transcribe for kWhisper; tts-1, tts-1-hd, gpt-4o-mini-tts for kPiperTts), which map
// to the first configured model of the family. Nothing when the name is neither, or when no model
// of the family is configured.
std::optional<std::string> map_model_name(const EngineConfig& engine, ModelFamily family, std::string_view name);

// Whether the configured Whisper model `model` has decoder room for a prompt (--stt-prompt-tokens),
// and the message that says how to give it some when it has none.
bool model_takes_prompt(const EngineConfig& engine, const std::string& model);
inline constexpr std::string_view kNoPromptRoom =
    "this server's speech-to-text model takes no prompt: start brisvox serve with --stt-prompt-tokens N (N up to "
    "446 tokens), or leave the prompt out";

// GET /v1/models: {"object":"list","data":[{"id","object":"model","created":0,"owned_by":"brisvox"},...]}:
// the configured Whisper and Piper models under their own names and the stock names that map to them.
std::string models_list_json(const EngineConfig& engine);

enum class OpenAiTranscriptFormat { kJson, kText, kSrt, kVtt, kVerboseJson };

// What a POST /v1/audio/transcriptions form asks, checked (OpenAI's rules; throws OpenAiError).
struct TranscriptionForm {
  std::string model;                // the configured model it maps to
  std::string language;             // "" when not given
  OpenAiTranscriptFormat format = OpenAiTranscriptFormat::kJson;
  bool stream = false;
  std::string filename;             // the file part's filename
  std::string prompt;               // "" when not given
  float temperature = 0.0f;         // 0: Whisper's fallback from 0 up; > 0: that sampling temperature
  // timestamp_granularities[]: verbose_json's "words" (word) and "segments" (segment, or when
  // neither is asked for).
  bool words = false;
  bool segments = true;
};

// A refusal in OpenAI's terms: the status, the parameter at fault and the message.
struct OpenAiError {
  int status = 400;
  std::string message;
  std::string param;
  std::string code;
};

// The form of a POST /v1/audio/transcriptions (multipart/form-data), checked by OpenAI's rules:
// file (required: `audio` is set to its bytes, a view into `body`), model (required, mapped by
// map_model_name: 404 model_not_found otherwise), language, prompt (the decoder's initial prompt),
// response_format, temperature (0..1), timestamp_granularities[] (segment, word; only with
// verbose_json; word turns on word timestamps), stream (true|false; json or text only). Other fields are ignored, as OpenAI ignores fields a model does not use. Throws
// OpenAiError; a malformed form is a 400 with multipart.h's message.
TranscriptionForm parse_transcription_form(const EngineConfig& engine, std::string_view body,
                                           std::string_view content_type, std::string_view& audio);

// Whether a request path is one of OpenAI's (/v1/audio/..., /v1/models, /v1/realtime): its errors are OpenAI's shape.
bool is_openai_path(std::string_view path);

// "json|text|srt|verbose_json|vtt"; OpenAiError naming response_format otherwise.
OpenAiTranscriptFormat parse_openai_transcript_format(std::string_view name);

// The answer to a transcription: its Content-Type and body. `language` is verbose_json's
// "language" (OpenAI names it in English words: "english").
struct OpenAiBody {
  std::string content_type;
  std::string body;
};
// verbose_json holds "segments" and "words" as `granularities` (a form's words and segments) asks.
struct OpenAiGranularities {
  bool words = false;
  bool segments = true;
};
OpenAiBody render_transcription(const OfflineResult& result, OpenAiTranscriptFormat format,
                                std::string_view language, OpenAiGranularities granularities = {});
// stream=true: server-sent events, one transcript.text.delta per segment with speech, then
// transcript.text.done with the whole text (what "json" answers as "text").
std::string transcription_events(const OfflineResult& result);

// verbose_json's "language": OpenAI's English name of a Whisper language code ("en" -> "english");
// the code itself when it is not one of the few listed.
std::string_view openai_language_name(std::string_view code);

}  // namespace brisvox::server
