#include "engine/worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "brisvox/error.h"
#include "engine/input_tally.h"
#include "engine/turn_pool.h"
#include "base/log.h"

namespace brisvox::engine {
namespace {

constexpr std::int64_t kWindowNs = 1'000'000'000;

Event segment_event(const StreamSlot& s, const SegmentEvent& e) {
  Event out;
  out.type = e.kind == SegmentEvent::Kind::kSpeechStart ? EventType::kSpeechStart : EventType::kSpeechEnd;
  out.start_s = s.seconds(e.start_sample);
  out.end_s = e.kind == SegmentEvent::Kind::kSpeechEnd ? s.seconds(e.end_sample) : 0.0;
  return out;
}

}  // namespace

bool Worker::ReadyQueue::push(StreamSlot* s) noexcept {
  if (size_ == items_.size()) return false;
  items_[(head_ + size_) % items_.size()] = s;
  ++size_;
  return true;
}

StreamSlot* Worker::ReadyQueue::pop() noexcept {
  StreamSlot* s = items_[head_];
  head_ = (head_ + 1) % items_.size();
  --size_;
  return s;
}

Worker::Worker(int index, const EngineConfig& config, SileroVad vad, TurnPool* turns)
    : index_(index),
      config_(config),
      vad_(std::move(vad)),
      counters_(config.max_batch),
      ready_{ReadyQueue(static_cast<std::size_t>(config.max_streams) + 1),
             ReadyQueue(static_cast<std::size_t>(config.max_streams) + 1)},
      turns_(turns) {
  const auto b = static_cast<std::size_t>(config.max_batch);
  batch_.resize(b);
  batch_states_.resize(b);
  batch_chunks_.resize(b);
  staging_.resize(b * 512);
  probs_.resize(b);
  complete_ns_.resize(b);
  consumed_.resize(b);
  final_.resize(b);
  requeue_.reserve(2 * b);
  streams_.reserve(static_cast<std::size_t>(config.max_streams));
}

Worker::~Worker() { stop(); }

void Worker::start() { thread_ = std::thread([this] { run(); }); }

void Worker::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Worker::attach(std::shared_ptr<StreamSlot> slot) {
  std::lock_guard lock(mu_);
  streams_.push_back(std::move(slot));
  num_streams_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::shared_ptr<StreamSlot>> Worker::streams_snapshot() {
  std::lock_guard lock(mu_);
  return streams_;
}

void Worker::schedule(StreamSlot* s) {
  if (s->queued.exchange(true, std::memory_order_acq_rel)) return;
  std::lock_guard lock(mu_);
  s->ready_since_ns = now_ns();
  ReadyQueue& q = ready_[static_cast<std::size_t>(s->rate_index)];
  q.push(s);  // cannot fail: a stream is queued at most once and capacity > max_streams
  if (idle_ || (gathering_ && q.size() >= static_cast<std::size_t>(config_.max_batch))) cv_.notify_one();
}

int Worker::gather(std::unique_lock<std::mutex>& lock) {
  // The rate whose oldest ready stream has waited longest goes first.
  std::size_t r = 0;
  if (ready_[0].empty() ||
      (!ready_[1].empty() && ready_[1].front()->ready_since_ns < ready_[0].front()->ready_since_ns)) {
    r = 1;
  }
  // Wait for a fuller batch only while more streams could still become ready in time: there is no
  // point waiting for 32 when only 3 streams exist. Streams are counted per worker, not per rate:
  // with mixed rates this may wait when it need not, bounded by max_gather_wait_us.
  const std::size_t want = std::min<std::size_t>(static_cast<std::size_t>(config_.max_batch), streams_.size());
  const std::int64_t deadline = ready_[r].front()->ready_since_ns + std::int64_t{config_.max_gather_wait_us} * 1000;
  while (!stop_ && ready_[r].size() < want) {
    const std::int64_t now = now_ns();
    if (now >= deadline) break;
    gathering_ = true;
    cv_.wait_for(lock, std::chrono::nanoseconds(deadline - now));
    gathering_ = false;
  }
  std::size_t count = 0;
  while (count < static_cast<std::size_t>(config_.max_batch) && !ready_[r].empty()) {
    StreamSlot* s = ready_[r].pop();
    // Cleared before the stream is examined, so that audio pushed from now on queues it again.
    s->queued.store(false, std::memory_order_release);
    batch_[count++] = s;
  }
  return static_cast<int>(r * 1000 + count);  // rate index and count, unpacked by run()
}

void Worker::run() {
  std::unique_lock lock(mu_);
  while (true) {
    while (!stop_ && ready_[0].empty() && ready_[1].empty()) {
      idle_ = true;
      cv_.wait(lock);
      idle_ = false;
    }
    if (ready_[0].empty() && ready_[1].empty()) break;  // stopping, nothing left
    const int packed = gather(lock);
    lock.unlock();
    process(packed / 1000, static_cast<std::size_t>(packed % 1000));
    reap_retired();
    lock.lock();
    for (StreamSlot* s : requeue_) {
      if (s->queued.exchange(true, std::memory_order_acq_rel)) continue;
      s->ready_since_ns = now_ns();
      ready_[static_cast<std::size_t>(s->rate_index)].push(s);
    }
    requeue_.clear();
  }
}

void Worker::process(int rate_index, std::size_t count) {
  const int rate_hz = rate_index == 0 ? 16000 : 8000;
  std::size_t n = 0;  // streams with a frame to run
  for (std::size_t k = 0; k < count; ++k) {
    StreamSlot& s = *batch_[k];
    if (s.retired.load(std::memory_order_relaxed)) continue;
    if (s.close_requested.load(std::memory_order_acquire)) {
      // A turn request in flight still refers to the stream: its delivery schedules it again.
      if (!s.turn || !s.turn->in_flight.load(std::memory_order_acquire)) remove_stream(&s);
      continue;
    }
    if (s.turn) {
      turn_mailbox(s);
      // Offline streams wait for their verdict before more audio is analysed; the verdict's
      // delivery schedules the stream again.
      const TurnSlot& t = *s.turn;
      if (s.config.turn_wait_for_verdict && !s.finished &&
          (t.detector.verdict_pending() || t.in_flight.load(std::memory_order_acquire) || t.deferred)) {
        continue;
      }
    }
    if (s.finished) continue;
    // The flush flag first: it is set after the last samples were written, so once it is seen
    // set, size() includes every sample the stream will ever have.
    const bool flushing = s.flush_requested.load(std::memory_order_acquire);
    const std::size_t available = s.samples.size();
    const auto chunk = static_cast<std::size_t>(s.chunk_samples);
    float* row = staging_.data() + n * 512;
    if (available >= chunk) {
      s.samples.peek(std::span(row, chunk));
      consumed_[n] = chunk;
      final_[n] = flushing && available == chunk;
      complete_ns_[n] = s.frame_complete_ns[static_cast<std::size_t>(s.frames_done) & s.frame_time_mask];
    } else if (flushing && available > 0) {
      // The last partial frame, zero-padded as get_speech_timestamps does.
      s.samples.peek(std::span(row, available));
      std::fill(row + available, row + chunk, 0.0f);
      consumed_[n] = available;
      final_[n] = 1;
      complete_ns_[n] = s.flush_ns;
    } else {
      // Queued for a flush, for refused samples to report, or woken early.
      if (s.refusal_episodes.load(std::memory_order_relaxed) != s.episodes_reported) {
        overload_check(s, 0);
        if (s.config.on_events) s.config.on_events();
      }
      if (flushing) finish_stream(s);
      continue;
    }
    batch_[n] = &s;  // compacting in place: n <= k
    batch_states_[n] = &s.vad_state;
    batch_chunks_[n] = row;
    ++n;
  }
  if (n == 0) return;

  const std::int64_t t0 = now_ns();
  for (std::size_t i = 0; i < n; ++i) {
    const double delay_us = static_cast<double>(t0 - complete_ns_[i]) / 1000.0;
    counters_.queue_delay.record(delay_us);
    window_.record(delay_us);
  }
  bool ok = true;
  deadline_.begin(t0);  // from here the watchdog may cancel the Run (run_watchdog.h)
  try {
    vad_.run(rate_hz, std::span(batch_states_.data(), n), std::span(batch_chunks_.data(), n),
             std::span(probs_.data(), n));
  } catch (const Error& e) {
    ok = false;
    // A Run the watchdog cancelled fails like any other; end() below tells which it was.
    const bool timed_out = deadline_.end(t0);
    if (timed_out) vad_.clear_cancel();
    fail_batch(n, e, timed_out, now_ns() - t0);
  }
  // A Run that completed although the watchdog cancelled it at its very end keeps its results;
  // the flag must still be cleared, or the next Run would fail at once.
  if (ok && deadline_.end(t0)) vad_.clear_cancel();
  const std::int64_t t1 = now_ns();
  counters_.inference.record(static_cast<double>(t1 - t0) / 1000.0);
  counters_.batches.fetch_add(1, std::memory_order_relaxed);
  counters_.frames.fetch_add(n, std::memory_order_relaxed);
  counters_.batch_sizes[n].fetch_add(1, std::memory_order_relaxed);

  for (std::size_t i = 0; i < n; ++i) {
    StreamSlot& s = *batch_[i];
    s.samples.consume(consumed_[i]);
    (ok ? s.model_analysed : s.model_failed) += consumed_[i];
    const std::int64_t frame = s.frames_done++;
    if (s.config.emit_probabilities && ok) {
      Event ev;
      ev.type = EventType::kVadProbability;
      ev.probability = probs_[i];
      ev.frame_index = frame;
      ev.start_s = s.seconds(frame * s.chunk_samples);
      ev.end_s = s.seconds((frame + 1) * s.chunk_samples);
      s.emit(ev);
    }
    for (const SegmentEvent& e : s.segmenter.push(probs_[i])) s.emit(segment_event(s, e));
    if (s.turn) turn_frame(s, batch_chunks_[i], consumed_[i], probs_[i]);
    overload_check(s, t0 - complete_ns_[i]);
    if (final_[i]) finish_stream(s);
    const std::int64_t done = now_ns();
    counters_.added_latency.record(static_cast<double>(done - complete_ns_[i]) / 1000.0);
    if (s.config.on_events) s.config.on_events();
    const bool waiting_for_verdict =
        s.turn && s.config.turn_wait_for_verdict &&
        (s.turn->detector.verdict_pending() || s.turn->in_flight.load(std::memory_order_acquire) || s.turn->deferred);
    if (!s.finished && !waiting_for_verdict &&
        (s.samples.size() >= static_cast<std::size_t>(s.chunk_samples) || s.flush_requested.load(std::memory_order_acquire))) {
      requeue_.push_back(&s);
    }
  }
  update_window(t1);
}

void Worker::fail_batch(std::size_t n, const Error& error, bool timed_out, std::int64_t elapsed_ns) {
  counters_.run_errors.fetch_add(1, std::memory_order_relaxed);
  const ErrorCode code = timed_out ? ErrorCode::kInferenceTimeout : error.code();
  if (timed_out) counters_.run_timeouts.fetch_add(1, std::memory_order_relaxed);
  // ONNX Runtime's own message for a cancelled Run ("terminate flag") tells the user nothing.
  const std::string why =
      timed_out ? fmt::format("the model run of {} stream(s) took longer than run_timeout_ms ({} ms) and was "
                              "cancelled after {} ms; the frame counts as silence and the stream goes on. If this "
                              "repeats, the machine is overloaded or the model too slow: open fewer streams per "
                              "worker, lower max_batch or raise EngineConfig::run_timeout_ms",
                              n, config_.run_timeout_ms, elapsed_ns / 1'000'000)
                : std::string(error.what());
  detail::log(LogLevel::kError, "worker {}: {}", index_, why);
  for (std::size_t i = 0; i < n; ++i) {
    StreamSlot& s = *batch_[i];
    {
      std::lock_guard lock(s.error_mutex);
      s.last_error = fmt::format("frame {} of stream {} was not analysed: {}", s.frames_done, s.id, why);
    }
    Event ev;
    ev.type = EventType::kError;
    ev.error_code = code;
    ev.frame_index = s.frames_done;
    ev.start_s = s.seconds(s.frames_done * s.chunk_samples);
    ev.end_s = s.seconds(s.frames_done * s.chunk_samples + static_cast<std::int64_t>(consumed_[i]));
    s.emit(ev);
    // The segmenter needs a probability per frame to keep its sample clock: the frame counts as
    // silence, and the error event says so.
    probs_[i] = 0.0f;
  }
}

void Worker::finish_stream(StreamSlot& s) {
  if (s.finished) return;
  const auto total = static_cast<std::int64_t>(s.samples.written());
  if (!s.segments_flushed) {
    for (const SegmentEvent& e : s.segmenter.flush(total)) s.emit(segment_event(s, e));
    s.segments_flushed = true;
  }
  if (s.turn) {
    TurnSlot& t = *s.turn;
    if (!t.flush_started) {
      t.flush_started = true;
      turn_actions(s, t.detector.flush());
    }
    // The end of the stream waits for the last verdict; its delivery calls this again.
    if (t.detector.verdict_pending() || t.in_flight.load(std::memory_order_acquire) || t.deferred) return;
  }
  Event eos;
  eos.type = EventType::kEndOfStream;
  eos.end_s = s.seconds(total);
  s.emit(eos);
  s.finished = true;
  s.finished_flag.store(true, std::memory_order_release);
  if (s.config.on_events) s.config.on_events();
}

void Worker::remove_stream(StreamSlot* s) {
  std::lock_guard lock(mu_);
  const auto it = std::find_if(streams_.begin(), streams_.end(),
                               [s](const std::shared_ptr<StreamSlot>& p) { return p.get() == s; });
  if (it == streams_.end()) return;
  // The stream's last figures: its handle is gone (close_requested was seen with acquire), so
  // neither the producer nor this worker changes them any more.
  const InputTally t = tally_input(s->input_accepted, s->model_analysed, s->model_failed, s->config.sample_rate_hz,
                                   s->model_rate_hz, s->finished && !s->flush_tail_refused);
  counters_.samples_analysed.fetch_add(t.analysed, std::memory_order_relaxed);
  counters_.samples_failed.fetch_add(t.failed, std::memory_order_relaxed);
  counters_.samples_discarded.fetch_add(t.discarded, std::memory_order_relaxed);
  counters_.closed_samples_rejected.fetch_add(s->samples_rejected.load(), std::memory_order_relaxed);
  counters_.closed_events_dropped.fetch_add(s->events_dropped.load(), std::memory_order_relaxed);
  s->retired.store(true, std::memory_order_relaxed);
  retired_.push_back(std::move(*it));
  *it = std::move(streams_.back());
  streams_.pop_back();
  num_streams_.fetch_sub(1, std::memory_order_relaxed);
}

void Worker::reap_retired() {
  for (std::size_t i = 0; i < retired_.size();) {
    // Not queued (no pointer to it in a ready queue) and no other owner (no turn request).
    if (!retired_[i]->queued.load(std::memory_order_acquire) && retired_[i].use_count() == 1) {
      retired_[i] = std::move(retired_.back());
      retired_.pop_back();
    } else {
      ++i;
    }
  }
}

// --- end of turn ------------------------------------------------------------------------------

void Worker::turn_frame(StreamSlot& s, const float* frame, std::size_t num_samples, float prob) {
  TurnSlot& t = *s.turn;
  const std::size_t cap = t.history.size();
  for (std::size_t i = 0; i < num_samples; ++i) {
    t.history[static_cast<std::size_t>(t.history_written + static_cast<std::int64_t>(i)) % cap] = frame[i];
  }
  t.history_written += static_cast<std::int64_t>(num_samples);
  turn_actions(s, t.detector.push(prob));
}

void Worker::turn_mailbox(StreamSlot& s) {
  TurnSlot& t = *s.turn;
  const std::uint64_t id = t.verdict_id.exchange(0, std::memory_order_acquire);
  if (id != 0) {
    float probability = t.verdict_probability;
    if (t.verdict_failed) {
      {
        std::lock_guard lock(s.error_mutex);
        s.last_error =
            t.verdict_timed_out
                ? fmt::format("end-of-turn analysis {} of stream {} took longer than run_timeout_ms ({} ms) and was "
                              "cancelled; the turn goes on (raise EngineConfig::run_timeout_ms if this repeats)",
                              id, s.id, config_.run_timeout_ms)
                : fmt::format("end-of-turn analysis {} of stream {} failed (see the log); the turn goes on", id, s.id);
      }
      Event ev;
      ev.type = EventType::kError;
      ev.error_code = t.verdict_timed_out ? ErrorCode::kInferenceTimeout : ErrorCode::kRuntime;
      s.emit(ev);
      probability = 0.0f;  // as incomplete: the next pause or the timeout ends the turn
    }
    turn_actions(s, t.detector.verdict(id, probability));
  }
  if (t.deferred && !t.in_flight.load(std::memory_order_acquire)) {
    t.deferred = false;
    // Only if the detector still waits for it (speech may have resumed meanwhile).
    if (t.detector.pending_request() == t.deferred_action.request_id) turn_submit(s, t.deferred_action);
  }
  if (s.segments_flushed && !s.finished) finish_stream(s);
}

void Worker::turn_actions(StreamSlot& s, const TurnActions& actions) {
  for (const TurnAction& a : actions) {
    if (a.kind == TurnAction::Kind::kAnalyze) {
      turn_submit(s, a);
      continue;
    }
    Event ev;
    ev.type = a.kind == TurnAction::Kind::kTurnEnd ? EventType::kTurnEnd : EventType::kTurnIncomplete;
    ev.turn_reason = a.reason;
    ev.start_s = s.seconds(a.start_sample);
    ev.end_s = s.seconds(a.end_sample);
    ev.probability = a.probability;
    s.emit(ev);
  }
}

void Worker::turn_submit(StreamSlot& s, const TurnAction& action) {
  TurnSlot& t = *s.turn;
  // A cancelled request may still be with the pool (its buffer in use): wait for it.
  if (t.in_flight.load(std::memory_order_acquire) || turns_ == nullptr) {
    t.deferred = true;
    t.deferred_action = action;
    return;
  }
  const auto cap = static_cast<std::int64_t>(t.history.size());
  const std::int64_t window = std::int64_t{8} * s.model_rate_hz;
  const std::int64_t end = std::min(action.end_sample, t.history_written);
  const std::int64_t begin = std::max({action.start_sample, end - window, t.history_written - cap, std::int64_t{0}});
  const std::size_t first = static_cast<std::size_t>(begin % cap);
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, end - begin));
  const std::size_t n_a = std::min(n, t.history.size() - first);
  t.in_flight.store(true, std::memory_order_release);
  if (!turns_->submit(s.shared_from_this(), action.request_id, s.model_rate_hz, t.history.data() + first, n_a,
                      t.history.data(), n - n_a)) {
    t.in_flight.store(false, std::memory_order_release);
    t.deferred = true;  // every request slot is busy: retried on the next round
    t.deferred_action = action;
    requeue_.push_back(&s);
  }
}

