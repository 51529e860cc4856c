// The C API (include/brisvox/brisvox.h) over brisvox::Engine. Every exported function runs its body
// inside `guarded`, which turns any exception into a status code and a message: none crosses the
// C boundary.
#include "brisvox/brisvox.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/engine/offline.h"
#include "brisvox/formats/result_json.h"
#include "brisvox/error.h"

namespace {

using brisvox::Error;
using brisvox::ErrorCode;

// The message of the last failed call on one handle, written and read from any thread.
struct MessageSlot {
  mutable std::mutex mutex;
  std::string text;
  void set(const std::string& m) {
    std::lock_guard lock(mutex);
    text = m;
  }
  std::string get() const {
    std::lock_guard lock(mutex);
    return text;
  }
};

thread_local std::string t_last_error;  // the calling thread's last failure
thread_local std::string t_returned;    // what the last brisvox_*_message call returned

const char* return_copy(std::string s) noexcept {
  t_returned = std::move(s);  // noexcept in practice: a failed allocation here would terminate
  return t_returned.c_str();
}

brisvox_status status_of(ErrorCode code) noexcept {
  // kLimitExceeded (after kInternal) comes only from limits the C API does not set (the server's
  // --max-upload-seconds): not a status of its own, and not shifted onto BRISVOX_ERR_OUT_OF_MEMORY.
  if (code == ErrorCode::kLimitExceeded) return BRISVOX_ERR_INVALID_ARGUMENT;
  // ErrorCode's values in order, shifted by one (0 is BRISVOX_OK).
  return static_cast<brisvox_status>(static_cast<int>(code) + 1);
}

// Runs `body`; on an exception records the message (the thread's, and the handle's when given)
// and returns its status. Never throws.
template <class Body>
brisvox_status guarded(MessageSlot* slot, Body&& body) noexcept {
  brisvox_status status = BRISVOX_OK;
  std::string message;
  try {
    body();
    return BRISVOX_OK;
  } catch (const Error& e) {
    status = status_of(e.code());
    try {
      message = e.what();
    } catch (...) {
    }
  } catch (const std::bad_alloc&) {
    status = BRISVOX_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    status = BRISVOX_ERR_INTERNAL;
    try {
      message = fmt::format("internal error (please report it): {}", e.what());
    } catch (...) {
    }
  } catch (...) {
    status = BRISVOX_ERR_INTERNAL;
  }
  try {
    if (message.empty()) message = status == BRISVOX_ERR_OUT_OF_MEMORY ? "out of memory" : "internal error";
    t_last_error = message;
    if (slot != nullptr) slot->set(message);
  } catch (...) {
    // Out of memory while recording the message: the status still says what happened.
  }
  return status;
}

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, message); }

void require_pointer(const void* p, const char* function, const char* name) {
  if (p == nullptr) invalid(fmt::format("{}: {} is NULL", function, name));
}

// Larger struct_size values than this are taken for uninitialised memory, not a newer header.
constexpr std::size_t kMostStructSize = 4096;

