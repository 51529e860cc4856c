// The messages of jambonz's listen (alias stream) verb's audio WebSocket (docs/TELEPHONY.md,
// "jambonz"; jambonz's listen verb reference and its bidirectional-audio article): the text frames
// jambonz sends read into the shape every provider shares (stream_messages.h), and the text frames
// a server may send back (mark, killAudio). The audio both ways is not here: binary
// frames of 16-bit signed little-endian linear PCM, mono.
//
// Where jambonz's fields are: the first text frame (the preamble) is one JSON object with
// "sampleRate" (a number), "mixType" ("mono", "stereo" or "mixed") and the call's attributes
// ("callSid", "from", "to", "direction", ...) with the verb's metadata keys beside them at the
// top level; it has no "type" and no "event", so it is known by being first: it is this shape's
// kStart, callSid its call id, every other key a custom parameter. After it: {"event": "dtmf",
// "dtmf": "5", "duration": "1600"} (passDtmf; the values strings); {"type": "mark", "data":
// {"name": N, "event": "playout" | "cleared"}}, the echo of a mark we sent, once the audio before it
// has played or was dropped by a killAudio; {"type": "playDone", ...} answers a playAudio, which
// brisvox does not send (kUnknown, as any type jambonz may add).
//
// Reading is strict where a wrong value would be misheard (a rate that is not a positive number, a
// digit that is not a key) and bounded as every peer input (docs/RELIABILITY.md). Pure functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/stream_messages.h"

namespace brisvox::server {

// Bounds of what jambonz may send in one message (its preamble is at most 8192 bytes).
inline constexpr std::size_t kMaxJambonzParameters = 64;        // call attributes and metadata keys
inline constexpr std::size_t kMaxJambonzParameterBytes = 2048;  // one key's name or value (as text)
inline constexpr std::size_t kMaxJambonzFieldBytes = 128;       // type, event, mixType, callSid, digit
inline constexpr std::size_t kMaxJambonzMarkBytes = 256;        // a mark's name

// The WebSocket subprotocols jambonz asks for: its documentation names "audio.jambonz.org";
// the FreeSWITCH module it streams with asks for "audio.drachtio.org" unless configured otherwise.
inline constexpr std::string_view kJambonzProtocol = "audio.jambonz.org";
inline constexpr std::string_view kDrachtioProtocol = "audio.drachtio.org";

// The first text frame of a connection. Never throws.
StreamMessage parse_jambonz_preamble(std::string_view json_text);
// Any later text frame. Never throws.
StreamMessage parse_jambonz_message(std::string_view json_text);

// Empty when `start` (a preamble) carries mono audio at `rate_hz`; else why not.
std::string check_jambonz_media_format(const StreamStart& start, int rate_hz);

// What brisvox sends back besides the audio's binary frames: a mark whose echo says the audio before
// it has played, and a killAudio that drops what jambonz has not played (its marks come back
// "cleared"). The call's end is the socket's close (jambonz then ends the verb, as on its own
// "disconnect").
std::string jambonz_mark_message(std::string_view name);
std::string jambonz_kill_audio_message();

}  // namespace brisvox::server
