// PiperRequest::fast_start (the first sentence's first clause synthesised alone) and the conv2d
// rewrite of the voice (PiperTtsConfig::use_conv2d_rewrite), on the real voice.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "brisvox/models/tts/piper_tts.h"
#include "piper_test_util.h"

namespace brisvox {
namespace {

std::vector<PiperChunk> synthesize(PiperTts& tts, const std::string& text, bool fast_start) {
  PiperRequest r;
  r.text = text;
  r.noise_scale = 0.0f;
  r.noise_w_scale = 0.0f;
  r.fast_start = fast_start;
  PiperSynthesis s = tts.start(r);
  std::vector<PiperChunk> out;
  PiperChunk c;
  while (tts.next(s, c)) out.push_back(std::move(c));
  EXPECT_TRUE(s.done());
  return out;
}

std::vector<std::string> concat_phonemes(const std::vector<PiperChunk>& chunks, std::size_t first, std::size_t end) {
  std::vector<std::string> out;
  for (std::size_t i = first; i < end; ++i) out.insert(out.end(), chunks[i].phonemes.begin(), chunks[i].phonemes.end());
  return out;
}

TEST(PiperFastStart, TheFirstClauseComesAloneThenTheRestOfItsSentence) {
  PiperTts& tts = test::shared_piper();
  const std::string text = "Sure, I can help with that. Your table is booked.";
  const auto whole = synthesize(tts, text, false);
  const auto fast = synthesize(tts, text, true);
  ASSERT_EQ(whole.size(), 2u);
  ASSERT_EQ(fast.size(), 3u);

  // The two parts' phonemes are the sentence's, cut after the comma and its space: what Piper
  // gives for the two clauses phonemized alone.
  EXPECT_EQ(concat_phonemes(fast, 0, 2), whole[0].phonemes);
  EXPECT_EQ(fast[0].phonemes, synthesize(tts, "Sure,", false).at(0).phonemes);
  EXPECT_EQ(fast[1].phonemes, synthesize(tts, "I can help with that.", false).at(0).phonemes);
  EXPECT_EQ(fast[0].phonemes.back(), " ");
  EXPECT_EQ(fast[0].phonemes[fast[0].phonemes.size() - 2], ",");
  // Each part is a model run of its own: "^" ... "$".
  for (const auto& c : fast) {
    EXPECT_EQ(c.phoneme_ids.front(), 1);
    EXPECT_EQ(c.phoneme_ids.back(), 2);
  }

  EXPECT_FALSE(fast[0].ends_sentence);
  EXPECT_TRUE(fast[1].ends_sentence);
  EXPECT_TRUE(fast[2].ends_sentence);
  for (std::size_t i = 0; i < fast.size(); ++i) {
    EXPECT_EQ(fast[i].sentence_index, i);
    EXPECT_EQ(fast[i].sentence_count, 3u);
    EXPECT_EQ(fast[i].last, i == 2);
  }
  // The later sentence is untouched: the same audio as without fast_start.
  ASSERT_EQ(fast[2].samples.size(), whole[1].samples.size());
  for (std::size_t k = 0; k < whole[1].samples.size(); ++k) ASSERT_EQ(fast[2].samples[k], whole[1].samples[k]) << k;

  // The first audio is the short clause's: well under half of the sentence's samples.
  EXPECT_LT(fast[0].samples.size() * 2, whole[0].samples.size());
  // Together the two parts last about as long as the sentence (the model sees them apart: the
  // durations differ a little at the cut).
  const double parts = static_cast<double>(fast[0].samples.size() + fast[1].samples.size());
  EXPECT_NEAR(parts / static_cast<double>(whole[0].samples.size()), 1.0, 0.15);
  // Each part normalised as Piper normalises a sentence.
  for (const auto& c : fast) {
    float peak = 0;
    for (const float x : c.samples) peak = std::max(peak, std::fabs(x));
    EXPECT_FLOAT_EQ(peak, 1.0f);
  }
}

TEST(PiperFastStart, NoCutWithoutAClauseInTheFirstSentence) {
  PiperTts& tts = test::shared_piper();
  // No clause terminator in the first sentence (the second's comma is not cut).
  const auto a = synthesize(tts, "Your table is booked. See you then, on Monday.", true);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_TRUE(a[0].ends_sentence);
  // A comma with nothing after it in its sentence.
  const auto b = synthesize(tts, "Well,", true);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_TRUE(b[0].ends_sentence);
  EXPECT_TRUE(b[0].last);
  // Semicolons and colons cut too; only the first clause goes apart.
  const auto c = synthesize(tts, "Well; maybe: yes, no.", true);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].phonemes.back(), " ");
  EXPECT_EQ(c[0].phonemes[c[0].phonemes.size() - 2], ";");
  EXPECT_EQ(concat_phonemes(c, 0, 2), synthesize(tts, "Well; maybe: yes, no.", false).at(0).phonemes);
}

