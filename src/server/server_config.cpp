#include "server/server_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "base/install_dirs.h"
#include "brisvox/error.h"
#include "server/app_url.h"

#ifndef BRISVOX_WEB_DIR
#define BRISVOX_WEB_DIR "web"
#endif

namespace brisvox::server {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, message);
}

}  // namespace

// An installed server serves <prefix>/share/brisvox/web; one run from the build tree (no share/
// above it) serves the source tree's web/.
std::string default_web_dir() {
  const std::string installed = detail::installed_data_dir("web");
  std::error_code ec;
  if (!installed.empty() && std::filesystem::is_directory(installed, ec)) return installed;
  return BRISVOX_WEB_DIR;
}

void ServerConfig::validate() const {
  require(!host.empty(), "--host must not be empty");
  const CallApps apps = parse_call_apps(call_apps);  // its own message names --call-app
  (void)parse_call_limits(max_calls);  // its own message names --max-calls
  // An Authorization header cannot carry spaces at its ends or control characters: such a token
  // would lock every client out while looking configured.
  require(std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; }),
          "--token must be printable ASCII without spaces (a bearer token in an HTTP header)");
  require(port >= 0 && port <= 65535, fmt::format("--port must be 0 (any free port) to 65535, got {}", port));
  require(audiosocket_port >= -1 && audiosocket_port <= 65535,
          fmt::format("--audiosocket-port must be 0 (any free port) to 65535, got {}", audiosocket_port));
  require(audiosocket_port < 0 || apps.unnamed,
          "--audiosocket-port needs an unnamed --call-app URL: each AudioSocket connection is a call that the "
          "application drives, and AudioSocket carries no parameter to name one");
  require(!audiosocket_host.empty(), "--audiosocket-host must not be empty");
  require(io_threads >= 1 && io_threads <= 256, fmt::format("--io-threads must be 1 to 256, got {}", io_threads));
  require(job_threads >= 1 && job_threads <= 256, fmt::format("job_threads must be 1 to 256, got {}", job_threads));
  require(realtime_partial_ms == 0 || (realtime_partial_ms >= 200 && realtime_partial_ms <= 10000),
          fmt::format("--realtime-partial-ms must be 0 (one delta per item) or 200 to 10000, got {}",
                      realtime_partial_ms));
  require(std::all_of(twilio_auth_token.begin(), twilio_auth_token.end(), [](char c) { return c > 0x20 && c < 0x7f; }),
          "--twilio-auth-token must be printable ASCII without spaces (the Auth Token of the Twilio Console)");
  require(public_url.empty() || public_url.starts_with("wss://") || public_url.starts_with("ws://") ||
              public_url.starts_with("https://") || public_url.starts_with("http://"),
          fmt::format("--public-url must start with wss://, ws://, https:// or http:// (the base URL the providers "
                      "reach this server at), got '{}'",
                      public_url));
  const ServerLimits& l = limits;
  require(l.max_streams >= 1 && l.max_streams <= 100000,
          fmt::format("--max-streams must be 1 to 100000, got {}", l.max_streams));
  require(l.max_message_bytes >= 64 && l.max_message_bytes <= (std::size_t{1} << 30),
          fmt::format("--max-message-bytes must be 64 to 1073741824, got {}", l.max_message_bytes));
  require(l.max_control_bytes >= 64, fmt::format("max_control_bytes must be at least 64, got {}", l.max_control_bytes));
  require(l.max_body_bytes >= 1024 && l.max_body_bytes <= (std::size_t{16} << 30),
          fmt::format("--max-body-bytes must be 1024 to 17179869184, got {}", l.max_body_bytes));
  require(std::isfinite(l.max_upload_s) && l.max_upload_s >= 1 && l.max_upload_s <= 30 * 86400.0,
          fmt::format("--max-upload-seconds must be 1 to 2592000, got {}", l.max_upload_s));
  require(l.max_uploads >= 1 && l.max_uploads <= 4096,
          fmt::format("--max-uploads must be 1 to 4096, got {}", l.max_uploads));
  require(l.max_connections >= 1 && l.max_connections <= 1000000,
          fmt::format("--max-connections must be 1 to 1000000, got {}", l.max_connections));
  require(l.max_connections_per_client >= 1 && l.max_connections_per_client <= 1000000,
          fmt::format("--max-connections-per-client must be 1 to 1000000, got {}", l.max_connections_per_client));
  require(l.max_streams_per_client >= 0 && l.max_streams_per_client <= 100000,
          fmt::format("--max-streams-per-client must be 0 (no limit but --max-streams) to 100000, got {}",
                      l.max_streams_per_client));
  require(l.max_request_buffer_bytes >= (32 << 10),
          fmt::format("max_request_buffer_bytes must be at least 32768, got {}", l.max_request_buffer_bytes));
  require(std::isfinite(l.max_rate) && l.max_rate >= 1.0 && l.max_rate <= 10000.0,
          fmt::format("--max-rate must be 1 to 10000 (times real time), got {}", l.max_rate));
  require(std::isfinite(l.burst_s) && l.burst_s >= 0.1 && l.burst_s <= 600,
          fmt::format("burst_s must be 0.1 to 600, got {}", l.burst_s));
  require(l.pending_ms >= 100 && l.pending_ms <= 60000,
          fmt::format("pending_ms must be 100 to 60000, got {}", l.pending_ms));
  require(l.pending_timeout_ms >= 100,
          fmt::format("pending_timeout_ms must be at least 100, got {}", l.pending_timeout_ms));
  require(l.idle_timeout_s >= 1 && l.idle_timeout_s <= 86400,
          fmt::format("--idle-timeout-s must be 1 to 86400, got {}", l.idle_timeout_s));
  require(l.send_queue_messages >= 16,
          fmt::format("send_queue_messages must be at least 16, got {}", l.send_queue_messages));
  require(l.send_queue_bytes >= 4096,
          fmt::format("send_queue_bytes must be at least 4096, got {}", l.send_queue_bytes));
  require(l.ws_send_buffer_bytes >= 4096,
          fmt::format("ws_send_buffer_bytes must be at least 4096, got {}", l.ws_send_buffer_bytes));
  require(l.drain_timeout_s >= 0 && l.drain_timeout_s <= 3600,
          fmt::format("--drain-timeout-s must be 0 to 3600, got {}", l.drain_timeout_s));
  require(l.close_timeout_ms >= 10, fmt::format("close_timeout_ms must be at least 10, got {}", l.close_timeout_ms));
  require(l.http_timeout_s >= 1 && l.http_timeout_s <= 3600,
          fmt::format("--http-timeout-s must be 1 to 3600, got {}", l.http_timeout_s));
  require(l.request_head_timeout_s >= 1 && l.request_head_timeout_s <= 3600,
          fmt::format("--request-head-timeout-s must be 1 to 3600, got {}", l.request_head_timeout_s));
  require(l.engine_buffer_ms >= 64 && l.engine_buffer_ms <= 60000,
          fmt::format("engine_buffer_ms must be 64 to 60000, got {}", l.engine_buffer_ms));
  for (const auto& origin : allowed_origins) {
    require(!origin.empty(), "--allow-origin must not be empty (use '*' to allow any origin)");
  }
  for (const auto& h : allowed_hosts) {
    require(!h.empty() && h.find_first_of(" \t/") == std::string::npos,
            fmt::format("--allow-host takes a host name without scheme or path ('app.example.com', or '*' for "
                        "any), got '{}'",
                        h));
  }
  engine.validate();
}

