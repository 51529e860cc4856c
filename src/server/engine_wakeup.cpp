#include "server/engine_wakeup.h"

namespace brisvox::server {

void EngineWakeup::detach() {
  std::lock_guard lock(mu_);
  strand_.reset();
}

void EngineWakeup::notify() noexcept {
  if (posted_.exchange(true, std::memory_order_acq_rel)) return;  // a wake-up is already on its way
  try {
    std::lock_guard lock(mu_);
    if (!strand_ || !gate_->post(*strand_, [self = shared_from_this()] { self->deliver(); })) {
      posted_.store(false, std::memory_order_release);
    }
  } catch (...) {
    // Out of memory for the handler: the listener's own timers poll anyway.
    posted_.store(false, std::memory_order_release);
  }
}

void EngineWakeup::deliver() {
  // Cleared before polling: events that arrive from now on post again.
  posted_.store(false, std::memory_order_release);
  if (auto listener = listener_.lock()) listener->on_engine_events();
}

}  // namespace brisvox::server
