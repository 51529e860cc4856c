// A telephony provider's bidirectional media stream as a call's front (call_front.h;
// docs/TELEPHONY.md): the one mechanism behind /v1/telephony/twilio (twilio_front.h),
// /v1/telephony/telnyx (telnyx_front.h), /v1/telephony/vonage (vonage_front.h), asterisk_front.h,
// jambonz_front.h and freeswitch_front.h. What differs
// between providers is their spelling, a StreamDialect: how a message is read (into
// stream_messages.h's shape), which media format is taken, how media, mark and clear are written
// back, whether the audio travels in binary frames, whether marks are echoed. Everything else is
// this one piece.
//
// From the provider: connected, then start (the stream's and call's ids, custom parameters, the
// media format, which must be the one the dialect takes), then media (base64 audio of the caller's
// track; another track is not the caller and is ignored), dtmf, mark (the echo of one of ours),
// stop; an error the provider reports is logged. To the provider: only media (the call's speech),
// mark and clear.
//
// The application (serve --call-app; the one its "app" parameter names, where several are given)
// gets the call on a WebSocket of its own (call_app_link.h):
// call_start when the provider's start arrives, then the call's events as /v1/call sends them,
// dtmf, and call_end; it sends speak, cancel, mark and hangup. Playback truth: after all of a
// reply's audio brisvox sends a mark, and the reply's speak_done goes to the application when the
// provider echoes it (its audio has played); an application's mark likewise. A barge-in or a cancel
// sends clear; the provider then echoes the marks of the audio it dropped, and a reply whose mark
// comes back so ends with "interrupted", not speak_done.
//
// Errors end that call only, with a log line that says why and a count in
// brisvox_telephony_errors_total: a message that is not the provider's (not JSON, bad base64, a
// bad field, too large, binary), one out of order (media before start, a second start), a media
// format brisvox does not take, a missing or wrong token, the application unreachable or gone (it
// is the operator's to fix: the call cannot go on without it).
//
// Authentication: besides the server's usual token checked on the upgrade, a token the provider
// carries in its messages (a "token" custom parameter of start, or the dialect's token in
// connected) is checked when start arrives (it is not passed on to the application).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "server/call_app_link.h"
#include "server/call_front.h"
#include "server/call_params.h"
#include "server/media_chunker.h"
#include "server/refusal.h"
#include "server/server_context.h"
#include "server/stream_messages.h"
#include "server/telephony_metrics.h"

