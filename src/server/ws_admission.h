// Whether a WebSocket upgrade is accepted, decided before the upgrade so that a refusal is a
// plain HTTP answer with a JSON body. The checks every endpoint shares come first, in this order:
//   503 shutting_down     the server is draining
//   401, 403              the token, the Origin (check_access)
// (the token is the handler's to check where the endpoint says so: token_in_first_message), then
// the endpoint's own reading of the request (400 for a bad query, ...), the stream limits
// where the endpoint's sessions count as streams (503 too_many_streams: limits.max_streams,
// max_streams_per_client), and the endpoint opening its engine side (503 when the engine is at
// capacity or over its latency budget, ...). Every 503 but the drain's carries Retry-After: 1.
//
// An accepted upgrade comes with its handler, which owns what was opened, and the EngineWakeup
// that the engine side notifies.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/engine_wakeup.h"
#include "server/refusal.h"
#include "server/router.h"
#include "server/telephony_metrics.h"
#include "server/server_context.h"

namespace brisvox::server {

class WsHandler;

// One WebSocket endpoint's part of an upgrade (StreamEndpoint, TtsEndpoint). Used once.
class WsEndpoint {
 public:
  virtual ~WsEndpoint() = default;
  // Whether its sessions count in limits.max_streams and max_streams_per_client.
  virtual bool counts_as_stream() const = 0;
  // True for a provider that cannot put the server's token in its URL or headers (Twilio drops a
  // <Stream> url's query): an upgrade without it is let through and the handler checks the token
  // the provider's first message carries.
  virtual bool token_in_first_message() const { return false; }
  // A telephony provider's endpoint: its calls count in that provider's --max-calls.
  virtual std::optional<TelephonyProvider> telephony_provider() const { return std::nullopt; }
  // Reads the upgrade request (its query); a refusal is answered instead.
  virtual std::optional<Refusal> parse(const Request& upgrade) = 0;
  // Opens the engine side, its on_events being `on_events`, and makes the handler that owns it
  // (its timers on `strand`, the connection's); or the refusal.
  virtual std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                                 std::function<void()> on_events) = 0;
};

struct Admission {
  std::optional<Response> refusal;  // set: answer this and do not upgrade
  std::unique_ptr<WsHandler> handler;
  std::shared_ptr<EngineWakeup> wakeup;  // the one the handler's engine side notifies
  // Slots of the limits the session holds until its connection is destroyed.
  std::vector<std::shared_ptr<void>> held;
};

// `strand`: the connection's; `client`: the peer's address (limits.max_streams_per_client).
Admission admit_upgrade(ServerContext& ctx, const Request& upgrade, WsEndpoint& endpoint,
                        const boost::asio::any_io_executor& strand, const std::string& client);

}  // namespace brisvox::server
