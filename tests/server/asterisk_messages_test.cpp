// Asterisk chan_websocket's control messages (server/asterisk_messages.h), against the messages of
// Asterisk's "WebSocket" channel driver page and the driver's source (channels/chan_websocket.c):
// both control_message_format's, plain-text and json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/asterisk_messages.h"

namespace brisvox::server {
namespace {

TEST(AsteriskMessages, ReadsMediaStartInPlainText) {
  const StreamMessage m = parse_asterisk_message(
      "MEDIA_START connection_id:e226e283-c90a-4ea9-9e37-389000b9ef47 channel:WebSocket/connection1-00000001 "
      "channel_id:1733400000.12 format:ulaw optimal_frame_size:160 ptime:20");
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.event, StreamEvent::kStart);
  EXPECT_EQ(m.event_name, "MEDIA_START");
  EXPECT_EQ(m.start.stream_sid, "e226e283-c90a-4ea9-9e37-389000b9ef47");
  EXPECT_EQ(m.start.call_sid, "1733400000.12");
  EXPECT_EQ(m.start.encoding, "ulaw");
  EXPECT_EQ(m.start.control_format, "plain-text");
  EXPECT_TRUE(m.start.custom_parameters.empty());
  EXPECT_EQ(check_asterisk_format(m.start, "ulaw"), "");
  const std::string why = check_asterisk_format(m.start, "slin16");
  EXPECT_NE(why.find("\"ulaw\""), std::string::npos) << why;
  EXPECT_NE(why.find("?format="), std::string::npos) << why;
  // The page's example, from releases before channel_id and ptime.
  const StreamMessage old = parse_asterisk_message(
      "MEDIA_START connection_id:e226e283-c90a-4ea9-9e37-389000b9ef47 channel:WebSocket/connectionid format:ulaw "
      "optimal_frame_size:160");
  ASSERT_TRUE(old.ok) << old.error;
  EXPECT_EQ(old.start.call_sid, "");
}

TEST(AsteriskMessages, ReadsMediaStartInJsonWithItsChannelVariables) {
  const StreamMessage m = parse_asterisk_message(
      R"({"event":"MEDIA_START","connection_id":"c1","channel":"WebSocket/c1-00000002","channel_id":"1733400000.13",)"
      R"("format":"slin16","optimal_frame_size":640,"ptime":20,"channel_variables":{"CUSTOMER":"42"}})");
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.event, StreamEvent::kStart);
  EXPECT_EQ(m.start.stream_sid, "c1");
  EXPECT_EQ(m.start.call_sid, "1733400000.13");
  EXPECT_EQ(m.start.encoding, "slin16");
  EXPECT_EQ(m.start.control_format, "json");
  ASSERT_EQ(m.start.custom_parameters.size(), 1u);
  EXPECT_EQ(m.start.custom_parameters[0], (std::pair<std::string, std::string>{"CUSTOMER", "42"}));
}

TEST(AsteriskMessages, ReadsDtmfMarksErrorsAndTheRest) {
  for (const char* text : {"DTMF_END digit:5 channel_id:1733400000.12", R"({"event":"DTMF_END","channel_id":"x","digit":"5"})"}) {
    const StreamMessage m = parse_asterisk_message(text);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_EQ(m.event, StreamEvent::kDtmf);
    EXPECT_EQ(m.digit, "5");
  }
  for (const char* text : {"MEDIA_BUFFERING_COMPLETED bv-3",
                           R"({"event":"MEDIA_BUFFERING_COMPLETED","channel_id":"x","correlation_id":"bv-3"})"}) {
    const StreamMessage m = parse_asterisk_message(text);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_EQ(m.event, StreamEvent::kMark);
    EXPECT_EQ(m.mark_name, "bv-3");
  }
  const StreamMessage bare = parse_asterisk_message("MEDIA_BUFFERING_COMPLETED");
  ASSERT_TRUE(bare.ok) << bare.error;
  EXPECT_EQ(bare.mark_name, "");  // none of brisvox's
  for (const char* text : {"ERROR channel_id:x error_text:Unable to parse JSON command",
                           R"({"event":"ERROR","channel_id":"x","error_text":"Unable to parse JSON command"})"}) {
    const StreamMessage m = parse_asterisk_message(text);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_EQ(m.event, StreamEvent::kError);
    EXPECT_NE(m.report.find("Unable to parse JSON command"), std::string::npos) << m.report;
  }
  for (const char* text : {"MEDIA_XOFF", "MEDIA_XON", "QUEUE_DRAINED", R"({"event":"MEDIA_XON","channel_id":"x"})",
                           "STATUS channel_id:x queue_length:43 xon_level:800 xoff_level:900 queue_full:false "
                           "bulk_media:true media_paused:false"}) {
    const StreamMessage m = parse_asterisk_message(text);
    ASSERT_TRUE(m.ok) << m.error;
    EXPECT_EQ(m.event, StreamEvent::kUnknown) << text;
  }
}