namespace brisvox::server {

// One provider's spelling of a media stream: one per connection, on its strand (a dialect may learn
// from the start how the rest of the stream is written: started()).
class StreamDialect {
 public:
  virtual ~StreamDialect() = default;
  virtual TelephonyProvider provider() const = 0;
  virtual std::string_view name() const = 0;  // "Twilio": log lines and errors
  virtual StreamMessage parse(std::string_view text) const = 0;
  // Empty when start's media format is the one this stream takes; else why not.
  virtual std::string check_format(const StreamStart& start) const = 0;
  // The stream has started (its format checked): what it says about the rest (Asterisk: whether
  // its commands are written as JSON).
  virtual void started(const StreamStart& /*start*/) {}
  // Whether media of `track` is the caller's.
  virtual bool caller_track(std::string_view track) const = 0;
  virtual std::string media(std::string_view stream_sid, std::string_view audio) const = 0;
  virtual std::string mark(std::string_view stream_sid, std::string_view name) const = 0;
  virtual std::string clear(std::string_view stream_sid) const = 0;
  // The fewest bytes of audio one media message may carry (0: any); a reply's last one is padded
  // with `silence()` to it. `exact_media()`: every media message carries exactly that many.
  virtual std::size_t min_media_bytes() const { return 0; }
  virtual bool exact_media() const { return false; }
  virtual char silence() const { return 0; }
  // The caller's audio comes in binary frames (Vonage), not inside text messages: those frames are
  // its media. binary_media(): media() is sent as a binary frame too (FreeSWITCH's module takes the
  // replies in JSON text only).
  virtual bool binary_audio() const { return false; }
  virtual bool binary_media() const { return binary_audio(); }
  // A stream whose provider may send audio before any text (FreeSWITCH's metadata is optional):
  // the start its first audio stands for; nullopt: audio before the start is out of order.
  virtual std::optional<StreamMessage> start_on_audio() const { return std::nullopt; }
  // The provider echoes our marks once the audio before them has played (all but FreeSWITCH's
  // module): else a reply's speak_done and an application's mark go out when their audio is sent.
  virtual bool echoes_marks() const { return true; }
  // A text message sent when the application hangs up, after the call's speech and before the
  // close (FreeSWITCH's disconnect); empty: none, the close says it.
  virtual std::string hangup() const { return {}; }
  // An empty binary message means the provider's audio has ended and it waits for what is owed
  // before the close (FreeSWITCH's graceful-shutdown): answered as its stop.
  virtual bool empty_binary_is_stop() const { return false; }
  // The provider plays each media message the moment it arrives, with no queue of its own
  // (AudioSocket): the front sends them one at a time at real time (kPacedLead ahead at most),
  // however far ahead the call hands its speech out; a barge-in drops what is not yet sent.
  virtual bool paced() const { return false; }
  // A paced provider's media bytes a second (the call's encoding and rate).
  virtual std::size_t media_bytes_per_s() const { return 0; }
  // The provider's binary messages are a stream of its own frames, not audio (AudioSocket): each
  // chunk goes to read_binary(), which returns the messages it completes.
  virtual bool framed_binary() const { return false; }
  virtual std::vector<StreamMessage> read_binary(std::span<const std::byte> /*chunk*/) { return {}; }
  // The provider ends a call by closing the socket normally, with no stop message (Vonage): such a
  // close is the caller's hangup, not the provider gone.
  virtual bool close_is_hangup() const { return false; }
  // A text message sent before a reply's first audio after a mark or a clear (Asterisk's
  // START_MEDIA_BUFFERING: the audio up to the next mark is one bulk transfer); empty: none.
  virtual std::string before_media() const { return {}; }
  // The provider's clear drops the marks queued behind the audio and confirms nothing (Asterisk's
  // FLUSH_MEDIA): the replies they followed end as interrupted when the clear is sent.
  virtual bool clear_drops_marks() const { return false; }
  // The WebSocket subprotocol the provider asks for and is answered with (Asterisk: "media");
  // empty: none.
  virtual std::string_view subprotocol() const { return {}; }
  // What the operator is told: start without a token; a token that is not the server's; a speak
  // on a listen-only stream.
  virtual std::string no_token() const = 0;
  virtual std::string wrong_token() const = 0;
  virtual std::string listen_only() const = 0;
  // The names of the start's ids in the log line ("callSid", "streamSid").
  virtual std::string_view call_id_name() const = 0;
  virtual std::string_view stream_id_name() const = 0;
};

class MediaStreamFront final : public CallFront, private CallAppLink::Listener {
 public:
  // A provider's message is small (a 20 ms media chunk is a few hundred bytes; start with its
  // parameters a few KiB): anything larger is not the provider's.
  static constexpr std::size_t kMaxMessageBytes = 128 << 10;
  // How long a close waits for the provider to echo the marks of audio it still plays.
  static constexpr std::chrono::seconds kMarkEchoWait{10};
  // Marks awaiting the provider's echo at most (a provider that never echoes must not grow the
  // server): beyond, the oldest one's message goes to the application unconfirmed.
  static constexpr std::size_t kMaxHeld = 256;
  // A paced provider's next media message goes this long before its audio is due: the time the
  // message takes to reach it, so that its playback never waits.
  static constexpr std::chrono::milliseconds kPacedLead{40};

  // `authorized`: the upgrade carried the server's token (else start must); `upgrade_token`: a token
  // the upgrade carried in a header of the provider's, checked with those of its messages when start
  // arrives. `strand`: the connection's (the application's link runs on it).
  // `parameters`: the call's parameters the upgrade carried (Asterisk's dial string v(...)), before
  // those of the provider's start.
  MediaStreamFront(ServerContext& ctx, const boost::asio::any_io_executor& strand,
                   std::unique_ptr<StreamDialect> dialect, bool listen_only, bool authorized,
                   std::string upgrade_token = {}, std::vector<std::pair<std::string, std::string>> parameters = {});
  ~MediaStreamFront() override;

  std::string_view kind() const override { return kind_; }
  void adjust(WsSettings& s) const override;
  void on_open(WsConnection& c, CallControl& call, const CallReady& ready) override;
  void on_text(std::string message, CallControl& call) override;
  void on_binary(std::span<const std::byte> chunk, bool last, CallControl& call) override;
  void event(std::string message, SendQueue::Kind kind) override;
  void answerable() override { answerable_since_ = std::chrono::steady_clock::now(); }
  void audio(std::uint32_t utterance, std::string bytes) override;
  std::size_t purge(std::uint32_t first, std::uint32_t last) override;
  void stopped() override;
  void speak_done(std::uint32_t utterance, std::string_view id_json, double duration_ms) override;
  void mark_reached(std::uint32_t utterance, std::string message) override;
  void interrupted(std::uint32_t utterance, std::string message) override;
  std::size_t queued_bytes() const override;
  bool busy() const override;
  bool reads_while_closing() const override { return true; }
  void closing() override;
  void on_closed(std::string_view why, bool opened) override;

