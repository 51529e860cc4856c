// The C API's speech sessions (brisvox_speech_*, brisvox.h) over brisvox::Speech: text in, audio
// out, on the engine's voice.
#include <chrono>
#include <memory>
#include <span>

#include "capi_internal.h"

namespace brisvox::capi {
namespace {

void speech_defaults(brisvox_speech_options& o) {
  const SpeechConfig d;
  o = brisvox_speech_options{};
  o.struct_size = sizeof(o);
  o.sample_rate_hz = d.sample_rate_hz;
  o.volume = d.volume;
  o.fast_start = d.fast_start ? 1 : 0;
  o.max_queued = d.max_queued;
  o.payload_buffer_bytes = d.payload_buffer_bytes;
}

}  // namespace
}  // namespace brisvox::capi

using namespace brisvox::capi;

struct brisvox_speech : Handle {
  brisvox::Speech speech;
  int32_t sample_rate_hz = 0;

  brisvox::Speech& open(const char* function) {
    check_open(function, "speech session");
    return speech;
  }
  void engine_gone() noexcept override {
    brisvox::Speech gone = std::move(speech);  // closed here, before its engine goes
    gone.close();
    if (on_events) on_events->clear();
    owner = nullptr;
  }
};

namespace {

brisvox::capi::MessageSlot* slot(brisvox_speech* s) { return s != nullptr ? &s->message : nullptr; }

}  // namespace

