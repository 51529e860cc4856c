// Twilio Media Streams messages (server/twilio_messages.h) and the base64 under them, against the
// examples of Twilio's "Media Streams - WebSocket Messages" page.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/base64.h"
#include "server/twilio_messages.h"

namespace brisvox::server {
namespace {

TEST(Base64, RoundTripsEveryLengthAndRefusesWhatIsNotStrict) {
  std::string bytes;
  for (int n = 0; n < 40; ++n) {
    const auto back = base64_decode(base64_encode(bytes));
    ASSERT_TRUE(back.has_value()) << n;
    EXPECT_EQ(*back, bytes);
    EXPECT_EQ(base64_decoded_size(base64_encode(bytes)), bytes.size());
    bytes += static_cast<char>(n * 37 + 255);
  }
  EXPECT_EQ(base64_encode("\xff\x7f"), "/38=");
  EXPECT_EQ(*base64_decode("aGk="), "hi");
  for (const char* bad : {"aGk", "aGk=a", "aG=k", "a Gk=", "aGk\n", "aGl=", "aGk==", "====", "a-_k"}) {
    EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
  }
}

TEST(TwilioMessages, ReadsTwilioDocumentedStart) {
  const TwilioMessage m = parse_twilio_message(R"({
    "event": "start", "sequenceNumber": "1",
    "start": {"accountSid": "AC123", "streamSid": "MZ18ad3ab5a668481ce02b83e7395059f0", "callSid": "CA123",
              "tracks": ["inbound", "outbound"], "customParameters": {"FirstName": "Jane", "token": "t"},
              "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}},
    "streamSid": "MZ18ad3ab5a668481ce02b83e7395059f0"})");
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.event, TwilioEvent::kStart);
  EXPECT_EQ(m.stream_sid, "MZ18ad3ab5a668481ce02b83e7395059f0");
  EXPECT_EQ(m.start.call_sid, "CA123");
  EXPECT_EQ(m.start.account_sid, "AC123");
  ASSERT_EQ(m.start.tracks.size(), 2u);
  ASSERT_EQ(m.start.custom_parameters.size(), 2u);
  EXPECT_EQ(m.start.custom_parameters[0].first, "FirstName");
  EXPECT_EQ(m.start.custom_parameters[0].second, "Jane");
  EXPECT_EQ(check_media_format(m.start), "");
}

TEST(TwilioMessages, RefusesAnotherMediaFormatSayingWhich) {
  const TwilioMessage m = parse_twilio_message(
      R"({"event":"start","start":{"streamSid":"MZ1","mediaFormat":{"encoding":"audio/x-alaw","sampleRate":8000,"channels":1}}})");
  ASSERT_TRUE(m.ok) << m.error;
  const std::string why = check_media_format(m.start);
  EXPECT_NE(why.find("audio/x-alaw"), std::string::npos) << why;
  TwilioStart s = m.start;
  s.encoding = "audio/x-mulaw";
  s.sample_rate_hz = 16000;
  EXPECT_NE(check_media_format(s), "");
}

TEST(TwilioMessages, ReadsMediaDtmfMarkStopAndConnected) {
  const TwilioMessage media = parse_twilio_message(
      R"({"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"/38="},"streamSid":"MZ1"})");
  ASSERT_TRUE(media.ok) << media.error;
  EXPECT_EQ(media.payload, std::string("\xff\x7f"));
  EXPECT_EQ(media.track, "inbound");
  const TwilioMessage dtmf = parse_twilio_message(
      R"({"event":"dtmf","streamSid":"MZ1","sequenceNumber":"5","dtmf":{"track":"inbound_track","digit":"#"}})");
  ASSERT_TRUE(dtmf.ok) << dtmf.error;
  EXPECT_EQ(dtmf.digit, "#");
  const TwilioMessage mark =
      parse_twilio_message(R"({"event":"mark","sequenceNumber":"4","streamSid":"MZ1","mark":{"name":"bv-3"}})");
  ASSERT_TRUE(mark.ok) << mark.error;
  EXPECT_EQ(mark.mark_name, "bv-3");
  const TwilioMessage stop = parse_twilio_message(
      R"({"event":"stop","sequenceNumber":"5","streamSid":"MZ1","stop":{"accountSid":"AC1","callSid":"CA1"}})");
  ASSERT_TRUE(stop.ok) << stop.error;
  EXPECT_EQ(stop.event, TwilioEvent::kStop);
  const TwilioMessage connected = parse_twilio_message(R"({"event":"connected","protocol":"Call","version":"1.0.0"})");
  ASSERT_TRUE(connected.ok);
  EXPECT_EQ(connected.event, TwilioEvent::kConnected);
  const TwilioMessage later = parse_twilio_message(R"({"event":"someday","streamSid":"MZ1"})");
  ASSERT_TRUE(later.ok);
  EXPECT_EQ(later.event, TwilioEvent::kUnknown);
  EXPECT_EQ(later.event_name, "someday");
}

TEST(TwilioMessages, MalformedMessagesSayWhatIsWrong) {
  const auto error = [](const char* text) {
    const TwilioMessage m = parse_twilio_message(text);
    EXPECT_FALSE(m.ok) << text;
    return m.error;
  };
  EXPECT_NE(error(R"({"event":"media","media":{"payload":"not base64!"}})").find("base64"), std::string::npos);
  EXPECT_NE(error(R"({"event":"media","media":{}})").find("payload"), std::string::npos);
  EXPECT_NE(error(R"({"event":"media","media":{"payload":"","chunk":"x1"}})").find("chunk"), std::string::npos);
  EXPECT_NE(error(R"({"event":"start","start":{"mediaFormat":{}}})").find("streamSid"), std::string::npos);
  EXPECT_NE(error(R"({"event":"start","start":{"streamSid":"MZ"}})").find("mediaFormat"), std::string::npos);
  EXPECT_NE(error(R"({"event":"dtmf","dtmf":{"digit":"12"}})").find("digit"), std::string::npos);
  EXPECT_NE(error(R"({"event":"mark","mark":{}})").find("name"), std::string::npos);
  EXPECT_NE(error(R"(["event","media"])").find("event"), std::string::npos);
  EXPECT_NE(error("{\"event\":").find("not JSON"), std::string::npos);
  EXPECT_NE(error(R"({"event":"x","a":[[[[[[[[[[1]]]]]]]]]]})").find("nested"), std::string::npos);
  std::string many = R"({"event":"start","start":{"streamSid":"MZ","customParameters":{)";
  for (int i = 0; i < 65; ++i) many += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\":\"v\"";
  many += R"(},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}})";
  EXPECT_NE(error(many.c_str()).find("more than 64"), std::string::npos);
}

TEST(TwilioMessages, WritesWhatTwilioTakes) {
  const auto media = nlohmann::json::parse(twilio_media_message("MZ1", std::string("\xff\x7f")));
  EXPECT_EQ(media["event"], "media");
  EXPECT_EQ(media["streamSid"], "MZ1");
  EXPECT_EQ(media["media"]["payload"], "/38=");
  const auto mark = nlohmann::json::parse(twilio_mark_message("MZ1", "bv-\"7\""));
  EXPECT_EQ(mark["mark"]["name"], "bv-\"7\"");
  const auto clear = nlohmann::json::parse(twilio_clear_message("MZ1"));
  EXPECT_EQ(clear, nlohmann::json({{"event", "clear"}, {"streamSid", "MZ1"}}));
}

}  // namespace
}  // namespace brisvox::server
