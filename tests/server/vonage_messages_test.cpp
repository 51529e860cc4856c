// The Vonage Voice API's WebSocket messages (server/vonage_messages.h), against the frames of
// Vonage's "WebSockets" guide: websocket:connected with its content-type and the NCCO endpoint's
// headers beside it, websocket:dtmf, websocket:notify echoing a notify's payload, websocket:cleared.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <string>

#include "server/vonage_messages.h"

namespace brisvox::server {
namespace {

TEST(VonageMessages, ReadsConnectedWithItsContentTypeAndHeaders) {
  const StreamMessage m = parse_vonage_message(
      R"({"event":"websocket:connected","content-type":"audio/l16;rate=16000","prop1":"value1",)"
      R"("token":"t","count":3,"meta":{"a":1},"uuid":"aaaaaaaa-bbbb-cccc-dddd-0123456789ab"})");
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.event, StreamEvent::kStart);
  EXPECT_EQ(m.event_name, "websocket:connected");
  EXPECT_EQ(m.stream_sid, "");
  EXPECT_EQ(m.start.encoding, "audio/l16");
  EXPECT_EQ(m.start.sample_rate_hz, 16000);
  EXPECT_EQ(m.start.channels, 1);
  std::map<std::string, std::string> headers(m.start.custom_parameters.begin(), m.start.custom_parameters.end());
  EXPECT_EQ(headers, (std::map<std::string, std::string>{
                         {"count", "3"}, {"meta", R"({"a":1})"}, {"prop1", "value1"}, {"token", "t"},
                         {"uuid", "aaaaaaaa-bbbb-cccc-dddd-0123456789ab"}}));
  EXPECT_EQ(m.start.call_sid, "aaaaaaaa-bbbb-cccc-dddd-0123456789ab");
  EXPECT_EQ(check_vonage_media_format(m.start, 16000), "");
  const std::string why = check_vonage_media_format(m.start, 8000);
  EXPECT_NE(why.find("audio/l16;rate=16000"), std::string::npos) << why;
  EXPECT_NE(why.find("?rate="), std::string::npos) << why;
}

TEST(VonageMessages, TheContentTypesRate) {
  EXPECT_EQ(vonage_l16_rate("audio/l16;rate=16000"), 16000);
  EXPECT_EQ(vonage_l16_rate("audio/l16;rate=8000"), 8000);
  EXPECT_EQ(vonage_l16_rate("Audio/L16; Rate=8000"), 8000);
  EXPECT_EQ(vonage_l16_rate("audio/l16; channels=1; rate=24000"), 24000);
  EXPECT_EQ(vonage_l16_rate("audio/l16"), 0);
  EXPECT_EQ(vonage_l16_rate("audio/l16;rate="), 0);
  EXPECT_EQ(vonage_l16_rate("audio/l16;rate=16k"), 0);
  EXPECT_EQ(vonage_l16_rate("audio/l16;rate=-8000"), 0);
  EXPECT_EQ(vonage_l16_rate("audio/pcmu;rate=8000"), 0);
  EXPECT_EQ(vonage_l16_rate(""), 0);
  const StreamMessage ulaw =
      parse_vonage_message(R"({"event":"websocket:connected","content-type":"audio/pcmu;rate=8000"})");
  ASSERT_TRUE(ulaw.ok) << ulaw.error;
  EXPECT_NE(check_vonage_media_format(ulaw.start, 8000), "");
}

TEST(VonageMessages, ReadsDtmfNotifyAndCleared) {
  const StreamMessage dtmf = parse_vonage_message(R"({"event":"websocket:dtmf","digit":"5","duration":260})");
  ASSERT_TRUE(dtmf.ok) << dtmf.error;
  EXPECT_EQ(dtmf.event, StreamEvent::kDtmf);
  EXPECT_EQ(dtmf.digit, "5");
  const StreamMessage notify = parse_vonage_message(R"({"event":"websocket:notify","payload":{"name":"bv-3"}})");
  ASSERT_TRUE(notify.ok) << notify.error;
  EXPECT_EQ(notify.event, StreamEvent::kMark);
  EXPECT_EQ(notify.mark_name, "bv-3");
  // Another notify's payload is not one of our marks: read, with no name.
  const StreamMessage other = parse_vonage_message(R"({"event":"websocket:notify","payload":{"customKey":"x"}})");
  ASSERT_TRUE(other.ok) << other.error;
  EXPECT_EQ(other.mark_name, "");
  const StreamMessage cleared = parse_vonage_message(R"({"event":"websocket:cleared"})");
  ASSERT_TRUE(cleared.ok) << cleared.error;
  EXPECT_EQ(cleared.event, StreamEvent::kCleared);
  const StreamMessage later = parse_vonage_message(R"({"event":"websocket:media:update","x":1})");
  ASSERT_TRUE(later.ok) << later.error;
  EXPECT_EQ(later.event, StreamEvent::kUnknown);
  EXPECT_EQ(later.event_name, "websocket:media:update");
}

TEST(VonageMessages, MalformedMessagesSayWhatIsWrong) {
  const auto error = [](const char* text) {
    const StreamMessage m = parse_vonage_message(text);
    EXPECT_FALSE(m.ok) << text;
    return m.error;
  };
  EXPECT_NE(error("{").find("not JSON"), std::string::npos);
  EXPECT_NE(error("[1]").find("\"event\""), std::string::npos);
  EXPECT_NE(error(R"({"event":7})").find("\"event\""), std::string::npos);
  EXPECT_NE(error(R"({"event":"websocket:connected"})").find("content-type"), std::string::npos);
  EXPECT_NE(error(R"({"event":"websocket:dtmf"})").find("digit"), std::string::npos);
  EXPECT_NE(error(R"({"event":"websocket:dtmf","digit":"55"})").find("0-9"), std::string::npos);
  EXPECT_NE(error(R"({"event":"websocket:dtmf","digit":"5","duration":"long"})").find("duration"),
            std::string::npos);
  EXPECT_NE(error(R"({"event":"websocket:notify"})").find("payload"), std::string::npos);
  EXPECT_NE(error(R"({"event":"websocket:notify","payload":{"name":5}})").find("name"), std::string::npos);
  std::string many = R"({"event":"websocket:connected","content-type":"audio/l16;rate=16000")";
  for (int i = 0; i < 65; ++i) many += ",\"h" + std::to_string(i) + "\":\"v\"";
  EXPECT_NE(error((many + "}").c_str()).find("more than 64"), std::string::npos);
  const std::string long_value = R"({"event":"websocket:connected","content-type":"audio/l16;rate=16000","h":")" +
                                 std::string(2000, 'x') + "\"}";
  EXPECT_NE(error(long_value.c_str()).find("longer than"), std::string::npos);
  // A peer's bytes in the error stay printable.
  EXPECT_EQ(error("\x01\xff").find('\x01'), std::string::npos);
}

TEST(VonageMessages, WritesWhatVonageTakes) {
  const auto notify = nlohmann::json::parse(vonage_notify_message("bv-1 \"quoted\""));
  EXPECT_EQ(notify, nlohmann::json::parse(R"({"action":"notify","payload":{"name":"bv-1 \"quoted\""}})"));
  EXPECT_EQ(nlohmann::json::parse(vonage_clear_message()), nlohmann::json::parse(R"({"action":"clear"})"));
}

}  // namespace
}  // namespace brisvox::server
