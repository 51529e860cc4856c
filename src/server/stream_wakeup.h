// The bridge from an engine worker to a session's strand: the engine Stream's on_events callback.
//
// notify() runs on a worker thread, so it only posts a wake-up to the session's strand (at most
// one outstanding: the flag coalesces a burst of frames into one post); the session then polls
// its events there. The strand's executor is dropped by detach() when the session ends, so that
// an engine stream outliving its session never touches the network side again.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <mutex>
#include <optional>

#include "server/post_gate.h"

namespace brisvox::server {

class WsSession;

class StreamWakeup : public std::enable_shared_from_this<StreamWakeup> {
 public:
  StreamWakeup(boost::asio::any_io_executor strand, std::shared_ptr<PostGate> gate)
      : strand_(std::move(strand)), gate_(std::move(gate)) {}

  // On the strand, before any audio is pushed.
  void attach(std::weak_ptr<WsSession> session) { session_ = std::move(session); }
  // On the strand, when the session ends (or from its destructor).
  void detach() {
    std::lock_guard lock(mu_);
    strand_.reset();
  }

  // Engine worker thread. Never blocks for long, never throws.
  void notify() noexcept;

 private:
  void deliver();  // on the strand

  std::mutex mu_;
  std::optional<boost::asio::any_io_executor> strand_;
  std::shared_ptr<PostGate> gate_;
  std::atomic<bool> posted_{false};
  std::weak_ptr<WsSession> session_;  // strand only
};

}  // namespace brisvox::server
