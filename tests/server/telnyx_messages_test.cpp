// Telnyx media streaming messages (server/telnyx_messages.h), against the frames of Telnyx's
// "Media Streaming over Websockets" guide and its AsyncAPI page "Stream call media over WebSocket".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/telnyx_messages.h"

namespace brisvox::server {
namespace {

constexpr const char* kStart = R"({
  "event": "start", "sequence_number": "1",
  "start": {"user_id": "3e6f995f-85f7-4705-9741-53b116d28237",
            "call_control_id": "v3:MdI91X4lWFEs7IgbBEOT9M4AigoY08M0WWZFISt1Yw2axZ_IiE4pqg",
            "client_state": "aGF2ZSBhIG5pY2UgZGF5ID1d", "from": "+13122010094", "to": "+13122123456",
            "custom_parameters": {"FirstName": "Jane", "token": "t"},
            "media_format": {"encoding": "PCMU", "sample_rate": 8000, "channels": 1}},
  "stream_id": "32de0dea-53cb-4b21-89a4-9e1819c043bc"})";

TEST(TelnyxMessages, ReadsTelnyxDocumentedStart) {
  const StreamMessage m = parse_telnyx_message(kStart);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.event, StreamEvent::kStart);
  EXPECT_EQ(m.stream_sid, "32de0dea-53cb-4b21-89a4-9e1819c043bc");
  EXPECT_EQ(m.start.stream_sid, m.stream_sid);
  EXPECT_EQ(m.start.call_sid, "v3:MdI91X4lWFEs7IgbBEOT9M4AigoY08M0WWZFISt1Yw2axZ_IiE4pqg");
  EXPECT_EQ(m.start.account_sid, "3e6f995f-85f7-4705-9741-53b116d28237");
  EXPECT_TRUE(m.start.tracks.empty());
  ASSERT_EQ(m.start.custom_parameters.size(), 2u);
  EXPECT_EQ(m.start.custom_parameters[0].first, "FirstName");
  EXPECT_EQ(m.start.custom_parameters[1].second, "t");
  EXPECT_EQ(m.start.encoding, "PCMU");
  EXPECT_EQ(m.start.sample_rate_hz, 8000);
  EXPECT_EQ(m.start.channels, 1);
  EXPECT_EQ(check_telnyx_media_format(m.start, TelnyxFormat{}), "");
}

TEST(TelnyxMessages, ReadsCustomParametersAsAnObjectOrCallControlsArray) {
  const StreamMessage m = parse_telnyx_message(
      R"({"event":"start","stream_id":"s","start":{"custom_parameters":[{"name":"token","value":"t"},)"
      R"({"name":"FirstName","value":"Jane"}],"media_format":{"encoding":"PCMU","sample_rate":8000,"channels":1}}})");
  ASSERT_TRUE(m.ok) << m.error;
  ASSERT_EQ(m.start.custom_parameters.size(), 2u);
  EXPECT_EQ(m.start.custom_parameters[0], (std::pair<std::string, std::string>{"token", "t"}));
  EXPECT_EQ(m.start.custom_parameters[1], (std::pair<std::string, std::string>{"FirstName", "Jane"}));
  for (const char* bad : {R"([{"name":"a"}])", R"([{"name":1,"value":"b"}])", R"(["a"])", R"("a=b")"}) {
    const StreamMessage b = parse_telnyx_message(
        std::string(R"({"event":"start","stream_id":"s","start":{"custom_parameters":)") + bad +
        R"(,"media_format":{"encoding":"PCMU","sample_rate":8000,"channels":1}}})");
    EXPECT_FALSE(b.ok) << bad;
    EXPECT_NE(b.error.find("custom_parameters"), std::string::npos) << b.error;
  }
}

TEST(TelnyxMessages, TakesOnlyTheStreamsCodecAndRateSayingWhich) {
  StreamStart s = parse_telnyx_message(kStart).start;
  EXPECT_NE(check_telnyx_media_format(s, TelnyxFormat{"PCMA", 8000}).find("\"PCMU\""), std::string::npos);
  EXPECT_NE(check_telnyx_media_format(s, TelnyxFormat{"PCMU", 16000}).find("16000"), std::string::npos);
  s.encoding = "PCMA";
  s.sample_rate_hz = 16000;
  EXPECT_EQ(check_telnyx_media_format(s, TelnyxFormat{"PCMA", 16000}), "");
  s.channels = 2;
  EXPECT_NE(check_telnyx_media_format(s, TelnyxFormat{"PCMA", 16000}), "");
  EXPECT_EQ(telnyx_call_encoding("PCMU"), "mulaw");
  EXPECT_EQ(telnyx_call_encoding("PCMA"), "alaw");
  EXPECT_EQ(telnyx_call_encoding("L16"), "pcm_s16le");  // the front swaps its bytes (swap_l16)
  for (const char* other : {"G722", "OPUS", "AMR-WB", "pcmu", "l16", ""}) EXPECT_EQ(telnyx_call_encoding(other), "");
}

