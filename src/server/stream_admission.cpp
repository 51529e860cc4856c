#include "server/stream_admission.h"

#include <fmt/format.h>

#include "brisvox/error.h"

namespace brisvox::server {

namespace http = boost::beast::http;

Admission admit_stream(ServerContext& ctx, const Request& upgrade, boost::asio::any_io_executor strand,
                       const std::string& client) {
  Admission a;
  auto refuse = [&](http::status status, std::string_view code, std::string_view message) {
    ctx.metrics.count_error(code);
    a.refusal = error_response(upgrade, status, code, message);
    return std::move(a);
  };
  if (ctx.draining.load()) {
    ctx.metrics.streams_refused.fetch_add(1);
    return refuse(http::status::service_unavailable, "shutting_down", "the server is shutting down");
  }
  if (auto refusal = check_access(ctx, upgrade)) {
    a.refusal = std::move(refusal);
    return a;
  }
  try {
    a.request = parse_audio_request(target_query(to_sv(upgrade.target())), AudioEndpoint::kStream);
    check_stream_models(ctx.engine.config(), a.request.stream);
  } catch (const Error& e) {
    return refuse(http::status::bad_request, "bad_request", e.what());
  }
  if (ctx.config.limits.max_streams_per_client > 0) {
    auto slot = ctx.stream_clients.acquire(client);
    if (slot.refused() == ConnectionLimiter::Refusal::kPerClient) {
      ctx.metrics.streams_refused.fetch_add(1);
      auto res = refuse(http::status::service_unavailable, "too_many_streams",
                        fmt::format("this client address has {} streams open, the limit per client "
                                    "(--max-streams-per-client); close one or try again later",
                                    ctx.config.limits.max_streams_per_client));
      res.refusal->set(http::field::retry_after, "1");
      return res;
    }
    if (slot.held()) a.client_slot = std::make_shared<ConnectionLimiter::Slot>(std::move(slot));
  }
  const int max_streams = ctx.config.limits.max_streams;
  if (ctx.streams_open.fetch_add(1) >= max_streams) {
    ctx.streams_open.fetch_sub(1);
    ctx.metrics.streams_refused.fetch_add(1);
    auto res =
        refuse(http::status::service_unavailable, "too_many_streams",
               fmt::format("the server has {} streams open, its limit (--max-streams); try again later", max_streams));
    res.refusal->set(http::field::retry_after, "1");
    return res;
  }
  a.wakeup = std::make_shared<EngineWakeup>(std::move(strand), ctx.gate);
  StreamConfig config = a.request.stream;
  config.buffer_ms = ctx.config.limits.engine_buffer_ms;
  config.on_events = a.wakeup->callback();
  try {
    a.stream = ctx.engine.open_stream(config);
  } catch (const Error& e) {
    ctx.streams_open.fetch_sub(1);
    a.wakeup.reset();
    if (e.code() == ErrorCode::kOverloaded || e.code() == ErrorCode::kClosed) {
      auto res = refuse(http::status::service_unavailable, to_string(e.code()), e.what());
      res.refusal->set(http::field::retry_after, "1");
      return res;
    }
    return refuse(http::status::bad_request, "bad_request", e.what());
  }
  return a;
}

}  // namespace brisvox::server
