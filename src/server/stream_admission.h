// Whether a WebSocket upgrade to /v1/stream is accepted, decided before the upgrade so that a
// refusal is a plain HTTP answer with a JSON body: 503 while shutting down, 401 bad token, 403
// bad origin, 400 bad query, 503 at capacity (limits.max_streams, or the engine over its latency
// budget). An accepted request comes with its engine stream already open.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <optional>

#include "brisvox/engine/engine.h"
#include "server/query_params.h"
#include "server/router.h"
#include "server/server_context.h"
#include "server/engine_wakeup.h"

namespace brisvox::server {

struct Admission {
  std::optional<Response> refusal;  // set: answer this and do not upgrade
  AudioRequest request;
  Stream stream;  // open, its on_events bound to `wakeup`
  std::shared_ptr<EngineWakeup> wakeup;
  std::shared_ptr<void> client_slot;  // the client address's stream slot: the session holds it
};

// On success the caller owns one unit of ctx.streams_open (WsSession releases it).
// `client`: the peer's address, for limits.max_streams_per_client.
Admission admit_stream(ServerContext& ctx, const Request& upgrade, boost::asio::any_io_executor strand,
                       const std::string& client);

}  // namespace brisvox::server
