#include "engine/turn_pool.h"

#include <algorithm>

#include "brisvox/error.h"
#include "engine/stream_slot.h"
#include "engine/worker.h"
#include "base/log.h"

namespace brisvox::engine {

TurnPool::TurnPool(const EngineConfig& config) : config_(config) {
  const auto slots = static_cast<std::size_t>(config.max_pending_turns);
  requests_.resize(slots);
  for (auto& r : requests_) r.audio.assign(kTurnWindowSamples, 0.0f);
  free_.reserve(slots);
  for (std::size_t i = slots; i-- > 0;) free_.push_back(i);
  queue_.assign(slots, 0);
  const auto batch = static_cast<std::size_t>(config.turn_max_batch);
  for (int i = 0; i < config.num_turn_workers; ++i) {
    SmartTurnConfig mc;
    mc.model_path = config.turn_model;
    mc.max_batch = config.turn_max_batch;
    mc.session = config.turn_session;
    auto w = std::unique_ptr<Worker>(new Worker{SmartTurn(mc), TurnFeatures(), Resampler(8000, 16000, 8192), {}, {}, {}, {}, {}, {}, {}});
    w->audio16k.assign(kTurnWindowSamples + 8192, 0.0f);
    w->feature_buffer.assign(batch * kTurnFeatureValues, 0.0f);
    w->feature_ptrs.resize(batch);
    w->probs.resize(batch);
    w->batch.reserve(batch);
    workers_.push_back(std::move(w));
  }
}

TurnPool::~TurnPool() { stop(); }

void TurnPool::watch_runs(RunWatchdog& watchdog) {
  for (auto& w : workers_) {
    Worker* wp = w.get();
    watchdog.watch(wp->deadline, [wp] { wp->model.cancel_run(); });
  }
}

void TurnPool::start() {
  for (auto& w : workers_) {
    Worker* wp = w.get();
    w->thread = std::thread([this, wp] { run(*wp); });
  }
}

void TurnPool::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

bool TurnPool::submit(std::shared_ptr<StreamSlot> stream, std::uint64_t request_id, int sample_rate_hz,
                      const float* audio_a, std::size_t n_a, const float* audio_b, std::size_t n_b) {
  std::size_t index;
  {
    std::lock_guard lock(mu_);
    if (free_.empty() || stop_) return false;
    index = free_.back();
    free_.pop_back();
  }
  Request& r = requests_[index];
  const std::size_t capacity = r.audio.size();
  // Keep the most recent audio when more than 8 s is given (the ring's two pieces, in order).
  std::size_t skip = n_a + n_b > capacity ? n_a + n_b - capacity : 0;
  const std::size_t skip_a = std::min(skip, n_a);
  std::copy(audio_a + skip_a, audio_a + n_a, r.audio.begin());
  const std::size_t copied_a = n_a - skip_a;
  skip -= skip_a;
  std::copy(audio_b + skip, audio_b + n_b, r.audio.begin() + static_cast<std::ptrdiff_t>(copied_a));
  r.num_samples = copied_a + (n_b - skip);
  r.stream = std::move(stream);
  r.request_id = request_id;
  r.sample_rate_hz = sample_rate_hz;
  r.submitted_ns = now_ns();
  {
    std::lock_guard lock(mu_);
    queue_[(queue_head_ + queue_size_) % queue_.size()] = index;
    ++queue_size_;
  }
  cv_.notify_one();
  return true;
}

void TurnPool::deliver(Request& r, float probability, bool failed, bool timed_out) {
  StreamSlot& s = *r.stream;
  TurnSlot& t = *s.turn;
  t.verdict_probability = probability;
  t.verdict_failed = failed;
  t.verdict_timed_out = timed_out;
  t.verdict_id.store(r.request_id, std::memory_order_release);
  t.in_flight.store(false, std::memory_order_release);
  // Wake the stream's VAD worker, which alone turns the verdict into events. The stream cannot be
  // freed under us: this request holds a reference until it is released after deliver(), and a
  // VAD worker retires a closed stream's memory only once it is neither queued nor referenced.
  s.worker->schedule(&s);
  counters_.latency.record(static_cast<double>(now_ns() - r.submitted_ns) / 1000.0);
}

void TurnPool::run(Worker& w) {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || queue_size_ > 0; });
    if (stop_ && queue_size_ == 0) return;
    w.batch.clear();
    while (queue_size_ > 0 && w.batch.size() < static_cast<std::size_t>(config_.turn_max_batch)) {
      w.batch.push_back(queue_[queue_head_]);
      queue_head_ = (queue_head_ + 1) % queue_.size();
      --queue_size_;
    }
    lock.unlock();
    std::size_t n = 0;
    bool failed = false;
    bool timed_out = false;
    std::int64_t run_start = 0;
    try {
      for (std::size_t k = 0; k < w.batch.size(); ++k) {
        Request& r = requests_[w.batch[k]];
        const std::int64_t t0 = now_ns();
        std::span<const float> audio(r.audio.data(), r.num_samples);
        if (r.sample_rate_hz != kTurnSampleRateHz) {
          // Smart Turn listens at 16 kHz: 8 kHz streams are upsampled here, per analysis.
          w.upsampler.reset();
          std::size_t produced = w.upsampler.process(audio, w.audio16k);
          while (true) {
            const std::size_t more = w.upsampler.flush(std::span(w.audio16k).subspan(produced));
            if (more == 0) break;
            produced += more;
          }
          audio = std::span<const float>(w.audio16k.data(), std::min(produced, r.num_samples * 2));
        }
        float* features = w.feature_buffer.data() + n * kTurnFeatureValues;
        w.features.compute(audio, std::span(features, kTurnFeatureValues));
        w.feature_ptrs[n++] = features;
        counters_.features.record(static_cast<double>(now_ns() - t0) / 1000.0);
      }
      run_start = now_ns();
      w.deadline.begin(run_start);  // the watchdog may cancel it from here (run_watchdog.h)
      w.model.run(std::span(w.feature_ptrs.data(), n), std::span(w.probs.data(), n));
      const std::int64_t run_end = now_ns();
      // Completed, though perhaps cancelled at its very end: the results stand, the flag goes.
      if (w.deadline.end(run_start)) w.model.clear_cancel();
      counters_.inference.record(static_cast<double>(run_end - run_start) / 1000.0);
      run_start = 0;  // ended: the handler below must not end it again
    } catch (const Error& e) {
      failed = true;
      counters_.errors.fetch_add(1, std::memory_order_relaxed);
      if (run_start != 0 && w.deadline.end(run_start)) {
        w.model.clear_cancel();
        timed_out = true;
        counters_.timeouts.fetch_add(1, std::memory_order_relaxed);
        detail::log(LogLevel::kError,
                    "turn analysis of {} stream(s) took longer than run_timeout_ms ({} ms) and was cancelled; the "
                    "turns go on (raise EngineConfig::run_timeout_ms or use a smaller turn_max_batch if this repeats)",
                    w.batch.size(), config_.run_timeout_ms);
      } else {
        detail::log(LogLevel::kError, "turn analysis of {} stream(s) failed: {}", w.batch.size(), e.what());
      }
    }
    for (std::size_t k = 0; k < w.batch.size(); ++k) {
      Request& r = requests_[w.batch[k]];
      deliver(r, failed ? -1.0f : w.probs[k], failed, timed_out);
      counters_.analyses.fetch_add(1, std::memory_order_relaxed);
      r.stream.reset();  // may free the stream: after deliver() is done with it
    }
    lock.lock();
    for (std::size_t index : w.batch) free_.push_back(index);
  }
}

}  // namespace brisvox::engine
