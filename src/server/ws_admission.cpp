#include "server/ws_admission.h"

#include <fmt/format.h>

#include "server/ws_connection.h"

namespace brisvox::server {

namespace http = boost::beast::http;

namespace {

// A slot under a limit: one unit of `open` (ctx.streams_open, a provider's ctx.calls_open), given
// back when the last holder goes.
std::shared_ptr<void> held_unit(std::atomic<int>& open) {
  return std::shared_ptr<void>(&open, [](std::atomic<int>* o) { o->fetch_sub(1); });
}

}  // namespace

Admission admit_upgrade(ServerContext& ctx, const Request& upgrade, WsEndpoint& endpoint,
                        const boost::asio::any_io_executor& strand, const std::string& client) {
  Admission a;
  auto refuse = [&](const Refusal& r) {
    ctx.metrics.count_error(r.code);
    a.refusal = error_response(upgrade, static_cast<http::status>(r.status), r.code, r.message);
    if (r.status == 503) a.refusal->set(http::field::retry_after, "1");
    a.held.clear();
    return std::move(a);
  };
  const bool stream = endpoint.counts_as_stream();
  if (ctx.draining.load()) {
    if (stream) ctx.metrics.streams_refused.fetch_add(1);
    ctx.metrics.count_error("shutting_down");
    a.refusal =
        error_response(upgrade, http::status::service_unavailable, "shutting_down", "the server is shutting down");
    return a;
  }
  if (auto refusal = check_access(ctx, upgrade, endpoint.token_in_first_message())) {
    a.refusal = std::move(refusal);
    return a;
  }
  if (auto refusal = endpoint.parse(upgrade)) return refuse(*refusal);
  if (stream) {
    const ServerLimits& limits = ctx.config.limits;
    if (limits.max_streams_per_client > 0) {
      auto slot = ctx.stream_clients.acquire(client);
      if (slot.refused() == ConnectionLimiter::Refusal::kPerClient) {
        ctx.metrics.streams_refused.fetch_add(1);
        return refuse({503, "too_many_streams",
                       fmt::format("this client address has {} streams open, the limit per client "
                                   "(--max-streams-per-client); close one or try again later",
                                   limits.max_streams_per_client)});
      }
      if (slot.held()) a.held.push_back(std::make_shared<ConnectionLimiter::Slot>(std::move(slot)));
    }
    if (ctx.streams_open.fetch_add(1) >= limits.max_streams) {
      ctx.streams_open.fetch_sub(1);
      ctx.metrics.streams_refused.fetch_add(1);
      return refuse({503, "too_many_streams",
                     fmt::format("the server has {} streams open, its limit (--max-streams); try again later",
                                 limits.max_streams)});
    }
    a.held.push_back(held_unit(ctx.streams_open));
  }
  if (const std::optional<TelephonyProvider> provider = endpoint.telephony_provider()) {
    const auto p = static_cast<std::size_t>(*provider);
    if (const int limit = ctx.max_calls[p]; limit > 0) {
      if (ctx.calls_open[p].fetch_add(1) >= limit) {
        ctx.calls_open[p].fetch_sub(1);
        ctx.telephony_metrics[*provider].count(TelephonyError::kCallLimit);
        return refuse({503, "too_many_calls",
                       fmt::format("the server has {} {} calls open, its limit (--max-calls {}={}); try again later",
                                   limit, to_string(*provider), to_string(*provider), limit)});
      }
      a.held.push_back(held_unit(ctx.calls_open[p]));
    }
  }
  a.wakeup = std::make_shared<EngineWakeup>(strand, ctx.gate);
  auto opened = endpoint.open(strand, a.wakeup->callback());
  if (const Refusal* refusal = std::get_if<Refusal>(&opened)) {
    a.wakeup.reset();
    return refuse(*refusal);
  }
  a.handler = std::move(std::get<std::unique_ptr<WsHandler>>(opened));
  return a;
}

}  // namespace brisvox::server
