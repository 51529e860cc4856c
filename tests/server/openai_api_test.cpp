// OpenAI's audio API's translation (server/openai_api.h): model names, the error shape, the
// transcription form's rules and the answers built from a result.
#include "server/openai_api.h"
#include "server/openai_speech.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace brisvox::server {
namespace {

EngineConfig stt_and_tts() {
  EngineConfig c;
  c.models = {ModelSpec::silero_vad(), ModelSpec::whisper("tiny.en", "stt"), ModelSpec::piper_tts("joe", "tts")};
  return c;
}

const std::string kType = "multipart/form-data; boundary=XyZ";

std::string form(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string body;
  for (const auto& [name, value] : fields) {
    body += "--XyZ\r\nContent-Disposition: form-data; name=\"" + name + "\"";
    if (name == "file") body += "; filename=\"a.wav\"";
    body += "\r\n\r\n" + value + "\r\n";
  }
  return body + "--XyZ--\r\n";
}

OpenAiError refusal(const std::string& body) {
  std::string_view audio;
  try {
    parse_transcription_form(stt_and_tts(), body, kType, audio);
  } catch (const OpenAiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

TEST(OpenAiApi, StockNamesMapToTheConfiguredModels) {
  const EngineConfig c = stt_and_tts();
  for (const char* name : {"whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe", "stt"}) {
    EXPECT_EQ(map_model_name(c, ModelFamily::kWhisper, name), "stt") << name;
  }
  for (const char* name : {"tts-1", "tts-1-hd", "gpt-4o-mini-tts", "tts"}) {
    EXPECT_EQ(map_model_name(c, ModelFamily::kPiperTts, name), "tts") << name;
  }
  EXPECT_EQ(map_model_name(c, ModelFamily::kWhisper, "tts-1"), std::nullopt);
  EXPECT_EQ(map_model_name(c, ModelFamily::kWhisper, "tts"), std::nullopt);
  EXPECT_EQ(map_model_name(c, ModelFamily::kWhisper, "whisper-2"), std::nullopt);
  EngineConfig vad_only;
  vad_only.models = {ModelSpec::silero_vad()};
  EXPECT_EQ(map_model_name(vad_only, ModelFamily::kWhisper, "whisper-1"), std::nullopt);
}

TEST(OpenAiApi, ModelsListHasOwnAndStockNames) {
  const auto j = nlohmann::json::parse(models_list_json(stt_and_tts()));
  EXPECT_EQ(j["object"], "list");
  std::vector<std::string> ids;
  for (const auto& m : j["data"]) {
    EXPECT_EQ(m["object"], "model");
    ids.push_back(m["id"]);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"stt", "whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe",
                                           "gpt-4o-mini-transcribe-2025-12-15", "gpt-transcribe", "gpt-live-transcribe",
                                           "gpt-realtime-whisper", "tts", "tts-1", "tts-1-hd", "gpt-4o-mini-tts"}));
}

TEST(OpenAiApi, ErrorShape) {
  const auto j = nlohmann::json::parse(openai_error_body(404, "no such model", "model", "model_not_found"));
  EXPECT_EQ(j["error"]["message"], "no such model");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  const auto n = nlohmann::json::parse(openai_error_body(503, "busy"));
  EXPECT_EQ(n["error"]["type"], "server_error");
  EXPECT_TRUE(n["error"]["param"].is_null() && n["error"]["code"].is_null());
}

TEST(OpenAiApi, BrisvoxErrorsBecomeOpenAiShaped) {
  const auto j = nlohmann::json::parse(
      to_openai_error(413, R"({"error":{"code":"payload_too_large","message":"the body is larger"}})"));
  EXPECT_EQ(j["error"]["code"], "payload_too_large");
  EXPECT_EQ(j["error"]["message"], "the body is larger");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(j["error"]["param"].is_null());
  const auto k = nlohmann::json::parse(to_openai_error(401, R"({"error":{"code":"unauthorized","message":"m"}})"));
  EXPECT_EQ(k["error"]["code"], "invalid_api_key");
  // Already OpenAI's, or not an error document: as it is.
  const std::string openai = openai_error_body(400, "x", "file");
  EXPECT_EQ(to_openai_error(400, openai), openai);
  EXPECT_EQ(to_openai_error(400, "not json"), "not json");
}

TEST(OpenAiApi, OpenAiPaths) {
  EXPECT_TRUE(is_openai_path("/v1/audio/transcriptions"));
  EXPECT_TRUE(is_openai_path("/v1/audio/speech"));
  EXPECT_TRUE(is_openai_path("/v1/models"));
  EXPECT_FALSE(is_openai_path("/v1/transcribe"));
  EXPECT_FALSE(is_openai_path("/v1/modelsx"));
}

TEST(OpenAiApi, TranscriptionFormAccepted) {
  std::string_view audio;
  const std::string body = form({{"model", "whisper-1"}, {"language", "en"}, {"prompt", "names"},
                                 {"response_format", "verbose_json"}, {"temperature", "0.2"},
                                 {"timestamp_granularities[]", "segment"}, {"include[]", "logprobs"},
                                 {"file", "RIFFdata"}});
  const TranscriptionForm f = parse_transcription_form(stt_and_tts(), body, kType, audio);
  EXPECT_EQ(audio, "RIFFdata");
  EXPECT_EQ(f.model, "stt");
  EXPECT_EQ(f.language, "en");
  EXPECT_EQ(f.format, OpenAiTranscriptFormat::kVerboseJson);
  EXPECT_EQ(f.filename, "a.wav");
  EXPECT_FALSE(f.stream);
  const TranscriptionForm s =
      parse_transcription_form(stt_and_tts(), form({{"file", "x"}, {"model", "stt"}, {"stream", "true"}}), kType, audio);
  EXPECT_TRUE(s.stream);
  EXPECT_EQ(s.format, OpenAiTranscriptFormat::kJson);
}

TEST(OpenAiApi, TranscriptionFormRefusals) {
  EXPECT_EQ(refusal(form({{"model", "whisper-1"}})).param, "file");
  EXPECT_EQ(refusal(form({{"file", ""}, {"model", "whisper-1"}})).param, "file");
  EXPECT_EQ(refusal(form({{"file", "x"}})).param, "model");
  const OpenAiError unknown = refusal(form({{"file", "x"}, {"model", "whisper-2"}}));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.code, "model_not_found");
  EXPECT_EQ(refusal(form({{"file", "x"}, {"model", "whisper-1"}, {"response_format", "mp4"}})).param,
            "response_format");
  EXPECT_EQ(refusal(form({{"file", "x"}, {"model", "whisper-1"}, {"temperature", "1.5"}})).param, "temperature");
  EXPECT_EQ(refusal(form({{"file", "x"}, {"model", "whisper-1"}, {"temperature", "hot"}})).param, "temperature");
  EXPECT_EQ(refusal(form({{"file", "x"}, {"model", "whisper-1"}, {"stream", "yes"}})).param, "stream");
  // OpenAI's rules: granularities only with verbose_json.
  EXPECT_EQ(refusal(form({{"file", "x"}, {"model", "whisper-1"}, {"timestamp_granularities[]", "segment"}})).param,
            "timestamp_granularities");
  EXPECT_EQ(refusal(form({{"file", "x"}, {"model", "whisper-1"}, {"timestamp_granularities[]", "word"}})).param,
            "timestamp_granularities");
  EXPECT_EQ(refusal(form({{"file", "x"}, {"model", "whisper-1"}, {"response_format", "verbose_json"},
                          {"timestamp_granularities[]", "sentence"}}))
                .param,
            "timestamp_granularities");
  EXPECT_EQ(refusal(form({{"file", "x"}, {"model", "whisper-1"}, {"stream", "true"}, {"response_format", "srt"}})).param,
            "stream");
  EXPECT_EQ(refusal("--XyZ\r\nno end").status, 400);
  std::string_view audio;
  EXPECT_THROW(parse_transcription_form(stt_and_tts(), "RIFF", "audio/wav", audio), OpenAiError);
}

