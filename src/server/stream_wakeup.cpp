#include "server/stream_wakeup.h"

#include "server/ws_session.h"

namespace brisvox::server {

void StreamWakeup::notify() noexcept {
  if (posted_.exchange(true, std::memory_order_acq_rel)) return;  // a wake-up is already on its way
  try {
    std::lock_guard lock(mu_);
    if (!strand_ || !gate_->post(*strand_, [self = shared_from_this()] { self->deliver(); })) {
      posted_.store(false, std::memory_order_release);
    }
  } catch (...) {
    // Out of memory for the handler: the session's retry timer polls the events anyway.
    posted_.store(false, std::memory_order_release);
  }
}

void StreamWakeup::deliver() {
  // Cleared before polling: events that arrive from now on post again.
  posted_.store(false, std::memory_order_release);
  if (auto session = session_.lock()) session->on_engine_events();
}

}  // namespace brisvox::server
