// GET /v1/realtime?intent=transcription on a WsConnection: OpenAI's Realtime API transcription
// session (docs/OPENAI.md), translated onto an engine stream (vad, then stt when the session asks
// for transcripts). The protocol's messages are realtime_messages.h's.
//
// Items. OpenAI's unit of transcription is an item: with turn_detection server_vad, each speech
// segment brisvox's VAD finds is one (speech_started at its start, speech_stopped and committed at
// its end, its transcript's delta and completed when Whisper has it); with semantic_vad each turn
// is one, from its first speech to Smart Turn's end of turn (kTurnEnd), its segments' transcripts
// joined; with turn_detection null the client's commit closes one, joined the same way. Transcripts
// come in segment order (the stt stage's), so each is matched to the oldest segment waiting.
//
// Ends. A commit, a clear, a session.update that changes the pipeline, and a close all end the
// current engine stream the same way: flush() (reading paused), its last events (the final
// segment, every transcript still due), kEndOfStream; then the action, and a fresh stream goes on
// along the same timeline (audio_start_ms/audio_end_ms count all audio of the session). A message
// that arrives while an end is pending waits for it. Flow control is the AudioIngress's, as on
// /v1/stream (audio_ingress.h): audio is never dropped silently.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "brisvox/engine/engine.h"
#include "server/audio_ingress.h"
#include "server/realtime_messages.h"
#include "server/server_context.h"
#include "server/ws_admission.h"
#include "server/ws_connection.h"

namespace brisvox::server {

// The engine stream a session asks for, in Whisper's `window`, with partial transcripts every
// `partial_ms` (0: none) for a model named other than whisper-1; Error(kInvalidArgument) for a
// transcription model the server does not have, a language the model does not take, or a prompt it
// has no room for (the message says which).
StreamConfig realtime_stream_config(const EngineConfig& engine, const RealtimeSession& session, int partial_ms = 0,
                                    WhisperWindow window = WhisperWindow::kFull);

class RealtimeHandler final : public WsHandler {
 public:
  RealtimeHandler(ServerContext& ctx, const boost::asio::any_io_executor& strand, std::string tag,
                  RealtimeSession session, Stream stream, std::function<void()> on_events);
  ~RealtimeHandler() override;

  WsSettings settings() const override;
  void on_open() override;
  void on_text(std::string message) override;
  void on_binary(std::span<const std::byte> chunk, bool last) override;
  void on_engine_events() override;
  // While items wait for their transcripts the server is working for the client: not idle.
  bool busy() const override { return !items_.empty() || end_ != End::kNone || has_backlog(); }
  void on_going_away() override;
  void on_closing() override;
  void on_closed(std::string_view why, bool opened) override;
  std::string error_report(std::string_view code, const std::string& message) override;

 private:
  enum class End { kNone, kCommit, kClear, kUpdate, kClose };

  struct Item {
    std::string id;
    int segments_due = 0;   // segments whose transcript has not come yet
    bool closed = false;    // no segment will be added
    bool turn_over = false; // semantic_vad: Smart Turn ended it (its last segment may still be open)
    bool discarded = false; // cleared before it was committed: nothing is sent for it
    bool failed = false;
    std::string error_code;
    std::string error_message;
    std::string text;
    std::string sent;       // the deltas sent for it so far, concatenated
    double seconds = 0;     // its segments' audio
  };
  struct Segment {
    double start_s = 0;     // stream times, as its kSpeechEnd and its transcript carry them
    double end_s = 0;
    std::string item_id;
  };

  void handle_client(const std::string& text);
  void commit(const std::string& client_event_id);
  void clear();
  void update(const RealtimeSession& next, const std::string& client_event_id);
  void handle_event(const Event& e);
  void on_segment_end(const Event& e);
  void on_turn_end(const Event& e);
  void on_segment_result(const Event& e, const std::optional<Transcript>& transcript);
  // A partial transcript of the open segment: its item's text so far, agreed, as a delta.
  void on_partial(const std::optional<Transcript>& partial);
  void complete_items();
  void on_end_of_stream();
  void finish_end();  // the end's action, and the stream that goes on
  // Gives the engine what it takes (held audio, then the backlog), then handles waiting client
  // events, then flushes for an end or reads on.
  void advance();
  void arm_retry(std::chrono::microseconds delay);

  Item& new_item();
  Item* find_item(const std::string& id);
  Item& uncommitted_item();  // turn_detection null: the item the buffer's segments go to
  bool speech_open() const { return !speaking_id_.empty(); }
  std::string next_event_id();
  void send(std::string message);
  void send_error(std::string_view type, const RealtimeProblem& problem, const std::string& client_event_id = {});
  double timeline_s(double stream_s) const;
  long long timeline_ms(double stream_s) const;
  double buffer_ms() const;  // audio in the input buffer (since the last item ended)

  ServerContext& ctx_;
  const std::string tag_;
  RealtimeSession session_;
  Stream stream_;
  std::function<void()> on_events_;
  std::unique_ptr<AudioIngress> ingress_;

  End end_ = End::kNone;
  bool flush_called_ = false;
  std::optional<RealtimeSession> next_session_;  // kUpdate: applied with next_stream_ at the end
  Stream next_stream_;
  std::string commit_item_id_;  // kCommit: the item the commit closes at the end
  std::deque<std::string> deferred_;  // client messages that came while an end or a backlog was pending
  // An append's audio not yet given to the ingress (reading is paused until it is).
  std::string backlog_;
  std::size_t backlog_pos_ = 0;
  bool has_backlog() const { return backlog_pos_ < backlog_.size(); }
  std::uint16_t close_code_ = kCloseNormal;
  std::string close_reason_;

  // Timeline: the current engine stream starts at offset_s_; stream_samples_ input samples were
  // given to it so far; buffer_start_samples_ is where the input buffer begins in them.
  double offset_s_ = 0;
  std::uint64_t stream_samples_ = 0;
  std::uint64_t buffer_start_samples_ = 0;

  std::deque<Item> items_;        // not yet completed, oldest first
  std::deque<Segment> segments_;  // ended, transcript due, oldest first
  std::string speaking_id_;       // the item of the speech (server_vad) or turn (semantic_vad) in progress
  std::string segment_item_id_;   // the item the VAD segment in progress belongs to
  std::string uncommitted_id_;    // turn_detection null: the item the buffer goes to
  std::string last_committed_id_;
  std::uint64_t num_items_ = 0;
  std::uint64_t num_events_ = 0;
  std::uint64_t num_completed_ = 0;

  boost::asio::steady_timer retry_timer_;
  bool retry_armed_ = false;
};

// /v1/realtime's part of an upgrade: ?intent=transcription, then the engine stream of the default
// session. Its sessions count in limits.max_streams and max_streams_per_client.
class RealtimeEndpoint final : public WsEndpoint {
 public:
  explicit RealtimeEndpoint(ServerContext& ctx) : ctx_(ctx) {}
  bool counts_as_stream() const override { return true; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  std::string tag_;
  RealtimeSession session_;
};

}  // namespace brisvox::server
