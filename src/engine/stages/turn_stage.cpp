#include "engine/stages/turn_stage.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.h"
#include "brisvox/error.h"
#include "engine/stages/vad_stage.h"
#include "engine/stream/stream_slot.h"

namespace brisvox::engine {

TurnStreamState::TurnStreamState(int model_rate_hz, int frame_samples, const TurnOptions& stage, TurnPool& turn_pool)
    : pool(&turn_pool), wait_for_verdict(stage.wait_for_verdict), detector(model_rate_hz, frame_samples, stage.params) {}

// --- the pool's side ---------------------------------------------------------------------------

TurnAdapter::TurnAdapter(SmartTurn model, int max_batch, int run_timeout_ms, RequestSlots<TurnRequest>& slots)
    : model_(std::move(model)), run_timeout_ms_(run_timeout_ms), slots_(&slots) {
  const auto b = static_cast<std::size_t>(max_batch);
  audio16k_.assign(kTurnWindowSamples + 8192, 0.0f);
  feature_buffer_.assign(b * kTurnFeatureValues, 0.0f);
  feature_ptrs_.resize(b);
  probs_.resize(b);
}

std::int64_t TurnAdapter::prepare(TurnRequest& r, std::size_t row) {
  try {
    stage_features(r, row);
  } catch (const Error& e) {
    // The pool must not see an exception here: this request fails alone, the batch goes on.
    detail::log(LogLevel::kError, "turn analysis {} of stream {}: the features failed: {}", r.request_id,
                r.stream->id, e.what());
    deliver(r, -1.0f, /*failed=*/true, /*timed_out=*/false);
    return kNotStaged;
  }
  return r.ready_since_ns;
}

void TurnAdapter::stage_features(const TurnRequest& r, std::size_t row) {
  std::span<const float> audio(r.audio.data(), r.num_samples);
  if (r.sample_rate_hz != kTurnSampleRateHz) {
    // Smart Turn listens at 16 kHz: 8 kHz streams are upsampled here, per analysis.
    upsampler_.reset();
    std::size_t produced = upsampler_.process(audio, audio16k_);
    while (true) {
      const std::size_t more = upsampler_.flush(std::span(audio16k_).subspan(produced));
      if (more == 0) break;
      produced += more;
    }
    audio = std::span<const float>(audio16k_.data(), std::min(produced, r.num_samples * 2));
  }
  float* features = feature_buffer_.data() + row * kTurnFeatureValues;
  features_.compute(audio, std::span(features, kTurnFeatureValues));
  feature_ptrs_[row] = features;
}

void TurnAdapter::run(int /*key*/, std::size_t rows) {
  model_.run(std::span(feature_ptrs_.data(), rows), std::span(probs_.data(), rows));
}

std::string TurnAdapter::describe_failure(const Error& e, bool timed_out, std::size_t rows,
                                          std::int64_t /*elapsed_ns*/) const {
  if (timed_out) {
    return fmt::format("turn analysis of {} stream(s) took longer than run_timeout_ms ({} ms) and was cancelled; the "
                       "turns go on (raise the turn model's run_timeout_ms or give it a smaller max_batch "
                       "if this repeats)",
                       rows, run_timeout_ms_);
  }
  return fmt::format("turn analysis of {} stream(s) failed: {}", rows, e.what());
}

bool TurnAdapter::complete(TurnRequest& r, const Completion& c) {
  const bool failed = c.failure != nullptr;
  deliver(r, failed ? -1.0f : probs_[c.row], failed, failed && c.failure->timed_out);
  return false;
}

void TurnAdapter::deliver(TurnRequest& r, float probability, bool failed, bool timed_out) {
  StreamSlot& s = *r.stream;
  TurnStreamState& t = *s.turn;
  t.verdict_probability = probability;
  t.verdict_failed = failed;
  t.verdict_timed_out = timed_out;
  t.verdict_id.store(r.request_id, std::memory_order_release);
  t.in_flight.store(false, std::memory_order_release);
  // Wake the stream's VAD worker, which alone turns the verdict into events. The stream cannot be
  // freed under us: this request holds a reference until it is released below, and a VAD worker
  // frees a retired stream only once it is neither queued nor referenced.
  s.vad_pool->schedule(&s);
  r.stream.reset();  // may free the stream: after the last use of `s`
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  slots_->release(&r);
}

TurnPool::TurnPool(const ModelSpec& spec)
    : ModelPool(spec),
      slots_(std::make_unique<RequestSlots<TurnRequest>>(
          static_cast<std::size_t>(spec.max_pending), [](TurnRequest& r) { r.audio.assign(kTurnWindowSamples, 0.0f); })),
      pool_(spec, PoolShape{1, static_cast<std::size_t>(spec.max_pending)}, [&](int /*worker*/) {
        SmartTurnConfig mc;
        mc.model_path = spec.path;
        mc.max_batch = spec.max_batch;
        mc.session = spec.session;
        return TurnAdapter(SmartTurn(mc), spec.max_batch, spec.run_timeout_ms, *slots_);
      }) {}

ModelStats TurnPool::stats() const {
  ModelStats st = pool_.stats();
  st.turn_latency = turn_latency_;
  return st;
}

bool TurnPool::submit(StreamSlot& stream, std::uint64_t request_id, const AudioHistory::Range& audio) {
  TurnRequest* r = slots_->acquire();
  if (r == nullptr) return false;
  const std::size_t capacity = r->audio.size();
  // Keep the most recent audio when more than 8 s is given (the history's two pieces, in order).
  std::size_t skip = audio.first.size() + audio.second.size() > capacity
                         ? audio.first.size() + audio.second.size() - capacity
                         : 0;
  const std::size_t skip_first = std::min(skip, audio.first.size());
  std::copy(audio.first.begin() + static_cast<std::ptrdiff_t>(skip_first), audio.first.end(), r->audio.begin());
  const std::size_t copied_first = audio.first.size() - skip_first;
  skip -= skip_first;
  std::copy(audio.second.begin() + static_cast<std::ptrdiff_t>(skip), audio.second.end(),
            r->audio.begin() + static_cast<std::ptrdiff_t>(copied_first));
  r->num_samples = copied_first + (audio.second.size() - skip);
  r->stream = stream.shared_from_this();
  r->request_id = request_id;
  r->sample_rate_hz = stream.model_rate_hz;
  r->worker = pool_.least_loaded_worker();
  pool_.adapter(r->worker).add_load();
  pool_.schedule(r);
  return true;
}

// --- the stream's side, on its VAD worker --------------------------------------------------------

namespace {

void turn_submit(StreamSlot& s, const TurnAction& action) {
  TurnStreamState& t = *s.turn;
  // A cancelled request may still be with the pool (its buffer in use): wait for it.
  if (t.in_flight.load(std::memory_order_acquire)) {
    t.deferred = true;
    t.deferred_action = action;
    return;
  }
  const std::int64_t window = std::int64_t{8} * s.model_rate_hz;
  const std::int64_t end = std::min(action.end_sample, s.history->written());
  const AudioHistory::Range audio = s.history->range(std::max(action.start_sample, end - window), end);
  t.in_flight.store(true, std::memory_order_release);
  if (!t.pool->submit(s, action.request_id, audio)) {
    t.in_flight.store(false, std::memory_order_release);
    t.deferred = true;  // every request slot is busy: retried on the next round
    t.deferred_action = action;
    s.vad_pool->schedule(&s);
  }
}

// `since_ns`: when the input that led to these actions was ready (an analysis is timed from it).
void turn_actions(StreamSlot& s, const TurnActions& actions, std::int64_t since_ns) {
  TurnStreamState& t = *s.turn;
  for (const TurnAction& a : actions) {
    if (a.kind == TurnAction::Kind::kAnalyze) {
      t.timed_request_id = a.request_id;
      t.timed_since_ns = since_ns;
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

}  // namespace

void turn_frame(StreamSlot& s, float probability, std::int64_t frame_ready_ns) {
  turn_actions(s, s.turn->detector.push(probability), frame_ready_ns);
}

void turn_mailbox(StreamSlot& s) {
  TurnStreamState& t = *s.turn;
  const int run_timeout_ms = t.pool->spec().run_timeout_ms;
  const std::uint64_t id = t.verdict_id.exchange(0, std::memory_order_acquire);
  if (id != 0) {
    float probability = t.verdict_probability;
    if (t.verdict_failed) {
      s.set_error(t.verdict_timed_out
                      ? fmt::format("end-of-turn analysis {} of stream {} took longer than run_timeout_ms ({} ms) and "
                                    "was cancelled; the turn goes on (raise the turn model's run_timeout_ms if this repeats)",
                                    id, s.id, run_timeout_ms)
                      : fmt::format("end-of-turn analysis {} of stream {} failed (see the log); the turn goes on", id,
                                    s.id));
      Event ev;
      ev.type = EventType::kError;
      ev.error_code = t.verdict_timed_out ? ErrorCode::kInferenceTimeout : ErrorCode::kRuntime;
      s.emit(ev);
      probability = 0.0f;  // as incomplete: the next pause or the timeout ends the turn
    }
    const std::int64_t now = now_ns();
    const TurnActions actions = t.detector.verdict(id, probability);
    // Timed only when the verdict decided a turn event (a stale one, its speech resumed, did not).
    const bool decided = std::any_of(actions.begin(), actions.end(), [](const TurnAction& a) {
      return a.kind == TurnAction::Kind::kTurnEnd || a.kind == TurnAction::Kind::kTurnIncomplete;
    });
    if (decided && id == t.timed_request_id) {
      t.pool->record_turn_latency(static_cast<double>(now - t.timed_since_ns) / 1000.0);
    }
    turn_actions(s, actions, now);
  }
  if (t.deferred && !t.in_flight.load(std::memory_order_acquire)) {
    t.deferred = false;
    // Only if the detector still waits for it (speech may have resumed meanwhile).
    if (t.detector.pending_request() == t.deferred_action.request_id) turn_submit(s, t.deferred_action);
  }
}

void turn_flush(StreamSlot& s) {
  TurnStreamState& t = *s.turn;
  if (t.flush_started) return;
  t.flush_started = true;
  turn_actions(s, t.detector.flush(), now_ns());
}

}  // namespace brisvox::engine
