// The C API's shared machinery (capi_internal.h): statuses and messages, versioned structs,
// events, transcripts, the handles an engine tracks.
#include "capi_internal.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace brisvox::capi {

namespace {
thread_local std::string t_last_error;  // the calling thread's last failure
thread_local std::string t_returned;    // what the last brisvox_*_message call returned
}  // namespace

std::string& thread_last_error() noexcept { return t_last_error; }

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

void record_failure(MessageSlot* slot, const std::string& message) noexcept {
  try {
    t_last_error = message;
    if (slot != nullptr) slot->set(message);
  } catch (...) {
    // Out of memory while recording the message: the status still says what happened.
  }
}

void invalid(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, message); }

void require_pointer(const void* p, const char* function, const char* name) {
  if (p == nullptr) invalid(fmt::format("{}: {} is NULL", function, name));
}

std::size_t checked_struct_size(const void* in, std::size_t size, std::size_t current,
                                std::initializer_list<std::size_t> older, const char* type, const char* init) {
  if (size < current && std::find(older.begin(), older.end(), size) == older.end()) {
    invalid(fmt::format("{}.struct_size is {}, expected sizeof({}) = {} (brisvox C API {}): call {}() first, "
                        "or set struct_size = sizeof({})",
                        type, size, type, current, BRISVOX_C_API_VERSION, init, type));
  }
  if (size > kMostStructSize) {
    invalid(fmt::format("{}.struct_size is {}: not initialised? (sizeof({}) = {}; call {}() first)", type, size,
                        type, current, init));
  }
  const auto* bytes = static_cast<const unsigned char*>(in);
  for (std::size_t i = current; i < size; ++i) {
    if (bytes[i] != 0) {
      invalid(fmt::format("{}.struct_size is {}, larger than this library's {} (brisvox C API {}), and the fields "
                          "it does not know are set (byte {}): the header you compiled against is newer than the "
                          "library; leave those fields zero or use a newer library",
                          type, size, current, BRISVOX_C_API_VERSION, i));
    }
  }
  return std::min(size, current);
}

char* malloc_string(std::string_view s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  return out;
}

namespace {

bool is_speech_event(EventType t) {
  switch (t) {
    case EventType::kTtsAudio:
    case EventType::kTtsEnd:
    case EventType::kTtsCancelled:
    case EventType::kTtsInterrupted:
    case EventType::kTtsMark:
    case EventType::kBargeIn: return true;
    default: return false;
  }
}

}  // namespace

brisvox_event to_c(const Event& e, bool speech_side) noexcept {
  brisvox_event out{};
  out.type = static_cast<int32_t>(e.type);
  out.error_code = e.type == EventType::kError ? static_cast<int32_t>(status_of(e.error_code)) : 0;
  out.turn_reason = static_cast<int32_t>(e.turn_reason);
  out.probability = e.probability;
  out.start_s = e.start_s;
  out.end_s = e.end_s;
  // Event::frame_index and Event::speech share their bytes: each event type uses one of them.
  const bool speech = is_speech_event(e.type) || (e.type == EventType::kError && speech_side);
  if (speech) {
    out.utterance_id = e.speech.utterance_id;
    out.sentence_index = e.speech.sentence_index;
    out.sentence_count = e.speech.sentence_count;
  } else {
    out.frame_index = e.frame_index;
  }
  out.backlog_ms = e.backlog_ms;
  out.rejected_samples = e.rejected_samples;
  out.payload = static_cast<int32_t>(e.payload);
  out.payload_bytes = e.payload_bytes;
  out.payload_id = e.payload_id;
  out.speech_error = e.type == EventType::kError && speech_side ? 1 : 0;
  return out;
}

Event from_c(const brisvox_event& e) noexcept {
  Event out;
  out.type = static_cast<EventType>(e.type);
  out.payload = e.payload >= 0 && e.payload <= BRISVOX_PAYLOAD_DROPPED ? static_cast<PayloadStatus>(e.payload)
                                                                       : PayloadStatus::kNone;
  out.start_s = e.start_s;
  out.end_s = e.end_s;
  out.speech = SpeechPosition{e.utterance_id, e.sentence_index, e.sentence_count};
  out.payload_bytes = e.payload_bytes;
  out.payload_id = e.payload_id;
  return out;
}

// Version 2's brisvox_event ended with rejected_samples.
constexpr std::size_t kEventV2 = offsetof(brisvox_event, utterance_id);

void check_event_size(std::size_t event_size, const char* function) {
  if ((event_size < sizeof(brisvox_event) && event_size != kEventV2) || event_size > kMostStructSize) {
    invalid(fmt::format("{}: event_size is {}, expected sizeof(brisvox_event) = {} (brisvox C API {})", function,
                        event_size, sizeof(brisvox_event), BRISVOX_C_API_VERSION));
  }
}

void check_timeout(int32_t timeout_ms, const char* function) {
  if (timeout_ms < 0) invalid(fmt::format("{}: timeout_ms is {}, must be >= 0", function, timeout_ms));
}

// Version 3 and 4's brisvox_transcript ended at `language`.
constexpr std::size_t kTranscriptV4 = offsetof(brisvox_transcript, unstable);

