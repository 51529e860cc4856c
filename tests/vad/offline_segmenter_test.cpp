// get_speech_timestamps: golden output of the independent JavaScript reference, edge cases, errors.
#include "brisvox/models/vad/offline_segmenter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "brisvox/error.h"
#include "segmenter_golden.h"

namespace brisvox {
namespace {

using test::GoldenCase;
using test::load_golden_cases;

// The tracker's state is plain data: nothing grows with the audio.
static_assert(std::is_trivially_copyable_v<SpeechTracker>);

TEST(OfflineSegmenter, MatchesEveryGoldenCase) {
  const std::vector<GoldenCase> cases = load_golden_cases();
  // Guards against a missing or truncated data folder passing vacuously.
  ASSERT_GE(cases.size(), 100u) << "golden data in " << test::golden_dir();
  std::map<std::string, int> segments_per_file;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.label);
    EXPECT_EQ(get_speech_timestamps(c.probs, c.num_samples, c.sample_rate_hz, c.params),
              c.segments);
    segments_per_file[c.label.substr(0, c.label.find(':'))] += static_cast<int>(c.segments.size());
  }
  EXPECT_GE(segments_per_file.size(), 19u);
}

TEST(OfflineSegmenter, EmptyAudioHasNoSegments) {
  EXPECT_TRUE(get_speech_timestamps({}, 0, 16000, {}).empty());
  EXPECT_TRUE(get_speech_timestamps({}, 0, 8000, {}).empty());
}

TEST(OfflineSegmenter, SpeechToTheEndIsClampedToTheAudio) {
  // 20 windows of speech after 10 of silence, the last window 100 samples short.
  std::vector<float> probs(30, 0.1f);
  for (int i = 10; i < 30; ++i) probs[static_cast<std::size_t>(i)] = 0.9f;
  const std::int64_t n = 30 * 512 - 100;
  const auto segments = get_speech_timestamps(probs, n, 16000, {});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0], (SpeechSegment{10 * 512 - 480, n}));
}

TEST(OfflineSegmenter, ExitThresholdIsTheDoubleOfTheReference) {
  // silero-vad's default exit threshold is the double 0.5 - 0.15 = 0.35000000000000003, above the
  // float 0.35f: a window of exactly 0.35f is silence. A float threshold would call it speech
  // and never end this segment.
  std::vector<float> probs(40, 0.9f);
  for (int i = 10; i < 40; ++i) probs[static_cast<std::size_t>(i)] = 0.35f;
  const auto segments = get_speech_timestamps(probs, 40 * 512, 16000, {});
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0], (SpeechSegment{0, 10 * 512 + 480}));
}