void Worker::overload_check(StreamSlot& s, std::int64_t queue_delay_ns) {
  const std::int64_t budget_ns = std::int64_t{config_.latency_budget_ms} * 1'000'000;
  const std::uint64_t rejected = s.samples_rejected.load(std::memory_order_relaxed);
  const std::uint32_t episodes = s.refusal_episodes.load(std::memory_order_relaxed);
  const bool late = queue_delay_ns > budget_ns;
  if ((late && !s.overloaded) || episodes != s.episodes_reported) {
    Event ev;
    ev.type = EventType::kOverload;
    ev.backlog_ms = static_cast<std::uint32_t>(std::max<std::int64_t>(0, queue_delay_ns) / 1'000'000);
    ev.rejected_samples = static_cast<std::uint32_t>(std::min<std::uint64_t>(rejected, UINT32_MAX));
    ev.start_s = s.seconds(s.frames_done * s.chunk_samples);
    s.emit(ev);
    s.episodes_reported = episodes;
    counters_.overload_events.fetch_add(1, std::memory_order_relaxed);
  }
  // One event per episode: the episode ends when the delay is back under half the budget.
  if (late) s.overloaded = true;
  else if (queue_delay_ns < budget_ns / 2) s.overloaded = false;
}

void Worker::update_window(std::int64_t now) {
  if (window_start_ns_ == 0) window_start_ns_ = now;
  if (now - window_start_ns_ < kWindowNs) return;
  std::array<std::uint64_t, Histogram::kNumBuckets> counts{};
  double sum = 0, max = 0;
  window_.add_to(counts, sum, max);
  counters_.recent_p99_queue_delay_us.store(std::min(Histogram::quantile(counts, 0.99), max),
                                            std::memory_order_relaxed);
  counters_.window_end_ns.store(now, std::memory_order_relaxed);
  window_.reset();
  window_start_ns_ = now;
}

}  // namespace brisvox::engine
