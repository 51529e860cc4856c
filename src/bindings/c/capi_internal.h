// What the C API's source files share (brisvox_c.cpp: engine, streams, files; capi_call.cpp;
// capi_speech.cpp): turning exceptions into statuses and messages, reading versioned option
// structs, copying events out, and the handles' common part. Internal: not installed.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>

#include "brisvox/brisvox.h"
#include "brisvox/engine/engine.h"
#include "brisvox/error.h"

namespace brisvox::capi {

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

// The calling thread's last failure (brisvox_last_error_message).
std::string& thread_last_error() noexcept;
// Keeps `s` in the calling thread's slot for returned messages; returns it (valid until the next
// call that returns a message on this thread).
const char* return_copy(std::string s) noexcept;

brisvox_status status_of(ErrorCode code) noexcept;

// Records a failure (the thread's message, and the handle's when given). Never throws.
void record_failure(MessageSlot* slot, const std::string& message) noexcept;

// Runs `body`; on an exception records the message (the thread's, and the handle's when given)
// and returns its status. Never throws: every exported function runs its body in here.
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
  if (message.empty()) message = status == BRISVOX_ERR_OUT_OF_MEMORY ? "out of memory" : "internal error";
  record_failure(slot, message);
  return status;
}

[[noreturn]] void invalid(const std::string& message);
void require_pointer(const void* p, const char* function, const char* name);

// Larger struct_size values than this are taken for uninitialised memory, not a newer header.
constexpr std::size_t kMostStructSize = 4096;

// Throws unless `size` is acceptable for a struct of this version of `current` bytes whose older
// layouts were `older` bytes (see "Versioning" in brisvox.h): returns how many bytes to copy.
std::size_t checked_struct_size(const void* in, std::size_t size, std::size_t current,
                                std::initializer_list<std::size_t> older, const char* type, const char* init);

// The caller's option struct as this library's version of it. `older`: the struct_size of each
// earlier API version's layout, accepted with the fields added since at their defaults.
template <class T>
T read_options(const T* in, const char* type, const char* init, void (*defaults)(T&),
               std::initializer_list<std::size_t> older) {
  T out{};
  defaults(out);
  if (in == nullptr) return out;
  const std::size_t n = checked_struct_size(in, in->struct_size, sizeof(T), older, type, init);
  std::memcpy(&out, in, n);
  out.struct_size = sizeof(T);
  return out;
}

// A NUL-terminated copy of `s` to be freed with brisvox_string_free (std::free).
char* malloc_string(std::string_view s);

// The C record of an engine event (`speech_side`: a kError of a speech session or of a call's
// speech side).
brisvox_event to_c(const Event& e, bool speech_side) noexcept;
// The engine's event back from the C record, as far as reading its payload needs.
Event from_c(const brisvox_event& e) noexcept;

// Checks the timeout_ms argument of the *_wait_events functions.
void check_timeout(int32_t timeout_ms, const char* function);

// Checks the event_size argument of the *_poll functions (`function` names the caller).
void check_event_size(std::size_t event_size, const char* function);

// Moves up to max_events events from `poll` (size_t(std::span<Event>)) into the caller's array of
// event_size-byte elements; *num_events receives how many.
template <class Poll, class IsSpeechError>
void poll_into(Poll&& poll, IsSpeechError&& is_speech_error, brisvox_event* events, std::size_t max_events,
               std::size_t event_size, std::size_t* num_events) {
  auto* out = reinterpret_cast<unsigned char*>(events);
  Event buffer[32];
  std::size_t done = 0;
  while (done < max_events) {
    const std::size_t want = std::min(std::size(buffer), max_events - done);
    const std::size_t got = poll(std::span(buffer, want));
    for (std::size_t i = 0; i < got; ++i) {
      const brisvox_event e = to_c(buffer[i], is_speech_error(buffer[i]));
      unsigned char* dst = out + (done + i) * event_size;
      std::memset(dst, 0, event_size);
      std::memcpy(dst, &e, std::min(sizeof(e), event_size));
    }
    done += got;
    *num_events = done;
    if (got < want) break;
  }
}

// Fills the caller's brisvox_transcript (checked struct_size) from a transcript read for `event`;
// `language`: the one the stream decodes in. `t` empty: the payload is gone (text NULL).
void write_transcript(brisvox_transcript* out, const brisvox_event& event, const std::optional<Transcript>& t,
                      std::string_view language);
// Checks a read_transcript call's arguments; `function` names it.
void check_transcript_args(const brisvox_event* event, brisvox_transcript* out, const char* function);