TEST(OfflineSegmenter, RejectsBadInput) {
  const std::vector<float> probs(4, 0.2f);
  auto expect_invalid = [](auto&& call, const std::string& fragment) {
    try {
      call();
      ADD_FAILURE() << "no error; expected one mentioning '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_invalid([&] { get_speech_timestamps(probs, 4 * 512, 44100, {}); }, "44100 Hz");
  expect_invalid([&] { get_speech_timestamps(probs, 5 * 512, 16000, {}); }, "expected ceil");
  expect_invalid([&] { get_speech_timestamps(probs, 3 * 512, 16000, {}); }, "expected ceil");
  expect_invalid([&] { get_speech_timestamps(probs, -1, 16000, {}); }, "num_audio_samples");
  SegmenterParams bad;
  bad.speech_pad_ms = -1;
  expect_invalid([&] { get_speech_timestamps(probs, 4 * 512, 16000, bad); }, "speech_pad_ms");
  std::vector<float> nan_probs = probs;
  nan_probs[2] = std::numeric_limits<float>::quiet_NaN();
  expect_invalid([&] { get_speech_timestamps(nan_probs, 4 * 512, 16000, {}); }, "NaN");
  // A partial last window is fine: 3 windows and one sample.
  EXPECT_NO_THROW(get_speech_timestamps(probs, 3 * 512 + 1, 16000, {}));
}

// Found by fuzz/streaming_segmenter_fuzzer (seed in fuzz/corpus/streaming_segmenter_fuzzer/):
// with threshold 0, silero-vad's automatic exit threshold (floored at 0.01) exceeded the entry
// threshold, so a frame of probability 0 was speech and silence at once, and a max-speech cut at
// a pause that ended on the cutting frame gave the empty segment [1024, 1024).
TEST(OfflineSegmenter, AutoExitThresholdNeverExceedsTheThreshold) {
  SegmenterParams params;
  params.threshold = 0.0;
  params.speech_pad_ms = 0;
  params.min_speech_ms = 0;
  params.min_silence_ms = 1000;
  params.min_silence_at_max_speech_ms = 0;
  params.max_speech_s = 0.07;
  const std::vector<float> probs = {0.5f, 0.0f, 0.0f, 0.5f, 0.0f};
  const auto segments = get_speech_timestamps(probs, 5 * 512, 16000, params);
  for (const SpeechSegment& s : segments) EXPECT_LT(s.start_sample, s.end_sample) << s;
  // Every frame is speech (p >= 0) and none is silence (p < 0): hard cuts only.
  EXPECT_EQ(segments, (std::vector<SpeechSegment>{{0, 1024}, {1536, 2560}}));
}

// --- against the JavaScript reference, on sequences made now ----------------------------------

// Runs `command`, returns its standard output; empty on failure.
std::string run_command(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  if (pclose(pipe) != 0) out.clear();
  return out;
}

std::string arg(double value) {
  std::ostringstream s;
  s.precision(17);
  s << value;
  return s.str();
}

TEST(OfflineSegmenterReference, RandomSequencesMatchTheJavaScriptReference) {
  const std::filesystem::path script =
      std::filesystem::path(BRISVOX_SOURCE_DIR) / "tools/reference/silero_reference.mjs";
  const std::filesystem::path node_modules =
      std::filesystem::path(BRISVOX_THIRD_PARTY_DIR) / "node_modules";
  if (std::system("node --version > /dev/null 2>&1") != 0 ||
      !std::filesystem::exists(node_modules)) {
    GTEST_SKIP() << "node or " << node_modules << " not found (scripts/setup.sh installs them)";
  }
  // A fixed seed keeps CI reproducible; BRISVOX_VAD_SEED explores others.
  std::uint64_t seed = 20261130;
  if (const char* env = std::getenv("BRISVOX_VAD_SEED")) seed = std::strtoull(env, nullptr, 10);
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](int lo, int hi) {  // [lo, hi], portable (no std distributions)
    return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  const std::filesystem::path probs_file =
      std::filesystem::temp_directory_path() /
      ("brisvox_vad_reference_" + std::to_string(getpid()) + ".json");

  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", round " + std::to_string(round));
    const int rate = round % 2 == 0 ? 16000 : 8000;
    const int window = rate == 16000 ? 512 : 256;
    // A two-state random walk with probabilities as 6-decimal numbers: the exact same float on
    // both sides (decimal -> double -> float).
    const int frames = uniform(200, 1200);
    std::vector<float> probs;
    std::string text = "[";
    bool speech = false;
    for (int i = 0; i < frames; ++i) {
      if (uniform(0, 99) < (speech ? 8 : 12)) speech = !speech;
      int micro = speech ? uniform(400000, 1000000) : uniform(0, 550000);
      if (uniform(0, 99) < 3) micro = std::vector<int>{500000, 350000, 150000, 0}[uniform(0, 3)];
      char decimal[16];
      std::snprintf(decimal, sizeof decimal, "%.6f", micro / 1e6);
      probs.push_back(static_cast<float>(std::strtod(decimal, nullptr)));
      text += (i ? "," : "") + std::string(decimal);
    }
    text += "]";
    std::ofstream(probs_file) << text;
    const std::int64_t num_samples = std::int64_t{frames} * window - uniform(0, window - 1);

    SegmenterParams params;
    params.threshold = std::vector<double>{0.5, 0.3, 0.6, 0.45}[uniform(0, 3)];
    if (uniform(0, 2) == 0) params.neg_threshold = params.threshold - 0.1 * uniform(0, 3);
    params.min_speech_ms = std::vector<int>{250, 0, 100, 400}[uniform(0, 3)];
    params.max_speech_s = std::vector<double>{std::numeric_limits<double>::infinity(), 0.7, 1.5,
                                              2.25, 5.0}[uniform(0, 4)];
    params.min_silence_ms = std::vector<int>{100, 0, 30, 300, 700}[uniform(0, 4)];
    params.speech_pad_ms = std::vector<int>{30, 0, 60, 150}[uniform(0, 3)];
    params.min_silence_at_max_speech_ms = std::vector<int>{98, 0, 40, 250}[uniform(0, 3)];
    params.use_max_poss_sil_at_max_speech = uniform(0, 1) == 1;

    std::string command =
        "node '" + script.string() + "' --probs '" + probs_file.string() + "' --rate " +
        std::to_string(rate) + " --num-samples " + std::to_string(num_samples) + " --threshold " +
        arg(params.threshold) + " --neg-threshold " +
        (params.neg_threshold < 0 ? "auto" : arg(params.neg_threshold)) +
        " --min-speech-duration-ms " + std::to_string(params.min_speech_ms) +
        " --max-speech-duration-s " +
        (std::isinf(params.max_speech_s) ? "inf" : arg(params.max_speech_s)) +
        " --min-silence-duration-ms " + std::to_string(params.min_silence_ms) +
        " --speech-pad-ms " + std::to_string(params.speech_pad_ms) +
        " --min-silence-at-max-speech " + std::to_string(params.min_silence_at_max_speech_ms) +
        " --use-max-poss-sil-at-max-speech " +
        (params.use_max_poss_sil_at_max_speech ? "true" : "false");
    SCOPED_TRACE(command);
    const std::string output = run_command(command);
    ASSERT_FALSE(output.empty()) << "the reference failed";
    const nlohmann::json reference = nlohmann::json::parse(output);
    std::vector<SpeechSegment> expected;
    for (const auto& s : reference.at("segments")) {
      expected.push_back({s.at("start").get<std::int64_t>(), s.at("end").get<std::int64_t>()});
    }
    EXPECT_EQ(get_speech_timestamps(probs, num_samples, rate, params), expected);
  }
  // BRISVOX_VAD_KEEP=1 keeps the last sequence, to rerun the reference command by hand.
  if (std::getenv("BRISVOX_VAD_KEEP") == nullptr) std::filesystem::remove(probs_file);
}

}  // namespace
}  // namespace brisvox
