// `brisvox serve`: the engine behind HTTP and WebSocket endpoints (docs/PROTOCOL.md).
//
//   ServerConfig config;            // host, port, limits, token, origins
//   Server server(config);          // loads the model, binds the port (Error kIo if taken)
//   std::cout << server.url();      // http://127.0.0.1:8700 (the real port when port = 0)
//   server.run();                   // until SIGINT/SIGTERM (or stop()), then drains; returns
//
// Threads: config.io_threads network threads run every connection (each on its own strand);
// the engine's workers run inference; job threads (config.job_threads, at least one per
// --max-uploads slot) decode and feed the uploads' bodies. Shutdown (a signal or stop()): stop accepting, let every open stream deliver its final
// events and close with 1001 "going away", wait for them up to limits.drain_timeout_s, then drop
// whatever is left.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "brisvox/engine/engine.h"
#include "server/server_config.h"

namespace brisvox::server {

struct ServerContext;
class Listener;

class Server {
 public:
  explicit Server(const ServerConfig& config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const noexcept;
  std::string url() const;
  // The AudioSocket port (ServerConfig::audiosocket_port); 0 when there is none.
  int audiosocket_port() const noexcept;

  // Serves until shutdown has completed. Call once.
  void run();
  // Starts the graceful shutdown, as SIGTERM does. Thread-safe.
  void stop();

 private:
  void run_io();
  void wait_for_signal();
  void begin_drain();
  void check_drained();
  void shut_down_now();

  ServerConfig config_;
  // Declaration order is destruction order reversed: the io_context (and with it every session
  // and its engine stream) goes before the engine; the context outlives the sessions.
  std::unique_ptr<Engine> engine_;
  boost::asio::thread_pool jobs_;
  std::unique_ptr<ServerContext> ctx_;
  boost::asio::io_context ioc_;
  // The server's own handlers (signals, the drain timer) run on one strand, whatever the number
  // of io threads.
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer drain_timer_;
  std::chrono::steady_clock::time_point drain_deadline_;
  std::shared_ptr<Listener> listener_;
  std::shared_ptr<Listener> audiosocket_;  // null without an AudioSocket port
  bool aborted_ = false;
};

}  // namespace brisvox::server
