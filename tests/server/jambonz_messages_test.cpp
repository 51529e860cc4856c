// jambonz's listen-verb messages (server/jambonz_messages.h), against the frames of jambonz's listen
// reference: the preamble (sampleRate, mixType, the call's attributes and the verb's metadata at its
// top level), dtmf with string values, a mark's echo with "playout" or "cleared", playDone; and the
// mark and killAudio brisvox writes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <string>

#include "server/jambonz_messages.h"

namespace brisvox::server {
namespace {

TEST(JambonzMessages, ReadsThePreambleWithTheCallsAttributesAndMetadata) {
  const StreamMessage m = parse_jambonz_preamble(
      R"({"sampleRate":8000,"mixType":"mono","callSid":"5b8c7a3e-1111-4222-8333-444455556666",)"
      R"("direction":"inbound","from":"+15551230000","to":"+15557650000","accountSid":"acc-9",)"
      R"("sipStatus":200,"customerData":{"plan":"gold"},"token":"t","agent":"billing"})");
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.event, StreamEvent::kStart);
  EXPECT_EQ(m.start.sample_rate_hz, 8000);
  EXPECT_EQ(m.start.channels, 1);
  EXPECT_EQ(m.start.encoding, "audio/l16");
  EXPECT_EQ(m.start.call_sid, "5b8c7a3e-1111-4222-8333-444455556666");
  EXPECT_EQ(m.start.account_sid, "acc-9");
  std::map<std::string, std::string> keys(m.start.custom_parameters.begin(), m.start.custom_parameters.end());
  EXPECT_EQ(keys.at("from"), "+15551230000");
  EXPECT_EQ(keys.at("agent"), "billing");
  EXPECT_EQ(keys.at("token"), "t");
  EXPECT_EQ(keys.at("sipStatus"), "200");
  EXPECT_EQ(keys.at("customerData"), R"({"plan":"gold"})");
  EXPECT_EQ(keys.count("sampleRate"), 0u);
  EXPECT_EQ(keys.count("mixType"), 0u);
  EXPECT_EQ(check_jambonz_media_format(m.start, 8000), "");
  const std::string why = check_jambonz_media_format(m.start, 16000);
  EXPECT_NE(why.find("sampleRate is 8000"), std::string::npos) << why;
  EXPECT_NE(why.find("?rate="), std::string::npos) << why;
}

TEST(JambonzMessages, ThePreamblesMixMustBeTheCallerAlone) {
  const StreamMessage stereo = parse_jambonz_preamble(R"({"sampleRate":16000,"mixType":"stereo","callSid":"c"})");
  ASSERT_TRUE(stereo.ok) << stereo.error;
  EXPECT_EQ(stereo.start.channels, 2);
  EXPECT_NE(check_jambonz_media_format(stereo.start, 16000).find("mixType"), std::string::npos);
  const StreamMessage mixed = parse_jambonz_preamble(R"({"sampleRate":16000,"mixType":"mixed"})");
  ASSERT_TRUE(mixed.ok) << mixed.error;
  EXPECT_NE(check_jambonz_media_format(mixed.start, 16000).find("\"mono\""), std::string::npos);
  // mixType is the verb's default, mono, when absent.
  const StreamMessage plain = parse_jambonz_preamble(R"({"sampleRate":16000})");
  ASSERT_TRUE(plain.ok) << plain.error;
  EXPECT_EQ(check_jambonz_media_format(plain.start, 16000), "");
}

TEST(JambonzMessages, ABadPreambleSaysWhy) {
  for (const char* text : {R"({"mixType":"mono"})", R"({"sampleRate":"8000"})", R"({"sampleRate":-8000})",
                           R"({"sampleRate":8000.5})", R"({"sampleRate":1e9})", R"({"sampleRate":8000,"mixType":3})",
                           R"([8000])", "not json", ""}) {
    const StreamMessage m = parse_jambonz_preamble(text);
    EXPECT_FALSE(m.ok) << text;
    EXPECT_FALSE(m.error.empty()) << text;
  }
  std::string many = R"({"sampleRate":8000)";
  for (int i = 0; i <= static_cast<int>(kMaxJambonzParameters); ++i) many += ",\"k" + std::to_string(i) + "\":1";
  EXPECT_NE(parse_jambonz_preamble(many + "}").error.find("more than"), std::string::npos);
  const std::string long_value = R"({"sampleRate":8000,"k":")" + std::string(kMaxJambonzParameterBytes + 1, 'x') + "\"}";
  EXPECT_NE(parse_jambonz_preamble(long_value).error.find("longer than"), std::string::npos);
}

TEST(JambonzMessages, ReadsDtmfMarksAndIgnoresWhatBrisvoxNeverAskedFor) {
  const StreamMessage dtmf = parse_jambonz_message(R"({"event":"dtmf","dtmf":"#","duration":"1600"})");
  ASSERT_TRUE(dtmf.ok) << dtmf.error;
  EXPECT_EQ(dtmf.event, StreamEvent::kDtmf);
  EXPECT_EQ(dtmf.digit, "#");
  const StreamMessage played = parse_jambonz_message(R"({"type":"mark","data":{"name":"bv-3","event":"playout"}})");
  ASSERT_TRUE(played.ok) << played.error;
  EXPECT_EQ(played.event, StreamEvent::kMark);
  EXPECT_EQ(played.mark_name, "bv-3");
  EXPECT_FALSE(played.mark_cleared);
  const StreamMessage cleared = parse_jambonz_message(R"({"type":"mark","data":{"name":"bv-4","event":"cleared"}})");
  ASSERT_TRUE(cleared.ok) << cleared.error;
  EXPECT_TRUE(cleared.mark_cleared);
  const StreamMessage done = parse_jambonz_message(R"({"type":"playDone","data":{"id":"a","playbackSeconds":2}})");
  ASSERT_TRUE(done.ok) << done.error;
  EXPECT_EQ(done.event, StreamEvent::kUnknown);
  EXPECT_EQ(done.event_name, "playDone");
}

TEST(JambonzMessages, ABadMessageSaysWhy) {
  for (const char* text : {R"({"event":"dtmf"})", R"({"event":"dtmf","dtmf":"55"})", R"({"event":"dtmf","dtmf":"x"})",
                           R"({"event":"dtmf","dtmf":"5","duration":[1]})", R"({"type":"mark"})",
                           R"({"type":"mark","data":{"name":"a"}})", R"({"type":"mark","data":{"name":"a","event":"x"}})",
                           R"({"type":"mark","data":{"name":7,"event":"playout"}})", R"({"type":5})",
                           R"({"sampleRate":8000,"callSid":"c"})", "[]", "{"}) {
    const StreamMessage m = parse_jambonz_message(text);
    EXPECT_FALSE(m.ok) << text;
    EXPECT_FALSE(m.error.empty()) << text;
  }
  // A second preamble is not a message: it says what only the first frame may be.
  EXPECT_NE(parse_jambonz_message(R"({"sampleRate":8000})").error.find("preamble"), std::string::npos);
}

TEST(JambonzMessages, WritesMarkAndKillAudio) {
  const auto mark = nlohmann::json::parse(jambonz_mark_message("bv-\"7\""));
  EXPECT_EQ(mark, nlohmann::json::parse(R"({"type":"mark","data":{"name":"bv-\"7\""}})"));
  EXPECT_EQ(nlohmann::json::parse(jambonz_kill_audio_message()), nlohmann::json::parse(R"({"type":"killAudio"})"));
}

}  // namespace
}  // namespace brisvox::server
