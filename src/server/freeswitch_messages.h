// The messages of FreeSWITCH's mod_audio_fork (docs/TELEPHONY.md, "FreeSWITCH"; the module's README
// in drachtio-freeswitch-modules): what the module's text frames say, read into the shape every
// provider shares (stream_messages.h), and the text frames a server may send back. The caller's
// audio is not here: binary frames of 16-bit signed little-endian linear PCM, mono.
//
// What the module sends: `uuid_audio_fork <uuid> start <url> <mix-type> <rate> <metadata>` connects
// and sends the metadata as the first text frame, when there is one (it is optional: audio may come
// first); `send_text <text>` sends any text later; `stop <text>` sends a last text and closes. The
// module gives the text no shape: brisvox reads the metadata as one JSON object whose keys become
// the call's parameters ("uuid", the channel's, is the call's id; "token" authenticates). Of the
// later texts, jambonz's DTMF event ({"event": "dtmf", "dtmf": "5"}: jambonz runs on this module) is
// the caller's key; any other text is the FreeSWITCH application's own (kUnknown).
//
// What a server sends back: playAudio (base64 audio in a JSON text frame: the module writes it to a
// file and raises mod_audio_fork::play_audio, and the FreeSWITCH application plays the file),
// killAudio (the module breaks the playback and raises mod_audio_fork::kill_audio), disconnect (the
// module raises mod_audio_fork::disconnect; the application hangs up). The module drops binary
// frames from the server and echoes nothing: no marks.
//
// Reading is bounded as every peer input (docs/RELIABILITY.md). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/stream_messages.h"

namespace brisvox::server {

// Bounds of what the metadata may carry.
inline constexpr std::size_t kMaxFreeswitchParameters = 64;
inline constexpr std::size_t kMaxFreeswitchParameterBytes = 2048;  // one key's name or value (as text)
inline constexpr std::size_t kMaxFreeswitchIdBytes = 128;          // the uuid

// The subprotocol the module asks for (MOD_AUDIO_FORK_SUBPROTOCOL_NAME changes it).
inline constexpr std::string_view kAudioForkProtocol = "audio.drachtio.org";

// The first text frame (the metadata): a kStart at `rate_hz` (the url's: the module does not say
// its rate). Never throws.
StreamMessage parse_freeswitch_metadata(std::string_view text, int rate_hz);
// A stream whose audio came before any text: a kStart with no parameters.
StreamMessage freeswitch_start_without_metadata(int rate_hz);
// A later text frame: a DTMF event, or the application's own text (kUnknown). Never throws.
StreamMessage parse_freeswitch_text(std::string_view text);

// What brisvox sends: `pcm` (16-bit little-endian at `rate_hz`) as a playAudio of raw audio; a
// killAudio; a disconnect.
std::string freeswitch_play_audio_message(int rate_hz, std::string_view pcm);
std::string freeswitch_kill_audio_message();
std::string freeswitch_disconnect_message();

}  // namespace brisvox::server
