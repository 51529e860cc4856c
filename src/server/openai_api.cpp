#include "server/openai_api.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <span>
#include <utility>

#include "brisvox/error.h"
#include "brisvox/formats/result_json.h"
#include "brisvox/formats/transcript_writers.h"
#include "server/multipart.h"

namespace brisvox::server {
namespace {

using OrderedJson = nlohmann::ordered_json;

// OpenAI's transcription models, as its clients name them (the `openai` package's AudioTranscription
// and Realtime types; Pipecat's and LiveKit's defaults among them). gpt-4o-transcribe-diarize is
// not one: its answers carry speaker labels brisvox does not find.
constexpr std::array<std::string_view, 7> kStockSttNames = {
    "whisper-1",           "gpt-4o-transcribe",   "gpt-4o-mini-transcribe", "gpt-4o-mini-transcribe-2025-12-15",
    "gpt-transcribe",      "gpt-live-transcribe", "gpt-realtime-whisper"};
constexpr std::array<std::string_view, 3> kStockTtsNames = {"tts-1", "tts-1-hd", "gpt-4o-mini-tts"};

std::span<const std::string_view> stock_names(ModelFamily family) {
  if (family == ModelFamily::kWhisper) return kStockSttNames;
  if (family == ModelFamily::kPiperTts) return kStockTtsNames;
  return {};
}

const ModelSpec* first_of(const EngineConfig& engine, ModelFamily family) {
  for (const ModelSpec& m : engine.models) {
    if (m.family == family) return &m;
  }
  return nullptr;
}

// The subtitles writers write to a FILE: an in-memory one gives their text.
std::string write_to_string(TranscriptFormat format, const OfflineResult& result) {
  char* data = nullptr;
  std::size_t size = 0;
  std::FILE* f = open_memstream(&data, &size);
  if (f == nullptr) throw Error(ErrorCode::kInternal, "open_memstream failed");
  write_transcript(f, format, result);
  std::fclose(f);
  std::string text(data, size);
  std::free(data);
  return text;
}

std::string trimmed(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1));
}

}  // namespace

