// The server's counters and their Prometheus text exposition (format 0.0.4) for GET /metrics.
// Engine figures come from Engine::stats(); the server adds its own (sessions, errors sent,
// messages dropped for slow readers). Thread-safe: any thread counts, any thread renders.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "brisvox/engine/engine.h"

namespace brisvox::server {

class ServerMetrics {
 public:
  // One error reported to a client (an error event or an HTTP error), by its protocol code.
  void count_error(std::string_view code);
  std::map<std::string, std::uint64_t> errors() const;

  std::atomic<std::int64_t> websocket_sessions_active{0};
  std::atomic<std::uint64_t> websocket_sessions_total{0};
  std::atomic<std::uint64_t> streams_refused{0};   // by the server, before the engine was asked
  std::atomic<std::uint64_t> messages_dropped{0};  // "vad" messages a slow reader did not get
  std::atomic<std::uint64_t> audio_bytes_received{0};
  std::atomic<std::uint64_t> http_requests{0};

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t> errors_;
};

// The text of GET /metrics. `rss_bytes` <= 0 leaves the memory gauge out.
std::string render_prometheus(const EngineStats& engine, const ServerMetrics& server, long rss_bytes);

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace brisvox::server
