// Outgoing messages of one WebSocket connection, waiting for the socket.
//
// Bounded for slow readers: a client that reads less than the server sends must not grow the
// server's memory. Droppable messages (per-frame "vad" probabilities) are refused once half of
// either bound is used, and counted; required messages (speech events, audio, errors) are refused
// only when a bound is reached, and then the connection must end ("slow reader"): a required
// message is never dropped silently.
//
// A message may carry a tag (an utterance id, say), so that what a client cancelled can be taken
// out before it is sent (purge()); a message sent right after another as one unit (the PCM that
// follows its "audio" header) says so, and goes or stays with it. Not thread-safe (one strand).
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

  struct Message {
    std::string data;
    bool binary = false;
    std::uint64_t tag = 0;       // what purge() selects by; 0: none (never purged)
    bool with_previous = false;  // one unit with the message before it: purged or kept with it
    // The bytes purge() reports for it; 0: its data's size. Audio inside a text message (Twilio's
    // base64 media) reports the audio's bytes.
    std::size_t content_bytes = 0;
  };

  SendQueue(std::size_t max_messages, std::size_t max_bytes) : max_messages_(max_messages), max_bytes_(max_bytes) {}

  // kQueued, kDropped (a droppable message over the soft bound: counted in dropped()), or
  // kOverflow (a required message over the hard bound: nothing queued, end the connection).
  Result push(Message message, Kind kind);
  Result push(std::string text, Kind kind) { return push(Message{std::move(text)}, kind); }

  bool empty() const noexcept { return messages_.empty(); }
  std::size_t size() const noexcept { return messages_.size(); }
  std::size_t bytes() const noexcept { return bytes_; }
  // The oldest message; its storage stays valid until pop(), whatever is pushed or purged meanwhile
  // (purge() and discard() keep it when told it is being written).
  const Message& front() const { return messages_.front(); }
  void pop();
  // Drops every message but the front one when `keep_front` (it is being written).
  void discard(bool keep_front);
  // Drops the messages tagged first_tag..last_tag (and those sent with them), except the front one
  // when `keep_front` and what is sent with it. Returns how many were dropped; `bytes_dropped`, when
  // given, gets their bytes (their content_bytes where set).
  std::size_t purge(std::uint64_t first_tag, std::uint64_t last_tag, bool keep_front,
                    std::size_t* bytes_dropped = nullptr);

  // Droppable messages refused since the last take_unreported_drops(), and in total.
  std::uint64_t dropped() const noexcept { return dropped_total_; }
  std::uint64_t take_unreported_drops() noexcept;
  // True once the queue has drained to a quarter of its bounds: time to report drops.
  bool has_room_to_report() const noexcept;

 private:
  std::size_t max_messages_;
  std::size_t max_bytes_;
  std::deque<Message> messages_;
  std::size_t bytes_ = 0;
  std::uint64_t dropped_total_ = 0;
  std::uint64_t dropped_unreported_ = 0;
};

}  // namespace brisvox::server
