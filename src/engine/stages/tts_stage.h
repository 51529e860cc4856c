// Text-to-speech on the batch pool: Piper as a request model whose jobs take several steps.
//
// A job is a speech session (SpeechSlot), pinned to the least loaded worker when it is opened;
// between sentences a worker out of work may take it from a busy one (BatchPool's MovesJobs: the
// session's synthesis is all in the slot), so that with unequal replies no worker idles while
// another has sentences waiting. One step is one sentence:
//   prepare()   delivers what the session's last step left undelivered (if the reader has not made
//               room yet, the job waits: it is not staged, and the reader's next read wakes it);
//               applies a cancel; takes the next utterance when none is in progress and runs
//               PiperTts::start() on it (checks, phonemizes every sentence with the worker's
//               espeak-ng children); stages the next sentence. Outside the run's deadline.
//   run()       PiperTts::next(): one VITS run for the staged sentence, under the watchdog.
//   complete()  cuts the sentence's audio into payload pieces, adds kTtsEnd after the last
//               sentence, delivers what fits, and returns true while the session has more to do,
//               so the pool queues it again behind the other sessions of the worker: concurrent
//               utterances interleave sentence by sentence. A session's next step is keyed
//               kTtsStartKey (a first sentence) or kTtsContinueKey (a later one, which may wait
//               while its client still has audio to play: PoolJob::defer_ns, until the moment the
//               client would run dry less the chunk's expected run and the longest recent run),
//               so first sentences, the time to first audio, do not queue behind other replies'
//               later sentences, and a continuation about to run dry goes before them.
// max_batch is 1: on CPU a batch of sentences costs as much per sentence as single runs
// (docs/PERFORMANCE.md), so concurrency comes from the workers (one per core by default).
//
// Failures: start() failing (espeak-ng died: kRuntime; a sentence over max_phoneme_ids:
// kInvalidArgument) or the run failing (kRuntime, kInferenceTimeout) gives that utterance one
// kError event; the session goes on with its next utterance, and the worker with its other jobs
// (a dead espeak-ng is started again by the next start()).
//
// Allocation: per sentence (the synthesis's chunk, the outbox), not per frame; sessions allocate
// their channel and ring once, at open.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "brisvox/engine/engine_config.h"
#include "brisvox/models/tts/piper_tts.h"
#include "engine/pool/batch_pool.h"
#include "engine/stages/speech_slot.h"

namespace brisvox::engine {

// What the workers of one voice share with its pool.
struct TtsShared {
  std::atomic<bool> draining{false};  // Engine::drain(): no new sessions or utterances
  std::atomic<bool> stopping{false};  // the pool is stopping: abandon work
  std::atomic<int> open_sessions{0};
};

// SpeechConfig::payload_buffer_bytes 0: 512 KiB of ring (the channel rounds up to a power of two
// including its 8-byte record header), about 6 s of float32 audio at 22050 Hz.
inline constexpr std::size_t kDefaultSpeechPayloadBytes = (std::size_t{512} << 10) - 64;

class TtsAdapter {
 public:
  using Job = SpeechSlot;
  TtsAdapter(PiperTts tts, int run_timeout_ms, TtsShared& shared);

  std::int64_t prepare(SpeechSlot& s, std::size_t row);
  void run(int key, std::size_t rows);
  bool complete(SpeechSlot& s, const Completion& c);
  void after_batch();  // frees retired sessions nothing refers to any more
  void cancel_run() noexcept { tts_.cancel_run(); }
  void clear_cancel() noexcept { tts_.clear_cancel(); }
  std::string describe_failure(const Error& e, bool timed_out, std::size_t rows, std::int64_t elapsed_ns) const;
  std::size_t load() const noexcept { return sessions_.load(std::memory_order_relaxed); }
  // open_speech, or a session moving here from another worker (any thread): one more session on
  // this worker; detach(): one less (moving away).
  void attach() noexcept { sessions_.fetch_add(1, std::memory_order_relaxed); }
  void detach() noexcept { sessions_.fetch_sub(1, std::memory_order_relaxed); }
  // Asked by the worker out of work that would take `s` from this one's queue (BatchPool, under
  // this worker's mutex, `s` not in its run): a session's state is all in its SpeechSlot, so any
  // worker can run its next sentence, but a retired one belongs to this worker's retired list.
  bool may_move(const SpeechSlot& s) const noexcept { return !s.retired; }

