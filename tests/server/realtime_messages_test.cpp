// OpenAI Realtime transcription-session messages (server/realtime_messages.h), against the shapes of
// OpenAI's API reference (the `openai` package's types/realtime): client events read, session
// updates applied field by field, bad values refused naming OpenAI's `param`, server events written.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/base64.h"
#include "server/realtime_handler.h"
#include "server/realtime_messages.h"

namespace brisvox::server {
namespace {

using nlohmann::json;

RealtimeClientEvent parse(const std::string& text, const RealtimeSession& current = {}) {
  return parse_realtime_event(text, current);
}

TEST(RealtimeMessages, ReadsAppendCommitAndClear) {
  const RealtimeClientEvent a =
      parse(R"({"type":"input_audio_buffer.append","event_id":"e1","audio":")" + base64_encode("\x01\x02\x03\x04") + "\"}");
  ASSERT_FALSE(a.problem) << a.problem->message;
  EXPECT_EQ(a.type, RealtimeClientType::kAppend);
  EXPECT_EQ(a.event_id, "e1");
  EXPECT_EQ(a.audio, "\x01\x02\x03\x04");
  EXPECT_EQ(parse(R"({"type":"input_audio_buffer.commit"})").type, RealtimeClientType::kCommit);
  EXPECT_EQ(parse(R"({"type":"input_audio_buffer.clear"})").type, RealtimeClientType::kClear);
}

TEST(RealtimeMessages, DefaultSessionIsOpenAisDefaults) {
  const RealtimeSession s;
  EXPECT_EQ(s.encoding, SampleEncoding::kPcmS16le);
  EXPECT_EQ(s.sample_rate_hz, 24000);
  ASSERT_TRUE(s.turn_detection);
  EXPECT_EQ(s.turn_detection->threshold, 0.5);
  EXPECT_EQ(s.turn_detection->prefix_padding_ms, 300);
  EXPECT_EQ(s.turn_detection->silence_duration_ms, 500);
}

TEST(RealtimeMessages, SessionUpdateAppliesOnlyWhatItNames) {
  RealtimeSession current;
  current.transcription = RealtimeTranscription{"whisper-1", "en", ""};
  RealtimeClientEvent u = parse(R"({"type":"session.update","session":{"type":"transcription","audio":{"input":{
      "format":{"type":"audio/pcma"},"turn_detection":{"type":"server_vad","silence_duration_ms":800}}}}})",
                                current);
  ASSERT_FALSE(u.problem) << u.problem->message;
  EXPECT_EQ(u.session.encoding, SampleEncoding::kAlaw);
  EXPECT_EQ(u.session.sample_rate_hz, 8000);
  EXPECT_EQ(u.session.turn_detection->silence_duration_ms, 800);
  EXPECT_EQ(u.session.turn_detection->prefix_padding_ms, 300);  // kept
  EXPECT_EQ(u.session.transcription, current.transcription);    // not named: kept

  u = parse(R"({"type":"session.update","session":{"audio":{"input":{"turn_detection":null,"transcription":null,
      "noise_reduction":{"type":"near_field"}}}}})", current);
  ASSERT_FALSE(u.problem) << u.problem->message;
  EXPECT_FALSE(u.session.turn_detection);
  EXPECT_FALSE(u.session.transcription);

  u = parse(R"({"type":"session.update","session":{"audio":{"input":{"transcription":{"model":"gpt-4o-transcribe",
      "language":null,"prompt":"names: Brisvox"},"format":{"type":"audio/pcm","rate":24000}}}}})", current);
  ASSERT_FALSE(u.problem) << u.problem->message;
  EXPECT_EQ(u.session.transcription->model, "gpt-4o-transcribe");
  EXPECT_EQ(u.session.transcription->language, "");
  EXPECT_EQ(u.session.transcription->prompt, "names: Brisvox");
  EXPECT_EQ(u.session.sample_rate_hz, 24000);
}