std::string_view openai_error_type(int status) {
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

std::string openai_error_body(int status, std::string_view message, std::string_view param, std::string_view code) {
  OrderedJson e;
  e["message"] = std::string(message);
  e["type"] = std::string(openai_error_type(status));
  e["param"] = param.empty() ? OrderedJson(nullptr) : OrderedJson(std::string(param));
  e["code"] = code.empty() ? OrderedJson(nullptr) : OrderedJson(std::string(code));
  OrderedJson j;
  j["error"] = std::move(e);
  return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

std::string to_openai_error(int status, std::string_view body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object() || j["error"].contains("type")) {
    return std::string(body);
  }
  const auto& e = j["error"];
  const std::string code = e.contains("code") && e["code"].is_string() ? e["code"].get<std::string>() : "";
  const std::string message = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : "";
  // OpenAI's code for a wrong or missing key.
  return openai_error_body(status, message, {}, status == 401 ? "invalid_api_key" : code);
}

std::optional<std::string> map_model_name(const EngineConfig& engine, ModelFamily family, std::string_view name) {
  for (const ModelSpec& m : engine.models) {
    if (m.family == family && m.name == name) return m.name;
  }
  const ModelSpec* first = first_of(engine, family);
  if (first == nullptr) return std::nullopt;
  for (std::string_view stock : stock_names(family)) {
    if (stock == name) return first->name;
  }
  return std::nullopt;
}

bool model_takes_prompt(const EngineConfig& engine, const std::string& model) {
  const ModelSpec& spec = engine.model(model);
  const auto room = spec.options.find("prompt_tokens");
  return room != spec.options.end() && room->second != "0";
}

std::string models_list_json(const EngineConfig& engine) {
  OrderedJson data = OrderedJson::array();
  auto add = [&](std::string_view id) {
    data.push_back({{"id", std::string(id)}, {"object", "model"}, {"created", 0}, {"owned_by", "brisvox"}});
  };
  for (ModelFamily family : {ModelFamily::kWhisper, ModelFamily::kPiperTts}) {
    if (first_of(engine, family) == nullptr) continue;
    for (const ModelSpec& m : engine.models) {
      if (m.family == family) add(m.name);
    }
    for (std::string_view stock : stock_names(family)) add(stock);
  }
  OrderedJson j;
  j["object"] = "list";
  j["data"] = std::move(data);
  return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

OpenAiTranscriptFormat parse_openai_transcript_format(std::string_view name) {
  if (name == "json") return OpenAiTranscriptFormat::kJson;
  if (name == "text") return OpenAiTranscriptFormat::kText;
  if (name == "srt") return OpenAiTranscriptFormat::kSrt;
  if (name == "vtt") return OpenAiTranscriptFormat::kVtt;
  if (name == "verbose_json") return OpenAiTranscriptFormat::kVerboseJson;
  throw OpenAiError{400,
                    fmt::format("response_format '{}' is not one of json, text, srt, verbose_json, vtt",
                                name.substr(0, 40)),
                    "response_format", "invalid_value"};
}

bool is_openai_path(std::string_view path) {
  return path.starts_with("/v1/audio/") || path == "/v1/models" || path.starts_with("/v1/models/") ||
         path == "/v1/realtime";
}

TranscriptionForm parse_transcription_form(const EngineConfig& engine, std::string_view body,
                                           std::string_view content_type, std::string_view& audio) {
  if (!is_multipart_form(content_type)) {
    throw OpenAiError{400, "send the request as multipart/form-data with the audio in the field 'file'", "file", ""};
  }
  std::optional<std::string_view> file, model, format, temperature, stream;
  std::string filename, language, prompt;
  bool word = false, segment = false;
  try {
    for_each_form_part(body, content_type, [&](const FormPart& part) {
      if (part.name == "file") {
        file = part.data;
        filename = std::string(part.filename);
      } else if (part.name == "model") {
        model = part.data;
      } else if (part.name == "language") {
        language = trimmed(part.data);
      } else if (part.name == "prompt") {
        prompt = std::string(part.data);
      } else if (part.name == "response_format") {
        format = part.data;
      } else if (part.name == "temperature") {
        temperature = part.data;
      } else if (part.name == "stream") {
        stream = part.data;
      } else if (part.name == "timestamp_granularities[]" || part.name == "timestamp_granularities") {
        const std::string g = trimmed(part.data);
        if (g == "word") word = true;
        else if (g == "segment") segment = true;
        else throw OpenAiError{400, fmt::format("timestamp_granularities[] '{}' is not word or segment", g.substr(0, 40)),
                               "timestamp_granularities", "invalid_value"};
      }
      return true;
    });
  } catch (const Error& e) {
    throw OpenAiError{400, e.what(), "", ""};
  }
  if (!file) throw OpenAiError{400, "the form has no field 'file': send the audio file as 'file'", "file", ""};
  if (file->empty()) throw OpenAiError{400, "the field 'file' is empty: it holds no audio", "file", ""};
  if (!model || trimmed(*model).empty()) {
    throw OpenAiError{400, "you must provide a model parameter (whisper-1 or a model of GET /v1/models)", "model", ""};
  }
  TranscriptionForm form;
  const std::string model_name = trimmed(*model);
  const std::optional<std::string> mapped = map_model_name(engine, ModelFamily::kWhisper, model_name);
  if (!mapped) {
    throw OpenAiError{404,
                      fmt::format("the model '{}' does not exist on this server: use whisper-1 or a model of GET "
                                  "/v1/models{}",
                                  model_name.substr(0, 64),
                                  first_of(engine, ModelFamily::kWhisper) ? "" : " (start the server with --stt-model)"),
                      "model", "model_not_found"};
  }
  form.model = *mapped;
  form.language = language;
  form.filename = filename;
  if (format) form.format = parse_openai_transcript_format(trimmed(*format));
  if (temperature) {
    const std::string t = trimmed(*temperature);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !(v >= 0 && v <= 1)) {
      throw OpenAiError{400, fmt::format("temperature '{}' is not a number from 0 to 1", t.substr(0, 40)),
                        "temperature", "invalid_value"};
    }
    form.temperature = static_cast<float>(v);
  }
  form.prompt = prompt;
  if (stream) {
    const std::string v = trimmed(*stream);
    if (v != "true" && v != "false") {
      throw OpenAiError{400, fmt::format("stream '{}' is not true or false", v.substr(0, 40)), "stream", "invalid_value"};
    }
    form.stream = v == "true";
  }
  if ((word || segment) && form.format != OpenAiTranscriptFormat::kVerboseJson) {
    throw OpenAiError{400, "timestamp_granularities[] needs response_format verbose_json", "timestamp_granularities",
                      "invalid_value"};
  }
  form.words = word;
  form.segments = segment || !word;
  if (form.stream && form.format != OpenAiTranscriptFormat::kJson && form.format != OpenAiTranscriptFormat::kText) {
    throw OpenAiError{400, "stream=true answers server-sent events: use response_format json or text with it",
                      "stream", "unsupported_value"};
  }
  audio = *file;
  return form;
}

std::string_view openai_language_name(std::string_view code) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kNames = {{
      {"en", "english"}, {"de", "german"}, {"fr", "french"}, {"es", "spanish"}, {"it", "italian"},
      {"pt", "portuguese"}, {"nl", "dutch"}, {"ru", "russian"}, {"zh", "chinese"}, {"ja", "japanese"},
      {"ko", "korean"}, {"pl", "polish"},
  }};
  for (const auto& [c, n] : kNames) {
    if (c == code) return n;
  }
  return code;
}

