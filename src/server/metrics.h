// The server's counters and their Prometheus text exposition (format 0.0.4) for GET /metrics.
// Engine figures come from Engine::stats(); the server adds its own (sessions, errors sent,
// messages dropped for slow readers). Thread-safe: any thread counts, any thread renders.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "brisvox/engine/engine.h"

namespace brisvox::server {

// Why the server dropped received audio before it reached an engine stream (brisvox_audio_samples_
// rejected_total{reason}). Audio an engine stream took and then discarded is the engine's to count
// (EngineStats::samples_discarded, samples_failed).
enum class AudioLoss {
  kReset,          // held when the client asked for a reset
  kDisconnected,   // held when the client went away (a close without "close", a lost connection)
  kError,          // held when the session ended on an error (bad audio, slow reader, overloaded, ...)
  kShutdown,       // held when the drain deadline aborted the session
  kRequestFailed,  // POST /v1/vad: decoded but not fed, the request having failed
  kCount
};
std::string_view to_string(AudioLoss loss);

class ServerMetrics {
 public:
  // One error reported to a client (an error event or an HTTP error), by its protocol code.
  void count_error(std::string_view code);
  std::map<std::string, std::uint64_t> errors() const;
  // One HTTP answer sent, by handler ("healthz", "vad", "stream", "static", ...; "none" before a
  // request head was read) and status code (brisvox_http_responses_total{handler,code}).
  void count_http_response(std::string_view handler, int status);
  std::map<std::pair<std::string, int>, std::uint64_t> http_responses() const;

  std::atomic<std::int64_t> websocket_sessions_active{0};
  std::atomic<std::uint64_t> websocket_sessions_total{0};
  std::atomic<std::uint64_t> streams_refused{0};   // by the server, before the engine was asked
  std::atomic<std::uint64_t> messages_dropped{0};  // "vad" messages a slow reader did not get
  std::atomic<std::uint64_t> audio_bytes_received{0};
  // Audio accounting, in samples at each stream's input rate: every sample decoded from an
  // accepted audio message (WebSocket) or request body (POST /v1/vad) is counted here, and ends,
  // once its stream is closed, either processed by the engine or rejected (docs/PROTOCOL.md).
  std::atomic<std::uint64_t> audio_samples_received{0};
  void count_loss(AudioLoss why, std::uint64_t samples) {
    audio_samples_lost[static_cast<std::size_t>(why)].fetch_add(samples, std::memory_order_relaxed);
  }
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(AudioLoss::kCount)> audio_samples_lost{};
  std::atomic<std::uint64_t> http_requests{0};
  // Realtime items whose final transcript does not begin with what their deltas (partial
  // transcripts' agreed text) already said.
  std::atomic<std::uint64_t> realtime_deltas_revised{0};

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t> errors_;
  std::map<std::pair<std::string, int>, std::uint64_t> http_responses_;
};

// The text of GET /metrics. `rss_bytes` <= 0 leaves the memory gauge out.
std::string render_prometheus(const EngineStats& engine, const ServerMetrics& server, long rss_bytes);

// What the server holds open against its limits (docs/PROTOCOL.md, "Every HTTP request").
struct LimitGauges {
  int connections = 0;
  int max_connections = 0;
  int uploads = 0;
  int max_uploads = 0;
};

// The standard process metrics (process_cpu_seconds_total, process_open_fds, process_max_fds,
// process_start_time_seconds, from /proc/self) and brisvox_build_info, then the limit gauges:
// appended to render_prometheus()'s text.
// Also brisvox_http_responses_total{handler,code} from `server`.
std::string render_process_and_limits(const LimitGauges& limits, const ServerMetrics& server);

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace brisvox::server