// The caller's option struct as this library's version of it (see "Versioning" in brisvox.h).
// `oldest`: the struct_size of the first API version's layout, which is accepted with the fields
// added since at their defaults.
template <class T>
T read_options(const T* in, const char* type, const char* init, void (*defaults)(T&), std::size_t oldest) {
  T out{};
  defaults(out);
  if (in == nullptr) return out;
  const std::size_t size = in->struct_size;
  if (size < sizeof(T) && size != oldest) {
    invalid(fmt::format("{}.struct_size is {}, expected sizeof({}) = {} (brisvox C API {}): call {}() first, "
                        "or set struct_size = sizeof({})",
                        type, size, type, sizeof(T), BRISVOX_C_API_VERSION, init, type));
  }
  if (size > kMostStructSize) {
    invalid(fmt::format("{}.struct_size is {}: not initialised? (sizeof({}) = {}; call {}() first)", type, size,
                        type, sizeof(T), init));
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  for (std::size_t i = sizeof(T); i < size; ++i) {
    if (bytes[i] != 0) {
      invalid(fmt::format("{}.struct_size is {}, larger than this library's {} (brisvox C API {}), and the fields "
                          "it does not know are set (byte {}): the header you compiled against is newer than the "
                          "library; leave those fields zero or use a newer library",
                          type, size, sizeof(T), BRISVOX_C_API_VERSION, i));
    }
  }
  std::memcpy(&out, in, std::min(size, sizeof(T)));
  out.struct_size = sizeof(T);
  return out;
}

// The layouts of API version 1.
constexpr std::size_t kEngineOptionsV1 = sizeof(brisvox_engine_options);
constexpr std::size_t kStreamOptionsV1 = offsetof(brisvox_stream_options, on_events);

void engine_defaults(brisvox_engine_options& o) {
  const brisvox::EngineConfig d;
  o = brisvox_engine_options{};
  o.struct_size = sizeof(o);
  o.vad_model = nullptr;
  o.vad_workers = 0;
  o.vad_max_batch = 0;
  o.turn_model = nullptr;
  o.turn_workers = 0;
  o.max_streams = d.max_streams;
  o.latency_budget_ms = d.latency_budget_ms;
  o.admission_control = d.admission_control ? 1 : 0;
  o.run_timeout_ms = d.run_timeout_ms;
}

void stream_defaults(brisvox_stream_options& o) {
  const brisvox::StreamConfig d;
  const brisvox::TurnParams t;
  const brisvox::TurnOptions ts;
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
}

brisvox::StreamConfig stream_config(const brisvox_stream_options& o) {
  brisvox::StreamConfig c;
  c.sample_rate_hz = o.sample_rate_hz;
  c.buffer_ms = o.buffer_ms;
  c.vad.params.threshold = o.threshold;
  c.vad.params.neg_threshold = o.neg_threshold;
  c.vad.params.min_speech_ms = o.min_speech_ms;
  c.vad.params.min_silence_ms = o.min_silence_ms;
  c.vad.params.speech_pad_ms = o.speech_pad_ms;
  c.vad.params.max_speech_s = o.max_speech_s;
  c.vad.emit_probabilities = o.emit_probabilities != 0;
  if (o.turn != 0) {
    brisvox::TurnOptions turn;
    turn.params.stop_ms = o.turn_stop_ms;
    turn.params.pre_speech_ms = o.turn_pre_speech_ms;
    turn.params.max_silence_ms = o.turn_max_silence_ms;
    turn.params.turn_threshold = o.turn_threshold;
    turn.wait_for_verdict = o.turn_wait_for_verdict != 0;
    c.turn = turn;
  }
  return c;
}

brisvox_event to_c(const brisvox::Event& e) noexcept {
  brisvox_event out{};
  out.type = static_cast<int32_t>(e.type);
  out.error_code = e.type == brisvox::EventType::kError ? static_cast<int32_t>(status_of(e.error_code)) : 0;
  out.turn_reason = static_cast<int32_t>(e.turn_reason);
  out.probability = e.probability;
  out.start_s = e.start_s;
  out.end_s = e.end_s;
  out.frame_index = e.frame_index;
  out.backlog_ms = e.backlog_ms;
  out.rejected_samples = e.rejected_samples;
  return out;
}

// The values of the C enums are the C++ ones: checked here, so that a change on either side fails
// to compile.
static_assert(static_cast<int>(brisvox::EventType::kSpeechStart) == BRISVOX_EVENT_SPEECH_START);
static_assert(static_cast<int>(brisvox::EventType::kSpeechEnd) == BRISVOX_EVENT_SPEECH_END);
static_assert(static_cast<int>(brisvox::EventType::kVadProbability) == BRISVOX_EVENT_VAD_PROBABILITY);
static_assert(static_cast<int>(brisvox::EventType::kOverload) == BRISVOX_EVENT_OVERLOAD);
static_assert(static_cast<int>(brisvox::EventType::kError) == BRISVOX_EVENT_ERROR);
static_assert(static_cast<int>(brisvox::EventType::kEndOfStream) == BRISVOX_EVENT_END_OF_STREAM);
static_assert(static_cast<int>(brisvox::EventType::kTurnEnd) == BRISVOX_EVENT_TURN_END);
static_assert(static_cast<int>(brisvox::EventType::kTurnIncomplete) == BRISVOX_EVENT_TURN_INCOMPLETE);
static_assert(static_cast<int>(brisvox::EventType::kTranscript) == BRISVOX_EVENT_TRANSCRIPT);
static_assert(static_cast<int>(brisvox::TurnAction::Reason::kModel) == BRISVOX_TURN_REASON_MODEL);
static_assert(static_cast<int>(brisvox::TurnAction::Reason::kTimeout) == BRISVOX_TURN_REASON_TIMEOUT);
static_assert(static_cast<int>(brisvox::TurnAction::Reason::kEndOfStream) == BRISVOX_TURN_REASON_END_OF_STREAM);
static_assert(static_cast<int>(ErrorCode::kInvalidArgument) + 1 == BRISVOX_ERR_INVALID_ARGUMENT);
static_assert(static_cast<int>(ErrorCode::kInferenceTimeout) + 1 == BRISVOX_ERR_INFERENCE_TIMEOUT);
static_assert(static_cast<int>(ErrorCode::kInternal) + 1 == BRISVOX_ERR_INTERNAL);
static_assert(static_cast<int>(ErrorCode::kLimitExceeded) == static_cast<int>(ErrorCode::kInternal) + 1,
              "a new ErrorCode needs its brisvox_status (status_of)");

constexpr std::size_t kConvertChunk = 1024;  // int16 samples converted per push

}  // namespace

