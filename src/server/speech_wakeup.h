// The bridge from an engine worker to a text-to-speech exchange's strand: the engine Speech's
// on_events callback. As StreamWakeup (stream_wakeup.h) does for /v1/stream: notify() runs on a
// worker thread and only posts a wake-up to the strand (at most one outstanding), where the
// listener then polls the speech session; detach() makes a session that outlives its listener
// never touch the network side again.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <mutex>
#include <optional>

#include "server/post_gate.h"

namespace brisvox::server {

// What a wake-up reaches, on its strand.
class SpeechListener {
 public:
  virtual ~SpeechListener() = default;
  virtual void on_speech_events() = 0;
};

class SpeechWakeup : public std::enable_shared_from_this<SpeechWakeup> {
 public:
  SpeechWakeup(boost::asio::any_io_executor strand, std::shared_ptr<PostGate> gate)
      : strand_(std::move(strand)), gate_(std::move(gate)) {}

  void attach(std::weak_ptr<SpeechListener> listener) {  // on the strand, before speaking
    std::lock_guard lock(mu_);
    listener_ = std::move(listener);
  }
  void detach() {  // on the strand, when the listener ends
    std::lock_guard lock(mu_);
    strand_.reset();
    listener_.reset();
  }

  // Engine worker thread. Never blocks for long, never throws.
  void notify() noexcept {
    if (posted_.exchange(true, std::memory_order_acq_rel)) return;  // a wake-up is on its way
    try {
      std::lock_guard lock(mu_);
      if (!strand_ || !gate_->post(*strand_, [self = shared_from_this()] { self->deliver(); })) {
        posted_.store(false, std::memory_order_release);
      }
    } catch (...) {
      posted_.store(false, std::memory_order_release);  // the listener's own timer polls anyway
    }
  }

 private:
  void deliver() {
    posted_.store(false, std::memory_order_release);  // cleared first: later events post again
    std::shared_ptr<SpeechListener> l;
    {
      std::lock_guard lock(mu_);
      l = listener_.lock();
    }
    if (l) l->on_speech_events();
  }

  std::mutex mu_;
  std::optional<boost::asio::any_io_executor> strand_;
  std::shared_ptr<PostGate> gate_;
  std::atomic<bool> posted_{false};
  std::weak_ptr<SpeechListener> listener_;
};

}  // namespace brisvox::server