  const PiperTts& tts() const noexcept { return tts_; }

 private:
  // Delivers the outbox while there is room; false when the job must wait for the reader (or was
  // woken meanwhile and is queued already).
  bool deliver(SpeechSlot& s);
  // Takes the next queued utterance and starts it; false when none waits.
  bool begin_next(SpeechSlot& s);
  void apply_cancel(SpeechSlot& s);
  // The utterance's kError (the message in last_error()), kTtsEnd or kTtsCancelled; `count` its
  // sentences (0 when it never got as far as its phonemes).
  void fail_utterance(SpeechSlot& s, const Utterance& u, std::size_t count, ErrorCode code, const std::string& message);
  void queue_terminal(SpeechSlot& s, EventType type, const Utterance& u, std::size_t count);
  static Event terminal_event(const SpeechSlot& s, EventType type, std::uint32_t utterance, std::size_t count);
  void queue_sentence(SpeechSlot& s, PiperChunk& chunk);
  bool has_work(SpeechSlot& s);
  // Sets the session's key and defer_ns for its next step (worker thread, between steps).
  void next_step(SpeechSlot& s, std::int64_t defer_ns);
  // How long the session's next chunk may wait: until its client, playing since the first audio,
  // would run dry, less the chunk's expected run and the longest recent run (another session's,
  // which may be in progress when it becomes due).
  std::int64_t continuation_slack_ns(const SpeechSlot& s, std::int64_t now) const;
  void retire(SpeechSlot& s);

  PiperTts tts_;
  int run_timeout_ms_;
  TtsShared& shared_;
  std::atomic<std::size_t> sessions_{0};
  SpeechSlot* staged_ = nullptr;  // the batch's one row
  PiperChunk chunk_;              // the run's sentence
  // A model run's time per phoneme id on this worker, learned from its runs (a moving average;
  // the start value is a long sentence's on one core of the development machine).
  double run_ns_per_id_ = 2.3e6;
  std::int64_t longest_run_ns_ = 0;  // decays by 1/8 per run
  std::vector<std::shared_ptr<SpeechSlot>> retired_;  // worker thread only
};

// The pool of one kPiperTts model of the registry.
class TtsPool final : public ModelPool {
 public:
  // `spec` resolved; Error (kIo, kBadModel, kModelMismatch, kInvalidArgument) from loading the
  // voice or starting espeak-ng, once per worker.
  explicit TtsPool(const ModelSpec& spec);

  // A new session pinned to the least loaded worker. Error(kInvalidArgument) for options the
  // voice refuses, Error(kOverloaded) when max_pending sessions are open.
  std::shared_ptr<SpeechSlot> open(const SpeechConfig& config, std::uint64_t id);
  // Any thread: the session has work (or room, or a cancel). Cheap when it is already queued.
  void schedule(SpeechSlot* s) { pool_.schedule(s); }
  bool stopping() const noexcept { return shared_->stopping.load(std::memory_order_acquire); }
  // Engine::drain(): from now on open() and speak() refuse with Error(kClosed).
  void refuse_new_work() noexcept { shared_->draining.store(true, std::memory_order_release); }
  bool accepting() const noexcept {
    return !shared_->draining.load(std::memory_order_acquire) && !stopping();
  }
  const PiperVoiceConfig& voice() const noexcept { return pool_.adapter(0).tts().voice(); }
  std::size_t max_text_bytes() const noexcept { return pool_.adapter(0).tts().max_text_bytes(); }

  void start() override { pool_.start(); }
  void stop() override {
    shared_->stopping.store(true, std::memory_order_release);  // queued sessions are abandoned, not finished
    pool_.stop();
  }
  void watch_runs(RunWatchdog& watchdog) override { pool_.watch_runs(watchdog); }
  ModelStats stats() const override { return pool_.stats(); }
  double recent_p99_queue_delay_us(std::int64_t now) const override { return pool_.recent_p99_queue_delay_us(now); }
  int num_workers() const noexcept override { return pool_.num_workers(); }

 private:
  std::unique_ptr<TtsShared> shared_;  // before the pool: its adapters use it
  BatchPool<TtsAdapter> pool_;
};

}  // namespace brisvox::engine
