// Text-to-speech on the batch pool, for any family's synthesizer (synthesizer.h): a request model
// whose jobs take several steps.
//
// A job is a speech session (SpeechJob<S>), pinned to the least loaded worker when it is opened;
// between chunks a worker out of work may take it from a busy one (BatchPool's MovesJobs: the
// session's synthesis is all in the job), so that with unequal replies no worker idles while
// another has chunks waiting. One step is one chunk (about a sentence):
//   prepare()   delivers what the session's last step left undelivered (if the reader has not made
//               room yet, the job waits: it is not staged, and the reader's next read wakes it);
//               applies a stop (cancel, barge-in); takes the next utterance when none is in
//               progress and runs the synthesizer's start() on it (checks, prepares all its text);
//               stages the next chunk. Outside the run's deadline.
//   run()       the synthesizer's next(): one model run for the staged chunk, under the watchdog.
//   complete()  cuts the chunk's audio into payload pieces, adds kTtsEnd after the last chunk,
//               delivers what fits, and returns true while the session has more to do, so the
//               pool queues it again behind the other sessions of the worker: concurrent
//               utterances interleave chunk by chunk. A session's next step is keyed
//               kSpeechStartKey (a first chunk) or kSpeechContinueKey (a later one, which may wait
//               while its client still has audio to play: PoolJob::defer_ns, until the moment the
//               client would run dry less the chunk's expected run and the longest recent run),
//               so first chunks, the time to first audio, do not queue behind other replies'
//               later chunks, and a continuation about to run dry goes before them.
// max_batch is 1: on CPU a batch of sentences costs as much per sentence as single runs
// (docs/PERFORMANCE.md), so concurrency comes from the workers (one per core by default).
//
// Failures: start() failing (kRuntime: the family's front end died; kInvalidArgument: a chunk
// longer than one run takes) or the run failing (kRuntime, kInferenceTimeout) gives that
// utterance one kError event; the session goes on with its next utterance, and the worker with
// its other jobs.
//
// Allocation: per chunk (its audio, the outbox), not per frame; sessions allocate their output
// once, at open.
//
// The template is instantiated once per family, next to its synthesizer (piper_synthesizer.cpp);
// the rest of the engine sees SpeechModel and SpeechState.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"
#include "brisvox/error.h"
#include "engine/pool/batch_pool.h"
#include "engine/pool/pool_clock.h"
#include "engine/pool/retired_jobs.h"
#include "engine/speech/speech_model.h"
#include "engine/speech/speech_state.h"
#include "engine/speech/synthesizer.h"

namespace brisvox::engine {

// A session of a voice of family S: the family-independent state and the synthesis in progress.
template <Synthesizer S>
struct SpeechJob final : SpeechState {
  SpeechJob(std::uint64_t session_id, const SpeechConfig& speech_config, SpeechModel& speech_model, int worker_index,
            int output_rate_hz, std::size_t payload_bytes, typename S::Options session_options,
            std::shared_ptr<ReaderWake> shared_wake)
      : SpeechState(session_id, speech_config, speech_model, worker_index, output_rate_hz, payload_bytes,
                    std::move(shared_wake)),
        options(std::move(session_options)) {}

  const typename S::Options options;  // the session's settings, checked at open
  struct Current {
    Utterance utterance;
    typename S::Utterance synthesis;
  };
  std::optional<Current> current;  // worker: the utterance being synthesised
};

template <Synthesizer S>
class SpeechAdapter {
 public:
  using Job = SpeechJob<S>;
  SpeechAdapter(const ModelSpec& spec, SpeechModel& model) : synth_(spec), run_timeout_ms_(spec.run_timeout_ms), model_(model) {}

  std::int64_t prepare(Job& s, std::size_t row);
  void run(int key, std::size_t rows);
  bool complete(Job& s, const Completion& c);
  void after_batch();  // frees retired sessions nothing refers to any more
  void cancel_run() noexcept { synth_.cancel_run(); }
  void clear_cancel() noexcept { synth_.clear_cancel(); }
  std::string describe_failure(const Error& e, bool timed_out, std::size_t rows, std::int64_t elapsed_ns) const;
  std::size_t load() const noexcept { return sessions_.load(std::memory_order_relaxed); }
  // open(), or a session moving here from another worker (any thread): one more session on this
  // worker; detach(): one less (moving away).
  void attach() noexcept { sessions_.fetch_add(1, std::memory_order_relaxed); }
  void detach() noexcept { sessions_.fetch_sub(1, std::memory_order_relaxed); }
  // Asked by the worker out of work that would take `s` from this one's queue (BatchPool, under
  // this worker's mutex, `s` not in its run): a session's state is all in its job, so any worker
  // can run its next chunk, but a retired one belongs to this worker's retired list.
  bool may_move(const Job& s) const noexcept { return !s.retired; }

