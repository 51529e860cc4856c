// The Stream handle (stream.h): the producer's side (push, the resampler front, flush) and the
// consumer's (poll, payloads) of a StreamState its VAD worker runs.
#include "brisvox/engine/stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "brisvox/error.h"
#include "engine/output/transcript_payload.h"
#include "engine/stream/stream_state.h"
#include "engine/stream/vad_pool.h"

namespace brisvox {

using engine::now_ns;
using engine::StreamState;

Stream::Stream(std::shared_ptr<StreamState> state) : state_(std::move(state)) {}
Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    close();
    state_ = std::move(other.state_);
  }
  return *this;
}
Stream::~Stream() { close(); }

std::uint64_t Stream::id() const noexcept { return state_ ? state_->id : 0; }
int Stream::model_rate_hz() const noexcept { return state_ ? state_->model_rate_hz : 0; }

const StreamConfig& Stream::config() const {
  if (!state_) throw Error(ErrorCode::kClosed, "config() of a closed stream");
  return state_->config;
}

namespace {

void check_open(const std::shared_ptr<StreamState>& state, const char* what) {
  if (!state) throw Error(ErrorCode::kClosed, fmt::format("{} on a closed stream", what));
  if (state->flush_requested.load(std::memory_order_relaxed)) {
    throw Error(ErrorCode::kClosed, fmt::format("{} on stream {} after flush()", what, state->id));
  }
}

// Writes model-rate samples, stamping the completion time of every frame they complete before
// the samples become visible to the worker. Returns how many fit.
std::size_t write_model_samples(StreamState& s, std::span<const float> samples) {
  const std::size_t n = std::min(samples.size(), s.samples.free_space());
  const std::uint64_t before = s.samples.written();
  const auto chunk = static_cast<std::uint64_t>(s.chunk_samples);
  const std::uint64_t first_frame = before / chunk;
  const std::uint64_t end_frame = (before + n) / chunk;
  if (end_frame > first_frame) {
    const std::int64_t now = now_ns();
    for (std::uint64_t f = first_frame; f < end_frame; ++f) s.frame_complete_ns[f & s.frame_time_mask] = now;
  }
  s.samples.write(samples.first(n));
  if (end_frame > first_frame) s.vad_pool->schedule(&s);
  return n;
}

// Moves pending resampler output into the ring; true when nothing is left pending.
bool drain_pending(StreamState& s) {
  if (s.pending_begin < s.pending_end) {
    s.pending_begin += write_model_samples(
        s, std::span(s.resampled.data() + s.pending_begin, s.pending_end - s.pending_begin));
  }
  return s.pending_begin == s.pending_end;
}

// Input samples (at the stream's input rate) whose resampled output surely fits `free` model
// samples. libsoxr filters in blocks, so one call may hand back output that earlier input owes
// (up to ~650 samples at 44.1 kHz -> 16 kHz, ~1300 at 11.025 kHz; see resampler.cpp); a fixed
// margin under-counted that, push() then refused part of what writable() had offered, and each
// such push counted as rejected samples and an overload event on an idle engine. libsoxr's total
// output never exceeds ceil(input * out / in) (resampler_fuzzer checks it), so input n fits when
// ceil((accepted + n) * out / in) <= written + free: exact, whatever libsoxr holds back.
std::size_t resampled_input_room(const StreamState& s, std::size_t free) {
  const auto in = static_cast<std::uint64_t>(s.config.sample_rate_hz);
  const auto out = static_cast<std::uint64_t>(s.model_rate_hz);
  const std::uint64_t most = (s.samples.written() + free) * in / out;
  return most > s.input_accepted ? static_cast<std::size_t>(most - s.input_accepted) : 0;
}

// Free room for input samples (at the stream's input rate): what push() accepts whole.
std::size_t writable_input(StreamState& s) {
  if (!s.resampler) return s.samples.free_space();
  if (!drain_pending(s)) return 0;
  const std::size_t free = s.samples.free_space();
  const std::size_t room = resampled_input_room(s, free);
  // The resampler can owe more than the ring holds (its filter delay: ~1200 samples downsampling
  // 16 kHz -> 8 kHz, against a 1024-sample ring; or an extreme ratio, a 1 kHz input upsampled),
  // and the bound above then stays 0. Once the ring holds less than one model chunk the VAD has
  // nothing left to take, so one resampler block is taken whole (output that does not fit waits
  // in `resampled`, which push() does not count as a refusal): the stream always makes progress.
  if (room < engine::kResamplerBlock && s.samples.size() < static_cast<std::size_t>(s.chunk_samples)) {
    return engine::kResamplerBlock;
  }
  return room;
}

void note_refusal(StreamState& s, std::size_t refused_input, bool refused) {
  if (refused) {
    const double ratio = static_cast<double>(s.model_rate_hz) / s.config.sample_rate_hz;
    s.samples_rejected.fetch_add(static_cast<std::uint64_t>(std::ceil(static_cast<double>(refused_input) * ratio)),
                                 std::memory_order_relaxed);
    if (!s.refusing) {
      s.refusing = true;
      s.refusal_episodes.fetch_add(1, std::memory_order_relaxed);
      s.vad_pool->schedule(&s);  // so that the worker reports it
    }
  } else {
    s.refusing = false;
  }
}

}  // namespace