struct brisvox_stream;

struct brisvox_engine {
  std::unique_ptr<brisvox::Engine> engine;
  MessageSlot message;
  std::mutex streams_mutex;
  std::unordered_set<brisvox_stream*> streams;  // open handles, closed by brisvox_engine_destroy
};

// A stream's on_events, called by the engine's worker. close() takes `mutex` to clear it, so that
// no call starts after brisvox_stream_close returns and one in progress has finished by then.
struct EventsCallback {
  std::mutex mutex;
  void (*function)(void*) = nullptr;
  void* user_data = nullptr;
  void call() noexcept {
    std::lock_guard lock(mutex);
    if (function != nullptr) function(user_data);
  }
  void clear() noexcept {
    std::lock_guard lock(mutex);
    function = nullptr;
  }
};

struct brisvox_stream {
  brisvox_engine* owner = nullptr;  // null once the engine is destroyed
  brisvox::Stream stream;
  std::shared_ptr<EventsCallback> on_events;  // set when the options gave one
  MessageSlot message;
  std::array<float, kConvertChunk> converted{};  // push_i16's float samples, preallocated

  brisvox::Stream& open(const char* function) {
    if (owner == nullptr) throw Error(ErrorCode::kClosed, fmt::format("{}: the stream's engine was destroyed", function));
    return stream;
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
    return return_copy(t_last_error);
  } catch (...) {
    return "";
  }
}

