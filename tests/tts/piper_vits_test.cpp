// The VITS adapter on the real voice: contract checks, and batched runs against single runs.
#include "brisvox/models/tts/piper_vits.h"

#include <gtest/gtest.h>

#include <cmath>

#include "brisvox/error.h"
#include "piper_test_util.h"

namespace brisvox {
namespace {

// Largest difference between a sentence's audio from a padded batch and from a run of its own
// (raw model output, peak about 0.5). Measured: 1.5e-4.
constexpr float kBatchTolerance = 5e-4f;

std::vector<std::int64_t> ids_of(const std::string& text) {
  PiperTts& tts = test::shared_piper();
  const auto sentences = tts.phonemizer().phonemize(text);
  EXPECT_EQ(sentences.size(), 1u) << text;
  return phonemes_to_ids(sentences.at(0), tts.voice()).ids;
}

TEST(PiperVits, BatchedSentencesEqualSingleRuns) {
  PiperVitsConfig c;
  c.model_path = test::piper_durations_voice_path();
  c.max_batch = 3;
  PiperVits vits(c);
  ASSERT_TRUE(vits.has_durations());
  const std::vector<std::vector<std::int64_t>> ids = {
      ids_of("The committee finally agreed to fund the new library."), ids_of("Hello, world."), ids_of("Why not?")};
  PiperScales deterministic{0.0f, 1.0f, 0.0f};
  std::vector<std::vector<float>> batched(3);
  vits.run(ids, deterministic, 0, batched);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::vector<std::vector<float>> single(1);
    vits.run(std::span(&ids[i], 1), deterministic, 0, single);
    ASSERT_EQ(batched[i].size(), single[0].size()) << "sentence " << i;  // cut at sum(durations) * 256
    ASSERT_EQ(single[0].size() % 256, 0u);
    float worst = 0;
    for (std::size_t k = 0; k < single[0].size(); ++k) worst = std::max(worst, std::fabs(batched[i][k] - single[0][k]));
    EXPECT_LE(worst, kBatchTolerance) << "sentence " << i;
  }
}

TEST(PiperVits, TheDurationsRewriteGivesTheOriginalAudio) {
  PiperVitsConfig c;
  c.model_path = test::piper_voice_path();
  PiperVits plain(c);
  EXPECT_FALSE(plain.has_durations());
  c.model_path = test::piper_durations_voice_path();
  PiperVits rewritten(c);
  const std::vector<std::vector<std::int64_t>> ids = {ids_of("Exactly the same audio.")};
  std::vector<std::vector<float>> a(1);
  std::vector<std::vector<float>> b(1);
  plain.run(ids, {0.0f, 1.0f, 0.0f}, 0, a);
  rewritten.run(ids, {0.0f, 1.0f, 0.0f}, 0, b);
  EXPECT_EQ(a[0], b[0]);
}

TEST(PiperVits, BatchingNeedsTheDurationsOutput) {
  PiperVitsConfig c;
  c.model_path = test::piper_voice_path();
  c.max_batch = 2;
  try {
    PiperVits vits(c);
    ADD_FAILURE() << "accepted max_batch 2 without durations";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("add_duration_output.py"), std::string::npos);
  }
}

TEST(PiperVits, AnotherModelIsRefusedWithTheTensorNamed) {
  PiperVitsConfig c;
  c.model_path = test::bundled_model("silero_vad_v5.onnx");
  try {
    PiperVits vits(c);
    ADD_FAILURE() << "accepted a Silero model as a Piper voice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kModelMismatch);
    EXPECT_NE(std::string(e.what()).find("'input'"), std::string::npos) << e.what();
  }
}

TEST(PiperVits, RunRefusesBadSizesAndScales) {
  PiperVitsConfig c;
  c.model_path = test::piper_voice_path();
  c.max_phoneme_ids = 16;
  PiperVits vits(c);
  std::vector<std::vector<float>> out(2);
  const std::vector<std::vector<std::int64_t>> too_long = {std::vector<std::int64_t>(17, 0)};
  const std::vector<std::vector<std::int64_t>> two = {{1, 0, 2}, {1, 0, 2}};
  const std::vector<std::vector<std::int64_t>> ok = {{1, 0, 20, 0, 2}};
  EXPECT_THROW(vits.run(too_long, {}, 0, out), Error);
  EXPECT_THROW(vits.run(two, {}, 0, out), Error);  // max_batch 1
  EXPECT_THROW(vits.run(ok, {0.5f, 0.0f, 0.5f}, 0, out), Error);
  EXPECT_THROW(vits.run(ok, {NAN, 1.0f, 0.5f}, 0, out), Error);
  vits.run(ok, {}, 0, out);
  EXPECT_FALSE(out[0].empty());
}

}  // namespace
}  // namespace brisvox
