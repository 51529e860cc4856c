// /v1/call's own protocol as a CallFront (call_front.h; docs/PROTOCOL.md, "Calls"): the caller's
// audio as binary messages, speak/cancel/mark/close as JSON text messages; the call's events as
// JSON and its speech as binary messages on the same socket, each piece tagged with its utterance
// so that a barge-in or a cancel takes out what has not been written yet.
#pragma once

#include "server/call_front.h"

namespace brisvox::server {

class CallProtocol final : public CallFront {
 public:
  explicit CallProtocol(ServerContext& ctx) : ctx_(ctx) {}
  void on_open(WsConnection& c, CallControl& call, const CallReady& ready) override;
  void on_text(std::string message, CallControl& call) override;
  void on_binary(std::span<const std::byte> chunk, bool last, CallControl& call) override;
  void event(std::string message, SendQueue::Kind kind) override;
  void audio(std::uint32_t utterance, std::string bytes) override;
  std::size_t purge(std::uint32_t first, std::uint32_t last) override;
  std::size_t queued_bytes() const override;

 private:
  ServerContext& ctx_;
  WsConnection* c_ = nullptr;
};

}  // namespace brisvox::server
