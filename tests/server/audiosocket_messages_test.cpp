// Asterisk AudioSocket's frames (server/audiosocket_messages.h), against the protocol page and what
// res_audiosocket.c writes: the UUID first, audio of 320 bytes a 20 ms frame, DTMF, an error's
// bit-packed code; frames split anywhere across reads; what brisvox cannot take; the audio and
// hangup frames brisvox writes.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "server/audiosocket_messages.h"

namespace brisvox::server {
namespace {

std::string frame(int kind, const std::string& payload) {
  std::string f;
  f += static_cast<char>(kind);
  f += static_cast<char>(payload.size() >> 8);
  f += static_cast<char>(payload.size() & 0xff);
  return f + payload;
}

std::vector<StreamMessage> push(AudioSocketReader& r, const std::string& bytes) {
  return r.push(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

const std::string kUuid("\x40\x32\x5e\xc2\x5e\xfd\x4b\xd3\x80\x5f\x53\x57\x6e\x58\x1d\x13", 16);

TEST(AudioSocketMessages, ReadsACallAsAsteriskSendsIt) {
  AudioSocketReader r;
  const std::string audio(320, '\x01');
  const auto m = push(r, frame(0x01, kUuid) + frame(0x10, audio) + frame(0x03, "#") + frame(0xff, "\x03"));
  ASSERT_EQ(m.size(), 4U);
  for (const auto& x : m) EXPECT_TRUE(x.ok) << x.error;
  EXPECT_EQ(m[0].event, StreamEvent::kStart);
  EXPECT_EQ(m[0].start.call_sid, "40325ec2-5efd-4bd3-805f-53576e581d13");
  EXPECT_EQ(m[0].start.sample_rate_hz, 8000);
  EXPECT_EQ(m[1].event, StreamEvent::kMedia);
  EXPECT_EQ(m[1].payload, audio);
  EXPECT_EQ(m[2].event, StreamEvent::kDtmf);
  EXPECT_EQ(m[2].digit, "#");
  EXPECT_EQ(m[3].event, StreamEvent::kError);
  EXPECT_EQ(m[3].report, "error code 0x03: the calling party hung up; a frame could not be forwarded");
  const auto hangup = push(r, frame(0x00, ""));
  ASSERT_EQ(hangup.size(), 1U);
  EXPECT_EQ(hangup[0].event, StreamEvent::kStop);
}

TEST(AudioSocketMessages, KeepsAFrameSplitAcrossReads) {
  const std::string bytes = frame(0x01, kUuid) + frame(0x10, std::string(320, '\x02'));
  for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
    AudioSocketReader r;
    auto first = push(r, bytes.substr(0, cut));
    const auto second = push(r, bytes.substr(cut));
    first.insert(first.end(), second.begin(), second.end());
    ASSERT_EQ(first.size(), 2U) << cut;
    EXPECT_EQ(first[1].payload.size(), 320U) << cut;
  }
}

TEST(AudioSocketMessages, RefusesWhatItCannotTakeAndReadsNothingAfter) {
  struct Case {
    std::string bytes;
    const char* why;
  };
  for (const Case& c : {Case{frame(0x01, kUuid.substr(0, 8)), "a UUID is 16"},
                        Case{frame(0x10, "\x01\x02\x03"), "pairs of bytes"},
                        Case{frame(0x03, "55"), "0-9"},
                        Case{frame(0x03, "x"), "0-9"},
                        Case{frame(0x11, std::string(640, '\0')), "another rate"},
                        Case{frame(0x42, ""), "not AudioSocket's"}}) {
    AudioSocketReader r;
    const auto m = push(r, c.bytes + frame(0x10, std::string(320, '\0')));
    ASSERT_EQ(m.size(), 1U) << c.why;
    EXPECT_FALSE(m[0].ok);
    EXPECT_NE(m[0].error.find(c.why), std::string::npos) << m[0].error;
    EXPECT_TRUE(push(r, frame(0x10, std::string(320, '\0'))).empty());
  }
}

TEST(AudioSocketMessages, WritesAudioAndHangupAsAsteriskReadsThem) {
  const std::string pcm(320, '\x05');
  const std::string f = audiosocket_audio_frame(pcm);
  ASSERT_EQ(f.size(), 323U);
  EXPECT_EQ(f.substr(0, 3), std::string("\x10\x01\x40", 3));  // kind 0x10, length 320 big-endian
  EXPECT_EQ(f.substr(3), pcm);
  EXPECT_EQ(audiosocket_hangup_frame(), std::string("\x00\x00\x00", 3));
}

}  // namespace
}  // namespace brisvox::server