extern "C" {

brisvox_status brisvox_speech_options_init(brisvox_speech_options* options) {
  return guarded(nullptr, [&] {
    require_pointer(options, "brisvox_speech_options_init", "options");
    speech_defaults(*options);
  });
}

brisvox_status brisvox_speech_open(brisvox_engine* engine, const brisvox_speech_options* options,
                                   brisvox_speech** speech) {
  if (speech != nullptr) *speech = nullptr;
  return guarded(engine != nullptr ? &engine->message : nullptr, [&] {
    require_pointer(engine, "brisvox_speech_open", "engine");
    require_pointer(speech, "brisvox_speech_open", "speech (where to store the handle)");
    const brisvox_speech_options o =
        read_options(options, "brisvox_speech_options", "brisvox_speech_options_init", speech_defaults, {});
    require_voice(*engine->engine, "brisvox_speech_open");
    brisvox::SpeechConfig config;
    config.sample_rate_hz = o.sample_rate_hz;
    config.volume = static_cast<float>(o.volume);
    config.fast_start = o.fast_start != 0;
    config.max_queued = o.max_queued;
    config.payload_buffer_bytes = o.payload_buffer_bytes;
    read_voice_options(o.voice_option_names, o.voice_option_values, o.num_voice_options, config,
                       "brisvox_speech_options");
    auto handle = std::make_unique<brisvox_speech>();
    handle->on_events = make_callback(o.on_events, o.on_events_user_data);
    config.on_events = engine_hook(handle->on_events);
    handle->speech = engine->engine->open_speech(config);
    handle->sample_rate_hz = handle->speech.sample_rate_hz();
    attach(engine, handle.get());
    *speech = handle.release();
  });
}

brisvox_status brisvox_speech_speak(brisvox_speech* speech, const char* text, uint32_t* utterance_id) {
  if (utterance_id != nullptr) *utterance_id = 0;
  return guarded(slot(speech), [&] {
    require_pointer(speech, "brisvox_speech_speak", "speech");
    require_pointer(text, "brisvox_speech_speak", "text");
    const std::uint32_t id = speech->open("brisvox_speech_speak").speak(text);
    if (utterance_id != nullptr) *utterance_id = id;
  });
}

brisvox_status brisvox_speech_mark(brisvox_speech* speech, uint32_t* mark_id) {
  if (mark_id != nullptr) *mark_id = 0;
  return guarded(slot(speech), [&] {
    require_pointer(speech, "brisvox_speech_mark", "speech");
    const std::uint32_t id = speech->open("brisvox_speech_mark").mark();
    if (mark_id != nullptr) *mark_id = id;
  });
}

brisvox_status brisvox_speech_cancel(brisvox_speech* speech, uint32_t* last_id) {
  if (last_id != nullptr) *last_id = 0;
  return guarded(slot(speech), [&] {
    require_pointer(speech, "brisvox_speech_cancel", "speech");
    const std::uint32_t id = speech->open("brisvox_speech_cancel").cancel();
    if (last_id != nullptr) *last_id = id;
  });
}

brisvox_status brisvox_speech_poll(brisvox_speech* speech, brisvox_event* events, size_t max_events,
                                   size_t event_size, size_t* num_events) {
  if (num_events != nullptr) *num_events = 0;
  return guarded(slot(speech), [&] {
    require_pointer(speech, "brisvox_speech_poll", "speech");
    require_pointer(num_events, "brisvox_speech_poll", "num_events");
    if (max_events > 0) require_pointer(events, "brisvox_speech_poll", "events");
    check_event_size(event_size, "brisvox_speech_poll");
    brisvox::Speech& s = speech->open("brisvox_speech_poll");
    // Every kError of a speech session is an utterance's.
    poll_into([&](std::span<brisvox::Event> out) { return s.poll(out); }, [](const brisvox::Event&) { return true; },
              events, max_events, event_size, num_events);
  });
}

brisvox_status brisvox_speech_wait_events(brisvox_speech* speech, int32_t timeout_ms, int32_t* ready) {
  if (ready != nullptr) *ready = 0;
  return guarded(slot(speech), [&] {
    require_pointer(speech, "brisvox_speech_wait_events", "speech");
    check_timeout(timeout_ms, "brisvox_speech_wait_events");
    const bool pending =
        speech->open("brisvox_speech_wait_events").wait_events(std::chrono::milliseconds(timeout_ms));
    if (ready != nullptr) *ready = pending ? 1 : 0;
  });
}

brisvox_status brisvox_speech_read_audio(brisvox_speech* speech, const brisvox_event* event, float* samples,
                                         size_t max_samples, size_t* num_samples) {
  if (num_samples != nullptr) *num_samples = 0;
  return guarded(slot(speech), [&] {
    require_pointer(speech, "brisvox_speech_read_audio", "speech");
    brisvox::Speech& s = speech->open("brisvox_speech_read_audio");
    read_audio_into([&](const brisvox::Event& e, std::span<std::byte> out) { return s.read_payload(e, out); }, event,
                    samples, max_samples, num_samples, "brisvox_speech_read_audio");
  });
}

brisvox_status brisvox_speech_sample_rate(const brisvox_speech* speech, int32_t* sample_rate_hz) {
  if (sample_rate_hz != nullptr) *sample_rate_hz = 0;
  return guarded(nullptr, [&] {
    require_pointer(speech, "brisvox_speech_sample_rate", "speech");
    require_pointer(sample_rate_hz, "brisvox_speech_sample_rate", "sample_rate_hz");
    *sample_rate_hz = speech->sample_rate_hz;
  });
}

const char* brisvox_speech_event_error(brisvox_speech* speech) {
  try {
    return speech == nullptr || speech->owner == nullptr ? "" : return_copy(speech->speech.last_error());
  } catch (...) {
    return "";
  }
}

const char* brisvox_speech_message(const brisvox_speech* speech) {
  try {
    return speech == nullptr ? "" : return_copy(speech->message.get());
  } catch (...) {
    return "";
  }
}

brisvox_status brisvox_speech_close(brisvox_speech* speech) {
  if (speech == nullptr) return BRISVOX_OK;
  const brisvox_status status = guarded(nullptr, [&] {
    if (speech->owner != nullptr) {
      detach(speech);
      speech->speech.close();
    }
    if (speech->on_events) speech->on_events->clear();
  });
  delete speech;
  return status;
}

}  // extern "C"