OpenAiBody render_transcription(const OfflineResult& result, OpenAiTranscriptFormat format,
                                std::string_view language, OpenAiGranularities granularities) {
  switch (format) {
    case OpenAiTranscriptFormat::kText:
      return {"text/plain; charset=utf-8", transcript_text(result) + "\n"};
    case OpenAiTranscriptFormat::kSrt:
      return {"text/plain; charset=utf-8", write_to_string(TranscriptFormat::kSrt, result)};
    case OpenAiTranscriptFormat::kVtt:
      return {"text/vtt; charset=utf-8", write_to_string(TranscriptFormat::kVtt, result)};
    case OpenAiTranscriptFormat::kJson: {
      OrderedJson j;
      j["text"] = transcript_text(result);
      return {"application/json", j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n"};
    }
    case OpenAiTranscriptFormat::kVerboseJson:
      break;
  }
  // OpenAI's segment fields. brisvox keeps no token ids of a segment ("tokens" is empty);
  // "temperature" and "compression_ratio" are the kept attempt's; "seek" is the segment's start in
  // 10 ms frames, as Whisper's.
  OrderedJson segments = OrderedJson::array();
  int id = 0;
  for (const TranscriptSegment& s : result.transcripts) {
    if (s.transcript.no_speech) continue;  // as transcript_json leaves them out
    const std::string text = trimmed(s.transcript.text);
    segments.push_back({{"id", id++},
                        {"seek", static_cast<int>(std::lround(s.start_s * 100))},
                        {"start", s.start_s},
                        {"end", s.end_s},
                        {"text", text},
                        {"tokens", OrderedJson::array()},
                        {"temperature", s.transcript.temperature},
                        {"avg_logprob", s.transcript.avg_logprob},
                        {"compression_ratio", s.transcript.compression_ratio},
                        {"no_speech_prob", s.transcript.no_speech_prob}});
  }
  OrderedJson j;
  j["task"] = "transcribe";
  // The language given, else the one the recording was decoded in (detected by a multilingual
  // model); "" for a recording without speech and no language given.
  const Transcript* first = first_transcript(result);
  if (language.empty() && first != nullptr) language = first->language;
  j["language"] = std::string(openai_language_name(language));
  j["duration"] = result.duration_s;
  j["text"] = transcript_text(result);
  if (granularities.segments) j["segments"] = std::move(segments);
  if (granularities.words) {
    // OpenAI's TranscriptionWord: the word without its leading space.
    OrderedJson words = OrderedJson::array();
    for (const TranscriptSegment& s : result.transcripts) {
      if (s.transcript.no_speech) continue;
      for (const WhisperWord& w : s.transcript.words) {
        words.push_back({{"word", trimmed(w.text)}, {"start", w.start_s}, {"end", w.end_s}});
      }
    }
    j["words"] = std::move(words);
  }
  j["usage"] = {{"type", "duration"}, {"seconds", std::ceil(result.duration_s)}};
  return {"application/json", j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n"};
}

std::string transcription_events(const OfflineResult& result) {
  std::string out;
  bool first = true;
  for (const TranscriptSegment& s : result.transcripts) {
    if (s.transcript.no_speech) continue;
    const std::string text = trimmed(s.transcript.text);
    if (text.empty()) continue;
    // The deltas concatenate to the done event's text (transcript_text joins with a space).
    OrderedJson delta{{"type", "transcript.text.delta"}, {"delta", first ? text : " " + text}};
    first = false;
    out += "data: " + delta.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n\n";
  }
  OrderedJson done{{"type", "transcript.text.done"}, {"text", transcript_text(result)}};
  out += "data: " + done.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n\n";
  return out;
}

}  // namespace brisvox::server
