// The C API (include/brisvox/brisvox.h) over brisvox::Engine: status names and messages, the
// engine, streams (with their transcripts) and whole files; calls and speech sessions are
// capi_call.cpp's and capi_speech.cpp's. Every exported function runs its body inside `guarded`,
// which turns any exception into a status code and a message: none crosses the C boundary.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "brisvox/engine/offline.h"
#include "brisvox/formats/result_json.h"
#include "brisvox/models/stt/whisper_fallback.h"
#include "capi_internal.h"

namespace brisvox::capi {

// The layouts of earlier API versions.
constexpr std::size_t kEngineOptionsV2 = offsetof(brisvox_engine_options, stt_model);  // = version 1's
constexpr std::size_t kEngineOptionsV4 = offsetof(brisvox_engine_options, stt_max_width);  // = version 3's
constexpr std::size_t kStreamOptionsV1 = offsetof(brisvox_stream_options, on_events);
constexpr std::size_t kStreamOptionsV2 = offsetof(brisvox_stream_options, transcripts);
constexpr std::size_t kStreamOptionsV3 = offsetof(brisvox_stream_options, model_rate_hz);
constexpr std::size_t kStreamOptionsV4 = offsetof(brisvox_stream_options, decoding);

void engine_defaults(brisvox_engine_options& o) {
  const EngineConfig d;
  o = brisvox_engine_options{};
  o.struct_size = sizeof(o);
  o.max_streams = d.max_streams;
  o.latency_budget_ms = d.latency_budget_ms;
  o.admission_control = d.admission_control ? 1 : 0;
  o.run_timeout_ms = d.run_timeout_ms;
}

void stream_defaults(brisvox_stream_options& o) {
  const StreamConfig d;
  const TurnParams t;
  const TurnOptions ts;
  o = brisvox_stream_options{};
  o.struct_size = sizeof(o);
  o.sample_rate_hz = d.sample_rate_hz;
  o.buffer_ms = d.buffer_ms;
  o.threshold = d.vad.params.threshold;
  o.neg_threshold = d.vad.params.neg_threshold;
  o.min_speech_ms = d.vad.params.min_speech_ms;
  o.min_silence_ms = d.vad.params.min_silence_ms;
  o.speech_pad_ms = d.vad.params.speech_pad_ms;
  o.max_speech_s = d.vad.params.max_speech_s;
  o.emit_probabilities = d.vad.emit_probabilities ? 1 : 0;
  o.turn = 0;
  o.turn_stop_ms = t.stop_ms;
  o.turn_pre_speech_ms = t.pre_speech_ms;
  o.turn_max_silence_ms = t.max_silence_ms;
  o.turn_threshold = t.turn_threshold;
  o.turn_wait_for_verdict = ts.wait_for_verdict ? 1 : 0;
  o.transcripts = 0;
  o.language = nullptr;
  o.stt_window = BRISVOX_STT_WINDOW_FULL;
  o.model_rate_hz = d.vad.model_rate_hz;
  o.decoding = BRISVOX_DECODING_GREEDY;
  o.task = BRISVOX_TASK_TRANSCRIBE;
  o.language_detection = BRISVOX_LANGUAGE_DETECTION_FIRST;
}

brisvox_stream_options read_stream_options(const brisvox_stream_options* in) {
  return read_options(in, "brisvox_stream_options", "brisvox_stream_options_init", stream_defaults,
                      {kStreamOptionsV1, kStreamOptionsV2, kStreamOptionsV3, kStreamOptionsV4});
}

// The transcripts' settings, as `brisvox transcribe` reads its options: the decoding, then what
// refines it.
SttOptions stt_options(const brisvox_stream_options& o) {
  SttOptions stt;
  if (o.language != nullptr) stt.decode.language = o.language;
  if (o.stt_window == BRISVOX_STT_WINDOW_FIT) {
    stt.window = WhisperWindow::kFit;
  } else if (o.stt_window != BRISVOX_STT_WINDOW_FULL) {
    invalid(fmt::format("brisvox_stream_options.stt_window is {}: BRISVOX_STT_WINDOW_FULL (0) or "
                        "BRISVOX_STT_WINDOW_FIT (1)",
                        o.stt_window));
  }
  if (o.decoding == BRISVOX_DECODING_FASTER_WHISPER) {
    use_faster_whisper_decoding(stt.decode, stt.fallback);
  } else if (o.decoding != BRISVOX_DECODING_GREEDY) {
    invalid(fmt::format("brisvox_stream_options.decoding is {}: BRISVOX_DECODING_GREEDY (0) or "
                        "BRISVOX_DECODING_FASTER_WHISPER (1)",
                        o.decoding));
  }
  if (o.beam_size < 0 || o.beam_size > 16) {
    invalid(fmt::format("brisvox_stream_options.beam_size is {}: 0 (the decoding's) or 1 to 16", o.beam_size));
  }
  if (o.best_of < 0 || o.best_of > 16) {
    invalid(fmt::format("brisvox_stream_options.best_of is {}: 0 (the decoding's) or 1 to 16", o.best_of));
  }
  if (o.beam_size > 0) stt.decode.beam_size = o.beam_size;
  if (o.best_of > 0) stt.decode.best_of = o.best_of;
  if (o.temperatures != nullptr && *o.temperatures != '\0') {
    try {
      stt.fallback.temperatures = parse_temperatures(o.temperatures);
    } catch (const Error& e) {
      invalid(fmt::format("brisvox_stream_options.temperatures: {}", e.what()));
    }
  }
  if (o.task == BRISVOX_TASK_TRANSLATE) {
    stt.decode.task = WhisperTask::kTranslate;
  } else if (o.task != BRISVOX_TASK_TRANSCRIBE) {
    invalid(fmt::format("brisvox_stream_options.task is {}: BRISVOX_TASK_TRANSCRIBE (0) or BRISVOX_TASK_TRANSLATE (1)",
                        o.task));
  }
  if (o.prompt != nullptr) stt.decode.prompt = o.prompt;
  if (o.hotwords != nullptr) stt.decode.hotwords = o.hotwords;
  if (o.language_detection == BRISVOX_LANGUAGE_DETECTION_EACH) {
    stt.language_detection = WhisperLanguageDetection::kEach;
  } else if (o.language_detection != BRISVOX_LANGUAGE_DETECTION_FIRST) {
    invalid(fmt::format("brisvox_stream_options.language_detection is {}: BRISVOX_LANGUAGE_DETECTION_FIRST (0) or "
                        "BRISVOX_LANGUAGE_DETECTION_EACH (1)",
                        o.language_detection));
  }
  stt.word_timestamps = o.word_timestamps != 0;
  if (o.partial_interval_ms != 0 && (o.partial_interval_ms < 200 || o.partial_interval_ms > 10000)) {
    invalid(fmt::format("brisvox_stream_options.partial_interval_ms is {}: 0 (no partial transcripts) or 200 to 10000",
                        o.partial_interval_ms));
  }
  stt.partial_interval_ms = o.partial_interval_ms;
  return stt;
}

StreamConfig stream_config(const brisvox_stream_options& o) {
  StreamConfig c;
  c.sample_rate_hz = o.sample_rate_hz;
  c.buffer_ms = o.buffer_ms;
  c.vad.params.threshold = o.threshold;
  c.vad.params.neg_threshold = o.neg_threshold;
  c.vad.params.min_speech_ms = o.min_speech_ms;
  c.vad.params.min_silence_ms = o.min_silence_ms;
  c.vad.params.speech_pad_ms = o.speech_pad_ms;
  c.vad.params.max_speech_s = o.max_speech_s;
  c.vad.emit_probabilities = o.emit_probabilities != 0;
  c.vad.model_rate_hz = o.model_rate_hz;
  if (o.turn != 0) {
    TurnOptions turn;
    turn.params.stop_ms = o.turn_stop_ms;
    turn.params.pre_speech_ms = o.turn_pre_speech_ms;
    turn.params.max_silence_ms = o.turn_max_silence_ms;
    turn.params.turn_threshold = o.turn_threshold;
    turn.wait_for_verdict = o.turn_wait_for_verdict != 0;
    c.turn = turn;
  }
  if (o.transcripts != 0) {
    c.stt = stt_options(o);
  } else if (o.language != nullptr || o.stt_window != BRISVOX_STT_WINDOW_FULL || o.decoding != BRISVOX_DECODING_GREEDY ||
             o.beam_size != 0 || o.best_of != 0 || o.temperatures != nullptr || o.task != BRISVOX_TASK_TRANSCRIBE ||
             o.prompt != nullptr || o.hotwords != nullptr || o.language_detection != BRISVOX_LANGUAGE_DETECTION_FIRST ||
             o.word_timestamps != 0 || o.partial_interval_ms != 0) {
    invalid("brisvox_stream_options: language, stt_window and the decoding, word_timestamps and partial_interval_ms "
            "fields are the transcripts' settings: set transcripts = 1 too (the engine needs an stt_model)");
  }
  return c;
}

// The values of the C enums are the C++ ones: checked here, so that a change on either side fails
// to compile.
static_assert(static_cast<int>(EventType::kSpeechStart) == BRISVOX_EVENT_SPEECH_START);
static_assert(static_cast<int>(EventType::kSpeechEnd) == BRISVOX_EVENT_SPEECH_END);
static_assert(static_cast<int>(EventType::kVadProbability) == BRISVOX_EVENT_VAD_PROBABILITY);
static_assert(static_cast<int>(EventType::kOverload) == BRISVOX_EVENT_OVERLOAD);
static_assert(static_cast<int>(EventType::kError) == BRISVOX_EVENT_ERROR);
static_assert(static_cast<int>(EventType::kEndOfStream) == BRISVOX_EVENT_END_OF_STREAM);
static_assert(static_cast<int>(EventType::kTurnEnd) == BRISVOX_EVENT_TURN_END);
static_assert(static_cast<int>(EventType::kTurnIncomplete) == BRISVOX_EVENT_TURN_INCOMPLETE);
static_assert(static_cast<int>(EventType::kTranscript) == BRISVOX_EVENT_TRANSCRIPT);
static_assert(static_cast<int>(EventType::kTtsAudio) == BRISVOX_EVENT_TTS_AUDIO);
static_assert(static_cast<int>(EventType::kTtsEnd) == BRISVOX_EVENT_TTS_END);
static_assert(static_cast<int>(EventType::kTtsCancelled) == BRISVOX_EVENT_TTS_CANCELLED);
static_assert(static_cast<int>(EventType::kBargeIn) == BRISVOX_EVENT_BARGE_IN);
static_assert(static_cast<int>(EventType::kTtsInterrupted) == BRISVOX_EVENT_TTS_INTERRUPTED);
static_assert(static_cast<int>(EventType::kTtsMark) == BRISVOX_EVENT_TTS_MARK);
static_assert(static_cast<int>(EventType::kTranscriptPartial) == BRISVOX_EVENT_TRANSCRIPT_PARTIAL);
static_assert(static_cast<int>(PayloadStatus::kNone) == BRISVOX_PAYLOAD_NONE);
static_assert(static_cast<int>(PayloadStatus::kAttached) == BRISVOX_PAYLOAD_ATTACHED);
static_assert(static_cast<int>(PayloadStatus::kTruncated) == BRISVOX_PAYLOAD_TRUNCATED);
static_assert(static_cast<int>(PayloadStatus::kDropped) == BRISVOX_PAYLOAD_DROPPED);
static_assert(static_cast<int>(TurnAction::Reason::kModel) == BRISVOX_TURN_REASON_MODEL);
static_assert(static_cast<int>(TurnAction::Reason::kTimeout) == BRISVOX_TURN_REASON_TIMEOUT);
static_assert(static_cast<int>(TurnAction::Reason::kEndOfStream) == BRISVOX_TURN_REASON_END_OF_STREAM);
static_assert(static_cast<int>(ErrorCode::kInvalidArgument) + 1 == BRISVOX_ERR_INVALID_ARGUMENT);
static_assert(static_cast<int>(ErrorCode::kInferenceTimeout) + 1 == BRISVOX_ERR_INFERENCE_TIMEOUT);
static_assert(static_cast<int>(ErrorCode::kInternal) + 1 == BRISVOX_ERR_INTERNAL);
static_assert(static_cast<int>(ErrorCode::kLimitExceeded) == static_cast<int>(ErrorCode::kInternal) + 1,
              "a new ErrorCode needs its brisvox_status (status_of)");
// Version 2's brisvox_event, which callers built against it still pass (event_size 48).
static_assert(offsetof(brisvox_event, utterance_id) == 48);

// Runs one file through `engine` with `options` and returns the result; throws its error.
OfflineResult run_file(brisvox_engine* engine, const char* path, const StreamConfig& stream) {
  OfflineOptions offline;
  offline.stream = stream;
  if (offline.stream.turn) offline.stream.turn->wait_for_verdict = true;
  OfflineResult result = run_offline(*engine->engine, OfflineInput{path, std::nullopt}, offline);
  if (result.error) throw *result.error;
  return result;
}

}  // namespace brisvox::capi

