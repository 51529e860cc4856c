// parse_peer_json: every JSON a peer sends (POST /v1/tts, WebSocket messages) is parsed with its
// nesting bounded (issue 35 D1: 64 MiB of '[' took 4 GiB and stalled the network thread).
#include <gtest/gtest.h>

#include <string>

#include "server/call_params.h"
#include "server/control_message.h"
#include "server/peer_json.h"
#include "server/tts_params.h"

namespace brisvox::server {
namespace {

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(PeerJson, FlatAndShallowMessagesParse) {
  const PeerJson j = parse_peer_json(R"({"type":"speak","text":"Hi.","options":{"a":[1,2]}})");
  ASSERT_TRUE(j.error.empty()) << j.error;
  EXPECT_EQ(j.value["options"]["a"][1], 2);
  EXPECT_TRUE(parse_peer_json(nested(kMaxPeerJsonDepth)).error.empty());
}

TEST(PeerJson, NestingPastTheLimitIsRefusedWithItsReason) {
  const PeerJson j = parse_peer_json(nested(kMaxPeerJsonDepth + 1));
  EXPECT_TRUE(j.value.is_discarded());
  EXPECT_NE(j.error.find("nested deeper than 8"), std::string::npos) << j.error;
  EXPECT_FALSE(parse_peer_json(R"({"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}})").error.empty());
}

TEST(PeerJson, InvalidJsonSaysWhy) {
  const PeerJson j = parse_peer_json("{\"type\":");
  EXPECT_TRUE(j.value.is_discarded());
  EXPECT_NE(j.error.find("parse error"), std::string::npos) << j.error;
  EXPECT_FALSE(parse_peer_json("").error.empty());
  EXPECT_FALSE(parse_peer_json("{} trailing").error.empty());
}

// The bomb itself stops at the ninth bracket: nothing of the rest is built (unbounded, 16 MiB of
// '[' would be 16 million arrays and an "unexpected end of input" at the end).
TEST(PeerJson, ABracketBombStopsAtTheLimit) {
  const PeerJson j = parse_peer_json(std::string(std::size_t{16} << 20, '['));
  EXPECT_TRUE(j.value.is_discarded());
  EXPECT_NE(j.error.find("nested deeper than 8"), std::string::npos) << j.error;
}

// Each parser of a peer's JSON goes through it.
TEST(PeerJson, EveryPeerParserRefusesDeepNesting) {
  const std::string deep = R"({"type":"speak","text":"x","extra":)" + nested(20) + "}";
  EXPECT_FALSE(parse_control_message(deep).ok);
  EXPECT_FALSE(parse_call_message(deep).error.empty());
  EXPECT_FALSE(parse_tts_message(deep).error.empty());
  EXPECT_THROW(parse_tts_body(R"({"text":"x","voice":)" + nested(20) + "}"), Error);
}

}  // namespace
}  // namespace brisvox::server
