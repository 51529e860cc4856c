// FreeSWITCH mod_audio_fork's messages (server/freeswitch_messages.h), against the module's README:
// the metadata (uuid_audio_fork's last argument, sent as the first text frame: read as a JSON
// object), the texts send_text and stop may send later (jambonz's DTMF event, or the application's
// own), and the playAudio, killAudio and disconnect brisvox writes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <string>

#include "server/base64.h"
#include "server/freeswitch_messages.h"

namespace brisvox::server {
namespace {

TEST(FreeswitchMessages, ReadsTheMetadataAsTheCallsParameters) {
  const StreamMessage m = parse_freeswitch_metadata(
      R"({"uuid":"7dd5e34e-5db4-4edb-a166-757e5d29b941","from":"+15551230000","to":"1000","token":"t",)"
      R"("attempt":2,"tags":["a","b"]})",
      16000);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.event, StreamEvent::kStart);
  EXPECT_EQ(m.start.sample_rate_hz, 16000);  // the url's: the module does not send its rate
  EXPECT_EQ(m.start.channels, 1);
  EXPECT_EQ(m.start.encoding, "audio/l16");
  EXPECT_EQ(m.start.call_sid, "7dd5e34e-5db4-4edb-a166-757e5d29b941");
  std::map<std::string, std::string> keys(m.start.custom_parameters.begin(), m.start.custom_parameters.end());
  EXPECT_EQ(keys.at("from"), "+15551230000");
  EXPECT_EQ(keys.at("token"), "t");  // the front checks it and keeps it from the application
  EXPECT_EQ(keys.at("attempt"), "2");
  EXPECT_EQ(keys.at("tags"), R"(["a","b"])");
}

TEST(FreeswitchMessages, RefusesMetadataThatIsNotOneJsonObject) {
  for (const char* text : {"caller 5551230000", "[1,2]", "\"x\"", "{", ""}) {
    const StreamMessage m = parse_freeswitch_metadata(text, 8000);
    EXPECT_FALSE(m.ok) << text;
    EXPECT_NE(m.error.find("must be one JSON object"), std::string::npos) << m.error;
  }
  EXPECT_NE(parse_freeswitch_metadata(R"({"uuid":7})", 8000).error.find("uuid must be a string"), std::string::npos);
  std::string many = "{";
  for (std::size_t i = 0; i <= kMaxFreeswitchParameters; ++i) many += "\"k" + std::to_string(i) + "\":1,";
  many.back() = '}';
  EXPECT_NE(parse_freeswitch_metadata(many, 8000).error.find("more than 64 keys"), std::string::npos);
  const std::string long_value = R"({"note":")" + std::string(kMaxFreeswitchParameterBytes + 1, 'x') + R"("})";
  EXPECT_NE(parse_freeswitch_metadata(long_value, 8000).error.find("longer than"), std::string::npos);
}

TEST(FreeswitchMessages, AStreamWithoutMetadataStartsWithNoParameters) {
  const StreamMessage m = freeswitch_start_without_metadata(8000);
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.event, StreamEvent::kStart);
  EXPECT_EQ(m.start.sample_rate_hz, 8000);
  EXPECT_TRUE(m.start.call_sid.empty() && m.start.custom_parameters.empty());
}

TEST(FreeswitchMessages, LaterTextsAreDtmfOrTheApplicationsOwn) {
  const StreamMessage dtmf = parse_freeswitch_text(R"({"event":"dtmf","dtmf":"#","duration":"1600"})");
  ASSERT_TRUE(dtmf.ok) << dtmf.error;
  EXPECT_EQ(dtmf.event, StreamEvent::kDtmf);
  EXPECT_EQ(dtmf.digit, "#");
  const StreamMessage bad = parse_freeswitch_text(R"({"event":"dtmf","dtmf":"12"})");
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.error.find("0-9"), std::string::npos) << bad.error;
  // send_text and stop's text are the FreeSWITCH application's: not the call's, not an error.
  for (const char* text : {"hangup by caller", R"({"reason":"normal"})", R"({"event":"other"})", "", "[]"}) {
    const StreamMessage m = parse_freeswitch_text(text);
    EXPECT_TRUE(m.ok) << text;
    EXPECT_EQ(m.event, StreamEvent::kUnknown) << text;
  }
}

TEST(FreeswitchMessages, WritesPlayAudioKillAudioAndDisconnectAsTheModuleReadsThem) {
  const std::string pcm("\x01\x00\xff\x7f", 4);
  const auto play = nlohmann::json::parse(freeswitch_play_audio_message(8000, pcm));
  EXPECT_EQ(play["type"], "playAudio");
  EXPECT_EQ(play["data"]["audioContentType"], "raw");
  EXPECT_EQ(play["data"]["sampleRate"], 8000);
  EXPECT_EQ(base64_decode(play["data"]["audioContent"].get<std::string>()), pcm);
  EXPECT_EQ(play["data"].size(), 3U);  // no textContent: the audio is the reply
  EXPECT_EQ(nlohmann::json::parse(freeswitch_kill_audio_message()), nlohmann::json({{"type", "killAudio"}}));
  EXPECT_EQ(nlohmann::json::parse(freeswitch_disconnect_message()), nlohmann::json({{"type", "disconnect"}}));
}

}  // namespace
}  // namespace brisvox::server