OfflineResult two_segments() {
  OfflineResult r;
  r.duration_s = 10;
  TranscriptSegment a{1.0, 2.5, {}};
  a.transcript.text = " Hello there.";
  a.transcript.avg_logprob = -0.2f;
  a.transcript.no_speech_prob = 0.01f;
  TranscriptSegment silent{3.0, 4.0, {}};
  silent.transcript.no_speech = true;
  TranscriptSegment b{5.0, 7.25, {}};
  b.transcript.text = " How are you?";
  r.transcripts = {a, silent, b};
  return r;
}

TEST(OpenAiApi, VerboseJson) {
  const OpenAiBody out = render_transcription(two_segments(), OpenAiTranscriptFormat::kVerboseJson, "en");
  EXPECT_EQ(out.content_type, "application/json");
  const auto j = nlohmann::json::parse(out.body);
  EXPECT_EQ(j["task"], "transcribe");
  EXPECT_EQ(j["language"], "english");
  EXPECT_EQ(j["duration"], 10.0);
  EXPECT_EQ(j["text"], "Hello there. How are you?");
  ASSERT_EQ(j["segments"].size(), 2u);  // the no-speech segment is left out, as in the text
  EXPECT_EQ(j["segments"][0]["id"], 0);
  EXPECT_EQ(j["segments"][0]["start"], 1.0);
  EXPECT_EQ(j["segments"][0]["end"], 2.5);
  EXPECT_EQ(j["segments"][0]["seek"], 100);
  EXPECT_EQ(j["segments"][0]["text"], "Hello there.");
  EXPECT_FLOAT_EQ(j["segments"][0]["avg_logprob"].get<float>(), -0.2f);
  EXPECT_EQ(j["segments"][1]["id"], 1);
  EXPECT_EQ(j["segments"][1]["text"], "How are you?");
  EXPECT_FALSE(j.contains("words"));
}