const char* brisvox_version(void) { return BRISVOX_VERSION; }

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
    const brisvox_engine_options o =
        read_options(options, "brisvox_engine_options", "brisvox_engine_options_init", engine_defaults,
                     kEngineOptionsV1);
    brisvox::EngineConfig config;
    config.models = {brisvox::ModelSpec::silero_vad(o.vad_model != nullptr && *o.vad_model ? o.vad_model : "v6")};
    config.models[0].num_workers = o.vad_workers;
    config.models[0].max_batch = o.vad_max_batch;
    if (o.turn_model != nullptr && *o.turn_model != '\0') {
      config.models.push_back(brisvox::ModelSpec::smart_turn(o.turn_model));
      config.models[1].num_workers = o.turn_workers;
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
      std::lock_guard lock(engine->streams_mutex);
      for (brisvox_stream* s : engine->streams) {
        brisvox::Stream gone = std::move(s->stream);  // closed here, before its engine goes
        gone.close();
        if (s->on_events) s->on_events->clear();
        s->owner = nullptr;
      }
      engine->streams.clear();
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
    const brisvox_stream_options o =
        read_options(options, "brisvox_stream_options", "brisvox_stream_options_init", stream_defaults,
                     kStreamOptionsV1);
    auto handle = std::make_unique<brisvox_stream>();
    brisvox::StreamConfig config = stream_config(o);
    if (o.on_events != nullptr) {
      handle->on_events = std::make_shared<EventsCallback>();
      handle->on_events->function = o.on_events;
      handle->on_events->user_data = o.on_events_user_data;
      config.on_events = [callback = handle->on_events] { callback->call(); };
    }
    handle->stream = engine->engine->open_stream(config);
    handle->owner = engine;
    {
      std::lock_guard lock(engine->streams_mutex);
      engine->streams.insert(handle.get());
    }
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
    if (num_samples == 0) {
      s.push({});  // the closed-stream check, as for float samples
      return;
    }
    std::size_t done = 0;
    while (done < num_samples) {
      const std::size_t n = std::min(kConvertChunk, num_samples - done);
      for (std::size_t i = 0; i < n; ++i) stream->converted[i] = static_cast<float>(samples[done + i]) / 32768.0f;
      const std::size_t taken = s.push(std::span(stream->converted.data(), n));
      done += taken;
      if (num_accepted != nullptr) *num_accepted = done;
      if (taken < n) break;  // the buffer is full: the rest is refused
    }
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
    if (event_size < sizeof(brisvox_event) || event_size > kMostStructSize) {
      invalid(fmt::format("brisvox_stream_poll: event_size is {}, expected sizeof(brisvox_event) = {} (brisvox C API "
                          "{})",
                          event_size, sizeof(brisvox_event), BRISVOX_C_API_VERSION));
    }
    brisvox::Stream& s = stream->open("brisvox_stream_poll");
    auto* out = reinterpret_cast<unsigned char*>(events);
    std::array<brisvox::Event, 32> buffer;
    std::size_t done = 0;
    while (done < max_events) {
      const std::size_t want = std::min(buffer.size(), max_events - done);
      const std::size_t got = s.poll(std::span(buffer.data(), want));
      for (std::size_t i = 0; i < got; ++i) {
        const brisvox_event e = to_c(buffer[i]);
        unsigned char* dst = out + (done + i) * event_size;
        std::memset(dst, 0, event_size);
        std::memcpy(dst, &e, sizeof(e));
      }
      done += got;
      *num_events = done;
      if (got < want) break;
    }
  });
}

brisvox_status brisvox_stream_wait_events(brisvox_stream* stream, int32_t timeout_ms, int32_t* ready) {
  if (ready != nullptr) *ready = 0;
  return guarded(stream != nullptr ? &stream->message : nullptr, [&] {
    require_pointer(stream, "brisvox_stream_wait_events", "stream");
    if (timeout_ms < 0) invalid(fmt::format("brisvox_stream_wait_events: timeout_ms is {}, must be >= 0", timeout_ms));
    const bool pending =
        stream->open("brisvox_stream_wait_events").wait_events(std::chrono::milliseconds(timeout_ms));
    if (ready != nullptr) *ready = pending ? 1 : 0;
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
      {
        std::lock_guard lock(stream->owner->streams_mutex);
        stream->owner->streams.erase(stream);
      }
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
    const brisvox_stream_options o =
        read_options(options, "brisvox_stream_options", "brisvox_stream_options_init", stream_defaults,
                     kStreamOptionsV1);
    brisvox::OfflineOptions offline;
    offline.stream = stream_config(o);
    if (offline.stream.turn) offline.stream.turn->wait_for_verdict = true;
    std::vector<brisvox::ResultPart> parts{brisvox::ResultPart::kSegments};
    if (o.emit_probabilities != 0) parts.push_back(brisvox::ResultPart::kFrameProbs);
    if (o.turn != 0) parts.push_back(brisvox::ResultPart::kTurns);
    const brisvox::OfflineResult result = brisvox::run_offline(*engine->engine, brisvox::OfflineInput{path, std::nullopt}, offline);
    if (result.error) throw *result.error;
    const std::string doc = brisvox::result_json(result, parts);
    char* out = static_cast<char*>(std::malloc(doc.size() + 1));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, doc.c_str(), doc.size() + 1);
    *json = out;
  });
}

void brisvox_string_free(char* string) { std::free(string); }

}  // extern "C"