std::size_t Stream::push(std::span<const float> samples) {
  check_open(state_, "push()");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) {
      throw Error(ErrorCode::kBadAudio, fmt::format("stream {}: sample {} of this push is {}: nothing was accepted",
                                                    state_->id, i, samples[i]));
    }
  }
  StreamState& s = *state_;
  std::size_t accepted = 0;
  if (!s.resampler) {
    accepted = write_model_samples(s, samples);
  } else {
    // Resampled in blocks; output that does not fit waits in `resampled` for the next push, and
    // no new input is taken while any waits.
    while (accepted < samples.size() && drain_pending(s)) {
      const std::size_t block = std::min(engine::kResamplerBlock, samples.size() - accepted);
      s.pending_begin = 0;
      s.pending_end = s.resampler->process(samples.subspan(accepted, block), s.resampled);
      accepted += block;
    }
    drain_pending(s);
  }
  s.input_accepted += accepted;
  note_refusal(s, samples.size() - accepted, accepted < samples.size());
  return accepted;
}

std::size_t Stream::writable() {
  if (!state_) return 0;
  return writable_input(*state_);
}

bool Stream::wait_writable(std::size_t min_samples, std::chrono::microseconds timeout) {
  if (!state_) return false;
  StreamState& s = *state_;
  // Never wait for more than the buffer can ever hold: what an empty ring would take now (the
  // output the resampler owes stays owed while nothing is pushed).
  const std::size_t most =
      s.resampler ? std::max(engine::kResamplerBlock,
                             resampled_input_room(s, s.samples.capacity() - static_cast<std::size_t>(s.chunk_samples)))
                  : s.samples.capacity();
  const std::size_t needed = std::min(min_samples, most);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto sleep = std::chrono::microseconds(50);
  while (writable_input(s) < needed) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(1000));
  }
  return true;
}

bool Stream::can_flush() {
  if (!state_) return false;
  StreamState& s = *state_;
  if (!s.resampler) return true;
  // flush() must write what is pending and the resampler's tail (the output earlier input still
  // owes, plus at most a sample: resampler_fuzzer): writable_input() keeps room for what is owed,
  // so a few model samples more than that is enough.
  constexpr double kFlushRoomSamples = 64;
  const double ratio = static_cast<double>(s.model_rate_hz) / s.config.sample_rate_hz;
  return static_cast<double>(writable_input(s)) * ratio >= kFlushRoomSamples;
}

void Stream::flush() {
  if (!state_) throw Error(ErrorCode::kClosed, "flush() on a closed stream");
  StreamState& s = *state_;
  if (s.flush_requested.load()) return;
  if (s.resampler) {
    // The resampler's tail (what its filter still holds) and any pending output must reach the
    // ring before the flush flag: wait for the worker to make room, up to a second.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    bool tail_done = false;
    while (true) {
      if (drain_pending(s)) {
        if (tail_done) break;
        s.pending_begin = 0;
        s.pending_end = s.resampler->flush(s.resampled);
        tail_done = s.pending_end == 0;
        continue;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        note_refusal(s, 0, true);
        s.flush_tail_refused = true;
        s.samples_rejected.fetch_add(s.pending_end - s.pending_begin, std::memory_order_relaxed);
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  s.flush_ns = now_ns();
  s.flush_requested.store(true, std::memory_order_release);
  s.vad_pool->schedule(&s);
}

std::size_t Stream::poll(std::span<Event> out) {
  if (!state_) return 0;
  return state_->output.poll(out);
}

std::size_t Stream::read_payload(const Event& event, std::span<std::byte> out) {
  if (!state_) return 0;
  return state_->output.read_payload(event, out);
}

std::optional<Transcript> Stream::read_transcript(const Event& event) {
  if ((event.type != EventType::kTranscript && event.type != EventType::kTranscriptPartial) || !state_) {
    return std::nullopt;
  }
  const std::vector<std::byte> bytes = state_->output.read_bytes(event);
  if (bytes.size() < 16) return std::nullopt;
  return engine::decode_transcript(bytes);
}

std::vector<float> Stream::read_audio_payload(const Event& event) {
  if (!state_) return {};
  return state_->output.read_audio(event);
}

bool Stream::wait_events(std::chrono::microseconds timeout) { return state_ && state_->output.wait(timeout); }

std::string Stream::last_error() const {
  if (!state_) return {};
  return state_->output.last_error();
}

void Stream::close() {
  if (!state_) return;
  state_->close_requested.store(true, std::memory_order_release);
  state_->vad_pool->schedule(state_.get());
  state_.reset();
}

}  // namespace brisvox
