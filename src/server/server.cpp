#include "server/server.h"

#include <boost/asio/post.hpp>
#include <algorithm>
#include <csignal>
#include <thread>
#include <vector>

#include "brisvox/plural.h"
#include "brisvox/runtime/runtime_info.h"
#include "server/audiosocket_relay.h"
#include "server/http_session.h"
#include "server/listener.h"
#include "server/server_context.h"
#include "server/server_log.h"

namespace brisvox::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr auto kDrainPoll = std::chrono::milliseconds(20);

EngineConfig engine_config_for(const ServerConfig& config) {
  EngineConfig ec = config.engine;
  // A flush or a reset opens the session's next engine stream before the worker has released the
  // previous one, and POST /v1/vad requests take streams too: room for both beyond max_streams.
  ec.max_streams = std::max(ec.max_streams, 2 * config.limits.max_streams + config.job_threads);
  return ec;
}

// Descriptors kept free besides connections and streams: the listener, epoll, the log, model files,
// ONNX Runtime's threads' and the accept of a connection that is then refused.
constexpr long long kReservedFds = 64;

// Raises the soft open-file limit to the hard one (1024 soft is common, and 1100 idle connections
// then lock out every new client), then lowers limits.max_connections so that the connections, the
// streams and a reserve fit under it: past the cap a client gets a 503, never an accept failure.
ServerConfig fit_open_file_limit(ServerConfig config) {
  set_log_timestamps(config.log_timestamps);  // before the first line this server logs
  set_log_format(config.log_format);
  if (config.log_format == LogFormat::kJson) route_all_output_through_log();
  ServerLimits& l = config.limits;
  // Every upload holding a slot runs at once, each on its own job thread: the engine's batching
  // shares the CPU between their streams, so a short upload is answered while long ones go on,
  // instead of waiting behind them (issue 35: two slow uploads held both of 2 job threads for 54 s
  // and a 0.25 s request waited 53 s). The threads only decode and wait; memory stays a few blocks
  // per upload.
  config.job_threads = std::clamp(std::max(config.job_threads, l.max_uploads), 1, 256);
  if (const long limit = raise_open_file_limit(); limit >= 0) {
    // Streams first: each holds a descriptor, and at least 16 connections must fit beside them.
    const long long stream_room = static_cast<long long>(limit) - kReservedFds - 16;
    if (l.max_streams > stream_room) {
      const int fit = static_cast<int>(std::max<long long>(1, stream_room));
      log_server("open-file limit {}: --max-streams lowered from {} to {}", limit, l.max_streams, fit);
      l.max_streams = fit;
    }
    const long long room = static_cast<long long>(limit) - kReservedFds - l.max_streams;
    const int fit = static_cast<int>(std::clamp<long long>(room, 16, 1000000));
    if (l.max_connections > fit) {
      log_server("open-file limit {}: --max-connections lowered from {} to {} (room for --max-streams {})", limit,
                 l.max_connections, fit, l.max_streams);
      l.max_connections = fit;
    }
  }
  // One address may not hold every connection (issue 35 D7: with --max-connections 16 and the
  // default 256 per client, 16 idle connections from one address locked everyone out).
  if (l.max_connections_per_client > l.max_connections) {
    const int share = std::max(1, l.max_connections / 4);
    log_server("--max-connections-per-client {} is above --max-connections {}: lowered to {} (a quarter), so that "
               "one address cannot take every connection",
               l.max_connections_per_client, l.max_connections, share);
    l.max_connections_per_client = share;
  }
  return config;
}

}  // namespace

