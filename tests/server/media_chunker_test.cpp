// MediaChunker (server/media_chunker.h): the reply's audio in the pieces a provider takes in one
// media message (Telnyx's RTP mode: 20 ms, 160 bytes of G.711 at 8 kHz).
#include <gtest/gtest.h>

#include <string>

#include "server/media_chunker.h"

namespace brisvox::server {
namespace {

std::size_t total(const std::vector<MediaChunker::Piece>& pieces) {
  std::size_t n = 0;
  for (const auto& p : pieces) n += p.bytes.size();
  return n;
}

TEST(MediaChunker, WithoutALeastSizeEveryPieceGoesAtOnce) {
  MediaChunker c(0, '\xff');
  const auto out = c.push(3, "ab");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].utterance, 3u);
  EXPECT_EQ(out[0].bytes, "ab");
  EXPECT_EQ(c.held_bytes(), 0u);
  EXPECT_TRUE(c.flush().empty());
}

TEST(MediaChunker, ShortPiecesAreJoinedUntilTheLeastSize) {
  MediaChunker c(160, '\xff');
  EXPECT_TRUE(c.push(1, std::string(100, 'a')).empty());
  EXPECT_EQ(c.held_bytes(), 100u);
  const auto out = c.push(1, std::string(100, 'b'));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bytes, std::string(100, 'a') + std::string(100, 'b'));  // in order, nothing lost
  EXPECT_EQ(c.held_bytes(), 0u);
  const auto big = c.push(1, std::string(4000, 'c'));
  ASSERT_EQ(big.size(), 1u);
  EXPECT_EQ(big[0].bytes.size(), 4000u);
}

TEST(MediaChunker, AnUtterancesShortEndIsPaddedWithSilence) {
  MediaChunker c(160, '\xd5');
  EXPECT_TRUE(c.push(2, "xyz").empty());
  const auto out = c.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].utterance, 2u);
  EXPECT_EQ(out[0].bytes, "xyz" + std::string(157, '\xd5'));
  EXPECT_TRUE(c.flush().empty());
}

TEST(MediaChunker, AnotherUtteranceSendsTheHeldOneFirst) {
  MediaChunker c(160, '\xff');
  EXPECT_TRUE(c.push(1, std::string(10, 'a')).empty());
  const auto out = c.push(2, std::string(200, 'b'));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].utterance, 1u);
  EXPECT_EQ(out[0].bytes.size(), 160u);
  EXPECT_EQ(out[1].utterance, 2u);
  EXPECT_EQ(out[1].bytes, std::string(200, 'b'));
  EXPECT_EQ(total(out), 360u);
}

TEST(MediaChunker, DropAndClearForgetTheHeldAudio) {
  MediaChunker c(160, '\xff');
  (void)c.push(5, std::string(50, 'a'));
  EXPECT_EQ(c.drop(1, 4), 0u);  // another utterance's
  EXPECT_EQ(c.drop(5, 5), 50u);
  EXPECT_EQ(c.held_bytes(), 0u);
  EXPECT_TRUE(c.flush().empty());
  (void)c.push(6, std::string(50, 'a'));
  c.clear();
  EXPECT_TRUE(c.flush().empty());
}

TEST(MediaChunker, ExactFramesCutLongPiecesAndPadOnlyTheLast) {
  // Vonage: 20 ms of 16-bit PCM at 16 kHz, 640 bytes a frame and no other size.
  MediaChunker c(640, '\0', /*exact=*/true);
  std::string reply;
  for (int i = 0; i < 1500; ++i) reply += static_cast<char>('a' + i % 26);
  const auto out = c.push(2, reply.substr(0, 1500));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].bytes, reply.substr(0, 640));
  EXPECT_EQ(out[1].bytes, reply.substr(640, 640));
  EXPECT_EQ(c.held_bytes(), 220u);
  EXPECT_TRUE(c.push(2, std::string(100, 'x')).empty());  // 320 held: still short of a frame
  const auto last = c.flush();
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].bytes.size(), 640u);
  EXPECT_EQ(last[0].bytes.substr(0, 220), reply.substr(1280, 220));
  EXPECT_EQ(last[0].bytes.substr(320), std::string(320, '\0'));
  EXPECT_EQ(total(out) + total(last), 1920u);
}

}  // namespace
}  // namespace brisvox::server
