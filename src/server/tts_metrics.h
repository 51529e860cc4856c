// The server's own text-to-speech figures for GET /metrics, beside the engine's per-model ones
// (model="tts": runs, queue delay, run time, latency, errors). Thread-safe: any thread counts,
// any thread renders.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "brisvox/latency_histogram.h"

namespace brisvox::server {

struct TtsMetrics {
  std::atomic<std::uint64_t> http_requests{0};     // POST /v1/tts accepted (text queued)
  std::atomic<std::uint64_t> ws_utterances{0};     // speak messages accepted on WebSocket /v1/tts
  std::atomic<std::int64_t> ws_sessions_active{0};
  std::atomic<std::uint64_t> ws_sessions_total{0};
  std::atomic<std::uint64_t> utterances_done{0};
  std::atomic<std::uint64_t> utterances_cancelled{0};
  std::atomic<std::uint64_t> utterances_failed{0};
  std::atomic<std::uint64_t> audio_samples_sent{0};  // at each request's rate
  std::atomic<double> audio_seconds_sent{0.0};
  // Text accepted -> its first audio handed to the socket (WAV answers: the whole file).
  LatencyHistogram first_audio;

  void add_audio(std::uint64_t samples, int rate_hz) {
    audio_samples_sent.fetch_add(samples, std::memory_order_relaxed);
    double s = audio_seconds_sent.load(std::memory_order_relaxed);
    const double add = static_cast<double>(samples) / rate_hz;
    while (!audio_seconds_sent.compare_exchange_weak(s, s + add, std::memory_order_relaxed)) {
    }
  }
};

// The brisvox_tts_* series (Prometheus text format 0.0.4), appended to the engine's.
std::string render_tts_metrics(const TtsMetrics& m);

}  // namespace brisvox::server
