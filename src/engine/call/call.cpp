// The Call handle (call.h): a stream and a speech session under one owner, and the playout clock
// that hands the call's speech out at most CallConfig::playout_lead_ms ahead of real-time
// playback. The barge-in itself happens on the stream's VAD worker (barge_in_stage.h).
#include "brisvox/engine/call.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>

#include "brisvox/error.h"
#include "engine/call/call_state.h"
#include "engine/pool/pool_clock.h"
#include "engine/speech/speech_state.h"
#include "engine/stream/stream_state.h"

namespace brisvox {


using engine::CallState;
using engine::now_ns;

namespace {

// Event::payload_id of a kError from the call's speech side (a stream's kError has none).
constexpr std::uint32_t kSpeechSide = 1;

}  // namespace

void CallConfig::validate() const {
  listen.validate();
  speak.validate();
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw Error(ErrorCode::kInvalidArgument, message);
  };
  require(!listen.on_events && !speak.on_events,
          "CallConfig: set the call's own on_events; listen.on_events and speak.on_events must be empty");
  require(barge_in.min_speech_ms >= 32 && barge_in.min_speech_ms <= 10000,
          fmt::format("BargeInOptions::min_speech_ms must be 32 to 10000, got {}", barge_in.min_speech_ms));
  require(playout_lead_ms >= 0 && playout_lead_ms <= 60000,
          fmt::format("CallConfig::playout_lead_ms must be 0 to 60000, got {}", playout_lead_ms));
}

Call::Call() = default;
Call::Call(std::shared_ptr<CallState> state) : state_(std::move(state)) {}
Call::Call(Call&&) noexcept = default;
Call& Call::operator=(Call&& other) noexcept {
  if (this != &other) {
    close();
    state_ = std::move(other.state_);
  }
  return *this;
}
Call::~Call() { close(); }

Call::operator bool() const noexcept { return state_ != nullptr; }

namespace {

CallState& open_state(const std::shared_ptr<CallState>& s, const char* what) {
  if (!s) throw Error(ErrorCode::kClosed, fmt::format("{} on a closed call", what));
  return *s;
}

}  // namespace

std::uint64_t Call::id() const noexcept { return state_ ? state_->stream.id() : 0; }
int Call::sample_rate_hz() const noexcept { return state_ ? state_->stream.config().sample_rate_hz : 0; }
int Call::speech_sample_rate_hz() const noexcept { return state_ ? state_->speech.sample_rate_hz() : 0; }
const StreamConfig& Call::listen_config() const { return open_state(state_, "listen_config()").stream.config(); }
int Call::model_rate_hz() const noexcept { return state_ ? state_->stream.model_rate_hz() : 0; }
std::size_t Call::max_text_bytes() const noexcept { return state_ ? state_->speech.max_text_bytes() : 0; }

std::size_t Call::push(std::span<const float> samples) { return open_state(state_, "push()").stream.push(samples); }
std::size_t Call::writable() { return state_ ? state_->stream.writable() : 0; }
bool Call::wait_writable(std::size_t min_samples, std::chrono::microseconds timeout) {
  return state_ && state_->stream.wait_writable(min_samples, timeout);
}
bool Call::can_flush() { return state_ && state_->stream.can_flush(); }
void Call::flush() { open_state(state_, "flush()").stream.flush(); }

std::uint32_t Call::speak(std::string_view text) { return open_state(state_, "speak()").speech.speak(text); }
std::uint32_t Call::mark() { return open_state(state_, "mark()").speech.mark(); }
std::uint32_t Call::cancel() { return state_ ? state_->speech.cancel() : 0; }

