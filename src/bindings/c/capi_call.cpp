// The C API's calls (brisvox_call_*, brisvox.h) over brisvox::Call: a stream and a speech session
// under one handle, with barge-in.
#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <span>

#include "capi_internal.h"

namespace brisvox::capi {
namespace {

// Call::last_error's and the Python binding's rule: a call's speech side marks its kError with
// payload_id 1 (call.h).
constexpr std::uint32_t kSpeechSideError = 1;
bool is_speech_error(const Event& e) { return e.type == EventType::kError && e.payload_id == kSpeechSideError; }

void call_defaults(brisvox_call_options& o) {
  const CallConfig d;
  o = brisvox_call_options{};
  o.struct_size = sizeof(o);
  o.listen = nullptr;
  o.speech_sample_rate_hz = 0;
  o.volume = d.speak.volume;
  o.fast_start = d.speak.fast_start ? 1 : 0;
  o.max_queued = d.speak.max_queued;
  o.payload_buffer_bytes = 0;
  o.barge_in = d.barge_in.enabled ? 1 : 0;
  o.barge_in_min_speech_ms = d.barge_in.min_speech_ms;
  o.barge_in_on_turn_end = d.barge_in.on_turn_end ? 1 : 0;
  o.playout_lead_ms = d.playout_lead_ms;
}

}  // namespace
}  // namespace brisvox::capi

using namespace brisvox::capi;

struct brisvox_call : Handle {
  brisvox::Call call;
  std::string language;  // its transcripts' (brisvox_transcript.language)
  int32_t listen_hz = 0;
  int32_t speech_hz = 0;
  std::array<float, kConvertChunk> converted{};  // push_i16's float samples, preallocated

  brisvox::Call& open(const char* function) {
    check_open(function, "call");
    return call;
  }
  void engine_gone() noexcept override {
    brisvox::Call gone = std::move(call);  // closed here, before its engine goes
    gone.close();
    if (on_events) on_events->clear();
    owner = nullptr;
  }
};

namespace {

brisvox::capi::MessageSlot* slot(brisvox_call* c) { return c != nullptr ? &c->message : nullptr; }

}  // namespace

extern "C" {

brisvox_status brisvox_call_options_init(brisvox_call_options* options) {
  return guarded(nullptr, [&] {
    require_pointer(options, "brisvox_call_options_init", "options");
    call_defaults(*options);
  });
}

brisvox_status brisvox_call_open(brisvox_engine* engine, const brisvox_call_options* options, brisvox_call** call) {
  if (call != nullptr) *call = nullptr;
  return guarded(engine != nullptr ? &engine->message : nullptr, [&] {
    require_pointer(engine, "brisvox_call_open", "engine");
    require_pointer(call, "brisvox_call_open", "call (where to store the handle)");
    const brisvox_call_options o =
        read_options(options, "brisvox_call_options", "brisvox_call_options_init", call_defaults, {});
    require_voice(*engine->engine, "brisvox_call_open");
    const brisvox_stream_options listen = read_stream_options(o.listen);
    if (listen.on_events != nullptr) {
      invalid("brisvox_call_open: listen->on_events must be NULL: a call has one callback, "
              "brisvox_call_options.on_events");
    }
    brisvox::CallConfig config;
    config.listen = stream_config(listen);
    if (config.listen.stt && engine->engine->config().find_model("stt") == nullptr) {
      invalid("brisvox_call_open: listen->transcripts needs a speech-to-text model: set "
              "brisvox_engine_options.stt_model when creating the engine");
    }
    config.speak.sample_rate_hz = o.speech_sample_rate_hz;
    config.speak.volume = static_cast<float>(o.volume);
    config.speak.fast_start = o.fast_start != 0;
    config.speak.max_queued = o.max_queued;
    config.speak.payload_buffer_bytes = o.payload_buffer_bytes;
    read_voice_options(o.voice_option_names, o.voice_option_values, o.num_voice_options, config.speak,
                       "brisvox_call_options");
    config.barge_in.enabled = o.barge_in != 0;
    config.barge_in.min_speech_ms = o.barge_in_min_speech_ms;
    config.barge_in.on_turn_end = o.barge_in_on_turn_end != 0;
    config.playout_lead_ms = o.playout_lead_ms;
    auto handle = std::make_unique<brisvox_call>();
    handle->on_events = make_callback(o.on_events, o.on_events_user_data);
    config.on_events = engine_hook(handle->on_events);
    if (config.listen.stt) handle->language = config.listen.stt->decode.language;
    handle->call = engine->engine->open_call(config);
    handle->listen_hz = handle->call.sample_rate_hz();
    handle->speech_hz = handle->call.speech_sample_rate_hz();
    attach(engine, handle.get());
    *call = handle.release();
  });
}

brisvox_status brisvox_call_push_f32(brisvox_call* call, const float* samples, size_t num_samples,
                                     size_t* num_accepted) {
  if (num_accepted != nullptr) *num_accepted = 0;
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_push_f32", "call");
    if (num_samples > 0) require_pointer(samples, "brisvox_call_push_f32", "samples");
    const std::size_t n = call->open("brisvox_call_push_f32").push(std::span(samples, num_samples));
    if (num_accepted != nullptr) *num_accepted = n;
  });
}

