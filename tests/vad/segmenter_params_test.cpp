// SegmenterParams: defaults, validation messages, conversion to samples.
#include "brisvox/models/vad/segmenter_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "brisvox/error.h"
#include "brisvox/models/vad/silero_rates.h"

namespace brisvox {
namespace {

void expect_invalid(const std::function<void(SegmenterParams&)>& change,
                    const std::string& fragment) {
  SegmenterParams params;
  change(params);
  try {
    params.validate();
    ADD_FAILURE() << "accepted; expected an error mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(SegmenterParams, DefaultsAreSileroVads) {
  const SegmenterParams p;
  EXPECT_EQ(p.threshold, 0.5);
  EXPECT_LT(p.neg_threshold, 0.0);
  EXPECT_EQ(p.min_speech_ms, 250);
  EXPECT_TRUE(std::isinf(p.max_speech_s));
  EXPECT_EQ(p.min_silence_ms, 100);
  EXPECT_EQ(p.speech_pad_ms, 30);
  EXPECT_EQ(p.min_silence_at_max_speech_ms, 98);
  EXPECT_TRUE(p.use_max_poss_sil_at_max_speech);
  EXPECT_NO_THROW(p.validate());
}

TEST(SegmenterParams, EffectiveNegThreshold) {
  SegmenterParams p;
  EXPECT_EQ(p.effective_neg_threshold(), 0.5 - 0.15);  // the double 0.35000000000000003
  EXPECT_GT(p.effective_neg_threshold(), static_cast<double>(0.35f));
  p.threshold = 0.1;
  EXPECT_EQ(p.effective_neg_threshold(), 0.01);  // floored
  p.threshold = 0.005;
  EXPECT_EQ(p.effective_neg_threshold(), 0.005);  // ... but never above the threshold
  p.threshold = 0.0;
  EXPECT_EQ(p.effective_neg_threshold(), 0.0);
  p.threshold = 0.1;
  p.neg_threshold = 0.05;
  EXPECT_EQ(p.effective_neg_threshold(), 0.05);
  p.neg_threshold = 0.0;
  EXPECT_EQ(p.effective_neg_threshold(), 0.0);  // zero is a value, not "auto"
}

TEST(SegmenterParams, ValidationNamesTheField) {
  expect_invalid([](auto& p) { p.threshold = 1.01; }, "threshold is 1.01");
  expect_invalid([](auto& p) { p.threshold = -0.1; }, "threshold");
  expect_invalid([](auto& p) { p.threshold = std::nan(""); }, "threshold");
  expect_invalid([](auto& p) { p.neg_threshold = 0.6; }, "neg_threshold (0.6) is above");
  expect_invalid([](auto& p) { p.neg_threshold = std::nan(""); }, "neg_threshold is NaN");
  expect_invalid([](auto& p) { p.min_speech_ms = -1; }, "min_speech_ms");
  expect_invalid([](auto& p) { p.max_speech_s = 0.0; }, "max_speech_s");
  expect_invalid([](auto& p) { p.max_speech_s = -2.0; }, "max_speech_s");
  expect_invalid([](auto& p) { p.max_speech_s = std::nan(""); }, "max_speech_s");
  expect_invalid([](auto& p) { p.min_silence_ms = -5; }, "min_silence_ms");
  expect_invalid([](auto& p) { p.speech_pad_ms = -30; }, "speech_pad_ms");
  expect_invalid([](auto& p) { p.min_silence_at_max_speech_ms = -1; },
                 "min_silence_at_max_speech_ms");
}

TEST(SegmenterParams, EdgeValuesAreValid) {
  SegmenterParams p;
  p.threshold = 0.0;
  p.neg_threshold = 0.0;
  p.min_speech_ms = p.min_silence_ms = p.speech_pad_ms = p.min_silence_at_max_speech_ms = 0;
  p.max_speech_s = 0.001;
  EXPECT_NO_THROW(p.validate());
  p.threshold = 1.0;
  p.neg_threshold = 1.0;
  EXPECT_NO_THROW(p.validate());
}

TEST(SegmenterParams, WindowOfEachRate) {
  EXPECT_EQ(silero_chunk_samples(16000), 512);
  EXPECT_EQ(silero_chunk_samples(8000), 256);
  for (int rate : {0, -16000, 11025, 22050, 32000, 44100, 48000}) {
    try {
      silero_chunk_samples(rate);
      ADD_FAILURE() << rate << " Hz accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("16000 or 8000"), std::string::npos) << e.what();
    }
  }
}

TEST(SegmenterParams, SamplesAsSileroVadComputesThem) {
  SegmenterParams p;
  p.max_speech_s = 3.0;
  const SegmenterSamples s16 = SegmenterSamples::from(p, 16000);
  EXPECT_EQ(s16.window_samples, 512);
  EXPECT_EQ(s16.min_speech_samples, 4000);
  EXPECT_EQ(s16.min_silence_samples, 1600);
  EXPECT_EQ(s16.speech_pad_samples, 480);
  EXPECT_EQ(s16.min_silence_at_max_speech_samples, 1568);
  EXPECT_EQ(s16.max_speech_samples, 48000.0 - 512 - 960);
  EXPECT_EQ(s16.neg_threshold, 0.5 - 0.15);

  const SegmenterSamples s8 = SegmenterSamples::from(p, 8000);
  EXPECT_EQ(s8.window_samples, 256);
  EXPECT_EQ(s8.min_speech_samples, 2000);
  EXPECT_EQ(s8.speech_pad_samples, 240);
  EXPECT_EQ(s8.min_silence_at_max_speech_samples, 784);
  EXPECT_EQ(s8.max_speech_samples, 24000.0 - 256 - 480);

  // Fractional and below-one-window limits stay exact doubles, as in Python.
  p.max_speech_s = 0.05;
  EXPECT_EQ(SegmenterSamples::from(p, 16000).max_speech_samples, 16000 * 0.05 - 512 - 960);
  p.max_speech_s = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isinf(SegmenterSamples::from(p, 16000).max_speech_samples));

  p.speech_pad_ms = -1;
  EXPECT_THROW(SegmenterSamples::from(p, 16000), Error);
  EXPECT_THROW(SegmenterSamples::from(SegmenterParams{}, 44100), Error);
}

}  // namespace
}  // namespace brisvox
