// What an engine reports about itself: stream-level counters and one ModelStats per registry
// entry. Cheap to read (no locks on the hot path; a snapshot of relaxed atomics).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "brisvox/engine/engine_config.h"
#include "brisvox/latency_histogram.h"

namespace brisvox {

// One model of the registry: its pool's runs, summed over its workers.
struct ModelStats {
  std::string name;  // EngineConfig::models[i].name
  ModelFamily family = ModelFamily::kSileroVad;
  int num_workers = 0;
  int max_batch = 0;
  std::uint64_t runs = 0;          // model runs (batches)
  std::uint64_t items = 0;         // what they ran: frames (VAD), analyses (turn)
  std::uint64_t run_errors = 0;    // failed runs, timeouts included
  std::uint64_t run_timeouts = 0;  // runs cancelled after EngineConfig::run_timeout_ms
  // Jobs a worker out of work took from a busy worker's queue between their steps (Piper speech
  // sessions; 0 for the families whose jobs stay pinned).
  std::uint64_t jobs_moved = 0;
  // Text-to-speech voices only: speech sessions open now (a call's included), of max_pending.
  int sessions_open = 0;
  std::vector<std::uint64_t> batch_size_counts;  // [b] = runs of b items (index 0 unused)
  LatencyHistogram queue_delay;  // an item ready (a frame complete, a request submitted) -> its run starts
  LatencyHistogram inference;    // one run (pack + run + unpack)
  // An item ready -> its result delivered: VAD, a frame complete -> its events available (the
  // engine's added latency); Smart Turn, an analysis requested -> its verdict back to the stream.
  LatencyHistogram latency;
  // Smart Turn only (empty for the other families): from the VAD frame that asked for an
  // end-of-turn analysis being ready to the turn_end / turn_incomplete event that its verdict
  // decided being emitted: a free request slot, the queue, the run and the stream's VAD worker
  // picking the verdict up. What a client waits for a turn, past the pause itself.
  LatencyHistogram turn_latency;
};

struct EngineStats {
  int active_streams = 0;
  std::uint64_t streams_opened = 0;
  std::uint64_t streams_refused = 0;
  std::uint64_t samples_rejected = 0;  // refused by push() (stream buffer full)
  // What became of the input of closed streams, in input-rate samples (each stream's own rate).
  // Once a stream is closed, every sample its push() accepted is in exactly one of these; a stream
  // still open is in none yet. With resampling, a stream closed before its flush completed is split
  // by the rate ratio (src/engine/stream/input_tally.h).
  std::uint64_t samples_analysed = 0;   // given to model runs that succeeded (flush padding excluded)
  std::uint64_t samples_failed = 0;     // given to model runs that failed (kError events)
  std::uint64_t samples_discarded = 0;  // buffered, unanalysed, when close() came before the flush completed
  std::uint64_t events_dropped = 0;     // probability events a slow reader missed (never speech events)
  std::uint64_t payloads_dropped = 0;   // payloads that did not fit a stream's channel (PayloadStatus::kDropped)
  std::uint64_t payloads_unread = 0;    // payloads skipped by read_payload() or left when a stream closed
  std::uint64_t overload_events = 0;
  std::vector<ModelStats> models;  // one per EngineConfig::models entry, same order

  // The entry named `name`; Error(kInvalidArgument) when there is none.
  const ModelStats& model(std::string_view name) const;
  // Frames analysed, runs and errors of every frame-synchronous (VAD) model together.
  std::uint64_t frames_processed() const noexcept;
  int num_workers() const noexcept;  // inference threads of every model
};

}  // namespace brisvox
