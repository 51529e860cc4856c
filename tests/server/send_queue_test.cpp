// The one send queue of a WebSocket connection: the bounds for slow readers, and purging what a
// client cancelled (tags) without breaking a message being written or a pair sent as one.
#include "server/send_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace brisvox::server {
namespace {

using Kind = SendQueue::Kind;
using Result = SendQueue::Result;

std::vector<std::string> contents(SendQueue q) {
  std::vector<std::string> out;
  for (; !q.empty(); q.pop()) out.push_back(q.front().data);
  return out;
}

TEST(SendQueue, DropsVadFirstAndOverflowsOnlyForRequired) {
  SendQueue q(8, 1 << 20);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.push("vad", Kind::kDroppable), Result::kQueued);
  EXPECT_EQ(q.push("vad", Kind::kDroppable), Result::kDropped);  // over half
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.push("speech", Kind::kRequired), Result::kQueued);
  EXPECT_EQ(q.push("speech", Kind::kRequired), Result::kOverflow);
  EXPECT_EQ(q.size(), 8u);
  EXPECT_EQ(q.dropped(), 1u);
  EXPECT_FALSE(q.has_room_to_report());
  while (q.size() > 2) q.pop();
  EXPECT_TRUE(q.has_room_to_report());
  EXPECT_EQ(q.take_unreported_drops(), 1u);
  EXPECT_EQ(q.take_unreported_drops(), 0u);
  EXPECT_EQ(q.front().data, "speech");
  q.discard(/*keep_front=*/true);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.bytes(), 6u);
}

TEST(SendQueue, ByteBound) {
  SendQueue q(1000, 100);
  EXPECT_EQ(q.push(std::string(40, 'a'), Kind::kDroppable), Result::kQueued);
  EXPECT_EQ(q.push(std::string(20, 'a'), Kind::kDroppable), Result::kDropped);
  EXPECT_EQ(q.push(std::string(60, 'a'), Kind::kRequired), Result::kQueued);
  EXPECT_EQ(q.push(std::string(1, 'a'), Kind::kRequired), Result::kOverflow);
}

TEST(SendQueue, KeepsKindAndTag) {
  SendQueue q(16, 1 << 20);
  q.push(SendQueue::Message{"pcm", true, 7}, Kind::kRequired);
  EXPECT_TRUE(q.front().binary);
  EXPECT_EQ(q.front().tag, 7u);
  EXPECT_EQ(q.bytes(), 3u);
}

TEST(SendQueue, PurgeDropsTheTaggedRangeOnly) {
  SendQueue q(64, 1 << 20);
  q.push("ready", Kind::kRequired);                                      // untagged: never purged
  q.push(SendQueue::Message{"audio 1", false, 1}, Kind::kRequired);
  q.push(SendQueue::Message{"pcm 1", true, 1, true}, Kind::kRequired);
  q.push("done 1", Kind::kRequired);
  q.push(SendQueue::Message{"audio 2", false, 2}, Kind::kRequired);
  q.push(SendQueue::Message{"pcm 2", true, 2, true}, Kind::kRequired);
  q.push(SendQueue::Message{"audio 3", false, 3}, Kind::kRequired);
  q.push(SendQueue::Message{"pcm 3", true, 3, true}, Kind::kRequired);
  std::size_t bytes = 0;
  EXPECT_EQ(q.purge(1, 2, /*keep_front=*/false, &bytes), 4u);
  EXPECT_EQ(bytes, std::string("audio 1pcm 1audio 2pcm 2").size());
  EXPECT_EQ(contents(q), (std::vector<std::string>{"ready", "done 1", "audio 3", "pcm 3"}));
  EXPECT_EQ(q.bytes(), std::string("readydone 1audio 3pcm 3").size());
  EXPECT_EQ(q.purge(4, 9, false, &bytes), 0u);
  EXPECT_EQ(bytes, 0u);
}

// Audio inside a text message (Twilio's base64 media) counts as its audio's bytes, so that what a
// barge-in dropped is told in audio, not in JSON.
TEST(SendQueue, PurgeReportsTheContentBytesOfWhatItDrops) {
  SendQueue q(64, 1 << 20);
  SendQueue::Message media{R"({"event":"media","media":{"payload":"AAAA"}})", false, 1};
  media.content_bytes = 3;
  q.push(media, Kind::kRequired);
  q.push(media, Kind::kRequired);
  q.push(SendQueue::Message{"pcm", true, 1}, Kind::kRequired);
  std::size_t bytes = 0;
  EXPECT_EQ(q.purge(1, 1, /*keep_front=*/true, &bytes), 2u);
  EXPECT_EQ(bytes, 3u + 3u);
  EXPECT_EQ(q.bytes(), media.data.size());
}

TEST(SendQueue, PurgeFinishesWhatIsBeingWritten) {
  // The header being written keeps the PCM it announced; the next pair goes.
  SendQueue q(64, 1 << 20);
  q.push(SendQueue::Message{"audio 1", false, 1}, Kind::kRequired);
  q.push(SendQueue::Message{"pcm 1", true, 1, true}, Kind::kRequired);
  q.push(SendQueue::Message{"audio 1b", false, 1}, Kind::kRequired);
  q.push(SendQueue::Message{"pcm 1b", true, 1, true}, Kind::kRequired);
  const char* front = q.front().data.data();
  EXPECT_EQ(q.purge(1, 1, /*keep_front=*/true), 2u);
  EXPECT_EQ(contents(q), (std::vector<std::string>{"audio 1", "pcm 1"}));
  EXPECT_EQ(q.front().data.data(), front);  // not moved: a write may be reading it
  // PCM whose header is already out (popped) stays too, even when it is not being written.
  q.pop();
  EXPECT_EQ(q.purge(1, 1, /*keep_front=*/false), 0u);
  EXPECT_EQ(q.front().data, "pcm 1");
}

TEST(SendQueue, DiscardKeepsOnlyTheFrontBeingWritten) {
  SendQueue q(64, 1 << 20);
  for (const char* m : {"a", "bb", "ccc"}) q.push(m, Kind::kRequired);
  q.discard(/*keep_front=*/false);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.bytes(), 0u);
}

}  // namespace
}  // namespace brisvox::server
