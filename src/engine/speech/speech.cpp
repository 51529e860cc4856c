// The Speech handle (speech.h): the caller's side of text-to-speech. The worker's side is
// speech_pool.h.
#include "brisvox/engine/speech.h"

#include <fmt/format.h>

#include "brisvox/error.h"
#include "engine/pool/pool_clock.h"
#include "engine/speech/speech_model.h"
#include "engine/speech/speech_state.h"

namespace brisvox {

using engine::SpeechState;

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, message);
}

// Queues an utterance (or a mark) after those before it; returns its id.
std::uint32_t queue(SpeechState& s, std::string text, bool mark) {
  std::uint32_t id = 0;
  {
    std::lock_guard lock(s.mu);
    if (s.closed) throw Error(ErrorCode::kClosed, fmt::format("{}() on a closed speech session", mark ? "mark" : "speak"));
    if (s.to_speak.size() >= static_cast<std::size_t>(s.config.max_queued)) {
      throw Error(ErrorCode::kOverloaded,
                  fmt::format("speech session {}: {} utterances wait already (SpeechConfig::max_queued); wait for "
                              "kTtsEnd events, or cancel()",
                              s.id, s.to_speak.size()));
    }
    id = s.last_spoken.load(std::memory_order_relaxed) + 1;
    s.to_speak.push_back(engine::Utterance{id, std::move(text), engine::now_ns(), mark});
    s.last_spoken.store(id, std::memory_order_release);
  }
  s.model->schedule(s);
  return id;
}

void check_accepting(const SpeechState& s) {
  if (!s.model->accepting()) {
    throw Error(ErrorCode::kClosed, fmt::format("speech session {}: the engine is shutting down", s.id));
  }
}

}  // namespace

void SpeechConfig::validate() const {
  require(!model.empty(), "SpeechConfig::model names no model (a text-to-speech entry, \"tts\" by default)");
  require(sample_rate_hz >= 0 && sample_rate_hz <= 768000,
          fmt::format("SpeechConfig::sample_rate_hz must be 0 (the voice's), 8000, 16000, 24000 or 48000, got {}",
                      sample_rate_hz));
  require(payload_buffer_bytes == 0 || (payload_buffer_bytes >= 16384 && payload_buffer_bytes <= (1 << 28)),
          fmt::format("SpeechConfig::payload_buffer_bytes must be 0 (512 KiB) or 16384 to 268435456, got {}",
                      payload_buffer_bytes));
  require(max_queued >= 1 && max_queued <= 4096,
          fmt::format("SpeechConfig::max_queued must be 1 to 4096, got {}", max_queued));
}

Speech::Speech(std::shared_ptr<SpeechState> state) : state_(std::move(state)) {}
Speech::Speech(Speech&&) noexcept = default;
Speech& Speech::operator=(Speech&& other) noexcept {
  if (this != &other) {
    close();
    state_ = std::move(other.state_);
  }
  return *this;
}
Speech::~Speech() { close(); }

std::uint64_t Speech::id() const noexcept { return state_ ? state_->id : 0; }
int Speech::sample_rate_hz() const noexcept { return state_ ? state_->sample_rate_hz : 0; }
std::size_t Speech::max_text_bytes() const noexcept { return state_ ? state_->model->max_text_bytes() : 0; }

std::uint32_t Speech::speak(std::string_view text) {
  if (!state_) throw Error(ErrorCode::kClosed, "speak() on a closed speech session");
  SpeechState& s = *state_;
  check_accepting(s);
  // Every check that needs no model, here: an Error means nothing was queued.
  s.model->check_text(text);
  return queue(s, std::string(text), /*mark=*/false);
}

std::uint32_t Speech::mark() {
  if (!state_) throw Error(ErrorCode::kClosed, "mark() on a closed speech session");
  check_accepting(*state_);
  return queue(*state_, {}, /*mark=*/true);
}

std::uint32_t Speech::cancel() {
  if (!state_) return 0;
  return state_->stop(/*barge_in=*/false);
}

std::size_t Speech::poll(std::span<Event> out) {
  if (!state_) return 0;
  const std::size_t n = state_->output.poll(out);
  if (n > 0) state_->room_freed(engine::kWaitEvents);
  return n;
}

std::size_t Speech::read_payload(const Event& event, std::span<std::byte> out) {
  if (!state_) return 0;
  const std::size_t n = state_->output.read_payload(event, out);
  state_->room_freed(engine::kWaitPayload);
  return n;
}

std::vector<float> Speech::read_audio_payload(const Event& event) {
  if (!state_) return {};
  std::vector<float> samples = state_->output.read_audio(event);
  state_->room_freed(engine::kWaitPayload);
  return samples;
}

bool Speech::wait_events(std::chrono::microseconds timeout) { return state_ && state_->output.wait(timeout); }

std::string Speech::last_error() const {
  if (!state_) return {};
  return state_->output.last_error();
}

std::uint64_t Speech::payloads_skipped() const noexcept { return state_ ? state_->output.payloads_unread() : 0; }

void Speech::close() {
  if (!state_) return;
  SpeechState& s = *state_;
  {
    std::lock_guard lock(s.mu);
    s.closed = true;
  }
  s.close_requested.store(true, std::memory_order_release);
  s.waiting.store(0, std::memory_order_release);
  s.model->schedule(s);
  state_.reset();
}

}  // namespace brisvox
