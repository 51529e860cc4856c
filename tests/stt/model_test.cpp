// Model folders in the three layouts (generated models with the real contracts: see
// tools/whisper/make_whisper_test_models.py): detection, configuration, contract checks, and that
// the same weights decode alike in every layout.
#include "brisvox/models/stt/whisper_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "brisvox/audio/audio_file.h"
#include "brisvox/error.h"
#include "brisvox/models/stt/whisper_decoder.h"
#include "brisvox/models/stt/whisper_encoder.h"
#include "brisvox/models/stt/whisper_transcriber.h"
#include "stt_test_util.h"

namespace brisvox {
namespace {

std::string message_of(const std::function<void()>& f, ErrorCode expected) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(WhisperModel, DetectsEachLayoutAndReadsItsDimensions) {
  struct Case {
    std::string folder;
    WhisperLayout layout;
  };
  for (const std::string base : {"whisper-test-en", "whisper-test-multi"}) {
    const WhisperModel reference = WhisperModel::load(test::whisper_test_model(base));
    for (const Case& c : {Case{base, WhisperLayout::kBrisvox}, Case{base + "-sherpa", WhisperLayout::kSherpaOnnx},
                          Case{base + "-optimum", WhisperLayout::kOptimum}}) {
      SCOPED_TRACE(c.folder);
      const WhisperModel m = WhisperModel::load(test::whisper_test_model(c.folder));
      EXPECT_EQ(m.layout(), c.layout);
      const WhisperConfig& a = m.config();
      const WhisperConfig& b = reference.config();
      EXPECT_EQ(a.dims.n_text_state, b.dims.n_text_state);
      EXPECT_EQ(a.dims.n_text_head, b.dims.n_text_head);
      EXPECT_EQ(a.dims.n_text_layer, b.dims.n_text_layer);
      EXPECT_EQ(a.dims.n_audio_layer, b.dims.n_audio_layer);
      EXPECT_EQ(a.dims.n_audio_ctx, b.dims.n_audio_ctx);
      EXPECT_EQ(a.dims.n_text_ctx, b.dims.n_text_ctx);
      EXPECT_EQ(a.dims.n_vocab, b.dims.n_vocab);
      EXPECT_EQ(a.tokens.eot, b.tokens.eot);
      EXPECT_EQ(a.tokens.sot, b.tokens.sot);
      EXPECT_EQ(a.tokens.no_speech, b.tokens.no_speech);
      EXPECT_EQ(a.tokens.no_timestamps, b.tokens.no_timestamps);
      EXPECT_EQ(a.tokens.timestamp_begin, b.tokens.timestamp_begin);
      EXPECT_EQ(a.tokens.blank, b.tokens.blank);
      EXPECT_EQ(a.multilingual, b.multilingual);
      EXPECT_EQ(a.suppress_tokens, b.suppress_tokens);
      EXPECT_EQ(a.suppress_blank, b.suppress_blank);
      ASSERT_EQ(a.languages.size(), b.languages.size());
      for (int id = 0; id < a.tokens.eot; ++id) ASSERT_EQ(m.vocabulary().bytes(id), reference.vocabulary().bytes(id)) << id;
      EXPECT_EQ(m.supports_fit_window(), c.layout != WhisperLayout::kOptimum);
    }
  }
  const WhisperModel en = WhisperModel::load(test::whisper_test_model("whisper-test-en"));
  EXPECT_EQ(en.config().dims.n_text_state, 64);
  EXPECT_EQ(en.config().dims.n_text_layer, 2);
  EXPECT_FALSE(en.config().multilingual);
  const WhisperModel multi = WhisperModel::load(test::whisper_test_model("whisper-test-multi-sherpa"));
  EXPECT_EQ(multi.config().dims.n_text_state, 48);
  EXPECT_EQ(multi.config().dims.n_text_head, 3);
  EXPECT_EQ(multi.config().dims.n_audio_layer, 1);
  EXPECT_EQ(multi.config().dims.n_text_layer, 3);
  EXPECT_TRUE(multi.config().multilingual);
  EXPECT_EQ(multi.config().language_token("de"), multi.config().tokens.sot + 2);
}

TEST(WhisperModel, RealTinyEnConfiguration) {
  const WhisperModel m = WhisperModel::load(test::whisper_tiny_en());
  const WhisperConfig& c = m.config();
  EXPECT_EQ(m.layout(), WhisperLayout::kBrisvox);
  EXPECT_EQ(c.dims.n_vocab, 51864);
  EXPECT_EQ(c.dims.n_text_state, 384);
  EXPECT_EQ(c.dims.n_text_head, 6);
  EXPECT_EQ(c.dims.n_audio_layer, 4);
  EXPECT_EQ(c.dims.n_text_layer, 4);
  EXPECT_EQ(c.dims.n_audio_ctx, 1500);
  EXPECT_EQ(c.dims.n_text_ctx, 448);
  EXPECT_FALSE(c.multilingual);
  EXPECT_EQ(c.tokens.eot, 50256);
  EXPECT_EQ(c.tokens.sot, 50257);
  EXPECT_EQ(c.tokens.no_speech, 50361);  // <|nocaptions|> in the English-only vocabulary
  EXPECT_EQ(c.tokens.no_timestamps, 50362);
  EXPECT_EQ(c.suppress_tokens.size(), 90u);
  EXPECT_EQ(c.suppress_blank, (std::vector<int>{220, 50256}));
  for (const std::string& folder : {test::whisper_tiny_en_sherpa(), test::whisper_tiny_en_optimum()}) {
    const WhisperModel other = WhisperModel::load(folder);
    EXPECT_EQ(other.config().suppress_tokens, c.suppress_tokens) << folder;
    EXPECT_EQ(other.config().suppress_blank, c.suppress_blank) << folder;
    EXPECT_EQ(other.config().tokens.no_speech, c.tokens.no_speech) << folder;
    EXPECT_EQ(other.config().dims.n_vocab, c.dims.n_vocab) << folder;
  }
}

TEST(WhisperModel, RefusesAWrongContractNamingTheTensor) {
  const WhisperModel bad_decoder = WhisperModel::load(test::whisper_test_model("whisper-test-bad-decoder"));
  const std::string d = message_of([&] { WhisperDecoder(bad_decoder, {}); }, ErrorCode::kModelMismatch);
  EXPECT_NE(d.find("'self_k_0' of shape [?,2,?,32], expected [?,4,?,16]"), std::string::npos) << d;
  EXPECT_NE(d.find("decoder.onnx"), std::string::npos) << d;
  const WhisperModel bad_encoder = WhisperModel::load(test::whisper_test_model("whisper-test-bad-encoder"));
  const std::string e = message_of([&] { WhisperEncoder(bad_encoder, {}); }, ErrorCode::kModelMismatch);
  EXPECT_NE(e.find("'mel' of shape [?,64,?], expected [?,80,?]"), std::string::npos) << e;
  // A sherpa-onnx folder whose decoder is a brisvox one: the first differing input is named.
  const std::filesystem::path mixed = std::filesystem::path(::testing::TempDir()) / "whisper-mixed";
  std::filesystem::create_directories(mixed);
  const std::filesystem::path sherpa = test::whisper_test_model("whisper-test-en-sherpa");
  std::filesystem::copy_file(sherpa / "test-encoder.onnx", mixed / "x-encoder.onnx",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(sherpa / "test-tokens.txt", mixed / "x-tokens.txt",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(std::filesystem::path(test::whisper_test_model("whisper-test-en")) / "decoder.onnx",
                             mixed / "x-decoder.onnx", std::filesystem::copy_options::overwrite_existing);
  const WhisperModel m = WhisperModel::load(mixed.string());
  const std::string x = message_of([&] { WhisperDecoder(m, {}); }, ErrorCode::kModelMismatch);
  EXPECT_NE(x.find("has input 'tokens' of shape [?], expected [?,?] (Whisper decoder (sherpa-onnx layout))"),
            std::string::npos)
      << x;
}

TEST(WhisperModel, RefusesFoldersItCannotRead) {
  const std::string none = message_of([] { WhisperModel::load("/nonexistent/whisper"); }, ErrorCode::kIo);
  EXPECT_NE(none.find("/nonexistent/whisper"), std::string::npos);
  const std::filesystem::path empty_dir = std::filesystem::path(::testing::TempDir()) / "whisper-empty";
  std::filesystem::create_directories(empty_dir);
  const std::string empty = message_of([&] { WhisperModel::load(empty_dir.string()); }, ErrorCode::kIo);
  EXPECT_NE(empty.find("whisper.json"), std::string::npos) << empty;
  EXPECT_NE(empty.find("tokens.txt"), std::string::npos) << empty;
  EXPECT_NE(empty.find("decoder_model_merged.onnx"), std::string::npos) << empty;
  // A brisvox folder with a broken whisper.json.
  const std::filesystem::path broken = std::filesystem::path(::testing::TempDir()) / "whisper-broken";
  std::filesystem::create_directories(broken);
  std::ofstream(broken / "whisper.json") << R"({"format": "brisvox-whisper", "format_version": 1, "dims": {}})";
  const std::string b = message_of([&] { WhisperModel::load(broken.string()); }, ErrorCode::kBadModel);
  EXPECT_NE(b.find("tokens"), std::string::npos) << b;
  std::ofstream(broken / "whisper.json") << R"({"format": "brisvox-whisper", "format_version": 2})";
  const std::string v = message_of([&] { WhisperModel::load(broken.string()); }, ErrorCode::kBadModel);
  EXPECT_NE(v.find("format_version 2"), std::string::npos) << v;
}

// The same random weights in the three layouts decode the same tokens (each layout's graphs
// compute the same arithmetic; their batching and cache handling in brisvox differ).
TEST(WhisperModel, EveryLayoutDecodesTheSameTokens) {
  const Audio audio = load_audio(test::sample_wav());
  const std::span<const float> clip(audio.samples.data(), 3 * 16000);
  for (const std::string base : {"whisper-test-en", "whisper-test-multi"}) {
    std::vector<std::vector<int>> tokens;
    std::vector<double> logprobs;
    for (const std::string suffix : {"", "-sherpa", "-optimum"}) {
      SCOPED_TRACE(base + suffix);
      const WhisperModel m = WhisperModel::load(test::whisper_test_model(base + suffix));
      WhisperTranscriber t(m);
      WhisperTranscribeOptions o;
      o.decode.language = m.config().multilingual ? "de" : "en";
      const WhisperTranscript r = t.transcribe(clip, 16000, o);
      ASSERT_EQ(r.segments.size(), 1u);
      EXPECT_GT(r.segments[0].tokens.size(), 0u);
      tokens.push_back(r.segments[0].tokens);
      logprobs.push_back(r.segments[0].avg_logprob);
    }
    EXPECT_EQ(tokens[0], tokens[1]) << base << ": brisvox vs sherpa-onnx layout";
    EXPECT_EQ(tokens[0], tokens[2]) << base << ": brisvox vs Optimum layout";
    EXPECT_NEAR(logprobs[0], logprobs[1], 1e-4);
    EXPECT_NEAR(logprobs[0], logprobs[2], 1e-4);
  }
}

TEST(WhisperModel, FitWindowsWhereTheEncoderAllowsThem) {
  const Audio audio = load_audio(test::sample_wav());
  const std::span<const float> clip(audio.samples.data(), 16000);  // 1 s of a 4 s model window
  WhisperTranscribeOptions fit;
  fit.window = WhisperWindow::kFit;
  fit.fit_min_frames = 100;
  std::vector<std::vector<int>> tokens;
  for (const std::string folder : {"whisper-test-en", "whisper-test-en-sherpa"}) {
    const WhisperModel m = WhisperModel::load(test::whisper_test_model(folder));
    WhisperTranscriber t(m);
    const WhisperTranscript r = t.transcribe(clip, 16000, fit);
    ASSERT_EQ(r.segments.size(), 1u);
    tokens.push_back(r.segments[0].tokens);
  }
  EXPECT_EQ(tokens[0], tokens[1]);
  const WhisperModel optimum = WhisperModel::load(test::whisper_test_model("whisper-test-en-optimum"));
  WhisperTranscriber t(optimum);
  const std::string msg = message_of([&] { t.transcribe(clip, 16000, fit); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("full"), std::string::npos) << msg;
  WhisperEncoder encoder(optimum, {});
  EXPECT_FALSE(encoder.supports_fit());
  std::vector<float> mel(80 * 200, 0.0f);
  std::vector<float> out(encoder.output_floats(100));
  const float* p = mel.data();
  const WhisperEncoderOutput o = encoder.output_in(out, 100);
  const std::string e = message_of([&] { encoder.run(200, std::span(&p, 1), std::span(&o, 1)); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(e.find("exactly 400"), std::string::npos) << e;
}

TEST(WhisperModel, MultilingualPromptsAndLanguages) {
  const WhisperModel m = WhisperModel::load(test::whisper_test_model("whisper-test-multi"));
  WhisperTranscriber t(m);
  const Audio audio = load_audio(test::sample_wav());
  const std::span<const float> clip(audio.samples.data(), 2 * 16000);
  WhisperTranscribeOptions o;
  o.decode.language = "xx";
  const std::string msg = message_of([&] { t.transcribe(clip, 16000, o); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("en,de,fr,es"), std::string::npos) << msg;
  // Each prompt is fed: the four (language, task) pairs give four different decodings (avg_logprob
  // differs even where random weights happen to pick the same tokens).
  std::vector<double> logprobs;
  for (const char* lang : {"en", "de"}) {
    for (WhisperTask task : {WhisperTask::kTranscribe, WhisperTask::kTranslate}) {
      o.decode.language = lang;
      o.decode.task = task;
      const WhisperTranscript r = t.transcribe(clip, 16000, o);
      logprobs.push_back(r.segments.at(0).avg_logprob);
    }
  }
  std::sort(logprobs.begin(), logprobs.end());
  EXPECT_EQ(std::adjacent_find(logprobs.begin(), logprobs.end()), logprobs.end()) << "a prompt token had no effect";
}

}  // namespace
}  // namespace brisvox
