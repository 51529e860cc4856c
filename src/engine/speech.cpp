// The Speech handle (speech.h) and a speech session's slot: the caller's side of text-to-speech.
// The worker's side is stages/tts_stage.cpp.
#include "brisvox/engine/speech.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "brisvox/error.h"
#include "engine/pool/pool_clock.h"
#include "engine/stages/speech_slot.h"
#include "engine/stages/tts_stage.h"
#include "engine/stream/wait_for_events.h"

namespace brisvox {

using engine::SpeechSlot;

namespace {

constexpr std::size_t kSpeechEventCapacity = 64;

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, message);
}

// Consumer: room was freed; wakes the worker if it waits for that kind of room. The fence pairs
// with the worker's (TtsAdapter::deliver): either it sees the room, or this sees it waiting.
void wake_if_waiting(SpeechSlot& s, std::uint8_t freed) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if ((s.waiting.load(std::memory_order_relaxed) & freed) == 0) return;
  if (s.waiting.exchange(0, std::memory_order_acq_rel) != 0) s.pool->schedule(&s);
}

}  // namespace

void SpeechConfig::validate() const {
  require(!model.empty(), "SpeechConfig::model names no model (a kPiperTts entry, \"tts\" by default)");
  require(sample_rate_hz >= 0 && sample_rate_hz <= 768000,
          fmt::format("SpeechConfig::sample_rate_hz must be 0 (the voice's), 8000, 16000, 24000 or 48000, got {}",
                      sample_rate_hz));
  require(payload_buffer_bytes == 0 || (payload_buffer_bytes >= 16384 && payload_buffer_bytes <= (1 << 28)),
          fmt::format("SpeechConfig::payload_buffer_bytes must be 0 (512 KiB) or 16384 to 268435456, got {}",
                      payload_buffer_bytes));
  require(max_queued >= 1 && max_queued <= 4096,
          fmt::format("SpeechConfig::max_queued must be 1 to 4096, got {}", max_queued));
}

namespace engine {

SpeechSlot::SpeechSlot(std::uint64_t session_id, const SpeechConfig& speech_config, TtsPool& tts_pool, int tts_worker,
                       int output_rate_hz, std::size_t payload_bytes, const PiperRequest& request_options)
    : id(session_id),
      config(speech_config),
      sample_rate_hz(output_rate_hz),
      pool(&tts_pool),
      options(request_options),
      // Half the channel: one piece can always be written while the reader holds the other.
      piece_samples(std::max<std::size_t>(1, payload_bytes / 2 / sizeof(float))),
      events(kSpeechEventCapacity),
      payloads(payload_bytes) {
  worker = tts_worker;
  key.store(kTtsStartKey, std::memory_order_relaxed);
}

void SpeechSlot::set_error(std::string message) {
  std::lock_guard lock(error_mutex);
  last_error = std::move(message);
}

}  // namespace engine

Speech::Speech(std::shared_ptr<SpeechSlot> slot) : slot_(std::move(slot)) {}
Speech::Speech(Speech&&) noexcept = default;
Speech& Speech::operator=(Speech&& other) noexcept {
  if (this != &other) {
    close();
    slot_ = std::move(other.slot_);
  }
  return *this;
}
Speech::~Speech() { close(); }

std::uint64_t Speech::id() const noexcept { return slot_ ? slot_->id : 0; }
int Speech::sample_rate_hz() const noexcept { return slot_ ? slot_->sample_rate_hz : 0; }
std::size_t Speech::max_text_bytes() const noexcept { return slot_ ? slot_->pool->max_text_bytes() : 0; }

std::uint32_t Speech::speak(std::string_view text) {
  if (!slot_) throw Error(ErrorCode::kClosed, "speak() on a closed speech session");
  SpeechSlot& s = *slot_;
  if (!s.pool->accepting()) {
    throw Error(ErrorCode::kClosed, fmt::format("speech session {}: the engine is shutting down", s.id));
  }
  // Every check that needs no phonemes, here: an Error means nothing was queued.
  check_piper_text(text, s.pool->max_text_bytes());
  std::uint32_t id = 0;
  {
    std::lock_guard lock(s.mu);
    if (s.closed) throw Error(ErrorCode::kClosed, "speak() on a closed speech session");
    if (s.to_speak.size() >= static_cast<std::size_t>(s.config.max_queued)) {
      throw Error(ErrorCode::kOverloaded,
                  fmt::format("speech session {}: {} utterances wait already (SpeechConfig::max_queued); wait for "
                              "kTtsEnd events, or cancel()",
                              s.id, s.to_speak.size()));
    }
    id = ++s.last_spoken;
    s.to_speak.push_back(engine::Utterance{id, std::string(text), engine::now_ns()});
  }
  s.pool->schedule(&s);
  return id;
}

std::uint32_t Speech::cancel() {
  if (!slot_) return 0;
  SpeechSlot& s = *slot_;
  std::uint32_t upto = 0;
  {
    std::lock_guard lock(s.mu);
    upto = s.last_spoken;
  }
  if (upto == 0) return 0;
  s.cancelled_upto.store(upto, std::memory_order_release);
  // Wakes the job even when it waits for the reader: the cancel drops what it waits to deliver.
  s.waiting.store(0, std::memory_order_release);
  s.pool->schedule(&s);
  return upto;
}

std::size_t Speech::poll(std::span<Event> out) {
  if (!slot_) return 0;
  const std::size_t n = slot_->events.read(out);
  if (n > 0) wake_if_waiting(*slot_, engine::kWaitEvents);
  return n;
}

std::size_t Speech::read_payload(const Event& event, std::span<std::byte> out) {
  if (!slot_ || event.type != EventType::kTtsAudio || event.payload != PayloadStatus::kAttached) return 0;
  SpeechSlot& s = *slot_;
  std::uint64_t skipped = 0;
  const std::size_t n = s.payloads.read(event.payload_id, out, skipped);
  if (skipped) s.payloads_skipped.fetch_add(skipped, std::memory_order_relaxed);
  if (n > 0 || skipped > 0) wake_if_waiting(s, engine::kWaitPayload);
  return n;
}

std::vector<float> Speech::read_audio_payload(const Event& event) {
  if (!slot_ || event.type != EventType::kTtsAudio || event.payload != PayloadStatus::kAttached) return {};
  SpeechSlot& s = *slot_;
  std::uint64_t skipped = 0;
  const std::size_t bytes = s.payloads.size_of(event.payload_id, skipped);
  if (skipped) {
    s.payloads_skipped.fetch_add(skipped, std::memory_order_relaxed);
    wake_if_waiting(s, engine::kWaitPayload);
  }
  std::vector<float> samples(bytes / sizeof(float));
  if (read_payload(event, std::as_writable_bytes(std::span(samples))) != bytes) return {};
  return samples;
}

bool Speech::wait_events(std::chrono::microseconds timeout) {
  return slot_ && engine::wait_for_events(slot_->events, slot_->events_wake, timeout);
}

std::string Speech::last_error() const {
  if (!slot_) return {};
  std::lock_guard lock(slot_->error_mutex);
  return slot_->last_error;
}

std::uint64_t Speech::payloads_skipped() const noexcept {
  return slot_ ? slot_->payloads_skipped.load(std::memory_order_relaxed) : 0;
}

void Speech::close() {
  if (!slot_) return;
  SpeechSlot& s = *slot_;
  {
    std::lock_guard lock(s.mu);
    s.closed = true;
  }
  s.close_requested.store(true, std::memory_order_release);
  s.waiting.store(0, std::memory_order_release);
  s.pool->schedule(&s);
  slot_.reset();
}

}  // namespace brisvox
