// The text-to-speech request parsers of the server (tts_params.h): every key checked, the voice
// matched, the WebSocket messages.
#include <gtest/gtest.h>

#include "brisvox/error.h"
#include "server/tts_params.h"

namespace brisvox::server {
namespace {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(TtsParams, BodyWithEveryKey) {
  const TtsHttpRequest r = parse_tts_body(
      R"({"text":"Hi.","voice":"tts","sample_rate":16000,"format":"raw","length_scale":1.5,"noise_scale":0,)"
      R"("noise_w_scale":0.5,"speaker_id":2,"volume":0.5})");
  EXPECT_EQ(r.text, "Hi.");
  EXPECT_EQ(r.options.voice, "tts");
  EXPECT_EQ(r.options.speech.sample_rate_hz, 16000);
  EXPECT_TRUE(r.options.raw);
  EXPECT_FLOAT_EQ(static_cast<float>(r.options.speech.voice_options.at("length_scale")), 1.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(r.options.speech.voice_options.at("noise_scale")), 0.0f);
  EXPECT_FLOAT_EQ(static_cast<float>(r.options.speech.voice_options.at("noise_w_scale")), 0.5f);
  EXPECT_EQ(r.options.speech.voice_options.at("speaker_id"), 2);
  EXPECT_FLOAT_EQ(r.options.speech.volume, 0.5f);
  const TtsHttpRequest d = parse_tts_body(R"({"text":"Hi."})");
  EXPECT_FALSE(d.options.raw);
  EXPECT_EQ(d.options.speech.sample_rate_hz, 0);
  EXPECT_FALSE(d.options.speech.voice_options.contains("length_scale"));
}

TEST(TtsParams, BadBodiesNameTheKey) {
  EXPECT_NE(error_of([] { parse_tts_body("{}"); }).find("no \"text\""), std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_body("[1]"); }).find("JSON object"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_body("{"); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_body(R"({"text":1})"); }).find("\"text\" must be a string"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_body(R"({"text":"a","format":"aac"})"); }).find("\"format\""), std::string::npos);
  EXPECT_EQ(parse_tts_body(R"({"text":"a","format":"opus"})").options.container, AudioContainer::kOggOpus);
  EXPECT_FALSE(parse_tts_body(R"({"text":"a","format":"mp3"})").options.raw);
  EXPECT_NE(error_of([] { parse_tts_body(R"({"text":"a","sample_rate":1.5})"); }).find("sample_rate"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_body(R"({"text":"a","sample_rate":-1})"); }).find("0 to 768000"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_body(R"({"text":"a","volume":"loud"})"); }).find("volume"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_body(R"({"text":"a","pitch":2})"); }).find("unknown key \"pitch\""), std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_body("{\"text\":\"caf\xe9\"}"); }).find("not valid JSON"), std::string::npos);
}

TEST(TtsParams, Query) {
  const TtsOptions o = parse_tts_query("voice=en_US-joe-medium&sample_rate=8000&length_scale=0.9&token=x");
  EXPECT_EQ(o.voice, "en_US-joe-medium");
  EXPECT_EQ(o.speech.sample_rate_hz, 8000);
  EXPECT_FLOAT_EQ(static_cast<float>(o.speech.voice_options.at("length_scale")), 0.9f);
  EXPECT_NE(error_of([] { parse_tts_query("sample_rate=fast"); }).find("'sample_rate' must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_query("noise_scale=1e999"); }).find("'noise_scale' must be a number"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_tts_query("encoding=mulaw"); }).find("unknown query key 'encoding'"), std::string::npos);
  EXPECT_EQ(parse_tts_query("tag=say-1").tag, "say-1");
  EXPECT_EQ(parse_tts_query("").tag, "");
  EXPECT_NE(error_of([] { parse_tts_query("tag=a%20b"); }).find("'tag'"), std::string::npos);
}

TEST(TtsParams, VoiceMatching) {
  EngineConfig ec;
  EXPECT_FALSE(server_voice(ec));
  ec.models.push_back(ModelSpec::piper_tts("/voices/en_US-joe-medium.onnx"));
  const auto v = server_voice(ec);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->model, "tts");
  EXPECT_EQ(v->name, "en_US-joe-medium");
  EXPECT_TRUE(voice_matches("", *v));
  EXPECT_TRUE(voice_matches("tts", *v));
  EXPECT_TRUE(voice_matches("en_US-joe-medium", *v));
  EXPECT_FALSE(voice_matches("en_GB-alan-low", *v));
}

TEST(TtsParams, Messages) {
  TtsMessage m = parse_tts_message(R"({"type":"speak","text":"Hello.","id":"mine"})");
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.type, TtsMessageType::kSpeak);
  EXPECT_EQ(m.text, "Hello.");
  EXPECT_EQ(parse_tts_message(R"({"type":"cancel"})").type, TtsMessageType::kCancel);
  EXPECT_EQ(parse_tts_message(R"({"type":"close"})").type, TtsMessageType::kClose);
  for (const char* bad : {"", "speak", "[]", R"({"text":"x"})", R"({"type":"speak"})", R"({"type":"speak","text":3})",
                          R"({"type":"sing"})"}) {
    m = parse_tts_message(bad);
    EXPECT_FALSE(m.ok) << bad;
    EXPECT_FALSE(m.error.empty()) << bad;
  }
}

}  // namespace
}  // namespace brisvox::server