brisvox_status brisvox_call_push_i16(brisvox_call* call, const int16_t* samples, size_t num_samples,
                                     size_t* num_accepted) {
  if (num_accepted != nullptr) *num_accepted = 0;
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_push_i16", "call");
    if (num_samples > 0) require_pointer(samples, "brisvox_call_push_i16", "samples");
    brisvox::Call& c = call->open("brisvox_call_push_i16");
    const std::size_t n =
        push_i16([&](std::span<const float> f) { return c.push(f); }, call->converted, samples, num_samples);
    if (num_accepted != nullptr) *num_accepted = n;
  });
}

brisvox_status brisvox_call_writable(brisvox_call* call, size_t* num_samples) {
  if (num_samples != nullptr) *num_samples = 0;
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_writable", "call");
    require_pointer(num_samples, "brisvox_call_writable", "num_samples");
    *num_samples = call->open("brisvox_call_writable").writable();
  });
}

brisvox_status brisvox_call_finish(brisvox_call* call) {
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_finish", "call");
    call->open("brisvox_call_finish").flush();
  });
}

brisvox_status brisvox_call_speak(brisvox_call* call, const char* text, uint32_t* utterance_id) {
  if (utterance_id != nullptr) *utterance_id = 0;
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_speak", "call");
    require_pointer(text, "brisvox_call_speak", "text");
    const std::uint32_t id = call->open("brisvox_call_speak").speak(text);
    if (utterance_id != nullptr) *utterance_id = id;
  });
}

brisvox_status brisvox_call_mark(brisvox_call* call, uint32_t* mark_id) {
  if (mark_id != nullptr) *mark_id = 0;
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_mark", "call");
    const std::uint32_t id = call->open("brisvox_call_mark").mark();
    if (mark_id != nullptr) *mark_id = id;
  });
}

brisvox_status brisvox_call_cancel(brisvox_call* call, uint32_t* last_id) {
  if (last_id != nullptr) *last_id = 0;
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_cancel", "call");
    const std::uint32_t id = call->open("brisvox_call_cancel").cancel();
    if (last_id != nullptr) *last_id = id;
  });
}

brisvox_status brisvox_call_poll(brisvox_call* call, brisvox_event* events, size_t max_events, size_t event_size,
                                 size_t* num_events) {
  if (num_events != nullptr) *num_events = 0;
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_poll", "call");
    require_pointer(num_events, "brisvox_call_poll", "num_events");
    if (max_events > 0) require_pointer(events, "brisvox_call_poll", "events");
    check_event_size(event_size, "brisvox_call_poll");
    brisvox::Call& c = call->open("brisvox_call_poll");
    poll_into([&](std::span<brisvox::Event> out) { return c.poll(out); }, is_speech_error, events, max_events,
              event_size, num_events);
  });
}

brisvox_status brisvox_call_wait_events(brisvox_call* call, int32_t timeout_ms, int32_t* ready) {
  if (ready != nullptr) *ready = 0;
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_wait_events", "call");
    check_timeout(timeout_ms, "brisvox_call_wait_events");
    const bool pending = call->open("brisvox_call_wait_events").wait_events(std::chrono::milliseconds(timeout_ms));
    if (ready != nullptr) *ready = pending ? 1 : 0;
  });
}

brisvox_status brisvox_call_read_audio(brisvox_call* call, const brisvox_event* event, float* samples,
                                       size_t max_samples, size_t* num_samples) {
  if (num_samples != nullptr) *num_samples = 0;
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_read_audio", "call");
    brisvox::Call& c = call->open("brisvox_call_read_audio");
    read_audio_into([&](const brisvox::Event& e, std::span<std::byte> out) { return c.read_payload(e, out); }, event,
                    samples, max_samples, num_samples, "brisvox_call_read_audio");
  });
}

brisvox_status brisvox_call_read_transcript(brisvox_call* call, const brisvox_event* event,
                                            brisvox_transcript* transcript) {
  return guarded(slot(call), [&] {
    require_pointer(call, "brisvox_call_read_transcript", "call");
    check_transcript_args(event, transcript, "brisvox_call_read_transcript");
    brisvox::Call& c = call->open("brisvox_call_read_transcript");
    write_transcript(transcript, *event, c.read_transcript(from_c(*event)), call->language);
  });
}

brisvox_status brisvox_call_sample_rates(const brisvox_call* call, int32_t* listen_hz, int32_t* speech_hz) {
  if (listen_hz != nullptr) *listen_hz = 0;
  if (speech_hz != nullptr) *speech_hz = 0;
  return guarded(nullptr, [&] {
    require_pointer(call, "brisvox_call_sample_rates", "call");
    if (listen_hz != nullptr) *listen_hz = call->listen_hz;
    if (speech_hz != nullptr) *speech_hz = call->speech_hz;
  });
}

const char* brisvox_call_event_error(brisvox_call* call, const brisvox_event* event) {
  try {
    if (call == nullptr || event == nullptr || call->owner == nullptr) return "";
    brisvox::Event e = from_c(*event);
    e.type = brisvox::EventType::kError;
    e.payload_id = event->speech_error != 0 ? kSpeechSideError : 0;
    return return_copy(call->call.last_error(e));
  } catch (...) {
    return "";
  }
}

const char* brisvox_call_message(const brisvox_call* call) {
  try {
    return call == nullptr ? "" : return_copy(call->message.get());
  } catch (...) {
    return "";
  }
}

brisvox_status brisvox_call_close(brisvox_call* call) {
  if (call == nullptr) return BRISVOX_OK;
  const brisvox_status status = guarded(nullptr, [&] {
    if (call->owner != nullptr) {
      detach(call);
      call->call.close();
    }
    if (call->on_events) call->on_events->clear();
  });
  delete call;
  return status;
}

}  // extern "C"