TEST(TelnyxMessages, SwapsL16BetweenNetworkAndCallByteOrder) {
  // 0x0102 and -2 (0xFFFE) big-endian, as RTP's L16 carries them, and the call's little-endian.
  const std::string big("\x01\x02\xff\xfe", 4);
  const std::string little("\x02\x01\xfe\xff", 4);
  EXPECT_EQ(swap_l16(big), little);
  EXPECT_EQ(swap_l16(little), big);
  EXPECT_EQ(swap_l16(""), "");
  EXPECT_EQ(swap_l16(std::string("\x01\x02\x03", 3)), std::string("\x02\x01", 2));  // whole samples only
}

TEST(TelnyxMessages, ReadsConnectedMediaDtmfMarkErrorStop) {
  const StreamMessage connected = parse_telnyx_message(R"({"event":"connected","version":"1.0.0"})");
  ASSERT_TRUE(connected.ok) << connected.error;
  EXPECT_EQ(connected.event, StreamEvent::kConnected);
  EXPECT_EQ(connected.auth_token, "");
  const StreamMessage with_token = parse_telnyx_message(
      R"({"event":"connected","version":"1.0.0","x-telnyx-streaming-auth-token":"s3cret"})");
  ASSERT_TRUE(with_token.ok) << with_token.error;
  EXPECT_EQ(with_token.auth_token, "s3cret");
  const StreamMessage media = parse_telnyx_message(
      R"({"event":"media","sequence_number":"4","media":{"track":"inbound","chunk":"2","timestamp":"5","payload":"/38="},"stream_id":"s1"})");
  ASSERT_TRUE(media.ok) << media.error;
  EXPECT_EQ(media.event, StreamEvent::kMedia);
  EXPECT_EQ(media.payload, std::string("\xff\x7f"));
  EXPECT_EQ(media.track, "inbound");
  EXPECT_EQ(media.stream_sid, "s1");
  const StreamMessage dtmf = parse_telnyx_message(
      R"({"event":"dtmf","stream_id":"s1","occurred_at":"2022-12-20T15:00:00Z","sequence_number":"5","dtmf":{"digit":"1"}})");
  ASSERT_TRUE(dtmf.ok) << dtmf.error;
  EXPECT_EQ(dtmf.digit, "1");
  const StreamMessage mark =
      parse_telnyx_message(R"({"event":"mark","sequence_number":"6","stream_id":"s1","mark":{"name":"bv-3"}})");
  ASSERT_TRUE(mark.ok) << mark.error;
  EXPECT_EQ(mark.mark_name, "bv-3");
  const StreamMessage error = parse_telnyx_message(
      R"({"event":"error","stream_id":"s1","payload":{"code":100002,"title":"Unknown Error","detail":"x\u0001"}})");
  ASSERT_TRUE(error.ok) << error.error;
  EXPECT_EQ(error.event, StreamEvent::kError);
  EXPECT_NE(error.report.find("Unknown Error"), std::string::npos) << error.report;
  EXPECT_EQ(error.report.find('\x01'), std::string::npos) << "a control character reached the log text";
  const StreamMessage huge = parse_telnyx_message(
      R"({"event":"error","detail":")" + std::string(4000, 'x') + "\"}");
  ASSERT_TRUE(huge.ok);
  EXPECT_LT(huge.report.size(), kMaxTelnyxReportBytes + 16);
  const StreamMessage stop = parse_telnyx_message(
      R"({"event":"stop","sequence_number":"7","stop":{"user_id":"u","call_control_id":"c"},"stream_id":"s1"})");
  ASSERT_TRUE(stop.ok) << stop.error;
  EXPECT_EQ(stop.event, StreamEvent::kStop);
  const StreamMessage later = parse_telnyx_message(R"({"event":"someday","stream_id":"s1"})");
  ASSERT_TRUE(later.ok);
  EXPECT_EQ(later.event, StreamEvent::kUnknown);
  EXPECT_EQ(later.event_name, "someday");
}

