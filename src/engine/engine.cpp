#include "brisvox/engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>

#include "brisvox/error.h"
#include "brisvox/models/model_paths.h"
#include "engine/run_watchdog.h"
#include "engine/turn_pool.h"
#include "engine/worker.h"
#include "base/log.h"

namespace brisvox {

using engine::StreamSlot;
using engine::Histogram;
using engine::now_ns;
using engine::Worker;

std::string_view to_string(EventType type) noexcept {
  switch (type) {
    case EventType::kSpeechStart: return "speech_start";
    case EventType::kSpeechEnd: return "speech_end";
    case EventType::kVadProbability: return "vad";
    case EventType::kOverload: return "overload";
    case EventType::kError: return "error";
    case EventType::kEndOfStream: return "end_of_stream";
    case EventType::kTurnEnd: return "turn_end";
    case EventType::kTurnIncomplete: return "turn_incomplete";
  }
  return "unknown";
}

namespace {

int default_workers() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

}  // namespace

struct Engine::Impl {
  EngineConfig config;
  std::unique_ptr<engine::TurnPool> turns;  // outlives the workers' use of it (see ~Engine)
  std::vector<std::unique_ptr<Worker>> workers;
  // Cancels runs past run_timeout_ms (null when 0). Declared after what it watches, so that it is
  // stopped before them should the constructor throw; ~Engine stops it explicitly.
  std::unique_ptr<engine::RunWatchdog> watchdog;
  std::mutex open_mu;  // serialises open_stream's capacity check and attach
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<bool> draining{false};
  std::atomic<std::uint64_t> opened{0};
  std::atomic<std::uint64_t> refused{0};
};

Engine::Engine(const EngineConfig& config) : impl_(std::make_unique<Impl>()) {
  config.validate();
  impl_->config = config;
  if (impl_->config.num_workers == 0) impl_->config.num_workers = default_workers();
  const std::string path = resolve_vad_model(config.vad_model);
  impl_->config.vad_model = path;
  if (!config.turn_model.empty()) impl_->turns = std::make_unique<engine::TurnPool>(impl_->config);
  for (int i = 0; i < impl_->config.num_workers; ++i) {
    SileroConfig sc;
    sc.model_path = path;
    sc.max_batch = config.max_batch;
    sc.session = config.session;
    impl_->workers.push_back(std::make_unique<Worker>(i, impl_->config, SileroVad(sc), impl_->turns.get()));
  }
  if (config.run_timeout_ms > 0) {
    impl_->watchdog = std::make_unique<engine::RunWatchdog>(config.run_timeout_ms);
    for (auto& w : impl_->workers) {
      Worker* wp = w.get();
      impl_->watchdog->watch(wp->run_deadline(), [wp] { wp->cancel_run(); });
    }
    if (impl_->turns) impl_->turns->watch_runs(*impl_->watchdog);
    impl_->watchdog->start();
  }
  if (impl_->turns) impl_->turns->start();
  for (auto& w : impl_->workers) w->start();
  detail::log(LogLevel::kInfo, "engine: {} workers, model {}, max batch {}, gather wait {} us, run timeout {} ms",
              impl_->config.num_workers, path, config.max_batch, config.max_gather_wait_us, config.run_timeout_ms);
}

Engine::~Engine() {
  drain();
  // Turn workers first: after the drain nothing is in flight, and their deliveries (if any) need
  // the VAD workers alive.
  if (impl_->turns) impl_->turns->stop();
  // The watchdog keeps watching while the workers finish (a Run may still hang), and stops
  // before they are freed.
  for (auto& w : impl_->workers) w->stop();
  if (impl_->watchdog) impl_->watchdog->stop();
  impl_->workers.clear();
}

const EngineConfig& Engine::config() const noexcept { return impl_->config; }
int Engine::num_workers() const noexcept { return impl_->config.num_workers; }

Stream Engine::open_stream(const StreamConfig& config) {
  config.validate();
  Impl& m = *impl_;
  const int model_rate = config.model_rate_hz != 0 ? config.model_rate_hz : (config.sample_rate_hz == 8000 ? 8000 : 16000);
  if (config.detect_turns && !m.turns) {
    throw Error(ErrorCode::kInvalidArgument,
                "the stream asks for end-of-turn detection but the engine has no turn model (EngineConfig::turn_model, "
                "--turn-model PATH)");
  }
  std::lock_guard lock(m.open_mu);
  if (m.draining.load()) throw Error(ErrorCode::kClosed, "the engine is shutting down: no new streams");
  int active = 0;
  Worker* least = nullptr;
  for (auto& w : m.workers) {
    active += w->num_streams();
    if (least == nullptr || w->num_streams() < least->num_streams()) least = w.get();
  }
  if (active >= m.config.max_streams) {
    m.refused.fetch_add(1, std::memory_order_relaxed);
    throw Error(ErrorCode::kOverloaded, fmt::format("engine at capacity: {} of {} streams open (EngineConfig::max_streams)",
                                                    active, m.config.max_streams));
  }
  if (m.config.admission_control) {
    const std::int64_t now = now_ns();
    for (auto& w : m.workers) {
      const auto& c = w->counters();
      const double p99 = c.recent_p99_queue_delay_us.load(std::memory_order_relaxed);
      const bool fresh = now - c.window_end_ns.load(std::memory_order_relaxed) < 2'000'000'000;
      if (fresh && p99 > m.config.latency_budget_ms * 1000.0) {
        m.refused.fetch_add(1, std::memory_order_relaxed);
        throw Error(ErrorCode::kOverloaded,
                    fmt::format("engine over its latency budget: queue delay p99 {:.1f} ms > {} ms over the last second; "
                                "refusing new streams ({} open)",
                                p99 / 1000.0, m.config.latency_budget_ms, active));
      }
    }
  }
  auto slot = std::make_shared<StreamSlot>(m.next_id.fetch_add(1), config, model_rate, least);
  least->attach(slot);
  m.opened.fetch_add(1, std::memory_order_relaxed);
  return Stream(this, std::move(slot));
}

void Engine::drain() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.open_mu);
    m.draining.store(true);
  }
  std::vector<std::shared_ptr<StreamSlot>> all;
  for (auto& w : m.workers) {
    for (auto& s : w->streams_snapshot()) all.push_back(std::move(s));
  }
  for (auto& s : all) {
    if (!s->flush_requested.load()) {
      s->flush_ns = now_ns();
      s->flush_requested.store(true, std::memory_order_release);
    }
    s->worker->schedule(s.get());
  }
  for (auto& s : all) {
    while (!s->finished_flag.load(std::memory_order_acquire) && !s->close_requested.load()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

EngineStats Engine::stats() const {
  const Impl& m = *impl_;
  EngineStats st;
  st.num_workers = m.config.num_workers;
  st.streams_opened = m.opened.load();
  st.streams_refused = m.refused.load();
  st.batch_size_counts.assign(static_cast<std::size_t>(m.config.max_batch) + 1, 0);
  std::array<std::uint64_t, Histogram::kNumBuckets> qd{}, inf{}, lat{};
  double qd_sum = 0, qd_max = 0, inf_sum = 0, inf_max = 0, lat_sum = 0, lat_max = 0;
  for (const auto& w : m.workers) {
    const auto& c = w->counters();
    st.active_streams += w->num_streams();
    st.frames_processed += c.frames.load();
    st.batches += c.batches.load();
    st.overload_events += c.overload_events.load();
    st.run_errors += c.run_errors.load();
    st.run_timeouts += c.run_timeouts.load();
    st.samples_analysed += c.samples_analysed.load();
    st.samples_failed += c.samples_failed.load();
    st.samples_discarded += c.samples_discarded.load();
    st.samples_rejected += c.closed_samples_rejected.load();
    st.events_dropped += c.closed_events_dropped.load();
    for (std::size_t b = 0; b < st.batch_size_counts.size(); ++b) st.batch_size_counts[b] += c.batch_sizes[b].load();
    c.queue_delay.add_to(qd, qd_sum, qd_max);
    c.inference.add_to(inf, inf_sum, inf_max);
    c.added_latency.add_to(lat, lat_sum, lat_max);
  }
  for (const auto& w : m.workers) {
    for (const auto& s : const_cast<Worker&>(*w).streams_snapshot()) {
      st.samples_rejected += s->samples_rejected.load();
      st.events_dropped += s->events_dropped.load();
    }
  }
  if (m.turns) {
    const auto& tc = m.turns->counters();
    st.turn_analyses = tc.analyses.load();
    st.turn_errors = tc.errors.load();
    st.turn_timeouts = tc.timeouts.load();
    std::array<std::uint64_t, Histogram::kNumBuckets> tl{}, tf{}, ti{};
    double tl_sum = 0, tl_max = 0, tf_sum = 0, tf_max = 0, ti_sum = 0, ti_max = 0;
    tc.latency.add_to(tl, tl_sum, tl_max);
    tc.features.add_to(tf, tf_sum, tf_max);
    tc.inference.add_to(ti, ti_sum, ti_max);
    st.turn_latency = Histogram::summarize(tl, tl_sum, tl_max);
    st.turn_features = Histogram::summarize(tf, tf_sum, tf_max);
    st.turn_inference = Histogram::summarize(ti, ti_sum, ti_max);
  }
  st.queue_delay = Histogram::summarize(qd, qd_sum, qd_max);
  st.inference = Histogram::summarize(inf, inf_sum, inf_max);
  st.added_latency = Histogram::summarize(lat, lat_sum, lat_max);
  return st;
}

// --- Stream ------------------------------------------------------------------------------------

Stream::Stream(Engine* engine, std::shared_ptr<StreamSlot> slot) : engine_(engine), slot_(std::move(slot)) {}
Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    close();
    engine_ = other.engine_;
    slot_ = std::move(other.slot_);
  }
  return *this;
}
Stream::~Stream() { close(); }