Server::Server(const ServerConfig& config)
    : config_((config.validate(), fit_open_file_limit(config))),
      engine_(std::make_unique<Engine>(engine_config_for(config_))),
      jobs_(static_cast<std::size_t>(config_.job_threads)),
      ctx_(std::make_unique<ServerContext>(config_, *engine_, jobs_)),
      ioc_(config_.io_threads),
      strand_(net::make_strand(ioc_)),
      signals_(strand_, SIGINT, SIGTERM),
      drain_timer_(strand_) {
  listener_ = std::make_shared<Listener>(ioc_, config_.host, config_.port, "--host", [ctx = ctx_.get()](tcp::socket s) {
    // Refused (too many connections in all or from this address): the session answers 503 and
    // closes, holding no slot.
    boost::system::error_code ec;
    const auto ep = s.remote_endpoint(ec);
    auto slot = ctx->connections.acquire(ec ? std::string("?") : ep.address().to_string());
    std::make_shared<HttpSession>(std::move(s), *ctx, std::move(slot))->run();
  });
  if (config_.audiosocket_port >= 0) {
    // Each AudioSocket connection goes to the server's own endpoint, over loopback when the server
    // listens on every address.
    tcp::endpoint server = listener_->local_endpoint();
    if (server.address().is_unspecified()) {
      server.address(server.address().is_v6() ? net::ip::address(net::ip::address_v6::loopback())
                                              : net::ip::address(net::ip::address_v4::loopback()));
    }
    audiosocket_ = std::make_shared<Listener>(ioc_, config_.audiosocket_host, config_.audiosocket_port,
                                              "--audiosocket-host", [server, token = config_.token](tcp::socket s) {
                                                std::make_shared<AudioSocketRelay>(std::move(s), server, token)->start();
                                              });
  }
}

Server::~Server() {
  ioc_.stop();
  ctx_->aborting.store(true);
  jobs_.join();
  ctx_->gate->close();
}

int Server::port() const noexcept { return listener_->port(); }
std::string Server::url() const { return listener_->url(); }
int Server::audiosocket_port() const noexcept { return audiosocket_ ? audiosocket_->port() : 0; }

void Server::run() {
  wait_for_signal();
  listener_->start();
  if (audiosocket_) audiosocket_->start();
  std::vector<std::thread> threads;
  for (int i = 1; i < config_.io_threads; ++i) threads.emplace_back([this] { run_io(); });
  run_io();
  for (auto& t : threads) t.join();
  // Every connection handler has returned. Jobs finish (or give up), then no engine worker may
  // post to the io_context any more; its destruction (with the Server) closes what is left.
  ctx_->aborting.store(true);
  jobs_.join();
  ctx_->gate->close();
}

void Server::run_io() {
  // A handler that throws (out of memory, a bug) costs its connection, not the server.
  while (true) {
    try {
      ioc_.run();
      return;
    } catch (const std::exception& e) {
      log_server("internal error in a connection handler: {}", e.what());
    }
  }
}

void Server::stop() {
  net::post(strand_, [this] { begin_drain(); });
}

void Server::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal_number) {
    if (ec) return;
    log_server("{} received", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
    begin_drain();
    wait_for_signal();  // a second signal stops at once
  });
}

void Server::begin_drain() {
  if (ctx_->draining.exchange(true)) {
    log_server("stopping now");
    shut_down_now();
    return;
  }
  listener_->stop();
  if (audiosocket_) audiosocket_->stop();
  const auto sessions = ctx_->sessions.snapshot();
  log_server("draining: {}, {}, up to {} s", count_of(sessions.size(), "stream"),
             count_of(ctx_->jobs_in_flight.load(), "request"),
             config_.limits.drain_timeout_s);
  for (const auto& s : sessions) s->go_away();
  drain_deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(config_.limits.drain_timeout_s);
  check_drained();
}

void Server::check_drained() {
  if (ctx_->sessions.size() == 0 && ctx_->jobs_in_flight.load() == 0) {
    log_server("drained, exiting");
    ioc_.stop();
    return;
  }
  if (std::chrono::steady_clock::now() >= drain_deadline_) {
    log_server("drain timeout: dropping {}, {}", count_of(ctx_->sessions.size(), "stream"),
               count_of(ctx_->jobs_in_flight.load(), "request"));
    shut_down_now();
    return;
  }
  drain_timer_.expires_after(kDrainPoll);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) check_drained();
  });
}

void Server::shut_down_now() {
  if (aborted_) {
    ioc_.stop();
    return;
  }
  aborted_ = true;
  ctx_->aborting.store(true);
  for (const auto& s : ctx_->sessions.snapshot()) s->abort();
  // Give the aborts a moment to run on their strands, then stop.
  drain_timer_.expires_after(std::chrono::milliseconds(100));
  drain_timer_.async_wait([this](const boost::system::error_code&) { ioc_.stop(); });
}

}  // namespace brisvox::server
