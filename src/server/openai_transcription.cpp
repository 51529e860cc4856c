#include "server/openai_transcription.h"

#include <fmt/format.h>

#include "brisvox/error.h"
#include "server/openai_api.h"
#include "server/query_params.h"

namespace brisvox::server {
namespace {

HttpAnswer openai_error_answer(const OpenAiError& e) {
  HttpAnswer a;
  a.status = e.status;
  a.error_code = e.code.empty() ? "bad_request" : e.code;
  a.body = openai_error_body(e.status, e.message, e.param, e.code);
  return a;
}

}  // namespace

HttpAnswer run_openai_transcription(Engine& engine, ServerMetrics& metrics, std::string_view body,
                                    std::string_view content_type, const std::atomic<bool>& abort,
                                    double max_duration_s, const std::atomic<bool>* client_gone) {
  std::string_view audio;
  TranscriptionForm form;
  AudioRequest request;
  try {
    form = parse_transcription_form(engine.config(), body, content_type, audio);
    QueryParams params;
    if (!form.language.empty()) params["language"] = form.language;
    request = parse_audio_request(params, AudioEndpoint::kTranscribe);
    if (request.stream.stt) {
      SttOptions& stt = *request.stream.stt;
      stt.model = form.model;
      // OpenAI: at temperature 0 (the default) "the model will use log probability to automatically
      // increase the temperature until certain thresholds are hit" (Whisper's fallback); above 0
      // it samples at that temperature.
      if (form.temperature > 0.0f) stt.fallback.temperatures = {form.temperature};
      else stt.fallback.temperatures = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
      stt.word_timestamps = form.words;
      if (form.prompt.find_first_not_of(" \t\r\n") != std::string::npos) {
        if (!model_takes_prompt(engine.config(), form.model)) {
          throw OpenAiError{400, std::string(kNoPromptRoom), "prompt", "invalid_value"};
        }
        stt.decode.prompt = form.prompt;
      }
    }
    check_stream_models(engine.config(), request.stream);
    if (!form.filename.empty()) request.name = form.filename;
  } catch (const OpenAiError& e) {
    return openai_error_answer(e);
  } catch (const Error& e) {
    return openai_error_answer(OpenAiError{400, e.what(), form.language.empty() ? "" : "language", ""});
  }
  try {
    const OfflineResult r = run_upload(engine, metrics, audio, request, abort, max_duration_s, client_gone);
    HttpAnswer a;
    if (form.stream) {
      a.content_type = "text/event-stream";
      a.body = transcription_events(r);
    } else {
      OpenAiBody rendered = render_transcription(r, form.format, form.language, {form.words, form.segments});
      a.content_type = std::move(rendered.content_type);
      a.body = std::move(rendered.body);
    }
    return a;
  } catch (const Error& e) {
    HttpAnswer a = upload_error_answer(e, max_duration_s);
    // OpenAI answers a file it cannot read with 400, not 415 (its clients raise BadRequestError).
    if (a.status == 415) a.status = 400;
    a.body = to_openai_error(a.status, a.body);
    return a;
  } catch (const std::exception& e) {
    return openai_error_answer(OpenAiError{500, e.what(), "", "internal"});
  }
}

HttpAnswer openai_translation_refusal(const EngineConfig& engine) {
  std::string model;
  for (const ModelSpec& m : engine.models) {
    if (m.family == ModelFamily::kWhisper) {
      model = m.path;
      break;
    }
  }
  return openai_error_answer(OpenAiError{
      400,
      model.empty() ? std::string("translations need a multilingual Whisper model, and this server has no "
                                  "speech-to-text model (--stt-model)")
                    : fmt::format("translations are not offered by this server: they need a multilingual Whisper "
                                  "model and its translate task, and brisvox serves '{}' for transcription only; "
                                  "use /v1/audio/transcriptions",
                                  model),
      "model", "unsupported_model"});
}

}  // namespace brisvox::server
