// The server's own figures of calls (/v1/call) for GET /metrics, beside the engine's per-model
// ones (the stream's VAD, turn and stt models; the voice's runs). Thread-safe: any thread counts,
// any thread renders.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "brisvox/latency_histogram.h"

namespace brisvox::server {

struct CallMetrics {
  std::atomic<std::int64_t> sessions_active{0};
  std::atomic<std::uint64_t> sessions_total{0};
  std::atomic<std::uint64_t> speaks{0};          // speak messages accepted
  std::atomic<std::uint64_t> speaks_done{0};     // all of its audio sent
  std::atomic<std::uint64_t> speaks_interrupted{0};  // stopped by a barge-in
  std::atomic<std::uint64_t> speaks_cancelled{0};    // stopped by the client's cancel
  std::atomic<std::uint64_t> speaks_failed{0};
  std::atomic<std::uint64_t> barge_ins{0};
  // A speak accepted -> its first audio handed to the socket.
  LatencyHistogram first_audio;
};

// The brisvox_call_* series (Prometheus text format 0.0.4).
std::string render_call_metrics(const CallMetrics& m);

}  // namespace brisvox::server