TEST(PiperConv2d, TheRewriteRunsWhenPresentAndSoundsTheSameAsTheVoice) {
  const std::string rewrite = test::third_party("models/piper/en_US-joe-medium.conv2d.onnx");
  ASSERT_TRUE(std::filesystem::exists(rewrite)) << "scripts/setup.sh writes " << rewrite;
  PiperTts& with = test::shared_piper();  // the defaults: use_conv2d_rewrite
  EXPECT_EQ(with.model().model_info().source, rewrite);
  PiperTtsConfig c;
  c.model_path = test::piper_voice_path();
  c.use_conv2d_rewrite = false;
  PiperTts without(c);
  EXPECT_EQ(without.model().model_info().source, test::piper_voice_path());

  float worst = 0;
  for (const std::string text : {"Sure, I can help with that.", "Your appointment is confirmed for Monday at two.",
                                 "Call 555-0199 before 9 p.m., please!"}) {
    const auto a = synthesize(with, text, false);
    const auto b = synthesize(without, text, false);
    ASSERT_EQ(a.size(), b.size()) << text;
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].samples.size(), b[i].samples.size()) << text;
      for (std::size_t k = 0; k < a[i].samples.size(); ++k) worst = std::max(worst, std::fabs(a[i].samples[k] - b[i].samples[k]));
    }
  }
  // The same tolerance as the parity with piper-tts (piper_parity_test.cpp): float rounding only.
  EXPECT_LE(worst, 1e-4f);
  std::cout << "[ conv2d   ] largest sample difference from the voice itself: " << worst << "\n";
}

TEST(PiperConv2d, AnOlderRewriteIsNotRun) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("brisvox_conv2d_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path voice = dir / "v.onnx";
  fs::copy_file(test::piper_voice_path(), voice, fs::copy_options::overwrite_existing);
  fs::copy_file(test::piper_voice_path() + ".json", dir / "v.onnx.json", fs::copy_options::overwrite_existing);
  fs::copy_file(test::third_party("models/piper/en_US-joe-medium.conv2d.onnx"), dir / "v.conv2d.onnx",
                fs::copy_options::overwrite_existing);
  fs::last_write_time(dir / "v.conv2d.onnx", fs::last_write_time(voice) - std::chrono::hours(1));
  PiperTtsConfig c;
  c.model_path = voice.string();
  {
    PiperTts tts(c);
    EXPECT_EQ(tts.model().model_info().source, voice.string());
  }
  fs::last_write_time(dir / "v.conv2d.onnx", fs::last_write_time(voice) + std::chrono::hours(1));
  {
    PiperTts tts(c);
    EXPECT_EQ(tts.model().model_info().source, (dir / "v.conv2d.onnx").string());
  }
  fs::remove_all(dir);
}

// Run by the CTest entry tts.conv2d_without_vector_kernels, which sets BRISVOX_WINOGRAD_ISA=generic
// (WinogradConv as on a CPU with neither AVX2 nor AVX-512); skipped elsewhere.
TEST(PiperConv2d, WithoutAVectorKernelTheVoiceItselfRuns) {
  const char* isa = std::getenv("BRISVOX_WINOGRAD_ISA");
  if (isa == nullptr || std::string(isa) != "generic") GTEST_SKIP() << "needs BRISVOX_WINOGRAD_ISA=generic";
  PiperTtsConfig c;
  c.model_path = test::piper_voice_path();
  PiperTts tts(c);
  EXPECT_EQ(tts.model().model_info().source, test::piper_voice_path());
}

}  // namespace
}  // namespace brisvox
