// One WebSocket connection of the server, whatever it speaks: the socket and the connection's
// phases, reading, the one bounded send queue, the idle timer, the close handshake, and the
// shutdown (Drainable). A protocol is a WsHandler on top of it: /v1/stream (stream_handler.h) and
// /v1/tts (tts_handler.h).
//
// Threads. Everything runs on the connection's strand, the handler's calls included; an engine
// worker only posts a wake-up to it (EngineWakeup), which reaches the handler's
// on_engine_events(). Inference never runs on a network thread, and a network thread never waits
// for it.
//
// Reading. The socket is read a chunk at a time (WsSettings::read_chunk_bytes), each message
// counted against its kind's limit: a message over it is refused ("message_too_large", 1009) at
// its first chunk, from what its frame header announces, not after it was read at the paced rate
// (issue 13: 2 MiB took 7.7 s). A text message is handed over whole; a binary one chunk by chunk,
// as it arrives. The handler pauses reading (it holds audio the engine has not taken, it paces a
// fast client, it is closing) and resumes it.
//
// Writing, never silent loss and never a stalled read loop:
//   - Outgoing messages wait in one bounded SendQueue: droppable messages are dropped first
//     (counted, and reported through the handler's dropped_report()); a required message that
//     would overflow it closes with 1008 "slow reader". A tag on a message lets the handler purge
//     what a client cancelled before it is written.
//   - A message is written only while the kernel send buffer has room for it (unsent bytes below
//     limits.ws_send_buffer_bytes, half of what Linux reserves for that SO_SNDBUF), one larger than
//     the room in fragments that each fit: a client that does not read must never leave a write
//     pending on a full socket, because Beast answers a ping by writing a pong before it reads on,
//     and that pong would wait behind the pending write: the read loop would stop, and the
//     client's audio or its "cancel" with it.
//   - A client that takes nothing for WsSettings::write_stall_timeout while messages wait is
//     dropped ("slow reader"), where the handler asks for it.
//
// Idle. A client that sends nothing for limits.idle_timeout_s while the server waits for it is
// closed ("idle_timeout", 1008). Time the handler has reading paused or is busy for the client
// does not count (busy() is sampled after each engine wake-up and each message written, so the
// timeout runs from the end of the handler's work, not from the client's last message); pings
// count where the handler says so.
#pragma once

#include <fmt/format.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/engine_wakeup.h"
#include "server/send_queue.h"
#include "server/server_context.h"
#include "server/server_log.h"
#include "server/session_registry.h"

namespace brisvox::server {

// Close codes (RFC 6455 section 7.4.1).
inline constexpr std::uint16_t kCloseNormal = 1000;
inline constexpr std::uint16_t kCloseGoingAway = 1001;
inline constexpr std::uint16_t kCloseUnsupported = 1003;
inline constexpr std::uint16_t kCloseBadData = 1007;
inline constexpr std::uint16_t kClosePolicy = 1008;
inline constexpr std::uint16_t kCloseTooBig = 1009;
inline constexpr std::uint16_t kCloseInternal = 1011;
inline constexpr std::uint16_t kCloseTryLater = 1013;

class WsConnection;

// A kind of message's size limit, and what a client that sends a longer one is told.
struct MessageLimit {
  std::size_t max_bytes = 0;
  std::string refusal;  // the "message_too_large" error's message
};

// What a protocol asks of its connection; WsHandler::settings(), read once.
struct WsSettings {
  std::string_view kind = "stream";  // what its log lines call it: "stream 3 ...", "tts stream 4 ..."
  std::string tag;                   // the client's ?tag=, a field of every log line
  std::size_t read_chunk_bytes = 16 << 10;
  MessageLimit text;
  MessageLimit binary;
  bool pings_are_activity = false;  // pings and pongs reset the idle clock
  // Messages wait this long with no room in the socket: the client is dropped. 0: never (the
  // bounded queue decides).
  std::chrono::seconds write_stall_timeout{0};
  // fail() sends {"type":"error",...} before its close; false for a protocol that has no such
  // message (a telephony provider's): the close and the log line say it.
  bool error_messages = true;
  // The subprotocol the upgrade's answer names (Sec-WebSocket-Protocol); empty: none. Only one the
  // client asked for (the endpoint refuses an upgrade that asks for none of its own).
  std::string subprotocol;
};

// A protocol on a WsConnection. Every call comes on the connection's strand; connection() is
// valid for the handler's whole life (the connection owns its handler).
class WsHandler {
 public:
  virtual ~WsHandler() = default;