TEST(RealtimeMessages, RefusesBadValuesNamingTheParameter) {
  const struct {
    const char* text;
    const char* param;
  } cases[] = {
      {R"({"type":"session.update","session":{"type":"realtime"}})", "session.type"},
      {R"({"type":"session.update"})", "session"},
      {R"({"type":"session.update","session":{"audio":{"input":{"format":{"type":"audio/pcm","rate":16000}}}}})",
       "session.audio.input.format.rate"},
      {R"({"type":"session.update","session":{"audio":{"input":{"format":{"type":"audio/opus"}}}}})",
       "session.audio.input.format.type"},
      {R"({"type":"session.update","session":{"audio":{"input":{"turn_detection":{"type":"vad"}}}}})",
       "session.audio.input.turn_detection.type"},
      {R"({"type":"session.update","session":{"audio":{"input":{"turn_detection":{"type":"semantic_vad","eagerness":"eager"}}}}})",
       "session.audio.input.turn_detection.eagerness"},
      {R"({"type":"session.update","session":{"audio":{"input":{"turn_detection":{"type":"server_vad","threshold":1.5}}}}})",
       "session.audio.input.turn_detection.threshold"},
      {R"({"type":"session.update","session":{"audio":{"input":{"turn_detection":{"type":"server_vad","silence_duration_ms":-1}}}}})",
       "session.audio.input.turn_detection.silence_duration_ms"},
      {R"({"type":"session.update","session":{"audio":{"input":{"turn_detection":{"type":"server_vad","prefix_padding_ms":1e9}}}}})",
       "session.audio.input.turn_detection.prefix_padding_ms"},
      {R"({"type":"session.update","session":{"audio":{"input":{"transcription":{"language":"en"}}}}})",
       "session.audio.input.transcription.model"},
      {R"({"type":"input_audio_buffer.append","audio":"***"})", "audio"},
      {R"({"type":"input_audio_buffer.append"})", "audio"},
      {R"({"type":"response.create"})", "type"},
      {R"({"event_id":"x"})", "type"},
  };
  for (const auto& c : cases) {
    const RealtimeClientEvent e = parse(c.text);
    ASSERT_TRUE(e.problem) << c.text;
    EXPECT_EQ(e.problem->param, c.param) << c.text;
    EXPECT_FALSE(e.problem->message.empty());
  }
  for (const char* bad : {"", "[", "[]", "\"x\"", "{\"type\":1}", "[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]"}) {
    EXPECT_TRUE(parse(bad).problem) << bad;
  }
}

TEST(RealtimeMessages, SemanticVadIsSmartTurnsAndNeedsItsModel) {
  const RealtimeClientEvent u = parse(
      R"({"type":"session.update","session":{"audio":{"input":{"turn_detection":{"type":"semantic_vad","eagerness":"low"}}}}})");
  ASSERT_FALSE(u.problem) << u.problem->message;
  ASSERT_TRUE(u.session.turn_detection);
  EXPECT_EQ(u.session.turn_detection->type, RealtimeVad::Type::kSemanticVad);
  const json j = json::parse(realtime_session_json(u.session, "sess_1"));
  EXPECT_EQ(j["audio"]["input"]["turn_detection"], (json{{"type", "semantic_vad"}, {"eagerness", "low"}}));

  EngineConfig engine;  // Silero only
  try {
    (void)realtime_stream_config(engine, u.session);
    FAIL() << "semantic_vad without a Smart Turn model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--turn-model"), std::string::npos) << e.what();
  }
  engine.models.push_back(ModelSpec::smart_turn());
  const StreamConfig c = realtime_stream_config(engine, u.session);
  ASSERT_TRUE(c.turn);
  EXPECT_EQ(c.turn->params.max_silence_ms, 8000);  // low: OpenAI's longest wait
  EXPECT_FALSE(c.stt);                             // no transcription asked for
  RealtimeSession server_vad;
  EXPECT_FALSE(realtime_stream_config(engine, server_vad).turn);
}

