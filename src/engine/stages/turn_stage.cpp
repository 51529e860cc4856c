#include "engine/stages/turn_stage.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.h"
#include "brisvox/error.h"
#include "engine/stream/stream_state.h"
#include "engine/stream/vad_pool.h"

namespace brisvox::engine {

TurnStage::TurnStage(int model_rate_hz, int frame_samples, const TurnOptions& options, TurnPool& turn_pool)
    : pool_(&turn_pool), wait_for_verdict_(options.wait_for_verdict), detector_(model_rate_hz, frame_samples, options.params) {}

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
  StreamState& s = *r.stream;
  r.stage->deliver(probability, failed, timed_out, r.request_id);
  // Wake the stream's VAD worker, which alone turns the verdict into events. The stream cannot be
  // freed under us: this request holds a reference until it is released below, and a VAD worker
  // frees a retired stream only once it is neither queued nor referenced.
  s.vad_pool->schedule(&s);
  r.stream.reset();  // may free the stream: after the last use of `s`
  r.stage = nullptr;
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  slots_->release(&r);
}

void TurnStage::deliver(float probability, bool failed, bool timed_out, std::uint64_t request_id) {
  verdict_probability_ = probability;
  verdict_failed_ = failed;
  verdict_timed_out_ = timed_out;
  verdict_id_.store(request_id, std::memory_order_release);
  in_flight_.store(false, std::memory_order_release);
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

bool TurnPool::submit(StreamState& stream, TurnStage& stage, std::uint64_t request_id, const AudioHistory::Range& audio) {
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
  r->stage = &stage;
  r->request_id = request_id;
  r->sample_rate_hz = stream.model_rate_hz;
  r->worker = pool_.least_loaded_worker();
  pool_.adapter(r->worker).add_load();
  pool_.schedule(r);
  return true;
}

// --- the stream's side, on its VAD worker --------------------------------------------------------

void TurnStage::submit(StreamState& s, const TurnAction& action) {
  // A cancelled request may still be with the pool (its buffer in use): wait for it.
  if (in_flight_.load(std::memory_order_acquire)) {
    deferred_ = true;
    deferred_action_ = action;
    return;
  }
  const std::int64_t window = std::int64_t{8} * s.model_rate_hz;
  const std::int64_t end = std::min(action.end_sample, s.history->written());
  const AudioHistory::Range audio = s.history->range(std::max(action.start_sample, end - window), end);
  in_flight_.store(true, std::memory_order_release);
  if (!pool_->submit(s, *this, action.request_id, audio)) {
    in_flight_.store(false, std::memory_order_release);
    deferred_ = true;  // every request slot is busy: retried on the next round
    deferred_action_ = action;
    s.vad_pool->schedule(&s);
  }
}

void TurnStage::act(StreamState& s, const TurnActions& actions, std::int64_t since_ns) {
  for (const TurnAction& a : actions) {
    if (a.kind == TurnAction::Kind::kAnalyze) {
      timed_request_id_ = a.request_id;
      timed_since_ns_ = since_ns;
      submit(s, a);
      continue;
    }
    Event ev;
    ev.type = a.kind == TurnAction::Kind::kTurnEnd ? EventType::kTurnEnd : EventType::kTurnIncomplete;
    ev.turn_reason = a.reason;
    ev.start_s = s.seconds(a.start_sample);
    ev.end_s = s.seconds(a.end_sample);
    ev.probability = a.probability;
    if (ev.type == EventType::kTurnEnd) ++turns_ended_;
    s.output.emit(ev);
  }
}

void TurnStage::on_frame(StreamState& s, float probability, std::int64_t frame_ready_ns) {
  act(s, detector_.push(probability), frame_ready_ns);
}

void TurnStage::collect(StreamState& s) {
  const int run_timeout_ms = pool_->spec().run_timeout_ms;
  const std::uint64_t id = verdict_id_.exchange(0, std::memory_order_acquire);
  if (id != 0) {
    float probability = verdict_probability_;
    if (verdict_failed_) {
      s.output.set_error(
          verdict_timed_out_
              ? fmt::format("end-of-turn analysis {} of stream {} took longer than run_timeout_ms ({} ms) and was "
                            "cancelled; the turn goes on (raise the turn model's run_timeout_ms if this repeats)",
                            id, s.id, run_timeout_ms)
              : fmt::format("end-of-turn analysis {} of stream {} failed (see the log); the turn goes on", id, s.id));
      Event ev;
      ev.type = EventType::kError;
      ev.error_code = verdict_timed_out_ ? ErrorCode::kInferenceTimeout : ErrorCode::kRuntime;
      s.output.emit(ev);
      probability = 0.0f;  // as incomplete: the next pause or the timeout ends the turn
    }
    const std::int64_t now = now_ns();
    const TurnActions actions = detector_.verdict(id, probability);
    // Timed only when the verdict decided a turn event (a stale one, its speech resumed, did not).
    const bool decided = std::any_of(actions.begin(), actions.end(), [](const TurnAction& a) {
      return a.kind == TurnAction::Kind::kTurnEnd || a.kind == TurnAction::Kind::kTurnIncomplete;
    });
    if (decided && id == timed_request_id_) {
      pool_->record_turn_latency(static_cast<double>(now - timed_since_ns_) / 1000.0);
    }
    act(s, actions, now);
  }
  if (deferred_ && !in_flight_.load(std::memory_order_acquire)) {
    deferred_ = false;
    // Only if the detector still waits for it (speech may have resumed meanwhile).
    if (detector_.pending_request() == deferred_action_.request_id) submit(s, deferred_action_);
  }
}

void TurnStage::on_end(StreamState& s) {
  if (flush_started_) return;
  flush_started_ = true;
  act(s, detector_.flush(), now_ns());
}

}  // namespace brisvox::engine