  virtual WsSettings settings() const = 0;
  // The handshake is done: count the session, log it, send the protocol's first message.
  virtual void on_open() = 0;
  // A whole text message, at most settings().text.max_bytes.
  virtual void on_text(std::string message) = 0;
  // The next bytes of a binary message (`last`: its end); an empty message is one empty chunk.
  virtual void on_binary(std::span<const std::byte> chunk, bool last) = 0;
  // The engine has events for the handler (EngineWakeup); only while the connection is open.
  virtual void on_engine_events() {}
  // A message was written: the queue has room again. Only while the connection is open.
  virtual void on_sent() {}
  // True while the server is busy for the client (speaking to it): idle time does not count.
  virtual bool busy() const { return false; }
  // A shutdown (SIGTERM): finish what the client asked for, then close(kCloseGoingAway).
  virtual void on_going_away() = 0;
  // The close has begun (the handler's own, a failure's, a slow reader's): nothing more is sent.
  virtual void on_closing() {}
  // The connection has ended, once: release the engine side. `opened`: on_open() ran. `why` is
  // empty after a completed close handshake (close_code() and close_reason() say how).
  virtual void on_closed(std::string_view why, bool opened) = 0;
  // The message that tells the client `num_dropped` droppable messages were not sent; empty: none.
  virtual std::string dropped_report(std::uint64_t /*num_dropped*/) { return {}; }
  // The error event a failure sends before its close (WsSettings::error_messages): brisvox's
  // {"type":"error","code","message"} unless the protocol has its own shape.
  virtual std::string error_report(std::string_view code, const std::string& message);

 protected:
  WsConnection& connection() const { return *connection_; }

 private:
  friend class WsConnection;
  WsConnection* connection_ = nullptr;
};

class WsConnection : public Drainable, public EngineListener, public std::enable_shared_from_this<WsConnection> {
 public:
  // How the connection ended, for what its handler still held: a disconnection (or a normal
  // close), a failure (an error, a slow reader), or the drain deadline.
  enum class Ending { kDisconnected, kFailed, kAborted };

  // `wakeup`: the one the handler's engine side notifies (its listener is this connection from
  // start()). `held`: slots of limits, kept until the connection is destroyed.
  WsConnection(boost::beast::tcp_stream&& socket, ServerContext& ctx, std::unique_ptr<WsHandler> handler,
               std::shared_ptr<EngineWakeup> wakeup, std::vector<std::shared_ptr<void>> held, std::string peer);
  ~WsConnection() override;

  // Completes the WebSocket handshake of `upgrade`, then calls on_open() and starts reading.
  void start(boost::beast::http::request<boost::beast::http::string_body> upgrade);

  void go_away() override;
  void abort() override;
  void on_engine_events() override;

  // --- for the handler, on the strand ---
  std::uint64_t id() const noexcept { return id_; }
  const std::string& peer() const noexcept { return peer_; }
  bool is_open() const noexcept { return phase_ == Phase::kOpen; }

  // Queues a message (dropped unless open). A required message that overflows the queue closes
  // the connection ("slow reader").
  void send(std::string text, SendQueue::Kind kind = SendQueue::Kind::kRequired);
  void send(SendQueue::Message message, SendQueue::Kind kind = SendQueue::Kind::kRequired);
  // Drops queued messages tagged first_tag..last_tag (SendQueue::purge); the one being written is
  // finished. Returns how many were dropped (`bytes_dropped`: their bytes).
  std::size_t purge(std::uint64_t first_tag, std::uint64_t last_tag, std::size_t* bytes_dropped = nullptr);
  bool nothing_to_send() const noexcept { return queue_.empty(); }
  std::size_t queued_bytes() const noexcept { return queue_.bytes(); }