 private:
  // A message for the application held until the provider echoes the mark sent after its audio.
  struct Held {
    std::uint32_t utterance = 0;
    std::string message;    // speak_done, or the application's mark
    bool speak_done = false;
    std::string id_json;    // speak_done: the speak's id, for the "interrupted" that replaces it
    double duration_ms = 0;
    bool cleared = false;   // a clear was sent after it: its echo means dropped, not played
    std::chrono::steady_clock::time_point sent;
  };

  void on_app_open() override {}
  void on_app_message(std::string text) override;
  void on_app_gone(std::string why) override;

  void start(const StreamMessage& m);
  // One message of the provider's, read (from a text message, or from its binary frames).
  void handle(StreamMessage m, CallControl& call);
  // The provider's stop (`how`: what the log line says it was).
  void stop(CallControl& call, std::string_view how);
  // Ends the call for `error` (a log line, the provider's error count, the close).
  void fail(TelephonyError error, const std::string& why);
  Held& hold(std::uint32_t utterance, std::string message, bool speak_done);
  void to_app(std::string message);
  void send_media(std::uint32_t utterance, std::string bytes);
  // A message for the application after the audio before it, sent without waiting for a mark's
  // echo (a provider that echoes none).
  void send_unconfirmed(std::string message);
  // A paced provider's queue: media messages and the application's messages behind them, sent
  // when their time comes (pace()).
  struct Paced {
    std::uint32_t utterance = 0;
    std::string media;        // the audio of one media message; empty: `to_app` alone
    std::string to_app;       // a message for the application, after the audio before it
  };
  void send_paced(Paced p);
  void pace();
  // Ends the replies (and sends the application's marks) whose marks a clear dropped.
  void end_cleared();

  ServerContext& ctx_;
  const boost::asio::any_io_executor strand_;
  const std::unique_ptr<StreamDialect> dialect_;
  bool media_open_ = false;  // before_media() was sent and no mark or clear since
  const std::string kind_;  // "twilio call"
  ProviderMetrics& metrics_;
  AppUrl app_url_;  // the call's application (--call-app), chosen at start
  const bool listen_only_;
  const bool authorized_;
  MediaChunker chunker_;  // the call's speech in the pieces the provider takes
  WsConnection* c_ = nullptr;
  CallControl* call_ = nullptr;
  std::shared_ptr<CallAppLink> link_;

  bool connected_ = false;  // the provider's connected seen
  bool started_ = false;    // its start seen (the call counts from here)
  bool stopped_ = false;    // its stop seen
  std::string carried_token_;  // a token the upgrade's header or the connected message carried
  std::vector<std::pair<std::string, std::string>> upgrade_parameters_;
  std::string stream_sid_, call_sid_;
  std::deque<Paced> paced_;            // a paced provider's messages not yet sent
  std::size_t paced_bytes_ = 0;
  boost::asio::steady_timer pace_timer_;
  bool pace_timer_armed_ = false;
  std::chrono::steady_clock::time_point paced_until_;  // when the audio sent so far will have played
  std::uint64_t ignored_media_ = 0;  // media of a track that is not the caller's
  std::size_t binary_bytes_ = 0;     // of the binary message being read
  std::uint64_t next_mark_ = 1;
  std::map<std::uint64_t, Held> held_;  // by the number in our mark's name, oldest first
  // When the last turn_end or transcript went to the application, until its next speak (the
  // provider's app_round_trip).
  std::optional<std::chrono::steady_clock::time_point> answerable_since_;
  std::string end_reason_;  // call_end's reason; empty: from how the connection ended
  std::string end_detail_;
};

// The query of an endpoint whose audio is 16-bit PCM at 8000 or 16000 Hz chosen before brisvox hears
// of the call (Vonage, jambonz): ?rate= into `rate_hz` (left as given when absent) and ?token=.
// Another key is refused naming `path` (`more`: where the call's own values go instead, or
// empty), another rate with `rate_hint` (where the provider sets its rate).
std::optional<Refusal> read_l16_query(std::string_view query, std::string_view path, std::string_view more,
                                      std::string_view rate_hint, int& rate_hz);

// What every telephony endpoint reads on the upgrade: the call's request for `audio_query` (the
// provider's "sample_rate=8000&encoding=mulaw"), with turn ends and transcripts where the server has
// the models, spoken in the server's default voice; a 503 no_call_app where no --call-app is given
// (which of them drives the call is chosen at its start, by its "app" parameter).
std::optional<Refusal> telephony_call_request(ServerContext& ctx, const std::string& audio_query, CallRequest& request);

}  // namespace brisvox::server