// Copies the audio payload of `event` (through `read`: size_t(const Event&, std::span<std::byte>))
// into the caller's float buffer; see brisvox_call_read_audio for the contract.
template <class Read>
void read_audio_into(Read&& read, const brisvox_event* event, float* samples, std::size_t max_samples,
                     std::size_t* num_samples, const char* function) {
  require_pointer(event, function, "event");
  require_pointer(num_samples, function, "num_samples");
  if (event->type != BRISVOX_EVENT_TTS_AUDIO) {
    invalid(fmt::format("{}: the event is not a BRISVOX_EVENT_TTS_AUDIO (type {})", function, event->type));
  }
  const std::size_t needed = event->payload_bytes / sizeof(float);
  if (samples == nullptr && max_samples == 0) {
    *num_samples = needed;  // a size query
    return;
  }
  require_pointer(samples, function, "samples");
  if (max_samples < needed) {
    *num_samples = needed;
    invalid(fmt::format("{}: the piece has {} samples and `samples` holds {}: pass a buffer of "
                        "event.payload_bytes / sizeof(float) samples (the audio stays readable)",
                        function, needed, max_samples));
  }
  const std::size_t bytes = read(from_c(*event), std::as_writable_bytes(std::span(samples, needed)));
  *num_samples = bytes / sizeof(float);
}

constexpr std::size_t kConvertChunk = 1024;  // int16 samples converted per push

// Pushes int16 samples through `push` (size_t(std::span<const float>)), converted a chunk at a
// time in `converted`; stops at the first chunk not taken whole. Returns how many were taken.
template <class Push>
std::size_t push_i16(Push&& push, std::span<float, kConvertChunk> converted, const int16_t* samples,
                     std::size_t num_samples) {
  if (num_samples == 0) return push(std::span<const float>{});  // the closed-stream check, as for floats
  std::size_t done = 0;
  while (done < num_samples) {
    const std::size_t n = std::min(kConvertChunk, num_samples - done);
    for (std::size_t i = 0; i < n; ++i) converted[i] = static_cast<float>(samples[done + i]) / 32768.0f;
    const std::size_t taken = push(std::span<const float>(converted.data(), n));
    done += taken;
    if (taken < n) break;  // the buffer is full: the rest is refused
  }
  return done;
}

// A stream's, a call's or a speech session's on_events, called by the engine's workers. close()
// takes `mutex` to clear it, so that no call starts after the handle's close returns and one in
// progress has finished by then.
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

// The callback's holder for `function`/`user_data` (null when function is NULL), and the
// std::function the engine calls.
std::shared_ptr<EventsCallback> make_callback(void (*function)(void*), void* user_data);
std::function<void()> engine_hook(const std::shared_ptr<EventsCallback>& callback);

// What every handle an engine opens (stream, call, speech session) has: its engine, while that
// lives, and its message. brisvox_engine_destroy closes the C++ handles of those still open.
struct Handle {
  brisvox_engine* owner = nullptr;  // null once the engine is destroyed
  MessageSlot message;
  std::shared_ptr<EventsCallback> on_events;  // set when the options gave one

  virtual ~Handle() = default;
  // Closes the C++ handle now, before its engine goes.
  virtual void engine_gone() noexcept = 0;
  // Throws Error(kClosed) naming `function` once the engine is gone.
  void check_open(const char* function, const char* noun) const;
};

// Registers an open handle with its engine / takes it off (its close).
void attach(brisvox_engine* engine, Handle* handle);
void detach(Handle* handle) noexcept;

// The defaults and the C++ configuration of a stream's options (brisvox_c.cpp).
void stream_defaults(brisvox_stream_options& o);
StreamConfig stream_config(const brisvox_stream_options& o);
// brisvox_stream_options as the caller gave them (NULL: the defaults), checked.
brisvox_stream_options read_stream_options(const brisvox_stream_options* in);

// The voice settings of brisvox_speech_options / brisvox_call_options (names[i] = values[i]).
void read_voice_options(const char* const* names, const double* values, std::size_t count, SpeechConfig& config,
                        const char* type);
// Throws Error(kInvalidArgument) naming the field when the engine has no voice.
void require_voice(const Engine& engine, const char* function);

}  // namespace brisvox::capi

struct brisvox_engine {
  std::unique_ptr<brisvox::Engine> engine;
  brisvox::capi::MessageSlot message;
  std::mutex handles_mutex;
  std::unordered_set<brisvox::capi::Handle*> handles;  // open handles, closed by brisvox_engine_destroy
};
