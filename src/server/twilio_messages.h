// The messages of Twilio Media Streams (Twilio's "Media Streams - WebSocket Messages"): what Twilio
// sends (connected, start, media, dtmf, mark, stop) read from a WebSocket text message, and what a
// bidirectional stream may send back (media, mark, clear). Field names are Twilio's, camelCase.
//
// Reading is strict where a wrong value would be misheard (a payload that is not base64, a start
// without a streamSid, a mediaFormat other than audio/x-mulaw at 8000 Hz mono: check_media_format)
// and bounded (ids, parameter counts and sizes, as every peer input; docs/RELIABILITY.md); fields
// Twilio documents but brisvox does not use (sequenceNumber, chunk, timestamp) are read only for
// their type. An event Twilio may add later is kUnknown, not an error (and so is an "error": Twilio
// sends none). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/stream_messages.h"

namespace brisvox::server {

// Bounds of what a provider may send in one message.
inline constexpr std::size_t kMaxTwilioIdBytes = 128;        // streamSid, callSid, accountSid, track
inline constexpr std::size_t kMaxTwilioParameters = 64;      // start.customParameters entries
inline constexpr std::size_t kMaxTwilioParameterBytes = 1024;  // one parameter's name or value
inline constexpr std::size_t kMaxTwilioMarkBytes = 256;      // a mark's name

// Twilio's messages in the shape both providers share (stream_messages.h).
using TwilioEvent = StreamEvent;
using TwilioStart = StreamStart;
using TwilioMessage = StreamMessage;

// Never throws. A message over the connection's size limit never gets here (ws_connection.h).
TwilioMessage parse_twilio_message(std::string_view json_text);

// Empty when `start` carries the one format brisvox takes from Twilio (audio/x-mulaw, 8000 Hz,
// mono); else why not.
std::string check_media_format(const TwilioStart& start);

// What brisvox sends on a bidirectional stream. `stream_sid` is the start message's.
std::string twilio_media_message(std::string_view stream_sid, std::string_view mulaw);
std::string twilio_mark_message(std::string_view stream_sid, std::string_view name);
std::string twilio_clear_message(std::string_view stream_sid);

}  // namespace brisvox::server
