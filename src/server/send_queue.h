// Outgoing text messages of one WebSocket session, waiting for the socket.
//
// Bounded for slow readers: a client that reads less than the server sends must not grow the
// server's memory. Droppable messages (per-frame "vad" probabilities) are refused once half of
// either bound is used, and counted; required messages (speech events, errors) are refused only
// when a bound is reached, and then the session must end ("slow reader"): a speech event is never
// dropped silently. Not thread-safe (one session strand).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

namespace brisvox::server {

class SendQueue {
 public:
  enum class Kind { kDroppable, kRequired };
  enum class Result { kQueued, kDropped, kOverflow };

  SendQueue(std::size_t max_messages, std::size_t max_bytes) : max_messages_(max_messages), max_bytes_(max_bytes) {}

  // kQueued, kDropped (a droppable message over the soft bound: counted in dropped()), or
  // kOverflow (a required message over the hard bound: nothing queued, end the session).
  Result push(std::string message, Kind kind);

  bool empty() const noexcept { return messages_.empty(); }
  std::size_t size() const noexcept { return messages_.size(); }
  std::size_t bytes() const noexcept { return bytes_; }
  // The oldest message; its storage stays valid until pop(), whatever is pushed meanwhile.
  const std::string& front() const { return messages_.front(); }
  void pop();
  // Drops every message but the front one when `keep_front` (it is being written).
  void discard(bool keep_front);

  // Droppable messages refused since the last take_unreported_drops(), and in total.
  std::uint64_t dropped() const noexcept { return dropped_total_; }
  std::uint64_t take_unreported_drops() noexcept;
  // True once the queue has drained to a quarter of its bounds: time to report drops.
  bool has_room_to_report() const noexcept;

 private:
  std::size_t max_messages_;
  std::size_t max_bytes_;
  std::deque<std::string> messages_;
  std::size_t bytes_ = 0;
  std::uint64_t dropped_total_ = 0;
  std::uint64_t dropped_unreported_ = 0;
};

}  // namespace brisvox::server
