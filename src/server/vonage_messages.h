// The messages of the Vonage Voice API's WebSocket connection (Vonage's guide "WebSockets" of the
// Voice API and the NCCO reference's connect action with a websocket endpoint): the text frames
// Vonage sends (websocket:connected, websocket:dtmf, websocket:notify, websocket:cleared) read into
// the shape every provider shares (stream_messages.h), and the text frames a server may send back
// (notify, clear). The audio both ways is not here: it travels as binary frames of 16-bit signed
// little-endian linear PCM, mono, at the rate of the connected frame's content-type.
//
// Where Vonage's fields are: websocket:connected is the first frame, with "content-type"
// ("audio/l16;rate=16000" or "audio/l16;rate=8000") and, at the top level beside it, every
// key of the NCCO endpoint's headers object (read as the call's custom parameters; a "uuid" among
// them, the call leg's id as Vonage's webhooks name it, is also the call's id); it is this shape's
// kStart (Vonage has no separate start). websocket:dtmf carries "digit" (and "duration",
// read only for its type); websocket:notify echoes the "payload" object of a notify we sent once
// the audio before it has played (our payload is {"name": MARK}: kMark with that name);
// websocket:cleared confirms a clear (kCleared).
//
// Reading is strict where a wrong value would be misheard (a content-type that is not L16 mono at
// a rate, a digit that is not a key) and bounded as every peer input (docs/RELIABILITY.md). An
// event Vonage may add later is kUnknown, not an error. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/stream_messages.h"

namespace brisvox::server {

// Bounds of what Vonage may send in one message.
inline constexpr std::size_t kMaxVonageParameters = 64;        // headers echoed in websocket:connected
inline constexpr std::size_t kMaxVonageParameterBytes = 1024;  // one header's name or value (as text)
inline constexpr std::size_t kMaxVonageFieldBytes = 128;       // event, content-type, digit
inline constexpr std::size_t kMaxVonageMarkBytes = 256;        // the name in a notify's payload

// Never throws. A message over the connection's size limit never gets here (ws_connection.h).
StreamMessage parse_vonage_message(std::string_view json_text);

// The rate of a content-type "audio/l16;rate=N" (header_value.h: parameters in any order and case,
// spaces around them allowed); 0 when it is not 16-bit linear PCM at a rate.
int vonage_l16_rate(std::string_view content_type);
// Empty when `start` (a websocket:connected) carries L16 at `rate_hz`; else why not.
std::string check_vonage_media_format(const StreamStart& start, int rate_hz);

// What brisvox sends back besides the audio's binary frames: a notify whose echo says the audio
// before it has played (its payload {"name": name}), and a clear of what Vonage has not played.
std::string vonage_notify_message(std::string_view name);
std::string vonage_clear_message();

}  // namespace brisvox::server
