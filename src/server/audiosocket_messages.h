// Asterisk's AudioSocket (docs/TELEPHONY.md, "Asterisk (AudioSocket)"; the protocol page of
// Asterisk's documentation, and res_audiosocket.c for what Asterisk sends and takes): a TCP stream
// of frames, each a one-byte kind, a two-byte big-endian payload length and the payload.
//
// From Asterisk: the call's UUID first (kind 0x01, 16 bytes), then its audio (0x10: 16-bit signed
// little-endian linear PCM, 8 kHz, mono; 320 bytes a 20 ms frame), DTMF (0x03: one ASCII digit;
// the channel driver sends it), an error (0xff: a one-byte code, bit-packed: 0x01 the calling
// party hung up, 0x02 a frame could not be forwarded, 0x04 memory). Asterisk ends a call by
// closing the socket (0x00, hangup, is the server's to send). To Asterisk: audio (0x10), which it
// writes to the channel the moment it arrives (so the server paces it at real time), and hangup
// (0x00); any other kind ends Asterisk's side of the call.
//
// The reader is stateful (a frame may arrive in pieces: it keeps the bytes of the one not yet
// whole) and bounded (a frame is at most 3 + 65535 bytes). Not thread-safe (a connection's strand).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/stream_messages.h"

namespace brisvox::server {

enum class AudioSocketKind : std::uint8_t {
  kHangup = 0x00,
  kUuid = 0x01,
  kDtmf = 0x03,
  kAudio = 0x10,  // slin: 16-bit little-endian PCM, 8 kHz, mono
  kError = 0xff,
};

inline constexpr int kAudioSocketRateHz = 8000;
inline constexpr std::size_t kAudioSocketHeaderBytes = 3;

class AudioSocketReader {
 public:
  // The next bytes of the stream: the frames they complete, each read into the shape every
  // provider shares (UUID: kStart, its call_sid the UUID's text; audio: kMedia; DTMF: kDtmf;
  // hangup: kStop; error: kError). A frame brisvox cannot take is a message with its error (and
  // the rest of the bytes are not read: the call ends). Never throws.
  std::vector<StreamMessage> push(std::span<const std::byte> bytes);

 private:
  std::string pending_;  // the bytes of a frame not yet whole
  bool failed_ = false;
};

// The UUID's 16 bytes as its text, 8-4-4-4-12 lowercase hex digits (as Asterisk's dialplan gives it).
std::string uuid_text(std::string_view bytes);

// What brisvox sends: `pcm` (whole 16-bit samples, at most 65535 bytes) as one audio frame; hangup.
std::string audiosocket_audio_frame(std::string_view pcm);
std::string audiosocket_hangup_frame();

}  // namespace brisvox::server