using namespace brisvox::capi;
using brisvox::Error;
using brisvox::ErrorCode;

struct brisvox_stream : Handle {
  brisvox::Stream stream;
  std::string language;  // its transcripts' (brisvox_transcript.language)
  std::array<float, kConvertChunk> converted{};  // push_i16's float samples, preallocated

  brisvox::Stream& open(const char* function) {
    check_open(function, "stream");
    return stream;
  }
  void engine_gone() noexcept override {
    brisvox::Stream gone = std::move(stream);  // closed here, before its engine goes
    gone.close();
    if (on_events) on_events->clear();
    owner = nullptr;
  }
};

extern "C" {

const char* brisvox_status_name(brisvox_status status) {
  switch (status) {
    case BRISVOX_OK: return "ok";
    case BRISVOX_ERR_OUT_OF_MEMORY: return "out_of_memory";
    default: break;
  }
  const int code = static_cast<int>(status) - 1;
  if (code < 0 || code > static_cast<int>(ErrorCode::kInternal)) return "unknown";
  return brisvox::to_string(static_cast<ErrorCode>(code)).data();  // static, NUL-terminated literals
}

const char* brisvox_last_error_message(void) {
  try {
    return return_copy(thread_last_error());
  } catch (...) {
    return "";
  }
}

const char* brisvox_version(void) { return BRISVOX_VERSION; }

int32_t brisvox_api_version(void) { return BRISVOX_C_API_VERSION; }

brisvox_status brisvox_engine_options_init(brisvox_engine_options* options) {
  return guarded(nullptr, [&] {
    require_pointer(options, "brisvox_engine_options_init", "options");
    engine_defaults(*options);
  });
}

brisvox_status brisvox_stream_options_init(brisvox_stream_options* options) {
  return guarded(nullptr, [&] {
    require_pointer(options, "brisvox_stream_options_init", "options");
    stream_defaults(*options);
  });
}

brisvox_status brisvox_engine_create(const brisvox_engine_options* options, brisvox_engine** engine) {
  if (engine != nullptr) *engine = nullptr;
  return guarded(nullptr, [&] {
    require_pointer(engine, "brisvox_engine_create", "engine (where to store the handle)");
    const brisvox_engine_options o = read_options(options, "brisvox_engine_options", "brisvox_engine_options_init",
                                                  engine_defaults, {kEngineOptionsV2, kEngineOptionsV4});
    auto set = [](const char* s) { return s != nullptr && *s != '\0'; };
    brisvox::EngineConfig config;
    config.models = {brisvox::ModelSpec::silero_vad(set(o.vad_model) ? o.vad_model : "v6")};
    config.models[0].num_workers = o.vad_workers;
    config.models[0].max_batch = o.vad_max_batch;
    if (set(o.turn_model)) {
      config.models.push_back(brisvox::ModelSpec::smart_turn(o.turn_model));
      config.models.back().num_workers = o.turn_workers;
    }
    if (o.stt_max_width < 0 || o.stt_max_width > 16) {
      invalid(fmt::format("brisvox_engine_options.stt_max_width is {}: 0 (1, greedy only) to 16", o.stt_max_width));
    }
    if (o.stt_prompt_tokens < 0 || o.stt_prompt_tokens > 446) {
      invalid(fmt::format("brisvox_engine_options.stt_prompt_tokens is {}: 0 (no prompts) to 446", o.stt_prompt_tokens));
    }
    if (set(o.stt_model)) {
      config.models.push_back(brisvox::ModelSpec::whisper(o.stt_model));
      brisvox::ModelSpec& stt = config.models.back();
      stt.num_workers = o.stt_workers;
      stt.size_whisper_decoder(std::max(1, o.stt_max_width), o.stt_prompt_tokens);
    } else if (o.stt_max_width != 0 || o.stt_prompt_tokens != 0) {
      invalid("brisvox_engine_options: stt_max_width and stt_prompt_tokens size the speech-to-text model's decoder: "
              "set stt_model too");
    }
    if (set(o.voice)) {
      config.models.push_back(brisvox::ModelSpec::piper_tts(o.voice));
      config.models.back().num_workers = o.tts_workers;
    }
    config.max_streams = o.max_streams;
    config.latency_budget_ms = o.latency_budget_ms;
    config.admission_control = o.admission_control != 0;
    config.run_timeout_ms = o.run_timeout_ms;
    auto handle = std::make_unique<brisvox_engine>();
    handle->engine = std::make_unique<brisvox::Engine>(config);
    *engine = handle.release();
  });
}

brisvox_status brisvox_engine_destroy(brisvox_engine* engine) {
  if (engine == nullptr) return BRISVOX_OK;
  const brisvox_status status = guarded(nullptr, [&] {
    {
      std::lock_guard lock(engine->handles_mutex);
      for (Handle* h : engine->handles) h->engine_gone();
      engine->handles.clear();
    }
    engine->engine.reset();
  });
  delete engine;
  return status;
}

const char* brisvox_engine_message(const brisvox_engine* engine) {
  try {
    return engine == nullptr ? "" : return_copy(engine->message.get());
  } catch (...) {
    return "";
  }
}

brisvox_status brisvox_stream_open(brisvox_engine* engine, const brisvox_stream_options* options,
                                   brisvox_stream** stream) {
  if (stream != nullptr) *stream = nullptr;
  return guarded(engine != nullptr ? &engine->message : nullptr, [&] {
    require_pointer(engine, "brisvox_stream_open", "engine");
    require_pointer(stream, "brisvox_stream_open", "stream (where to store the handle)");
    const brisvox_stream_options o = read_stream_options(options);
    auto handle = std::make_unique<brisvox_stream>();
    brisvox::StreamConfig config = stream_config(o);
    if (config.stt && engine->engine->config().find_model("stt") == nullptr) {
      invalid("brisvox_stream_open: transcripts need a speech-to-text model: set brisvox_engine_options.stt_model "
              "(\"tiny.en\", or a Whisper model folder) when creating the engine");
    }
    handle->on_events = make_callback(o.on_events, o.on_events_user_data);
    config.on_events = engine_hook(handle->on_events);
    if (config.stt) handle->language = config.stt->decode.language;
    handle->stream = engine->engine->open_stream(config);
    attach(engine, handle.get());
    *stream = handle.release();
  });
}

brisvox_status brisvox_stream_push_f32(brisvox_stream* stream, const float* samples, size_t num_samples,
                                       size_t* num_accepted) {
  if (num_accepted != nullptr) *num_accepted = 0;
  return guarded(stream != nullptr ? &stream->message : nullptr, [&] {
    require_pointer(stream, "brisvox_stream_push_f32", "stream");
    if (num_samples > 0) require_pointer(samples, "brisvox_stream_push_f32", "samples");
    brisvox::Stream& s = stream->open("brisvox_stream_push_f32");
    const std::size_t n = s.push(std::span(samples, num_samples));
    if (num_accepted != nullptr) *num_accepted = n;
  });
}

brisvox_status brisvox_stream_push_i16(brisvox_stream* stream, const int16_t* samples, size_t num_samples,
                                       size_t* num_accepted) {
  if (num_accepted != nullptr) *num_accepted = 0;
  return guarded(stream != nullptr ? &stream->message : nullptr, [&] {
    require_pointer(stream, "brisvox_stream_push_i16", "stream");
    if (num_samples > 0) require_pointer(samples, "brisvox_stream_push_i16", "samples");
    brisvox::Stream& s = stream->open("brisvox_stream_push_i16");
    const std::size_t n =
        push_i16([&](std::span<const float> f) { return s.push(f); }, stream->converted, samples, num_samples);
    if (num_accepted != nullptr) *num_accepted = n;
  });
}

brisvox_status brisvox_stream_writable(brisvox_stream* stream, size_t* num_samples) {
  if (num_samples != nullptr) *num_samples = 0;
  return guarded(stream != nullptr ? &stream->message : nullptr, [&] {
    require_pointer(stream, "brisvox_stream_writable", "stream");
    require_pointer(num_samples, "brisvox_stream_writable", "num_samples");
    *num_samples = stream->open("brisvox_stream_writable").writable();
  });
}

brisvox_status brisvox_stream_finish(brisvox_stream* stream) {
  return guarded(stream != nullptr ? &stream->message : nullptr, [&] {
    require_pointer(stream, "brisvox_stream_finish", "stream");
    stream->open("brisvox_stream_finish").flush();
  });
}

brisvox_status brisvox_stream_poll(brisvox_stream* stream, brisvox_event* events, size_t max_events,
                                   size_t event_size, size_t* num_events) {
  if (num_events != nullptr) *num_events = 0;
  return guarded(stream != nullptr ? &stream->message : nullptr, [&] {
    require_pointer(stream, "brisvox_stream_poll", "stream");
    require_pointer(num_events, "brisvox_stream_poll", "num_events");
    if (max_events > 0) require_pointer(events, "brisvox_stream_poll", "events");
    check_event_size(event_size, "brisvox_stream_poll");
    brisvox::Stream& s = stream->open("brisvox_stream_poll");
    poll_into([&](std::span<brisvox::Event> out) { return s.poll(out); }, [](const brisvox::Event&) { return false; },
              events, max_events, event_size, num_events);
  });
}

brisvox_status brisvox_stream_wait_events(brisvox_stream* stream, int32_t timeout_ms, int32_t* ready) {
  if (ready != nullptr) *ready = 0;
  return guarded(stream != nullptr ? &stream->message : nullptr, [&] {
    require_pointer(stream, "brisvox_stream_wait_events", "stream");
    check_timeout(timeout_ms, "brisvox_stream_wait_events");
    const bool pending =
        stream->open("brisvox_stream_wait_events").wait_events(std::chrono::milliseconds(timeout_ms));
    if (ready != nullptr) *ready = pending ? 1 : 0;
  });
}

brisvox_status brisvox_stream_read_transcript(brisvox_stream* stream, const brisvox_event* event,
                                              brisvox_transcript* transcript) {
  return guarded(stream != nullptr ? &stream->message : nullptr, [&] {
    require_pointer(stream, "brisvox_stream_read_transcript", "stream");
    check_transcript_args(event, transcript, "brisvox_stream_read_transcript");
    brisvox::Stream& s = stream->open("brisvox_stream_read_transcript");
    write_transcript(transcript, *event, s.read_transcript(from_c(*event)), stream->language);
  });
}

const char* brisvox_stream_event_error(brisvox_stream* stream) {
  try {
    return stream == nullptr || stream->owner == nullptr ? "" : return_copy(stream->stream.last_error());
  } catch (...) {
    return "";
  }
}

const char* brisvox_stream_message(const brisvox_stream* stream) {
  try {
    return stream == nullptr ? "" : return_copy(stream->message.get());
  } catch (...) {
    return "";
  }
}

brisvox_status brisvox_stream_close(brisvox_stream* stream) {
  if (stream == nullptr) return BRISVOX_OK;
  const brisvox_status status = guarded(nullptr, [&] {
    if (stream->owner != nullptr) {
      detach(stream);
      stream->stream.close();
    }
    if (stream->on_events) stream->on_events->clear();
  });
  delete stream;
  return status;
}

brisvox_status brisvox_vad_file(brisvox_engine* engine, const char* path, const brisvox_stream_options* options,
                                char** json) {
  if (json != nullptr) *json = nullptr;
  return guarded(engine != nullptr ? &engine->message : nullptr, [&] {
    require_pointer(engine, "brisvox_vad_file", "engine");
    require_pointer(path, "brisvox_vad_file", "path");
    require_pointer(json, "brisvox_vad_file", "json (where to store the document)");
    const brisvox_stream_options o = read_stream_options(options);
    if (o.transcripts != 0) {
      invalid("brisvox_vad_file: the document has no transcripts: use brisvox_transcribe_file, or leave "
              "transcripts 0");
    }
    std::vector<brisvox::ResultPart> parts{brisvox::ResultPart::kSegments};
    if (o.emit_probabilities != 0) parts.push_back(brisvox::ResultPart::kFrameProbs);
    if (o.turn != 0) parts.push_back(brisvox::ResultPart::kTurns);
    const brisvox::OfflineResult result = run_file(engine, path, stream_config(o));
    *json = malloc_string(brisvox::result_json(result, parts));
  });
}

brisvox_status brisvox_transcribe_file(brisvox_engine* engine, const char* path,
                                       const brisvox_stream_options* options, char** json) {
  if (json != nullptr) *json = nullptr;
  return guarded(engine != nullptr ? &engine->message : nullptr, [&] {
    require_pointer(engine, "brisvox_transcribe_file", "engine");
    require_pointer(path, "brisvox_transcribe_file", "path");
    require_pointer(json, "brisvox_transcribe_file", "json (where to store the document)");
    if (engine->engine->config().find_model("stt") == nullptr) {
      invalid("brisvox_transcribe_file: the engine has no speech-to-text model: set "
              "brisvox_engine_options.stt_model (\"tiny.en\", or a Whisper model folder) when creating it");
    }
    brisvox_stream_options o = read_stream_options(options);
    o.transcripts = 1;
    const brisvox::OfflineResult result = run_file(engine, path, stream_config(o));
    *json = malloc_string(brisvox::transcript_json(result));
  });
}

void brisvox_string_free(char* string) { std::free(string); }

void brisvox_transcript_free(brisvox_transcript* transcript) {
  if (transcript == nullptr) return;
  std::free(transcript->text);
  transcript->text = nullptr;
  // A version 3/4 struct ends before the fields added since.
  if (transcript->struct_size < sizeof(brisvox_transcript)) return;
  std::free(transcript->unstable);
  std::free(transcript->words);  // one block: the array and the words' texts
  transcript->unstable = nullptr;
  transcript->words = nullptr;
  transcript->num_words = 0;
}

}  // extern "C"
