// brisvox against piper-tts 1.8 on the real voice (en_US-joe-medium): the goldens in
// tests/data/tts/piper_goldens.json were written by tools/piper/make_goldens.py with piper-tts in
// the venv. Phoneme ids must be identical; audio (noise scales 0) equal within a tolerance that
// covers the two ONNX Runtime builds (Python wheel 1.32 there, the C++ 1.29 release here).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "brisvox/error.h"
#include "brisvox/log.h"
#include "piper_test_util.h"

namespace brisvox {
namespace {

// Largest difference allowed between a sample of brisvox's and piper-tts's normalised audio
// (measured: 6.5e-6 over the 10 golden sentences).
constexpr double kSampleTolerance = 1e-4;

// BRISVOX_PIPER_GOLDENS names another goldens file (tools/piper/make_goldens.py --out).
nlohmann::json goldens() {
  const char* other = std::getenv("BRISVOX_PIPER_GOLDENS");
  std::ifstream in(other != nullptr ? std::string(other) : test::data_path("tts/piper_goldens.json"));
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

std::string join(const std::vector<std::string>& phonemes) {
  std::string s;
  for (const auto& p : phonemes) s += p;
  return s;
}

TEST(PiperParity, PhonemeIdsEqualPiperTtsForEveryGoldenText) {
  const auto g = goldens();
  PiperTts& tts = test::shared_piper();
  std::size_t texts = 0;
  std::size_t same = 0;
  std::size_t sentences = 0;
  std::string report;
  for (const auto& t : g.at("texts")) {
    const std::string text = t.at("text");
    const auto got = tts.phonemizer().phonemize(text);
    const auto& want = t.at("sentences");
    bool equal = got.size() == want.size();
    for (std::size_t i = 0; equal && i < got.size(); ++i) {
      equal = phonemes_to_ids(got[i], tts.voice()).ids == want[i].at("ids").get<std::vector<std::int64_t>>();
    }
    ++texts;
    sentences += want.size();
    if (equal) {
      ++same;
    } else {
      report += "\n  '" + text + "'\n    piper:  ";
      for (const auto& w : want) report += w.at("phonemes").get<std::string>() + " | ";
      report += "\n    brisvox: ";
      for (const auto& s : got) report += join(s) + " | ";
    }
  }
  ASSERT_GE(texts, std::getenv("BRISVOX_PIPER_GOLDENS") != nullptr ? 1u : 50u);
  EXPECT_EQ(same, texts) << same << " of " << texts << " texts (" << sentences
                         << " sentences) have Piper's ids; espeak-ng: " << tts.phonemizer().espeak_version() << report;
  const auto st = tts.phonemizer().stats();
  EXPECT_EQ(st.clause_mismatches, 0u);
  EXPECT_GT(st.linking_restored, 0u);  // the goldens hold linking ʲ ...
  EXPECT_GT(st.stress_restored, 0u);   // ... and unpromoted stresses
}

TEST(PiperParity, AudioEqualsPiperTtsWithNoiseOff) {
  const auto g = goldens();
  const auto stride = g.at("stride").get<std::size_t>();
  PiperTts& tts = test::shared_piper();
  std::size_t checked = 0;
  double worst = 0;
  for (const auto& t : g.at("texts")) {
    if (!t.contains("audio")) continue;
    PiperRequest r;
    r.text = t.at("text");
    r.noise_scale = 0.0f;
    r.noise_w_scale = 0.0f;
    r.length_scale = 1.0f;
    PiperSynthesis s = tts.start(r);
    const auto& want = t.at("audio");
    ASSERT_EQ(s.sentence_count(), want.size()) << r.text;
    PiperChunk chunk;
    for (const auto& w : want) {
      ASSERT_TRUE(tts.next(s, chunk));
      ASSERT_EQ(chunk.samples.size(), w.at("num_samples").get<std::size_t>()) << r.text;
      const auto ref = w.at("samples").get<std::vector<double>>();
      ASSERT_EQ(ref.size(), (chunk.samples.size() + stride - 1) / stride);
      for (std::size_t k = 0; k < ref.size(); ++k) {
        const double d = std::fabs(chunk.samples[k * stride] - ref[k]);
        worst = std::max(worst, d);
        ASSERT_LE(d, kSampleTolerance) << r.text << " sample " << k * stride;
      }
      double sq = 0;
      for (const float x : chunk.samples) sq += static_cast<double>(x) * x;
      EXPECT_NEAR(std::sqrt(sq / static_cast<double>(chunk.samples.size())), w.at("rms").get<double>(), 1e-4);
      ++checked;
    }
    EXPECT_FALSE(tts.next(s, chunk));
  }
  if (std::getenv("BRISVOX_PIPER_GOLDENS") == nullptr) {
    EXPECT_GE(checked, 8u);
  }
  std::cout << "[ audio    ] " << checked << " sentences, largest sample difference " << worst << "\n";
}

TEST(PiperParity, TwoSentencesStreamOneChunkEach) {
  PiperTts& tts = test::shared_piper();
  PiperRequest r;
  r.text = "Good morning! How can I help you today?";
  PiperSynthesis s = tts.start(r);
  ASSERT_EQ(s.sentence_count(), 2u);
  PiperChunk a;
  PiperChunk b;
  ASSERT_TRUE(tts.next(s, a));
  EXPECT_EQ(a.sentence_index, 0u);
  EXPECT_FALSE(a.last);
  EXPECT_EQ(a.sample_rate_hz, 22050);
  EXPECT_EQ(s.sentences_done(), 1u);
  ASSERT_TRUE(tts.next(s, b));
  EXPECT_TRUE(b.last);
  EXPECT_TRUE(s.done());
  EXPECT_FALSE(tts.next(s, b));
  float peak = 0;
  for (const float x : a.samples) peak = std::max(peak, std::fabs(x));
  EXPECT_FLOAT_EQ(peak, 1.0f);  // Piper's normalisation
  EXPECT_EQ(a.phoneme_ids.front(), 1);  // "^"
  EXPECT_EQ(a.phoneme_ids.back(), 2);   // "$"
}

TEST(PiperParity, ResampledOutputKeepsTheDuration) {
  PiperTts& tts = test::shared_piper();
  PiperRequest r;
  r.text = "Testing one two three.";
  r.noise_scale = 0.0f;
  r.noise_w_scale = 0.0f;
  PiperSynthesis s = tts.start(r);
  PiperChunk native;
  ASSERT_TRUE(tts.next(s, native));
  for (const int rate : {8000, 16000, 24000, 48000}) {
    r.output_rate_hz = rate;
    PiperSynthesis sr = tts.start(r);
    PiperChunk c;
    ASSERT_TRUE(tts.next(sr, c));
    EXPECT_EQ(c.sample_rate_hz, rate);
    const auto want = static_cast<std::size_t>(
        std::llround(static_cast<double>(native.samples.size()) * rate / 22050.0));
    EXPECT_NEAR(static_cast<double>(c.samples.size()), static_cast<double>(want), 1.0) << rate;
    for (const float x : c.samples) ASSERT_LE(std::fabs(x), 1.0f);
  }
}

TEST(PiperParity, CancelledRunFailsAndTheNextOneWorks) {
  PiperTts& tts = test::shared_piper();
  PiperRequest r;
  r.text = "This run is cancelled before it starts.";
  PiperSynthesis s = tts.start(r);
  PiperChunk c;
  tts.cancel_run();
  try {
    tts.next(s, c);
    ADD_FAILURE() << "a cancelled run returned audio";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
  }
  EXPECT_EQ(s.sentences_done(), 0u);  // nothing lost: the sentence is still to do
  tts.clear_cancel();
  ASSERT_TRUE(tts.next(s, c));
  EXPECT_FALSE(c.samples.empty());
}

}  // namespace
}  // namespace brisvox
