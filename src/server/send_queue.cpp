#include "server/send_queue.h"

#include <utility>

namespace brisvox::server {

SendQueue::Result SendQueue::push(Message message, Kind kind) {
  const std::size_t n = messages_.size() + 1;
  const std::size_t b = bytes_ + message.data.size();
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
  bytes_ -= messages_.front().data.size();
  messages_.pop_front();
}

void SendQueue::discard(bool keep_front) {
  while (messages_.size() > (keep_front ? 1u : 0u)) {
    bytes_ -= messages_.back().data.size();
    messages_.pop_back();
  }
}

std::size_t SendQueue::purge(std::uint64_t first_tag, std::uint64_t last_tag, bool keep_front,
                             std::size_t* bytes_dropped) {
  std::size_t content_dropped = 0;
  std::size_t kept = 0;
  // What was before the queue was sent, so a front message sent with it stays.
  bool previous_kept = true;
  for (std::size_t i = 0; i < messages_.size(); ++i) {
    Message& m = messages_[i];
    const bool tagged = m.tag != 0 && m.tag >= first_tag && m.tag <= last_tag;
    const bool keep = m.with_previous ? previous_kept : (i == 0 && keep_front) || !tagged;
    previous_kept = keep;
    if (!keep) {
      bytes_ -= m.data.size();
      content_dropped += m.content_bytes != 0 ? m.content_bytes : m.data.size();
      continue;
    }
    // The front is never moved: its storage may be being written.
    if (kept != i) messages_[kept] = std::move(m);
    ++kept;
  }
  const std::size_t dropped = messages_.size() - kept;
  messages_.resize(kept);
  if (bytes_dropped != nullptr) *bytes_dropped = content_dropped;
  return dropped;
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
