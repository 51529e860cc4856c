#include "server/call_protocol.h"

#include "server/messages.h"

namespace brisvox::server {

void CallProtocol::on_open(WsConnection& c, CallControl& /*call*/, const CallReady& ready) {
  c_ = &c;
  c.send(call_ready_message(c.id(), ready, ctx_.config.limits));
}

void CallProtocol::on_text(std::string message, CallControl& call) {
  const CallMessage m = parse_call_message(message);
  if (!m.ok) {
    ctx_.metrics.count_error("bad_message");
    event(error_message("bad_message", m.error), SendQueue::Kind::kRequired);
    return;
  }
  switch (m.type) {
    case CallMessageType::kSpeak:
      call.speak(m);
      break;
    case CallMessageType::kCancel:
      call.cancel();
      break;
    case CallMessageType::kMark:
      call.mark(m.name);
      break;
    case CallMessageType::kClose:
      call.end(kCloseNormal, "", /*drop_speech=*/false);
      break;
  }
}

void CallProtocol::on_binary(std::span<const std::byte> chunk, bool /*last*/, CallControl& call) { call.audio(chunk); }

void CallProtocol::event(std::string message, SendQueue::Kind kind) { c_->send(std::move(message), kind); }

void CallProtocol::audio(std::uint32_t utterance, std::string bytes) {
  c_->send(SendQueue::Message{std::move(bytes), true, utterance});
}

std::size_t CallProtocol::purge(std::uint32_t first, std::uint32_t last) {
  std::size_t dropped = 0;
  c_->purge(first, last, &dropped);
  return dropped;
}

std::size_t CallProtocol::queued_bytes() const { return c_->queued_bytes(); }

}  // namespace brisvox::server