std::uint64_t Stream::id() const noexcept { return slot_ ? slot_->id : 0; }

namespace {

void check_open(const std::shared_ptr<StreamSlot>& slot, const char* what) {
  if (!slot) throw Error(ErrorCode::kClosed, fmt::format("{} on a closed stream", what));
  if (slot->flush_requested.load(std::memory_order_relaxed)) {
    throw Error(ErrorCode::kClosed, fmt::format("{} on stream {} after flush()", what, slot->id));
  }
}

// Writes model-rate samples, stamping the completion time of every frame they complete before
// the samples become visible to the worker. Returns how many fit.
std::size_t write_model_samples(StreamSlot& s, std::span<const float> samples) {
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
  if (end_frame > first_frame) s.worker->schedule(&s);
  return n;
}

// Moves pending resampler output into the ring; true when nothing is left pending.
bool drain_pending(StreamSlot& s) {
  if (s.pending_begin < s.pending_end) {
    s.pending_begin += write_model_samples(
        s, std::span(s.resampled.data() + s.pending_begin, s.pending_end - s.pending_begin));
  }
  return s.pending_begin == s.pending_end;
}

// Free room for input samples (at the stream's input rate).
std::size_t writable_input(StreamSlot& s) {
  if (!s.resampler) return s.samples.free_space();
  if (!drain_pending(s)) return 0;
  // Whole resampler blocks only, and only while their output (with soxr's burst margin) fits.
  const double ratio = static_cast<double>(s.model_rate_hz) / s.config.sample_rate_hz;
  const auto free = static_cast<double>(s.samples.free_space());
  return static_cast<std::size_t>(std::max(0.0, (free - 64.0) / ratio));
}

void note_refusal(StreamSlot& s, std::size_t refused_input, bool refused) {
  if (refused) {
    const double ratio = static_cast<double>(s.model_rate_hz) / s.config.sample_rate_hz;
    s.samples_rejected.fetch_add(static_cast<std::uint64_t>(std::ceil(static_cast<double>(refused_input) * ratio)),
                                 std::memory_order_relaxed);
    if (!s.refusing) {
      s.refusing = true;
      s.refusal_episodes.fetch_add(1, std::memory_order_relaxed);
      s.worker->schedule(&s);  // so that the worker reports it
    }
  } else {
    s.refusing = false;
  }
}

}  // namespace