TEST(AsteriskMessages, MalformedMessagesSayWhatIsWrong) {
  const auto error = [](const std::string& text) {
    const StreamMessage m = parse_asterisk_message(text);
    EXPECT_FALSE(m.ok) << text;
    return m.error;
  };
  EXPECT_NE(error("").find("empty"), std::string::npos);
  EXPECT_NE(error("{").find("not JSON"), std::string::npos);
  EXPECT_NE(error(R"({"a":1})").find("event"), std::string::npos);
  EXPECT_NE(error("[1]").find("event"), std::string::npos);
  EXPECT_NE(error(R"({"event":"MEDIA_START"})").find("format"), std::string::npos);
  EXPECT_NE(error("MEDIA_START connection_id:x").find("no format"), std::string::npos);
  EXPECT_NE(error("MEDIA_START format:ulaw optimal_frame_size:lots").find("optimal_frame_size"), std::string::npos);
  EXPECT_NE(error("MEDIA_START format:ulaw junk").find("key:value"), std::string::npos);
  EXPECT_NE(error("DTMF_END digit:55").find("0-9"), std::string::npos);
  EXPECT_NE(error("DTMF_END channel_id:x").find("0-9"), std::string::npos);
  EXPECT_NE(error(R"({"event":"MEDIA_START","format":"ulaw","channel_variables":{"A":1}})").find("string"),
            std::string::npos);
  EXPECT_NE(error("MEDIA_START format:" + std::string(300, 'u')).find("256"), std::string::npos);
  EXPECT_EQ(error("DTMF_END digit:\x01\xff").find('\x01'), std::string::npos);  // printable
}

TEST(AsteriskMessages, TheFormatsItTakes) {
  EXPECT_EQ(asterisk_format("ulaw").encoding, "mulaw");
  EXPECT_EQ(asterisk_format("alaw").encoding, "alaw");
  EXPECT_EQ(asterisk_format("slin").sample_rate_hz, 8000);
  EXPECT_EQ(asterisk_format("slin16").sample_rate_hz, 16000);
  EXPECT_EQ(asterisk_format("slin16").encoding, "pcm_s16le");
  EXPECT_TRUE(asterisk_format("opus").encoding.empty());
  EXPECT_TRUE(asterisk_format("g722").encoding.empty());
}

TEST(AsteriskMessages, WritesCommandsInTheStartsFormat) {
  EXPECT_EQ(asterisk_command("FLUSH_MEDIA", false), "FLUSH_MEDIA");
  EXPECT_EQ(nlohmann::json::parse(asterisk_command("FLUSH_MEDIA", true)),
            nlohmann::json::parse(R"({"command":"FLUSH_MEDIA"})"));
  EXPECT_EQ(asterisk_stop_buffering("bv-12", false), "STOP_MEDIA_BUFFERING bv-12");
  EXPECT_EQ(nlohmann::json::parse(asterisk_stop_buffering("bv-12", true)),
            nlohmann::json::parse(R"({"command":"STOP_MEDIA_BUFFERING","correlation_id":"bv-12"})"));
  EXPECT_LE(asterisk_stop_buffering("bv-18446744073709551615", true).size(), 128u);  // Asterisk's limit
}

}  // namespace
}  // namespace brisvox::server