TEST(OpenAiApi, OtherFormats) {
  const OfflineResult r = two_segments();
  EXPECT_EQ(nlohmann::json::parse(render_transcription(r, OpenAiTranscriptFormat::kJson, "").body),
            (nlohmann::json{{"text", "Hello there. How are you?"}}));
  EXPECT_EQ(render_transcription(r, OpenAiTranscriptFormat::kText, "").body, "Hello there. How are you?\n");
  const std::string srt = render_transcription(r, OpenAiTranscriptFormat::kSrt, "").body;
  EXPECT_NE(srt.find("00:00:01,000 --> 00:00:02,500"), std::string::npos) << srt;
  const std::string vtt = render_transcription(r, OpenAiTranscriptFormat::kVtt, "").body;
  EXPECT_EQ(vtt.rfind("WEBVTT", 0), 0u) << vtt;
  EXPECT_NE(vtt.find("00:00:05.000 --> 00:00:07.250"), std::string::npos) << vtt;
}

TEST(OpenAiApi, StreamEventsConcatenateToTheText) {
  const std::string events = transcription_events(two_segments());
  EXPECT_EQ(events,
            "data: {\"type\":\"transcript.text.delta\",\"delta\":\"Hello there.\"}\n\n"
            "data: {\"type\":\"transcript.text.delta\",\"delta\":\" How are you?\"}\n\n"
            "data: {\"type\":\"transcript.text.done\",\"text\":\"Hello there. How are you?\"}\n\n");
}

nlohmann::json tts_body(const std::string& openai) {
  return nlohmann::json::parse(openai_speech_to_tts_body(stt_and_tts(), openai));
}

OpenAiError speech_refusal(const std::string& openai) {
  try {
    openai_speech_to_tts_body(stt_and_tts(), openai);
  } catch (const OpenAiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << openai;
  return {};
}

TEST(OpenAiApi, SpeechBodyBecomesTtsBody) {
  EXPECT_EQ(tts_body(R"({"model":"tts-1","input":"Hi.","voice":"alloy"})"),
            (nlohmann::json{{"text", "Hi."}, {"format", "wav"}, {"sample_rate", 24000}}));
  EXPECT_EQ(tts_body(R"({"model":"tts","input":"Hi.","voice":"joe","response_format":"pcm","speed":2,
                         "stream_format":"audio","instructions":"cheerful"})"),
            (nlohmann::json{{"text", "Hi."}, {"format", "raw"}, {"sample_rate", 24000}, {"length_scale", 0.5}}));
}

TEST(OpenAiApi, SpeechRefusals) {
  EXPECT_EQ(speech_refusal(R"({"input":"Hi.","voice":"alloy"})").param, "model");
  EXPECT_EQ(speech_refusal(R"({"model":"tts-9","input":"Hi.","voice":"alloy"})").status, 404);
  EXPECT_EQ(speech_refusal(R"({"model":"tts-1","voice":"alloy"})").param, "input");
  EXPECT_EQ(speech_refusal(R"({"model":"tts-1","input":"Hi.","voice":"robot"})").param, "voice");
  EXPECT_EQ(speech_refusal(R"({"model":"tts-1","input":3,"voice":"alloy"})").param, "input");
  for (const char* format : {"aac", "ogg", "MP3"}) {
    const OpenAiError e = speech_refusal(
        std::string(R"({"model":"tts-1","input":"Hi.","voice":"alloy","response_format":")") + format + "\"}");
    EXPECT_EQ(e.param, "response_format") << format;
    EXPECT_NE(e.message.find("mp3, opus, flac, wav or pcm"), std::string::npos) << e.message;
  }
  EXPECT_NE(speech_refusal(R"({"model":"tts-1","input":"Hi.","voice":"alloy","response_format":"aac"})")
                .message.find("no AAC encoder"),
            std::string::npos);
  EXPECT_EQ(speech_refusal(R"({"model":"tts-1","input":"Hi.","voice":"alloy","speed":0.1})").param, "speed");
  EXPECT_EQ(speech_refusal(R"({"model":"tts-1","input":"Hi.","voice":"alloy","speed":"fast"})").param, "speed");
  EXPECT_EQ(speech_refusal(R"({"model":"tts-1","input":"Hi.","voice":"alloy","stream_format":"events"})").param,
            "stream_format");
  EXPECT_EQ(speech_refusal("[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]").status, 400);
  EXPECT_EQ(speech_refusal("not json").status, 400);
}

}  // namespace
}  // namespace brisvox::server
