// The bridge from an engine worker to a strand of the server: the on_events callback of an engine
// Stream or Speech (StreamConfig::on_events, SpeechConfig::on_events).
//
// notify() runs on a worker thread, so it only posts a wake-up to the strand (at most one
// outstanding: the flag coalesces a burst of events into one post, and a listener that owns a
// Stream and a Speech gives both the same callback); the listener then polls what it owns there.
// detach() drops the strand when the listener ends, so that an engine stream or speech session
// outliving it never touches the network side again; the PostGate stops every post once the
// server's io_context is going away.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "server/post_gate.h"

namespace brisvox::server {

// What a wake-up reaches, on its strand: a WebSocket connection (whose handler polls its engine
// side), a POST /v1/tts exchange.
class EngineListener {
 public:
  virtual ~EngineListener() = default;
  virtual void on_engine_events() = 0;
};

class EngineWakeup : public std::enable_shared_from_this<EngineWakeup> {
 public:
  EngineWakeup(boost::asio::any_io_executor strand, std::shared_ptr<PostGate> gate)
      : strand_(std::move(strand)), gate_(std::move(gate)) {}

  // The engine's on_events callback: notify(). It keeps the wake-up alive, not the listener.
  std::function<void()> callback() {
    return [self = shared_from_this()] { self->notify(); };
  }

  // On the strand, before the engine side can have events for the listener.
  void attach(std::weak_ptr<EngineListener> listener) { listener_ = std::move(listener); }
  // On the strand, when the listener ends (or from its destructor).
  void detach();

  // Engine worker thread. Never blocks for long, never throws.
  void notify() noexcept;

 private:
  void deliver();  // on the strand

  std::mutex mu_;  // guards strand_
  std::optional<boost::asio::any_io_executor> strand_;
  std::shared_ptr<PostGate> gate_;
  std::atomic<bool> posted_{false};
  std::weak_ptr<EngineListener> listener_;  // strand only
};

}  // namespace brisvox::server