void check_transcript_args(const brisvox_event* event, brisvox_transcript* out, const char* function) {
  require_pointer(event, function, "event");
  require_pointer(out, function, "transcript");
  const std::size_t size = out->struct_size;
  if ((size != kTranscriptV4 && size < sizeof(brisvox_transcript)) || size > kMostStructSize) {
    invalid(fmt::format("{}: transcript->struct_size is {}, expected sizeof(brisvox_transcript) = {} (brisvox C "
                        "API {}) or {} (version 3's)",
                        function, size, sizeof(brisvox_transcript), BRISVOX_C_API_VERSION, kTranscriptV4));
  }
  out->text = nullptr;
  if (size >= sizeof(brisvox_transcript)) {
    out->unstable = nullptr;
    out->words = nullptr;
    out->num_words = 0;
  }
  if (event->type != BRISVOX_EVENT_TRANSCRIPT && event->type != BRISVOX_EVENT_TRANSCRIPT_PARTIAL) {
    invalid(fmt::format("{}: the event is not a BRISVOX_EVENT_TRANSCRIPT or _PARTIAL (type {})", function, event->type));
  }
}

namespace {

// The words as one allocation: the array, then their NUL-terminated texts (one free).
brisvox_word* malloc_words(std::span<const WhisperWord> words) {
  if (words.empty()) return nullptr;
  std::size_t bytes = words.size() * sizeof(brisvox_word);
  for (const WhisperWord& w : words) bytes += w.text.size() + 1;
  auto* block = static_cast<brisvox_word*>(std::malloc(bytes));
  if (block == nullptr) throw std::bad_alloc();
  char* text = reinterpret_cast<char*>(block + words.size());
  for (std::size_t i = 0; i < words.size(); ++i) {
    const WhisperWord& w = words[i];
    std::memcpy(text, w.text.data(), w.text.size());
    text[w.text.size()] = '\0';
    block[i] = brisvox_word{text, w.start_s, w.end_s, w.probability};
    text += w.text.size() + 1;
  }
  return block;
}

}  // namespace

void write_transcript(brisvox_transcript* out, const brisvox_event& event, const std::optional<Transcript>& t,
                      std::string_view language) {
  const std::size_t size = out->struct_size;
  brisvox_transcript r{};
  r.struct_size = size;
  r.start_s = event.start_s;
  r.end_s = event.end_s;
  if (t && !t->language.empty()) language = t->language;  // detected, or the given one
  const std::size_t n = std::min(language.size(), sizeof(r.language) - 1);
  std::memcpy(r.language, language.data(), n);
  const bool current = size >= sizeof(brisvox_transcript);
  if (t) {
    r.avg_logprob = t->avg_logprob;
    r.no_speech_prob = t->no_speech_prob;
    r.no_speech = t->no_speech ? 1 : 0;
    r.hit_token_limit = t->hit_token_limit ? 1 : 0;
    // Allocated last, each owned at once, so that a failed allocation leaks nothing.
    std::unique_ptr<char, decltype(&std::free)> text(malloc_string(t->text), &std::free);
    std::unique_ptr<char, decltype(&std::free)> unstable(nullptr, &std::free);
    std::unique_ptr<brisvox_word, decltype(&std::free)> words(nullptr, &std::free);
    if (current) {
      if (event.type == BRISVOX_EVENT_TRANSCRIPT_PARTIAL) unstable.reset(malloc_string(t->unstable));
      words.reset(malloc_words(t->words));
      r.num_words = t->words.size();
    }
    r.text = text.release();
    r.unstable = unstable.release();
    r.words = words.release();
  }
  // The caller's bytes past its version's struct are left as they are.
  std::memcpy(out, &r, current ? sizeof(brisvox_transcript) : kTranscriptV4);
}

std::shared_ptr<EventsCallback> make_callback(void (*function)(void*), void* user_data) {
  if (function == nullptr) return nullptr;
  auto c = std::make_shared<EventsCallback>();
  c->function = function;
  c->user_data = user_data;
  return c;
}

std::function<void()> engine_hook(const std::shared_ptr<EventsCallback>& callback) {
  if (!callback) return {};
  return [callback] { callback->call(); };
}

void Handle::check_open(const char* function, const char* noun) const {
  if (owner == nullptr) {
    throw Error(ErrorCode::kClosed, fmt::format("{}: the {}'s engine was destroyed", function, noun));
  }
}

void attach(brisvox_engine* engine, Handle* handle) {
  std::lock_guard lock(engine->handles_mutex);
  engine->handles.insert(handle);
  handle->owner = engine;
}

void detach(Handle* handle) noexcept {
  if (handle->owner == nullptr) return;
  std::lock_guard lock(handle->owner->handles_mutex);
  handle->owner->handles.erase(handle);
}

void read_voice_options(const char* const* names, const double* values, std::size_t count, SpeechConfig& config,
                        const char* type) {
  if (count == 0) return;
  if (names == nullptr || values == nullptr) {
    invalid(fmt::format("{}: num_voice_options is {} but voice_option_names or voice_option_values is NULL", type,
                        count));
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (names[i] == nullptr) invalid(fmt::format("{}: voice_option_names[{}] is NULL", type, i));
    config.voice_options[names[i]] = values[i];
  }
}

void require_voice(const Engine& engine, const char* function) {
  if (engine.config().find_model("tts") == nullptr) {
    invalid(fmt::format("{}: the engine has no voice: set brisvox_engine_options.voice (a Piper voice, "
                        "VOICE.onnx or an installed voice's name) when creating it",
                        function));
  }
}

}  // namespace brisvox::capi
