// What a BatchPool schedules: the scheduling fields of a job, embedded (as a base) in the owner's
// own record, so that queuing a job allocates nothing. A job is a stream of a frame-synchronous
// model (Silero: the stream's state lives in it) or a request of a request model (Smart Turn: one
// analysis), and it is pinned to one worker of its pool for as long as it belongs to the pool.
#pragma once

#include <atomic>
#include <cstdint>

namespace brisvox::engine {

struct PoolJob {
  // In its worker's ready queue (at most once): set by whoever queues it, cleared by the worker
  // when it takes the job into a batch, so that work arriving from then on queues it again.
  std::atomic<bool> queued{false};
  std::int64_t ready_since_ns = 0;  // when it was queued (its worker's mutex)
  int worker = -1;                  // the pool worker it is pinned to; set before it is first queued
  int key = 0;                      // jobs of one key share a run (Silero: the rate); < num_keys
};

}  // namespace brisvox::engine
