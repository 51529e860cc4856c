// The text messages of Asterisk's WebSocket channel driver, chan_websocket (Asterisk's "WebSocket"
// channel driver page and the driver's source, channels/chan_websocket.c): the notifications
// Asterisk sends (MEDIA_START, DTMF_END, MEDIA_BUFFERING_COMPLETED, MEDIA_XOFF, MEDIA_XON,
// QUEUE_DRAINED, STATUS, ERROR) read into the shape every provider shares (stream_messages.h), and
// the commands brisvox sends back (START_MEDIA_BUFFERING, STOP_MEDIA_BUFFERING, FLUSH_MEDIA). The
// media both ways is not here: it travels as binary frames in the channel's format, no header.
//
// Asterisk writes its control messages in one of two formats (chan_websocket.conf's
// control_message_format): "plain-text", one line of a name and space-separated key:value pairs
// ("MEDIA_START connection_id:X channel:WebSocket/c-0001 channel_id:1700000000.1 format:ulaw
// optimal_frame_size:160 ptime:20", "DTMF_END digit:5 channel_id:X", "MEDIA_BUFFERING_COMPLETED
// ID"), or "json", an object with "event" and the same keys (MEDIA_START adds
// "channel_variables"; MEDIA_BUFFERING_COMPLETED's id is "correlation_id"). Both are read; the
// commands are written in the format MEDIA_START came in (StreamStart::control_format).
//
// MEDIA_START is this shape's kStart: connection_id is the stream's id, channel_id (the channel's
// uniqueid, what ARI names it by) the call's, format the media format (ulaw, alaw, slin, slin16,
// ...), and JSON's channel_variables the call's custom parameters; the channel's name is not read. MEDIA_BUFFERING_COMPLETED with an id is kMark
// (brisvox's marks are STOP_MEDIA_BUFFERING ids). ERROR is kError. The flow-control and status
// notifications are kUnknown (brisvox sends at most a call's playout lead ahead, far below the
// driver's 900-frame XOFF level). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/stream_messages.h"

namespace brisvox::server {

// Bounds of what Asterisk may send in one message.
inline constexpr std::size_t kMaxAsteriskFieldBytes = 256;      // ids, the channel's name, format, digit
inline constexpr std::size_t kMaxAsteriskVariables = 64;        // MEDIA_START's channel_variables
inline constexpr std::size_t kMaxAsteriskVariableBytes = 1024;  // a variable's name or value
inline constexpr std::size_t kMaxAsteriskReportBytes = 512;     // an ERROR's text in the log

// Never throws. A message over the connection's size limit never gets here (ws_connection.h).
StreamMessage parse_asterisk_message(std::string_view text);

// The media formats brisvox takes from Asterisk, by Asterisk's names: the call's encoding and rate,
// or an empty encoding for another.
struct AsteriskFormat {
  std::string_view encoding;  // query_params.h's name: "mulaw", "alaw", "pcm_s16le"
  int sample_rate_hz = 0;
};
AsteriskFormat asterisk_format(std::string_view name);
// Empty when `start` (a MEDIA_START) carries the format `name`; else why not.
std::string check_asterisk_format(const StreamStart& start, std::string_view name);

// The commands brisvox sends, in `json` or plain text (what MEDIA_START came in). Asterisk reads a
// command of at most 128 bytes: `id` is brisvox's short mark name.
std::string asterisk_command(std::string_view command, bool json);
std::string asterisk_stop_buffering(std::string_view id, bool json);

}  // namespace brisvox::server