TEST(RealtimeMessages, TheTranscriptionsDecodingFollowsTheModelNameAndTheServer) {
  EngineConfig engine;
  engine.models.push_back(ModelSpec::whisper("tiny.en"));
  RealtimeSession s;
  s.transcription = RealtimeTranscription{"whisper-1", "en", ""};
  StreamConfig c = realtime_stream_config(engine, s, 500, WhisperWindow::kFit);
  ASSERT_TRUE(c.stt);
  EXPECT_EQ(c.stt->partial_interval_ms, 0);  // whisper-1: the transcript as one delta
  EXPECT_EQ(c.stt->window, WhisperWindow::kFit);
  s.transcription->model = "gpt-4o-transcribe";
  c = realtime_stream_config(engine, s, 500);
  EXPECT_EQ(c.stt->partial_interval_ms, 500);  // deltas while the speech goes on
  EXPECT_EQ(c.stt->window, WhisperWindow::kFull);
  EXPECT_EQ(realtime_stream_config(engine, s, 0).stt->partial_interval_ms, 0);
  // A prompt needs decoder room the server gives its model (--stt-prompt-tokens).
  s.transcription->prompt = "Dashwood";
  try {
    (void)realtime_stream_config(engine, s, 500);
    FAIL() << "a prompt without room for one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--stt-prompt-tokens"), std::string::npos) << e.what();
  }
  engine.models.back().options["prompt_tokens"] = "64";
  EXPECT_EQ(realtime_stream_config(engine, s, 500).stt->decode.prompt, "Dashwood");
}

TEST(RealtimeMessages, KeepsTheClientsEventIdForItsError) {
  const RealtimeClientEvent e = parse(R"({"type":"input_audio_buffer.append","event_id":"mine","audio":"!"})");
  ASSERT_TRUE(e.problem);
  EXPECT_EQ(e.event_id, "mine");
  const json j = json::parse(realtime_error("event_9", "invalid_request_error", *e.problem, e.event_id));
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["event_id"], "event_9");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["code"], "invalid_value");
  EXPECT_EQ(j["error"]["param"], "audio");
  EXPECT_EQ(j["error"]["event_id"], "mine");
}

TEST(RealtimeMessages, WritesServerEventsInOpenAisShape) {
  RealtimeSession s;
  s.transcription = RealtimeTranscription{"whisper-1", "", ""};
  json j = json::parse(realtime_session_event("session.created", "event_1", s, "sess_1"));
  EXPECT_EQ(j["type"], "session.created");
  EXPECT_EQ(j["session"]["type"], "transcription");
  EXPECT_EQ(j["session"]["audio"]["input"]["format"], (json{{"type", "audio/pcm"}, {"rate", 24000}}));
  EXPECT_TRUE(j["session"]["audio"]["input"]["noise_reduction"].is_null());
  EXPECT_TRUE(j["session"]["audio"]["input"]["transcription"]["language"].is_null());
  EXPECT_EQ(j["session"]["audio"]["input"]["turn_detection"]["type"], "server_vad");
  s.encoding = SampleEncoding::kMulaw;
  s.turn_detection.reset();
  j = json::parse(realtime_session_json(s, "sess_1"));
  EXPECT_EQ(j["audio"]["input"]["format"], (json{{"type", "audio/pcmu"}}));
  EXPECT_TRUE(j["audio"]["input"]["turn_detection"].is_null());

  j = json::parse(realtime_speech_started("event_2", 1230, "item_1"));
  EXPECT_EQ(j, (json{{"type", "input_audio_buffer.speech_started"}, {"event_id", "event_2"},
                     {"audio_start_ms", 1230}, {"item_id", "item_1"}}));
  j = json::parse(realtime_committed("event_3", "item_2", ""));
  EXPECT_TRUE(j["previous_item_id"].is_null());
  j = json::parse(realtime_transcription_completed("event_4", "item_2", "Hello.", 1.23456));
  EXPECT_EQ(j["transcript"], "Hello.");
  EXPECT_EQ(j["content_index"], 0);
  EXPECT_EQ(j["usage"], (json{{"type", "duration"}, {"seconds", 1.235}}));
  j = json::parse(realtime_transcription_failed("event_5", "item_2", "inference_timeout", "took too long"));
  EXPECT_EQ(j["error"]["code"], "inference_timeout");
  // A peer's invalid UTF-8 never makes the answer invalid JSON.
  EXPECT_NO_THROW(json::parse(realtime_transcription_delta("event_6", "item_2", "\xff\xfe")));
}

}  // namespace
}  // namespace brisvox::server
