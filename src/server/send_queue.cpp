#include "server/send_queue.h"

namespace brisvox::server {

SendQueue::Result SendQueue::push(std::string message, Kind kind) {
  const std::size_t n = messages_.size() + 1;
  const std::size_t b = bytes_ + message.size();
  if (kind == Kind::kDroppable && (2 * n > max_messages_ || 2 * b > max_bytes_)) {
    ++dropped_total_;
    ++dropped_unreported_;
    return Result::kDropped;
  }
  if (n > max_messages_ || b > max_bytes_) return Result::kOverflow;
  bytes_ = b;
  messages_.push_back(std::move(message));
  return Result::kQueued;
}

void SendQueue::pop() {
  bytes_ -= messages_.front().size();
  messages_.pop_front();
}

void SendQueue::discard(bool keep_front) {
  while (messages_.size() > (keep_front ? 1u : 0u)) {
    bytes_ -= messages_.back().size();
    messages_.pop_back();
  }
}

std::uint64_t SendQueue::take_unreported_drops() noexcept {
  const std::uint64_t n = dropped_unreported_;
  dropped_unreported_ = 0;
  return n;
}

bool SendQueue::has_room_to_report() const noexcept {
  return 4 * messages_.size() <= max_messages_ && 4 * bytes_ <= max_bytes_;
}

}  // namespace brisvox::server
