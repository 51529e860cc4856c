// What every connection shares: the configuration, the engine, the counters, the open sessions
// and the shutdown state. Owned by Server, which outlives every connection.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

#include "brisvox/engine/engine.h"
#include "server/app_url.h"
#include "server/call_metrics.h"
#include "server/connection_limits.h"
#include "server/metrics.h"
#include "server/post_gate.h"
#include "server/server_config.h"
#include "server/session_registry.h"
#include "server/telephony_metrics.h"
#include "server/tts_metrics.h"

namespace brisvox::server {

struct ServerContext {
  ServerContext(const ServerConfig& server_config, Engine& server_engine, boost::asio::thread_pool& job_pool)
      : config(server_config),
        engine(server_engine),
        jobs(job_pool),
        connections(server_config.limits.max_connections, server_config.limits.max_connections_per_client),
        uploads(server_config.limits.max_uploads),
        stream_clients(server_config.limits.max_streams, server_config.limits.max_streams_per_client > 0
                                                              ? server_config.limits.max_streams_per_client
                                                              : server_config.limits.max_streams),
        max_calls(parse_call_limits(server_config.max_calls)),
        call_apps(parse_call_apps(server_config.call_apps)) {}

  const ServerConfig& config;
  Engine& engine;
  boost::asio::thread_pool& jobs;  // POST /v1/vad: decoding and feeding (waits, never infers)
  ServerMetrics metrics;
  TtsMetrics tts_metrics;  // POST and WebSocket /v1/tts
  CallMetrics call_metrics;  // /v1/call, and telephony calls
  TelephonyMetrics telephony_metrics;  // /v1/telephony/<provider>
  SessionRegistry sessions;
  ConnectionLimiter connections;  // HTTP connections (limits.max_connections, _per_client)
  UploadLimiter uploads;          // POST uploads in progress (limits.max_uploads)
  // WebSocket streams per client address (limits.max_streams_per_client); the total is
  // streams_open's to bound.
  ConnectionLimiter stream_clients;
  std::shared_ptr<PostGate> gate = std::make_shared<PostGate>();
  std::atomic<std::uint64_t> next_session_id{1};
  std::atomic<int> streams_open{0};  // WebSocket sessions admitted (limits.max_streams)
  // Each provider's limit of telephony calls (--max-calls; 0: none), and its calls admitted.
  const std::array<int, kNumTelephonyProviders> max_calls;
  std::array<std::atomic<int>, kNumTelephonyProviders> calls_open{};
  // The applications that drive telephony calls (--call-app), chosen when a call starts.
  const CallApps call_apps;
  std::atomic<int> jobs_in_flight{0};
  // Refused connections still open so that their 503 is read (HttpSession::linger): bounded, as
  // they hold a descriptor and no slot.
  std::atomic<int> refusals_lingering{0};
  std::atomic<bool> draining{false};  // SIGINT/SIGTERM: no new streams or requests
  std::atomic<bool> aborting{false};  // the drain deadline passed: jobs give up
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

}  // namespace brisvox::server
