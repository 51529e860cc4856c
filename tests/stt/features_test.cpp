// Whisper's segment features: faster-whisper's padding, the window rules, bad input.
#include "brisvox/models/stt/whisper_features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "brisvox/audio/audio_file.h"
#include "brisvox/error.h"
#include "test_paths.h"

namespace brisvox {
namespace {

std::vector<float> speech(std::size_t n) {
  const Audio a = load_audio(test::sample_wav());
  return std::vector<float>(a.samples.begin(), a.samples.begin() + static_cast<std::ptrdiff_t>(n));
}

TEST(WhisperFeatures, WindowRules) {
  const WhisperFeatures f;  // 3000 frames, fit: multiples of 100, at least 1000
  EXPECT_EQ(f.window_frames(WhisperWindow::kFull, 5), 3000);
  EXPECT_EQ(f.window_frames(WhisperWindow::kFit, 0), 1000);
  EXPECT_EQ(f.window_frames(WhisperWindow::kFit, 300), 1000);
  EXPECT_EQ(f.window_frames(WhisperWindow::kFit, 1000), 1000);
  EXPECT_EQ(f.window_frames(WhisperWindow::kFit, 1001), 1100);
  EXPECT_EQ(f.window_frames(WhisperWindow::kFit, 2999), 3000);
  EXPECT_EQ(f.window_frames(WhisperWindow::kFit, 4000), 3000);
  EXPECT_EQ(WhisperFeatures::fit_frames(150, 100, 0, 400), 200);
  EXPECT_EQ(WhisperFeatures::fit_frames(150, 100, 1000, 400), 400);  // the minimum is clamped
  EXPECT_EQ(WhisperFeatures::content_frames(479), 2);
  EXPECT_THROW(WhisperFeatures(3001), Error);
  EXPECT_THROW(WhisperFeatures(3000, 99), Error);
  EXPECT_THROW(WhisperFeatures(3000, 100, 150), Error);
  EXPECT_THROW(WhisperFeatures(3000, 100, 1000, 480001), Error);
}

// A segment's window is the whole recording's log-mel (with faster-whisper's 160 appended zero
// samples) cut to samples / 160 frames and zero-filled: computed both ways, bit for bit.
TEST(WhisperFeatures, SegmentEqualsTheWholeRecordingCutAndPadded) {
  const std::vector<float> x = speech(3 * 16000 + 77);
  WhisperFeatures f;
  std::vector<float> window(80 * 3000, -7.0f);
  ASSERT_EQ(f.compute(x, WhisperWindow::kFull, window), 3000);
  const std::vector<float> whole = WhisperFeatures::whole_recording(x);
  const int total = WhisperFeatures::content_frames(x.size()) + 1;
  ASSERT_EQ(whole.size(), static_cast<std::size_t>(80 * total));
  std::vector<float> cut(80 * 3000);
  WhisperFeatures::cut_window(whole, total, 0, total - 1, 3000, cut);
  EXPECT_EQ(window, cut);
  const int content = WhisperFeatures::content_frames(x.size());
  EXPECT_EQ(content, 300);
  for (int m = 0; m < 80; ++m) {
    EXPECT_NE(window[static_cast<std::size_t>(m * 3000 + content - 1)], 0.0f);  // last content frame
    for (int t = content; t < 3000; ++t) ASSERT_EQ(window[static_cast<std::size_t>(m * 3000 + t)], 0.0f) << m << " " << t;
  }
  // Whisper's normalisation: within [max - 2, max] after (x + 4) / 4, max <= (log10 of the peak + 4) / 4.
  float lo = 1e9f, hi = -1e9f;
  for (int m = 0; m < 80; ++m) {
    for (int t = 0; t < content; ++t) {
      lo = std::min(lo, window[static_cast<std::size_t>(m * 3000 + t)]);
      hi = std::max(hi, window[static_cast<std::size_t>(m * 3000 + t)]);
    }
  }
  EXPECT_NEAR(hi - lo, 2.0f, 1e-5f);
  // The fit window holds the same frames.
  std::vector<float> fit(80 * 1000);
  ASSERT_EQ(f.compute(x, WhisperWindow::kFit, fit), 1000);
  for (int m = 0; m < 80; ++m) {
    for (int t = 0; t < 1000; ++t) {
      ASSERT_EQ(fit[static_cast<std::size_t>(m * 1000 + t)], window[static_cast<std::size_t>(m * 3000 + t)]);
    }
  }
}

TEST(WhisperFeatures, BadInput) {
  WhisperFeatures f(3000, 100, 1000, 16000);
  std::vector<float> out(80 * 3000);
  std::vector<float> x = speech(8000);
  x[1234] = std::numeric_limits<float>::quiet_NaN();
  try {
    f.compute(x, WhisperWindow::kFull, out);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadAudio);
    EXPECT_NE(std::string(e.what()).find("1234"), std::string::npos) << e.what();
  }
  EXPECT_THROW(f.compute(speech(16001), WhisperWindow::kFull, out), Error);    // over max_samples
  std::vector<float> small(80 * 999);
  EXPECT_THROW(f.compute(speech(100), WhisperWindow::kFit, small), Error);     // window needs 1000 frames
  // No samples: an all-zero window.
  std::fill(out.begin(), out.end(), 1.0f);
  EXPECT_EQ(f.compute({}, WhisperWindow::kFull, out), 3000);
  for (float v : out) ASSERT_EQ(v, 0.0f);
  EXPECT_THROW(WhisperFeatures::cut_window(out, 10, 5, 6, 20, out), Error);
}

}  // namespace
}  // namespace brisvox
