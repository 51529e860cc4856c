#include "server/audiosocket_messages.h"

#include <fmt/format.h>

#include <cassert>

namespace brisvox::server {
namespace {

std::string_view audiosocket_kind_name(std::uint8_t kind) {
  switch (static_cast<AudioSocketKind>(kind)) {
    case AudioSocketKind::kHangup: return "hangup";
    case AudioSocketKind::kUuid: return "uuid";
    case AudioSocketKind::kDtmf: return "dtmf";
    case AudioSocketKind::kAudio: return "audio";
    case AudioSocketKind::kError: return "error";
  }
  return "unknown";
}

// Asterisk's error codes are bit-packed.
std::string audiosocket_error_text(std::string_view payload) {
  if (payload.empty()) return "an error frame without a code";
  const auto code = static_cast<std::uint8_t>(payload[0]);
  std::string what;
  for (const auto& [bit, name] : {std::pair<std::uint8_t, const char*>{0x01, "the calling party hung up"},
                                  {0x02, "a frame could not be forwarded"},
                                  {0x04, "a memory allocation failed"}}) {
    if ((code & bit) != 0) what += (what.empty() ? "" : "; ") + std::string(name);
  }
  return fmt::format("error code 0x{:02x}{}{}", code, what.empty() ? "" : ": ", what);
}

StreamMessage read_audiosocket_frame(std::uint8_t kind, std::string_view payload) {
  StreamMessage m;
  m.event_name = std::string(audiosocket_kind_name(kind));
  m.ok = true;
  switch (static_cast<AudioSocketKind>(kind)) {
    case AudioSocketKind::kUuid:
      m.event = StreamEvent::kStart;
      if (payload.size() != 16) {
        m.ok = false;
        m.error = fmt::format("a uuid frame of {} bytes (a UUID is 16)", payload.size());
        return m;
      }
      m.start.call_sid = uuid_text(payload);
      m.start.encoding = "slin";
      m.start.sample_rate_hz = kAudioSocketRateHz;
      m.start.channels = 1;
      return m;
    case AudioSocketKind::kAudio:
      m.event = StreamEvent::kMedia;
      if (payload.size() % 2 != 0) {
        m.ok = false;
        m.error = fmt::format("an audio frame of {} bytes (16-bit samples come in pairs of bytes)", payload.size());
        return m;
      }
      m.payload = std::string(payload);
      return m;
    case AudioSocketKind::kDtmf:
      m.event = StreamEvent::kDtmf;
      if (payload.size() != 1 || std::string_view("0123456789*#ABCD").find(payload[0]) == std::string_view::npos) {
        m.ok = false;
        m.error = "a dtmf frame must carry one of 0-9, *, #, A-D";
        return m;
      }
      m.digit = std::string(payload);
      return m;
    case AudioSocketKind::kHangup:
      m.event = StreamEvent::kStop;
      return m;
    case AudioSocketKind::kError:
      m.event = StreamEvent::kError;
      m.report = audiosocket_error_text(payload);
      return m;
  }
  m.ok = false;
  m.error = kind >= 0x11 && kind <= 0x18
                ? fmt::format("an audio frame of kind 0x{:02x} (another rate): brisvox takes 0x10, 16-bit PCM at "
                              "8 kHz (the AudioSocket application's format)",
                              kind)
                : fmt::format("a frame of kind 0x{:02x}, which is not AudioSocket's", kind);
  return m;
}

}  // namespace

std::vector<StreamMessage> AudioSocketReader::push(std::span<const std::byte> bytes) {
  std::vector<StreamMessage> out;
  if (failed_) return out;
  pending_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::size_t at = 0;
  while (pending_.size() - at >= kAudioSocketHeaderBytes) {
    const auto kind = static_cast<std::uint8_t>(pending_[at]);
    const std::size_t length = (static_cast<std::size_t>(static_cast<std::uint8_t>(pending_[at + 1])) << 8) |
                               static_cast<std::uint8_t>(pending_[at + 2]);
    if (pending_.size() - at < kAudioSocketHeaderBytes + length) break;
    out.push_back(read_audiosocket_frame(kind, std::string_view(pending_).substr(at + kAudioSocketHeaderBytes, length)));
    at += kAudioSocketHeaderBytes + length;
    if (!out.back().ok) {
      failed_ = true;  // nothing after a frame brisvox cannot read is the call's
      pending_.clear();
      return out;
    }
  }
  pending_.erase(0, at);
  return out;
}

std::string uuid_text(std::string_view bytes) {
  assert(bytes.size() == 16);
  std::string s;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", static_cast<std::uint8_t>(bytes[i]));
  }
  return s;
}

std::string audiosocket_audio_frame(std::string_view pcm) {
  assert(pcm.size() <= 0xffff);
  std::string frame;
  frame.reserve(kAudioSocketHeaderBytes + pcm.size());
  frame += static_cast<char>(AudioSocketKind::kAudio);
  frame += static_cast<char>((pcm.size() >> 8) & 0xff);
  frame += static_cast<char>(pcm.size() & 0xff);
  frame += pcm;
  return frame;
}

std::string audiosocket_hangup_frame() { return std::string(3, '\0'); }

}  // namespace brisvox::server
