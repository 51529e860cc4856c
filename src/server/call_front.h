// The protocol side of a call: what a caller's connection speaks, apart from the call machinery
// (CallHandler, call_handler.h) that drives the engine Call on the same WsConnection. /v1/call is
// one front (call_protocol.h: brisvox's own JSON and binary audio); a telephony provider's media
// stream is another (twilio_front.h: the provider's messages on the socket, the call's events on a
// WebSocket to the application). A front translates: it decides nothing the engine decides.
//
// Everything runs on the connection's strand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "server/call_params.h"
#include "server/messages.h"
#include "server/send_queue.h"
#include "server/ws_connection.h"

namespace brisvox::server {

struct CallReady;

// What a front asks of its call (CallHandler).
class CallControl {
 public:
  // A speak or mark (a refusal comes back through the front's event()).
  virtual void speak(const CallMessage& m) = 0;
  virtual void mark(const std::string& name) = 0;
  // Stops every speak so far: each ends with "interrupted" (reason "cancel").
  virtual void cancel() = 0;
  // The caller's next audio, in the call's encoding. False: the call failed (the connection is
  // closing).
  virtual bool audio(std::span<const std::byte> bytes) = 0;
  // Ends the call: nothing more is read, the caller's final events are sent, then (unless
  // `drop_speech`) what is being spoken is finished, then the connection closes with `code`.
  virtual void end(std::uint16_t code, std::string reason, bool drop_speech) = 0;

 protected:
  ~CallControl() = default;
};

class CallFront {
 public:
  virtual ~CallFront() = default;

  // What log lines call the connection ("call 3 open ...").
  virtual std::string_view kind() const { return "call"; }
  // The protocol's part of the connection's settings (message limits); `s` holds the call's.
  virtual void adjust(WsSettings& /*s*/) const {}
  // The handshake is done (`c` stays valid until on_closed()).
  virtual void on_open(WsConnection& c, CallControl& call, const CallReady& ready) = 0;
  virtual void on_text(std::string message, CallControl& call) = 0;
  // A binary message, a chunk at a time (`last`: its final chunk; an empty message is one empty last
  // chunk).
  virtual void on_binary(std::span<const std::byte> chunk, bool last, CallControl& call) = 0;

  // --- what the call says ----------------------------------------------------------------------
  // One of the call's JSON events (docs/PROTOCOL.md "Calls": speech_start, transcript,
  // speak_started, errors, ...).
  virtual void event(std::string message, SendQueue::Kind kind = SendQueue::Kind::kRequired) = 0;
  // The event just sent was a turn_end or a transcript: what an application answers with a speak
  // (a telephony front times that answer, its application's round trip).
  virtual void answerable() {}
  // A piece of an utterance's speech, in the call's encoding and rate.
  virtual void audio(std::uint32_t utterance, std::string bytes) = 0;
  // Drops the speech of utterances first..last not yet written; returns its bytes of audio.
  virtual std::size_t purge(std::uint32_t first, std::uint32_t last) = 0;
  // A barge-in or a cancel stopped the call's speech (the provider's "clear").
  virtual void stopped() {}
  // All of an utterance's audio was handed out: its speak_done (the speak's id as JSON and its
  // duration); a mark's time has come: its mark event. A front whose provider says when audio has
  // played sends them then.
  virtual void speak_done(std::uint32_t /*utterance*/, std::string_view id_json, double duration_ms) {
    event(speak_done_message(id_json, duration_ms));
  }
  virtual void mark_reached(std::uint32_t /*utterance*/, std::string message) { event(std::move(message)); }
  // An utterance was stopped (its "interrupted"): a speak_done held for it is not sent.
  virtual void interrupted(std::uint32_t /*utterance*/, std::string message) { event(std::move(message)); }
  // Bytes the front has waiting to be written: the call's speech is held while they are many.
  virtual std::size_t queued_bytes() const = 0;
  // True while the front still has something to finish before a close (a mark to be echoed).
  virtual bool busy() const { return false; }
  // Whether the connection is still read while the call closes (the provider's mark echoes and
  // stop come on it); its text messages then still reach on_text() (audio is ignored).
  virtual bool reads_while_closing() const { return false; }
  // The call has finished what it had to say and closes the connection now: a last message may
  // still be sent (it is written before the close).
  virtual void closing() {}
  // The connection has ended (`why` as WsHandler::on_closed; `opened`: on_open() ran).
  virtual void on_closed(std::string_view /*why*/, bool /*opened*/) {}
};

}  // namespace brisvox::server