std::size_t Call::poll(std::span<Event> out, bool speech) {
  if (!state_) return 0;
  CallState& c = *state_;
  const std::int64_t now = now_ns();
  c.take_barge_ins(now);
  std::size_t n = c.stream.poll(out);
  if (!speech) return n;
  // Audio of a stopped utterance (a barge-in, a cancel) never comes out, even if it was delivered
  // before the stop.
  const std::uint32_t stopped = c.speech_state().cancelled_upto.load(std::memory_order_acquire);
  while (n < out.size()) {
    Event e;
    if (c.held) {
      e = *c.held;
      if (!(e.type == EventType::kTtsAudio && e.speech.utterance_id <= stopped) && now < c.held_due_ns) break;
      c.held.reset();
    } else if (c.speech.poll(std::span(&e, 1)) == 0) {
      break;
    }
    if (e.type == EventType::kTtsAudio) {
      if (e.speech.utterance_id <= stopped) {
        c.drop(e);
        continue;
      }
      if (c.lead_ns > 0 && c.clock_end_ns - now > c.lead_ns) {
        c.held = e;
        c.held_due_ns = c.clock_end_ns - c.lead_ns;
        break;
      }
      const auto duration_ns = static_cast<std::int64_t>((e.end_s - e.start_s) * 1e9);
      c.clock_end_ns = std::max(now, c.clock_end_ns) + duration_ns;
      if (c.audio_id != e.speech.utterance_id) {
        c.audio_id = e.speech.utterance_id;
        c.audio_s = 0;
      }
      c.audio_s += e.end_s - e.start_s;
      c.link->audible_id.store(e.speech.utterance_id, std::memory_order_release);
      c.link->playout_end_ns.store(c.clock_end_ns, std::memory_order_release);
    } else if (e.type == EventType::kTtsEnd && e.speech.utterance_id <= stopped &&
               e.speech.utterance_id == c.dropped_id) {
      // Made whole, but stopped before all of it came out: it ends as the stop says, with what
      // was handed out.
      const std::uint32_t id = e.speech.utterance_id;
      e.type = id <= c.speech_state().interrupted_upto.load(std::memory_order_acquire) ? EventType::kTtsInterrupted
                                                                                        : EventType::kTtsCancelled;
      e.end_s = c.audio_id == id ? c.audio_s : 0.0;
    } else if (e.type == EventType::kTtsInterrupted || e.type == EventType::kTtsCancelled) {
      if (e.type == EventType::kTtsInterrupted) {
        // Its barge-in was emitted before the stop that led here: it is in the stream's ring now,
        // and goes out first.
        const std::size_t more = c.stream.poll(out.subspan(n));
        n += more;
        if (n == out.size()) {
          c.held = e;
          c.held_due_ns = 0;
          break;
        }
      }
      e.end_s = c.audio_id == e.speech.utterance_id ? c.audio_s : 0.0;  // what of it came out
    } else if (e.type == EventType::kError) {
      e.payload_id = kSpeechSide;  // an utterance's error: last_error() reads the speech side's message
    } else if (e.type == EventType::kTtsMark) {
      // Reached in order after the audio before it was handed out: due when that has played.
      const std::int64_t due = std::max(now, c.clock_end_ns);
      if (due > now || !c.marks.empty()) {
        c.marks.push_back({e, due});
        continue;
      }
    }
    out[n++] = e;
  }
  while (n < out.size() && !c.marks.empty() && c.marks.front().due_ns <= now) {
    out[n++] = c.marks.front().event;
    c.marks.pop_front();
  }
  return n;
}

std::size_t Call::read_payload(const Event& event, std::span<std::byte> out) {
  if (!state_) return 0;
  return event.type == EventType::kTtsAudio ? state_->speech.read_payload(event, out)
                                            : state_->stream.read_payload(event, out);
}

std::vector<float> Call::read_audio_payload(const Event& event) {
  if (!state_) return {};
  return event.type == EventType::kTtsAudio ? state_->speech.read_audio_payload(event)
                                            : state_->stream.read_audio_payload(event);
}

std::optional<Transcript> Call::read_transcript(const Event& event) {
  if (!state_) return std::nullopt;
  return state_->stream.read_transcript(event);
}

std::optional<std::chrono::steady_clock::time_point> Call::next_due() const {
  if (!state_) return std::nullopt;
  const std::optional<std::int64_t> due = state_->next_due_ns();
  if (!due) return std::nullopt;
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(*due));
}

bool Call::wait_events(std::chrono::microseconds timeout) {
  if (!state_) return false;
  CallState& c = *state_;
  const std::int64_t now = now_ns();
  const std::optional<std::int64_t> due = c.next_due_ns();
  if (due && *due <= now) return true;
  auto wait = timeout;
  if (due) wait = std::min(wait, std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::nanoseconds(*due - now)) +
                                     std::chrono::microseconds(1));
  engine::SessionOutput& listen = c.stream.state_->output;
  engine::SessionOutput& speech = c.speech_state().output;
  const bool got = c.link->wake->wait(
      [&] {
        // Speech behind a held event cannot come out before it: only the stream's events, a
        // barge-in, or the held event's time wake the owner then.
        return listen.has_events() || (!c.held && speech.has_events()) ||
               c.link->barge_ins.load(std::memory_order_acquire) != c.barge_ins_seen;
      },
      wait);
  if (got) return true;
  const std::optional<std::int64_t> after = c.next_due_ns();
  return after && *after <= now_ns();
}

std::string Call::last_error(const Event& event) const {
  if (!state_) return {};
  return event.type == EventType::kError && event.payload_id == kSpeechSide ? state_->speech.last_error()
                                                                             : state_->stream.last_error();
}

void Call::close() {
  if (!state_) return;
  state_->stream.close();
  state_->speech.close();
  state_.reset();
}

}  // namespace brisvox