std::array<int, kNumTelephonyProviders> parse_call_limits(const std::vector<std::string>& specs) {
  std::array<int, kNumTelephonyProviders> limits{};
  for (const std::string& spec : specs) {
    const std::size_t eq = spec.find('=');
    const std::optional<TelephonyProvider> provider =
        eq == std::string::npos ? std::nullopt : telephony_provider(std::string_view(spec).substr(0, eq));
    int n = 0;
    const char* first = spec.data() + (eq == std::string::npos ? spec.size() : eq + 1);
    const char* last = spec.data() + spec.size();
    const auto [end, ec] = std::from_chars(first, last, n);
    if (!provider || first == last || ec != std::errc() || end != last || n < 1 || n > 100000) {
      std::string names;
      for (std::size_t p = 0; p < kNumTelephonyProviders; ++p) {
        names += fmt::format("{}{}", p == 0 ? "" : ", ", to_string(static_cast<TelephonyProvider>(p)));
      }
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--max-calls takes PROVIDER=N (PROVIDER one of {}; N 1 to 100000), got '{}'", names, spec));
    }
    int& limit = limits[static_cast<std::size_t>(*provider)];
    if (limit != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--max-calls names {} twice ('{}')", spec.substr(0, eq), spec));
    }
    limit = n;
  }
  return limits;
}

}  // namespace brisvox::server