  const S& synthesizer() const noexcept { return synth_; }

 private:
  // Delivers the outbox while there is room; false when the job must wait for the reader (or was
  // woken meanwhile and is queued already).
  bool deliver(Job& s);
  // Takes the next queued utterance and starts it; false when none waits.
  bool begin_next(Job& s);
  void apply_stop(Job& s);
  static EventType stop_type(const Job& s, std::uint32_t utterance) {
    return utterance <= s.interrupted_upto.load(std::memory_order_acquire) ? EventType::kTtsInterrupted
                                                                           : EventType::kTtsCancelled;
  }
  void fail_utterance(Job& s, const Utterance& u, std::size_t count, ErrorCode code, const std::string& message);
  void queue_terminal(Job& s, EventType type, const Utterance& u, std::size_t count);
  void queue_mark(Job& s, const Utterance& u);
  static Event terminal_event(const Job& s, EventType type, std::uint32_t utterance, std::size_t count);
  void queue_chunk(Job& s, SynthesisChunk& chunk);
  bool has_work(Job& s);
  void next_step(Job& s, std::int64_t defer_ns);
  // How long the session's next chunk may wait: until its client, playing since the first audio,
  // would run dry, less the chunk's expected run and the longest recent run (another session's,
  // which may be in progress when it becomes due).
  std::int64_t continuation_slack_ns(const Job& s, std::int64_t now) const;
  void retire(Job& s);

  S synth_;
  int run_timeout_ms_;
  SpeechModel& model_;
  std::atomic<std::size_t> sessions_{0};
  Job* staged_ = nullptr;  // the batch's one row
  SynthesisChunk chunk_;   // the run's chunk
  // A model run's time per unit of cost on this worker, learned from its runs (a moving average;
  // the start value is a long Piper sentence's per phoneme id on one core of the development
  // machine).
  double run_ns_per_cost_ = 2.3e6;
  std::int64_t longest_run_ns_ = 0;  // decays by 1/8 per run
  RetiredJobs<SpeechState> retired_{16};
};

template <Synthesizer S>
class SpeechPool final : public SpeechModel {
 public:
  // `spec` resolved; Error from loading the voice, once per worker.
  explicit SpeechPool(const ModelSpec& spec)
      : SpeechModel(spec),
        pool_(spec, PoolShape{kSpeechKeys, static_cast<std::size_t>(spec.max_pending)},
              [&](int /*worker*/) { return SpeechAdapter<S>(spec, *this); }) {}

  std::shared_ptr<SpeechState> open(const SpeechConfig& config, std::uint64_t id,
                                    std::shared_ptr<ReaderWake> shared_wake = nullptr) override;
  void schedule(SpeechState& s) override { pool_.schedule(static_cast<SpeechJob<S>*>(&s)); }
  void check_text(std::string_view text) const override { pool_.adapter(0).synthesizer().check_text(text); }
  std::size_t max_text_bytes() const noexcept override { return pool_.adapter(0).synthesizer().max_text_bytes(); }

  void start() override { pool_.start(); }
  void stop() override {
    stopping_.store(true, std::memory_order_release);  // queued sessions are abandoned, not finished
    pool_.stop();
  }
  void watch_runs(RunWatchdog& watchdog) override { pool_.watch_runs(watchdog); }
  ModelStats stats() const override {
    ModelStats st = pool_.stats();
    st.sessions_open = open_sessions_.load(std::memory_order_relaxed);
    return st;
  }
  double recent_p99_queue_delay_us(std::int64_t now) const override { return pool_.recent_p99_queue_delay_us(now); }
  int num_workers() const noexcept override { return pool_.num_workers(); }

