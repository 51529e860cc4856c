// What a BatchPool schedules: the scheduling fields of a job, embedded (as a base) in the owner's
// own record, so that queuing a job allocates nothing. A job is a stream of a frame-synchronous
// model (Silero: the stream's state lives in it) or a request of a request model (Smart Turn: one
// analysis), and it is pinned to one worker of its pool for as long as it belongs to the pool, or,
// in a pool whose jobs move (a Piper speech session), until a worker out of work takes it.
#pragma once

#include <atomic>
#include <cstdint>

namespace brisvox::engine {

struct PoolJob {
  // In its worker's ready queue (at most once): set by whoever queues it, cleared by the worker
  // when it takes the job into a batch, so that work arriving from then on queues it again.
  std::atomic<bool> queued{false};
  std::int64_t ready_since_ns = 0;  // when it was queued (its worker's mutex)
  // The pool worker it is pinned to; set before it is first queued. Atomic because a job of a
  // MovesJobs pool (batch_pool.h) can be moved while it waits in a queue, by another worker, and
  // schedule() reads it on any thread once it has set `queued` (which a move leaves set).
  std::atomic<int> worker{-1};
  // Jobs of one key share a run (Silero: the rate; Whisper: the encoder window, or decoding; Piper:
  // starting an utterance, or continuing one); < num_keys. Atomic because a job that several
  // threads queue (a speech session: speak(), its reader, its worker) may have its key changed by
  // its worker meanwhile; a relaxed load or store is a plain move on x86.
  std::atomic<int> key{0};
  // Worker thread only (its adapter sets it between steps): how long the job may wait behind jobs
  // queued after it without harm. The worker serves first the key whose oldest job is due first,
  // due = ready_since_ns + defer_ns; 0 for every job but a Piper continuation, whose client is
  // still playing the sentence before it (speech/speech_pool.h).
  std::int64_t defer_ns = 0;
};

}  // namespace brisvox::engine