  // Reading goes on until paused; a chunk already being read is still handed over.
  void pause_reading() noexcept { reading_paused_ = true; }
  void resume_reading();

  // Closes with `code` once what is queued is written (open only). The close handshake has
  // limits.close_timeout_ms; a peer that does not answer in time is dropped.
  void close(std::uint16_t code, std::string reason);
  // Sends an error event ({"type":"error","code":..}), then closes with `close_code` and the
  // error's code as reason (open only).
  void fail(std::string_view code, std::uint16_t close_code, const std::string& message);
  std::uint16_t close_code() const noexcept { return close_code_; }
  // The code of the close the peer began (its close frame before ours); 0 when it began none.
  std::uint16_t peer_close_code() const noexcept { return peer_close_code_; }
  const std::string& close_reason() const noexcept { return close_reason_; }
  Ending ending() const noexcept { return ending_; }

  // A log line of this connection: its id and the client's tag as fields (server_log.h).
  template <typename... Args>
  void log(fmt::format_string<Args...> format, Args&&... args) const {
    log_record(fmt::format(format, std::forward<Args>(args)...),
               {{"stream", static_cast<std::int64_t>(id_)}, {"tag", std::string_view(settings_.tag)}});
  }

 private:
  enum class Phase { kHandshake, kOpen, kClosing, kClosed };

  void apply_socket_options();
  void on_accept(boost::beast::error_code ec);
  void read_more();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  void arm_idle_timer();
  void note_busy();  // the handler is busy for the client: that time is not idle
  // Queues the handler's report of the droppable messages not sent since the last one. True if
  // one was queued.
  bool report_dropped();
  void do_write();
  void wait_for_room();
  // Bytes of a message the kernel send buffer takes now without filling up (negative: none).
  std::ptrdiff_t send_room();
  void on_write(boost::beast::error_code ec, std::size_t written);
  bool writing_a_message() const noexcept { return writing_ || front_written_ > 0; }
  void start_close_handshake();
  void drop_connection();
  void finish(std::string_view why);

  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  ServerContext& ctx_;
  const std::uint64_t id_;
  const std::string peer_;
  std::shared_ptr<EngineWakeup> wakeup_;
  std::vector<std::shared_ptr<void>> held_;
  const WsSettings settings_;

  Phase phase_ = Phase::kHandshake;
  Ending ending_ = Ending::kDisconnected;
  bool going_away_ = false;
  std::uint16_t close_code_ = kCloseNormal;
  std::uint16_t peer_close_code_ = 0;
  std::string close_reason_;
  bool close_started_ = false;

  // Reading: one chunk at a time, counted against the message's limit.
  bool reading_ = false;
  bool reading_paused_ = false;
  std::vector<std::byte> read_buf_;
  std::uint64_t message_bytes_ = 0;
  std::string text_buf_;

  // Writing: the front message of the queue, front_written_ bytes of it sent so far.
  SendQueue queue_;
  bool writing_ = false;
  std::size_t front_written_ = 0;
  // Unsent bytes below which a message may be written: limits.ws_send_buffer_bytes, or half the
  // send buffer the kernel granted if that is less (apply_socket_options()).
  std::size_t send_room_bytes_ = 0;
  // The smallest fragment a message larger than the room is written in.
  std::size_t min_fragment_bytes_ = 0;
  // Retries do_write() while the kernel send buffer is full.
  boost::asio::steady_timer write_timer_;
  bool write_timer_armed_ = false;
  std::chrono::milliseconds write_backoff_{0};
  std::chrono::steady_clock::time_point stalled_since_;

  boost::asio::steady_timer idle_timer_;
  std::chrono::steady_clock::time_point last_activity_;
  boost::asio::steady_timer close_timer_;

  // Last: destroyed first, while everything it may use is still there.
  std::unique_ptr<WsHandler> handler_;
};

}  // namespace brisvox::server
