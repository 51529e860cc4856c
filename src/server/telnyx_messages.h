// The messages of Telnyx Media Streaming over WebSockets (Telnyx's "Media Streaming over
// Websockets" guide and its AsyncAPI page "Stream call media over WebSocket"): what Telnyx sends
// (connected, start, media, dtmf, mark, error, stop) read from a WebSocket text message into the
// shape both providers share (stream_messages.h), and what a bidirectional stream in RTP mode may
// send back (media, mark, clear). Field names are Telnyx's, snake_case.
//
// Where Telnyx's fields are: stream_id and sequence_number at the top of every frame but connected;
// start.call_control_id, start.user_id, start.custom_parameters (a TeXML <Stream>'s <Parameter>s,
// Call Control's custom_parameters; an object, or an array of {name, value}),
// start.media_format {encoding, sample_rate, channels}; media {track, chunk, timestamp, payload:
// the base64 RTP payload, no RTP header}; dtmf.digit; mark.name; the connected frame's
// x-telnyx-streaming-auth-token (Telnyx's streaming auth token, when one is configured). An error
// frame's fields are not read one by one: its text goes to the log (kError's report).
//
// Reading is strict where a wrong value would be misheard (a payload that is not base64, a start
// without a stream_id or a media_format) and bounded as every peer input (docs/RELIABILITY.md);
// sequence_number, chunk and timestamp are read only for their type. An event Telnyx may add later
// is kUnknown, not an error. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/stream_messages.h"

namespace brisvox::server {

// Bounds of what Telnyx may send in one message.
inline constexpr std::size_t kMaxTelnyxIdBytes = 128;          // stream_id, call_control_id, user_id, track
inline constexpr std::size_t kMaxTelnyxParameters = 64;        // start.custom_parameters entries
inline constexpr std::size_t kMaxTelnyxParameterBytes = 1024;  // one parameter's name or value; the auth token
inline constexpr std::size_t kMaxTelnyxMarkBytes = 256;        // a mark's name
inline constexpr std::size_t kMaxTelnyxReportBytes = 512;      // an error frame's text in the log

// Never throws. A message over the connection's size limit never gets here (ws_connection.h).
StreamMessage parse_telnyx_message(std::string_view json_text);

// The media formats brisvox takes from Telnyx: its codec names PCMU and PCMA (G.711) and L16 (16-bit
// linear PCM as RTP carries it: network byte order, big-endian, by RFC 3551; Pipecat's Telnyx
// serializer reads and writes it so) at 8000 or 16000 Hz, mono.
struct TelnyxFormat {
  std::string codec = "PCMU";  // as Telnyx spells it (media_format.encoding, stream_bidirectional_codec)
  int sample_rate_hz = 8000;
};
// The call's encoding (query_params.h's name) of a Telnyx codec: PCMU "mulaw", PCMA "alaw", L16
// "pcm_s16le" (the front swaps each sample's bytes: swap_l16); "" for any other.
std::string_view telnyx_call_encoding(std::string_view codec);
// 16-bit samples with each one's two bytes swapped (big-endian L16 <-> the call's little-endian);
// `pcm` holds whole samples (an odd last byte is dropped).
std::string swap_l16(std::string_view pcm);
// Empty when `start` carries `expected` in one channel; else why not.
std::string check_telnyx_media_format(const StreamStart& start, const TelnyxFormat& expected);

// What brisvox sends on a bidirectional stream (RTP mode: each media message's payload is raw
// audio in the stream's codec, 20 ms to 30 s of it).
std::string telnyx_media_message(std::string_view audio);
std::string telnyx_mark_message(std::string_view name);
std::string telnyx_clear_message();

}  // namespace brisvox::server
