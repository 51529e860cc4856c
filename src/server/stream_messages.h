// A telephony provider's media-stream message, read (twilio_messages.h, telnyx_messages.h,
// vonage_messages.h): the providers' protocols have the same events (connected, start, media, dtmf,
// mark, stop) in different spellings, so that one front (media_stream_front.h) drives any of them
// from this one shape.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brisvox::server {

// kError: the provider reports an error of its own (Telnyx's error frame). kCleared: the provider
// confirms a clear (Vonage's websocket:cleared): what it had not played is dropped, and so are the
// marks queued behind it. kUnknown: an event the provider may add later (not an error).
enum class StreamEvent { kConnected, kStart, kMedia, kDtmf, kMark, kStop, kError, kCleared, kUnknown };
std::string_view to_string(StreamEvent event);

struct StreamStart {
  std::string stream_sid;   // Twilio streamSid, Telnyx stream_id (Vonage: none, the socket is the stream)
  std::string account_sid;  // Twilio accountSid, Telnyx user_id
  std::string call_sid;     // Twilio callSid, Telnyx call_control_id
  std::vector<std::string> tracks;  // Twilio: "inbound", "outbound"; Telnyx sends none
  std::vector<std::pair<std::string, std::string>> custom_parameters;  // in the order sent
  std::string encoding;  // the media format, as the provider names it (Vonage: "audio/l16")
  int sample_rate_hz = 0;
  int channels = 0;
  std::string control_format;  // Asterisk: "plain-text" or "json", how its commands are written
};

struct StreamMessage {
  bool ok = false;
  std::string error;  // !ok: what was wrong, for the log line that closes the call
  StreamEvent event = StreamEvent::kUnknown;
  std::string event_name;  // as sent (kUnknown: which)
  std::string stream_sid;  // the stream's id where the message carries it ("" when absent)
  StreamStart start;       // kStart
  std::string track;       // kMedia: media.track ("inbound", "outbound"); kDtmf: dtmf.track
  std::string payload;     // kMedia: the decoded audio bytes
  std::string digit;       // kDtmf
  std::string mark_name;   // kMark
  bool mark_cleared = false;  // kMark: the provider says the audio before it was dropped (jambonz's "cleared")
  std::string auth_token;  // kConnected: a token the provider carries in it (Telnyx), else ""
  std::string report;      // kError: what the provider says, printable and bounded, for the log
};

}  // namespace brisvox::server