std::size_t Stream::push(std::span<const float> samples) {
  check_open(slot_, "push()");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) {
      throw Error(ErrorCode::kBadAudio, fmt::format("stream {}: sample {} of this push is {}: nothing was accepted",
                                                    slot_->id, i, samples[i]));
    }
  }
  StreamSlot& s = *slot_;
  std::size_t accepted = 0;
  if (!s.resampler) {
    accepted = write_model_samples(s, samples);
  } else {
    // Resampled in blocks; output that does not fit waits in `resampled` for the next push, and
    // no new input is taken while any waits.
    while (accepted < samples.size() && drain_pending(s)) {
      const std::size_t block = std::min<std::size_t>(1024, samples.size() - accepted);
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
  if (!slot_) return 0;
  return writable_input(*slot_);
}

bool Stream::wait_writable(std::size_t min_samples, std::chrono::microseconds timeout) {
  if (!slot_) return false;
  StreamSlot& s = *slot_;
  const double ratio = static_cast<double>(s.model_rate_hz) / s.config.sample_rate_hz;
  // Never wait for more than the buffer can ever hold.
  const auto most = static_cast<std::size_t>(static_cast<double>(s.samples.capacity() - 64) / ratio);
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

void Stream::flush() {
  if (!slot_) throw Error(ErrorCode::kClosed, "flush() on a closed stream");
  StreamSlot& s = *slot_;
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
  s.worker->schedule(&s);
}

std::size_t Stream::poll(std::span<Event> out) {
  if (!slot_) return 0;
  return slot_->events.read(out);
}

bool Stream::wait_events(std::chrono::microseconds timeout) {
  if (!slot_) return false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto sleep = std::chrono::microseconds(50);
  while (slot_->events.size() == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(1000));
  }
  return true;
}

std::string Stream::last_error() const {
  if (!slot_) return {};
  std::lock_guard lock(slot_->error_mutex);
  return slot_->last_error;
}

void Stream::close() {
  if (!slot_) return;
  slot_->close_requested.store(true, std::memory_order_release);
  slot_->worker->schedule(slot_.get());
  slot_.reset();
  engine_ = nullptr;
}

}  // namespace brisvox