TEST(TelnyxMessages, MalformedMessagesSayWhatIsWrong) {
  const auto error = [](const std::string& text) {
    const StreamMessage m = parse_telnyx_message(text);
    EXPECT_FALSE(m.ok) << text;
    return m.error;
  };
  const auto has = [](const std::string& text, const char* what) {
    return text.find(what) != std::string::npos;
  };
  EXPECT_TRUE(has(error(R"({"event":"media","media":{"payload":"not base64!"}})"), "base64"));
  EXPECT_TRUE(has(error(R"({"event":"media","media":{}})"), "payload"));
  EXPECT_TRUE(has(error(R"({"event":"media","media":{"payload":7}})"), "payload"));
  // The error text is printable() (quotes escaped as JSON does), being a log line.
  EXPECT_TRUE(has(error(R"({"event":"media"})"), "needs a \\\"media\\\" object"));
  EXPECT_TRUE(has(error(R"({"event":"media","media":{"payload":"","chunk":"x1"}})"), "media.chunk"));
  EXPECT_TRUE(has(error(R"({"event":"media","media":{"payload":"","timestamp":-5}})"), "media.timestamp"));
  EXPECT_TRUE(has(error(R"({"event":"media","media":{"payload":"","track":5}})"), "media.track"));
  EXPECT_TRUE(has(error(R"({"event":"media","sequence_number":"1a","media":{"payload":""}})"), "sequence_number"));
  EXPECT_TRUE(has(error(R"({"event":"media","stream_id":7,"media":{"payload":""}})"), "stream_id"));
  EXPECT_TRUE(has(error(R"({"event":"start","start":{"media_format":{}}})"), "stream_id"));
  EXPECT_TRUE(has(error(R"({"event":"start","stream_id":"s"})"), "needs a \\\"start\\\" object"));
  EXPECT_TRUE(has(error(R"({"event":"start","stream_id":"s","start":{}})"), "media_format"));
  EXPECT_TRUE(has(error(R"({"event":"start","stream_id":"s","start":{"media_format":{"sample_rate":8000}}})"),
                  "encoding"));
  EXPECT_TRUE(has(error(R"({"event":"start","stream_id":"s","start":{"media_format":{"encoding":"PCMU"}}})"),
                  "sample_rate"));
  EXPECT_TRUE(has(error(R"({"event":"start","stream_id":"s","start":{"media_format":{"encoding":"PCMU",)"
                        R"("sample_rate":"8000"}}})"),
                  "sample_rate"));
  EXPECT_TRUE(has(error(R"({"event":"start","stream_id":"s","start":{"media_format":{"encoding":"PCMU",)"
                        R"("sample_rate":8000,"channels":-1}}})"),
                  "channels"));
  EXPECT_TRUE(has(error(R"({"event":"start","stream_id":"s","start":{"call_control_id":5,)"
                        R"("media_format":{"encoding":"PCMU","sample_rate":8000}}})"),
                  "call_control_id"));
  EXPECT_TRUE(has(error(R"({"event":"start","stream_id":")" + std::string(200, 's') + R"("})"), "longer than"));
  EXPECT_TRUE(has(error(R"({"event":"start","stream_id":"s","start":{"custom_parameters":[1],)"
                        R"("media_format":{"encoding":"PCMU","sample_rate":8000}}})"),
                  "custom_parameters"));
  EXPECT_TRUE(has(error(R"({"event":"dtmf","dtmf":{"digit":"12"}})"), "digit"));
  EXPECT_TRUE(has(error(R"({"event":"dtmf","dtmf":{}})"), "digit"));
  EXPECT_TRUE(has(error(R"({"event":"mark","mark":{}})"), "name"));
  EXPECT_TRUE(has(error(R"({"event":"mark","mark":{"name":")" + std::string(300, 'm') + R"("}})"), "longer than"));
  EXPECT_TRUE(has(error(R"({"event":"stop","stop":"now"})"), "stop"));
  EXPECT_TRUE(has(error(R"({"event":"connected","x-telnyx-streaming-auth-token":1})"), "auth-token"));
  EXPECT_TRUE(has(error(R"(["event","media"])"), "event"));
  EXPECT_TRUE(has(error(R"({"event":5})"), "event"));
  EXPECT_TRUE(has(error("{\"event\":"), "not JSON"));
  EXPECT_TRUE(has(error(R"({"event":"x","a":[[[[[[[[[[1]]]]]]]]]]})"), "nested"));
  std::string many = R"({"event":"start","stream_id":"s","start":{"custom_parameters":{)";
  for (int i = 0; i < 65; ++i) many += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\":\"v\"";
  many += R"(},"media_format":{"encoding":"PCMU","sample_rate":8000,"channels":1}}})";
  EXPECT_TRUE(has(error(many), "more than 64"));
  // An error text quotes the peer's bytes only as valid UTF-8.
  const std::string bad = error("{\"event\":\"\xff\xfe");
  EXPECT_NO_THROW((void)nlohmann::json(bad).dump());
}

TEST(TelnyxMessages, WritesWhatTelnyxTakes) {
  const auto media = nlohmann::json::parse(telnyx_media_message(std::string("\xff\x7f")));
  EXPECT_EQ(media, nlohmann::json({{"event", "media"}, {"media", {{"payload", "/38="}}}}));
  const auto mark = nlohmann::json::parse(telnyx_mark_message("bv-\"7\""));
  EXPECT_EQ(mark, nlohmann::json({{"event", "mark"}, {"mark", {{"name", "bv-\"7\""}}}}));
  EXPECT_EQ(nlohmann::json::parse(telnyx_clear_message()), nlohmann::json({{"event", "clear"}}));
}

}  // namespace
}  // namespace brisvox::server