  // SpeechAdapter::retire: one session less open.
  void session_retired() noexcept { open_sessions_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  BatchPool<SpeechAdapter<S>> pool_;
};

// --- the adapter: one step ---------------------------------------------------------------------

namespace speech_detail {

inline std::uint16_t clamp16(std::size_t n) {
  return static_cast<std::uint16_t>(std::min<std::size_t>(n, std::numeric_limits<std::uint16_t>::max()));
}

inline Event speech_event(EventType type, std::uint32_t utterance, std::size_t chunk, std::size_t count) {
  Event ev;
  ev.type = type;
  ev.speech = SpeechPosition{utterance, clamp16(chunk), clamp16(count)};
  return ev;
}

inline bool is_terminal(EventType t) {
  return t == EventType::kTtsEnd || t == EventType::kTtsCancelled || t == EventType::kTtsInterrupted ||
         t == EventType::kError || t == EventType::kTtsMark;
}

}  // namespace speech_detail

template <Synthesizer S>
std::int64_t SpeechAdapter<S>::prepare(Job& s, std::size_t /*row*/) {
  if (s.retired) return kNotStaged;
  if (s.close_requested.load(std::memory_order_acquire)) {
    retire(s);
    return kNotStaged;
  }
  if (model_.stopping()) {
    // The engine is going away: what was not synthesised is abandoned (~Engine, engine.h).
    s.current.reset();
    s.outbox.clear();
    return kNotStaged;
  }
  apply_stop(s);
  while (true) {
    // Nothing new is synthesised while earlier outputs wait for the reader: that is the
    // back-pressure (at most one chunk's audio waits here, the rest in the channel).
    const bool was_waiting = !s.outbox.empty();
    if (!deliver(s)) {
      next_step(s, 0);  // the reader's next read queues it: the audio it waits for is due now
      return kNotStaged;
    }
    if (was_waiting) s.step_ready_ns = now_ns();  // ready from when the reader made room
    if (!s.current) {
      if (!begin_next(s)) {  // idle: the next speak() schedules the session
        next_step(s, 0);
        return kNotStaged;
      }
      continue;  // an utterance that ended at once (failed, nothing to say, a mark): deliver, then the next
    }
    staged_ = &s;
    // A first chunk counts from speak(): its queue delay and latency include the text's
    // preparation. (PoolJob::ready_since_ns belongs to the pool's lock: speak() or a reader may
    // queue the job again while it is here.)
    return s.current->synthesis.chunks_done() == 0 ? s.current->utterance.submitted_ns : s.step_ready_ns;
  }
}

template <Synthesizer S>
void SpeechAdapter<S>::run(int /*key*/, std::size_t /*rows*/) {
  Job& s = *staged_;
  try {
    if (!synth_.next(s.current->synthesis, chunk_)) {
      throw Error(ErrorCode::kInternal, "a synthesis without a chunk left was staged");
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // The pool handles brisvox::Error only: anything else (out of memory) fails this run alone.
    throw Error(ErrorCode::kRuntime, e.what());
  }
}

template <Synthesizer S>
bool SpeechAdapter<S>::complete(Job& s, const Completion& c) {
  staged_ = nullptr;
  if (c.failure != nullptr) {
    const auto& syn = s.current->synthesis;
    // next() leaves the synthesis where it was when the run fails: chunks_done() is the one that failed.
    fail_utterance(s, s.current->utterance, syn.chunk_count(), c.failure->code,
                   fmt::format("utterance {} of speech session {} failed at sentence {} of {}: {}",
                               s.current->utterance.id, s.id, syn.chunks_done() + 1, syn.chunk_count(),
                               c.failure->why));
    s.current.reset();
  } else {
    const bool last = chunk_.last;
    const std::int64_t made_at = now_ns();
    const std::int64_t run_ns = made_at - c.run_start_ns;
    if (chunk_.cost > 0) {
      const double per_cost = static_cast<double>(run_ns) / static_cast<double>(chunk_.cost);
      run_ns_per_cost_ += 0.2 * (per_cost - run_ns_per_cost_);
    }
    // The longest recent run: what a continuation that becomes due may find in progress.
    longest_run_ns_ = std::max(run_ns, longest_run_ns_ - longest_run_ns_ / 8);
    if (chunk_.index == 0) s.first_audio_ns = made_at;
    queue_chunk(s, chunk_);
    if (last) {
      queue_terminal(s, EventType::kTtsEnd, s.current->utterance, s.current->synthesis.chunk_count());
      s.current.reset();
    }
  }
  // A stop that came during the run discards the chunk it made (it is not delivered).
  apply_stop(s);
  const bool more = deliver(s) && has_work(s);
  const std::int64_t now = now_ns();
  if (more) s.step_ready_ns = now;
  // The client plays what was made while the next chunk is synthesised: the next may wait behind
  // other sessions' first chunks for as long as that audio lasts, less its own run time.
  next_step(s, s.current.has_value() ? continuation_slack_ns(s, now) : 0);
  return more;
}

template <Synthesizer S>
std::int64_t SpeechAdapter<S>::continuation_slack_ns(const Job& s, std::int64_t now) const {
  const auto played_until = s.first_audio_ns + static_cast<std::int64_t>(s.seconds(s.utterance_samples) * 1e9);
  const auto next_run = static_cast<std::int64_t>(run_ns_per_cost_ * static_cast<double>(s.current->synthesis.next_cost()));
  return std::max<std::int64_t>(0, played_until - now - next_run - longest_run_ns_);
}

template <Synthesizer S>
void SpeechAdapter<S>::next_step(Job& s, std::int64_t defer_ns) {
  // Starting an utterance (its first chunk) goes before continuations: that is the time to first
  // audio a caller hears. A continuation waits at most defer_ns for them (PoolJob::defer_ns).
  const bool continues = s.current.has_value();
  s.key.store(continues ? kSpeechContinueKey : kSpeechStartKey, std::memory_order_relaxed);
  s.defer_ns = continues ? defer_ns : 0;
}

template <Synthesizer S>
std::string SpeechAdapter<S>::describe_failure(const Error& e, bool timed_out, std::size_t /*rows*/,
                                               std::int64_t elapsed_ns) const {
  if (timed_out) {
    return fmt::format("the sentence's model run took longer than run_timeout_ms ({} ms) and was cancelled after {} ms; "
                       "{}",
                       run_timeout_ms_, elapsed_ns / 1'000'000, synth_.timeout_hint());
  }
  return e.what();
}

// --- utterances -----------------------------------------------------------------------------------

template <Synthesizer S>
bool SpeechAdapter<S>::begin_next(Job& s) {
  Utterance u;
  {
    std::lock_guard lock(s.mu);
    if (s.to_speak.empty()) return false;
    u = std::move(s.to_speak.front());
    s.to_speak.pop_front();
  }
  if (u.mark) {
    queue_mark(s, u);
    return true;
  }
  if (u.id <= s.cancelled_upto.load(std::memory_order_acquire)) {
    queue_terminal(s, stop_type(s, u.id), u, 0);
    return true;
  }
  typename S::Utterance synthesis;
  try {
    // The text was checked by speak(); what can fail here is the family's front end (kRuntime: it
    // is started again by the next utterance) or a chunk longer than one run (kInvalidArgument).
    synthesis = synth_.start(s.options, std::move(u.text));
  } catch (const Error& e) {
    fail_utterance(s, u, 0, e.code(), fmt::format("utterance {} of speech session {}: {}", u.id, s.id, e.what()));
    return true;
  } catch (const std::exception& e) {
    fail_utterance(s, u, 0, ErrorCode::kInternal,
                   fmt::format("utterance {} of speech session {}: {}", u.id, s.id, e.what()));
    return true;
  }
  if (synthesis.chunk_count() == 0) {  // nothing to say ("..."): done at once, as in Piper
    queue_terminal(s, EventType::kTtsEnd, u, 0);
    return true;
  }
  s.utterance_samples = 0;
  s.current.emplace(typename Job::Current{std::move(u), std::move(synthesis)});
  return true;
}

template <Synthesizer S>
void SpeechAdapter<S>::queue_chunk(Job& s, SynthesisChunk& chunk) {
  const std::uint32_t id = s.current->utterance.id;
  s.chunk_audio = std::move(chunk.samples);
  const std::size_t n = s.chunk_audio.size();
  std::size_t begin = 0;
  do {
    const std::size_t end = std::min(n, begin + s.piece_samples);
    PendingOutput p;
    p.event = speech_detail::speech_event(EventType::kTtsAudio, id, chunk.index, chunk.count);
    p.event.start_s = s.seconds(s.utterance_samples + begin);
    p.event.end_s = s.seconds(s.utterance_samples + end);
    p.audio_begin = begin;
    p.audio_end = end;
    p.last_piece = end == n;
    s.outbox.push_back(p);
    begin = end;
  } while (begin < n);
  s.utterance_samples += n;
}

template <Synthesizer S>
Event SpeechAdapter<S>::terminal_event(const Job& s, EventType type, std::uint32_t utterance, std::size_t count) {
  if (type == EventType::kTtsEnd) {
    Event ev = speech_detail::speech_event(type, utterance, count, count);
    ev.end_s = s.seconds(count == 0 ? 0 : s.utterance_samples);
    return ev;
  }
  // A stop or an error: what of the utterance was delivered before it ended.
  const bool delivering = s.delivering_id == utterance;
  Event ev = speech_detail::speech_event(type, utterance, delivering ? s.delivered_chunks : 0, count);
  ev.end_s = s.seconds(delivering ? s.delivered_samples : 0);
  return ev;
}

template <Synthesizer S>
void SpeechAdapter<S>::queue_terminal(Job& s, EventType type, const Utterance& u, std::size_t count) {
  PendingOutput p;
  p.event = terminal_event(s, type, u.id, count);
  s.outbox.push_back(p);
}

template <Synthesizer S>
void SpeechAdapter<S>::queue_mark(Job& s, const Utterance& u) {
  PendingOutput p;
  p.event = speech_detail::speech_event(EventType::kTtsMark, u.id, 0, 0);  // end_s: set when delivered
  s.outbox.push_back(p);
}

template <Synthesizer S>
void SpeechAdapter<S>::fail_utterance(Job& s, const Utterance& u, std::size_t count, ErrorCode code,
                                      const std::string& message) {
  detail::log(LogLevel::kWarn, "tts: {}", message);
  s.output.set_error(message);
  PendingOutput p;
  p.event = terminal_event(s, EventType::kError, u.id, count);
  p.event.error_code = code;
  s.outbox.push_back(p);
}

template <Synthesizer S>
void SpeechAdapter<S>::apply_stop(Job& s) {
  const std::uint32_t upto = s.cancelled_upto.load(std::memory_order_acquire);
  if (upto <= s.cancel_applied) return;
  s.cancel_applied = upto;
  // Outputs of stopped utterances not delivered yet: their audio and their end go, and a
  // kTtsCancelled (kTtsInterrupted) takes the end's place. Terminal events already made (an error,
  // a stop) and marks stay.
  std::deque<PendingOutput> kept;
  for (PendingOutput& p : s.outbox) {
    const SpeechPosition pos = p.event.speech;
    if (pos.utterance_id <= upto && p.event.type == EventType::kTtsAudio) continue;
    if (pos.utterance_id <= upto && p.event.type == EventType::kTtsEnd) {
      PendingOutput stopped;
      stopped.event = terminal_event(s, stop_type(s, pos.utterance_id), pos.utterance_id, pos.sentence_count);
      kept.push_back(stopped);
      continue;
    }
    kept.push_back(p);
  }
  s.outbox.swap(kept);
  if (s.current && s.current->utterance.id <= upto) {
    queue_terminal(s, stop_type(s, s.current->utterance.id), s.current->utterance, s.current->synthesis.chunk_count());
    s.current.reset();
  }
  std::lock_guard lock(s.mu);
  while (!s.to_speak.empty() && s.to_speak.front().id <= upto) {
    const Utterance& u = s.to_speak.front();
    // A mark of what was stopped is reached at once: its echo says playback is past it.
    if (u.mark) {
      queue_mark(s, u);
    } else {
      queue_terminal(s, stop_type(s, u.id), u, 0);
    }
    s.to_speak.pop_front();
  }
}

template <Synthesizer S>
bool SpeechAdapter<S>::has_work(Job& s) {
  if (s.current) return true;
  std::lock_guard lock(s.mu);
  return !s.to_speak.empty();
}

// --- delivery -------------------------------------------------------------------------------------

template <Synthesizer S>
bool SpeechAdapter<S>::deliver(Job& s) {
  // Writes what fits; returns the kWait* reason it stopped for, 0 when the outbox is empty.
  auto write_outputs = [&]() -> std::uint8_t {
    while (!s.outbox.empty()) {
      PendingOutput& p = s.outbox.front();
      if (s.output.event_room() == 0) return kWaitEvents;
      const std::int64_t now = now_ns();
      if (p.event.type == EventType::kTtsAudio) {
        const auto piece = std::span<const float>(s.chunk_audio).subspan(p.audio_begin, p.audio_end - p.audio_begin);
        if (!s.output.write_payload(p.event, std::as_bytes(piece))) return kWaitPayload;
        if (s.delivering_id != p.event.speech.utterance_id) {
          s.delivering_id = p.event.speech.utterance_id;
          s.delivered_samples = 0;
          s.delivered_chunks = 0;
        }
        s.delivered_samples += piece.size();
        if (p.last_piece) ++s.delivered_chunks;
        s.delivered_playout_ns = std::max(now, s.delivered_playout_ns) + static_cast<std::int64_t>(s.seconds(piece.size()) * 1e9);
      } else if (p.event.type == EventType::kTtsMark) {
        p.event.end_s = static_cast<double>(std::max(now, s.delivered_playout_ns)) / 1e9;
      }
      s.output.write(p.event);
      if (speech_detail::is_terminal(p.event.type)) {
        s.last_ended.store(p.event.speech.utterance_id, std::memory_order_release);
      }
      s.outbox.pop_front();
    }
    return 0;
  };
  bool delivered_all = false;
  while (true) {
    const std::uint8_t blocked = write_outputs();
    if (blocked == 0) {
      s.waiting.store(0, std::memory_order_release);
      delivered_all = true;
      break;
    }
    // Still blocked after announcing what it waits for: the reader's next read wakes the job.
    if (s.waiting.load(std::memory_order_relaxed) == blocked) break;
    // Announce, then look again: the reader frees room first and looks at `waiting` after (both
    // sides fence), so room made before the announcement is seen by the second look, and room
    // made after it by the reader's look.
    s.waiting.store(blocked, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  s.output.announce();
  return delivered_all;
}

// --- end of a session -----------------------------------------------------------------------------

template <Synthesizer S>
void SpeechAdapter<S>::retire(Job& s) {
  s.retired = true;
  s.current.reset();
  s.outbox.clear();
  {
    std::lock_guard lock(s.mu);
    s.to_speak.clear();
  }
  retired_.add(std::move(s.self));
  sessions_.fetch_sub(1, std::memory_order_relaxed);
  static_cast<SpeechPool<S>&>(model_).session_retired();
}

template <Synthesizer S>
void SpeechAdapter<S>::after_batch() {
  retired_.free_unreferenced();
}

// --- the pool ---------------------------------------------------------------------------------------

template <Synthesizer S>
std::shared_ptr<SpeechState> SpeechPool<S>::open(const SpeechConfig& config, std::uint64_t id,
                                                 std::shared_ptr<ReaderWake> shared_wake) {
  if (!accepting()) throw Error(ErrorCode::kClosed, "the engine is shutting down: no new speech sessions");
  const S& synth = pool_.adapter(0).synthesizer();
  typename S::Options options = synth.session_options(spec(), config);
  const int most = spec().max_pending;
  if (open_sessions_.fetch_add(1, std::memory_order_relaxed) >= most) {
    open_sessions_.fetch_sub(1, std::memory_order_relaxed);
    throw Error(ErrorCode::kOverloaded,
                fmt::format("voice '{}' has {} speech sessions open, its limit (ModelSpec::max_pending): close one "
                            "first or raise the limit",
                            spec().name, most));
  }
  try {
    const int rate = synth.sample_rate_hz(options);
    const auto payload_bytes = static_cast<std::size_t>(
        config.payload_buffer_bytes > 0 ? config.payload_buffer_bytes : kDefaultSpeechPayloadBytes);
    const int worker = pool_.least_loaded_worker();
    auto job = std::make_shared<SpeechJob<S>>(id, config, *this, worker, rate, payload_bytes, std::move(options),
                                              std::move(shared_wake));
    job->self = job;
    pool_.adapter(worker).attach();
    return job;
  } catch (...) {
    open_sessions_.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
}

}  // namespace brisvox::engine
