// Whisper log-mel features: the filterbank and window against librosa's known values, the
// contract (frame counts, sizes, errors), parity with tools/mel_reference.py (an independent
// float64 numpy implementation) on speech, silence, clipping, Smart Turn's padded 8 s and inputs
// shorter than a window, and the `brisvox mel` command's .npy.
#include "brisvox/audio/log_mel.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "test_paths.h"

namespace brisvox {
namespace {

namespace fs = std::filesystem;
using Mel = LogMelExtractor;

constexpr float kParityTolerance = 1e-4f;
const fs::path kLibrivoxDir = "/usr/share/pocketsphinx/test/data/librivox";

// --- small helpers ---------------------------------------------------------------------------

// A 2-D array read from a .npy (float32 or float64, C order), with its header for the checks.
struct Npy {
  std::string header;  // the dict text
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<double> values;
  bool aligned = false;  // data starts at a multiple of 64 bytes
};

Npy read_npy(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0 || bytes[6] != 1 || bytes[7] != 0) {
    throw std::runtime_error(path.string() + ": not an NPY v1.0 file");
  }
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) |
                                 (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
  Npy npy;
  npy.header = bytes.substr(10, header_len);
  npy.aligned = (10 + header_len) % 64 == 0;
  const auto shape_at = npy.header.find("'shape': (");
  if (shape_at == std::string::npos || npy.header.find("'fortran_order': False") == std::string::npos) {
    throw std::runtime_error(path.string() + ": unexpected header " + npy.header);
  }
  std::istringstream shape(npy.header.substr(shape_at + 10));
  char comma = 0;
  shape >> npy.rows >> comma >> npy.cols;
  const std::size_t count = npy.rows * npy.cols;
  const char* data = bytes.data() + 10 + header_len;
  const std::size_t data_bytes = bytes.size() - 10 - header_len;
  if (npy.header.find("'descr': '<f4'") != std::string::npos && data_bytes == 4 * count) {
    std::vector<float> f(count);
    if (count > 0) std::memcpy(f.data(), data, data_bytes);  // an empty vector's data() may be null
    npy.values.assign(f.begin(), f.end());
  } else if (npy.header.find("'descr': '<f8'") != std::string::npos && data_bytes == 8 * count) {
    npy.values.resize(count);
    if (count > 0) std::memcpy(npy.values.data(), data, data_bytes);
  } else {
    throw std::runtime_error(path.string() + ": unexpected dtype or size for " + npy.header);
  }
  return npy;
}

void write_f32(const fs::path& path, std::span<const float> samples) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(samples.data()),
            static_cast<std::streamsize>(samples.size_bytes()));
}

std::string shell_quoted(const fs::path& p) { return "'" + p.string() + "'"; }

bool have_numpy() {
  return std::system((std::string(BRISVOX_PYTHON) + " -c 'import numpy' > /dev/null 2>&1").c_str()) == 0;
}

// A scratch folder removed with everything in it.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("brisvox_mel_test_" + std::to_string(getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// Deterministic noise in [-amplitude, amplitude) (no std distribution: the same on every libc++).
std::vector<float> noise(std::size_t n, float amplitude, std::uint64_t seed) {
  std::vector<float> out(n);
  for (auto& v : out) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v = amplitude * (static_cast<float>(seed >> 40) / static_cast<float>(1ULL << 24) * 2.0f - 1.0f);
  }
  return out;
}

std::vector<float> sine(std::size_t n, double freq_hz, double amplitude) {
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(
        amplitude * std::sin(2.0 * std::numbers::pi * freq_hz * static_cast<double>(i) / Mel::kSampleRateHz));
  }
  return out;
}

const std::vector<float>& sample_speech() {
  static const std::vector<float> samples = load_audio(test::sample_wav()).samples;
  return samples;
}

double max_abs_diff(std::span<const float> a, std::span<const double> b) {
  double d = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// --- the filterbank and window -----------------------------------------------------------------

TEST(LogMelFilters, MatchLibrosaSlaneyValues) {
  const Mel mel;
  const auto f = mel.mel_filters();
  ASSERT_EQ(f.size(), Mel::kNumMels * Mel::kNumBins);
  auto at = [&](std::size_t m, std::size_t k) { return f[m * Mel::kNumBins + k]; };
  // librosa.filters.mel(sr=16000, n_fft=400, n_mels=80) (and Whisper's mel_filters.npz): filter 0
  // is 0 -> 37.2 -> 74.5 Hz and only holds the 40 Hz bin; filter 1 holds bins 1 and 2.
  EXPECT_NEAR(at(0, 1), 0.02486259, 1e-7);
  EXPECT_EQ(at(0, 0), 0.0f);
  EXPECT_EQ(at(0, 2), 0.0f);
  EXPECT_NEAR(at(1, 1), 0.00199082, 1e-7);
  EXPECT_NEAR(at(1, 2), 0.02287177, 1e-7);
  // The last filter ends at 8 kHz: zero at bin 200, non-zero just below.
  EXPECT_EQ(at(79, 200), 0.0f);
  EXPECT_GT(at(79, 199), 0.0f);
  for (std::size_t m = 0; m < Mel::kNumMels; ++m) {
    double area_hz = 0.0;
    float peak = 0.0f;
    for (std::size_t k = 0; k < Mel::kNumBins; ++k) {
      area_hz += at(m, k) * 40.0;
      peak = std::max(peak, at(m, k));
    }
    EXPECT_GT(peak, 0.0f) << "empty filter " << m;
    // Slaney normalisation: area 1 in Hz, which 40 Hz bins sample well from filter 41 (4+ bins).
    if (m >= 41) {
      EXPECT_NEAR(area_hz, 1.0, 0.02) << "filter " << m;
    }
  }
}

TEST(LogMelFilters, WindowIsPeriodicHann) {
  const Mel mel;
  const auto w = mel.window();
  ASSERT_EQ(w.size(), 400u);
  EXPECT_EQ(w[0], 0.0f);
  EXPECT_FLOAT_EQ(w[200], 1.0f);
  EXPECT_FLOAT_EQ(w[100], 0.5f);
  for (std::size_t i = 1; i < 400; ++i) EXPECT_FLOAT_EQ(w[i], w[400 - i]) << i;
}

// --- the contract ------------------------------------------------------------------------------

TEST(LogMel, FrameCounts) {
  EXPECT_EQ(Mel::num_frames(0), 0u);
  EXPECT_EQ(Mel::num_frames(1), 0u);
  EXPECT_EQ(Mel::num_frames(159), 0u);
  EXPECT_EQ(Mel::num_frames(160), 1u);
  EXPECT_EQ(Mel::num_frames(399), 2u);
  EXPECT_EQ(Mel::num_frames(128000), 800u);
  EXPECT_EQ(Mel::num_frames(128159), 800u);
  EXPECT_EQ(Mel::num_values(128000), 64000u);
  EXPECT_EQ(log_mel(sample_speech()).size(), 80u * (sample_speech().size() / 160));
  for (std::size_t n : {0u, 1u, 2u, 100u, 159u}) EXPECT_TRUE(log_mel(noise(n, 0.5f, n)).empty()) << n;
}

TEST(LogMel, RejectsWrongOutputSizeAndNonFiniteSamples) {
  Mel mel;
  std::vector<float> samples(1600, 0.0f);
  std::vector<float> out(Mel::num_values(1600) - 1);
  try {
    mel.compute(samples, out);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("800"), std::string::npos) << e.what();
  }
  out.resize(Mel::num_values(1600));
  samples[1234] = std::nanf("");
  try {
    mel.compute(samples, out);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadAudio);
    EXPECT_NE(std::string(e.what()).find("1234"), std::string::npos) << e.what();
  }
  // Still usable afterwards.
  samples[1234] = 0.0f;
  mel.compute(samples, out);
  EXPECT_EQ(out[0], -1.5f);
}

TEST(LogMel, SilenceSitsAtTheFloor) {
  // log10(1e-10) = -10 everywhere, so the maximum is -10 too: (-10 + 4) / 4.
  const auto out = log_mel(std::vector<float>(128000, 0.0f));
  ASSERT_EQ(out.size(), 64000u);
  for (float v : out) ASSERT_EQ(v, -1.5f);
}

TEST(LogMel, ToneLandsInItsFilterAndTheRangeIsEightDecades) {
  // 1 kHz is the centre of filter 26 (mel 15.0 = 26.85 steps of 0.5586 -> between 25 and 27).
  const auto x = sine(16000, 1000.0, 0.5);
  const auto out = log_mel(x);
  const std::size_t frames = 100;
  const std::size_t t = 50;
  std::size_t best = 0;
  for (std::size_t m = 1; m < Mel::kNumMels; ++m) {
    if (out[m * frames + t] > out[best * frames + t]) best = m;
  }
  EXPECT_GE(best, 25u);
  EXPECT_LE(best, 27u);
  const auto [lo, hi] = std::minmax_element(out.begin(), out.end());
  EXPECT_NEAR(*hi - *lo, 2.0f, 1e-6f);  // floored 8 log10 units below the maximum, / 4
}

TEST(LogMel, RepeatedAndMovedExtractorsAgree) {
  const std::span<const float> x(sample_speech().data(), 48000);
  Mel mel;
  std::vector<float> a(Mel::num_values(x.size()));
  std::vector<float> b(a.size());
  mel.compute(x, a);
  mel.compute(noise(x.size(), 0.9f, 7), b);  // something else in between
  Mel moved = std::move(mel);
  moved.compute(x, b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(log_mel(x), a);
}

// --- parity with tools/mel_reference.py --------------------------------------------------------

struct Case {
  std::string name;
  std::vector<float> samples;  // what the C++ extractor gets
  fs::path reference_input;    // what the script reads: a raw float32 copy, or the WAV itself
};

std::vector<Case> parity_cases(const fs::path& dir) {
  std::vector<Case> cases;
  auto raw = [&](std::string name, std::vector<float> samples) {
    const fs::path path = dir / (name + ".f32");
    write_f32(path, samples);
    cases.push_back({std::move(name), std::move(samples), path});
  };
  const auto& speech = sample_speech();
  // Whole files are read by the script itself (wave module), the first 8 s from a raw copy.
  cases.push_back({"sample_whole", speech, test::sample_wav()});
  raw("sample_first_8s", std::vector<float>(speech.begin(), speech.begin() + 128000));
  if (fs::is_directory(kLibrivoxDir)) {
    std::vector<fs::path> wavs;
    for (const auto& entry : fs::directory_iterator(kLibrivoxDir)) {
      if (entry.path().extension() == ".wav") wavs.push_back(entry.path());
    }
    std::sort(wavs.begin(), wavs.end());
    for (const auto& wav : wavs)
      cases.push_back({wav.stem().string(), load_audio(wav.string()).samples, wav});
  }
  raw("silence", std::vector<float>(16000, 0.0f));
  auto clipped = sine(16000, 440.0, 3.0);
  for (auto& v : clipped) v = std::clamp(v, -1.0f, 1.0f);
  raw("clipped_sine", std::move(clipped));
  // Smart Turn v3's input: the last 8 s of audio, zeros on the left when there is less (5 s here).
  std::vector<float> smart_turn(128000, 0.0f);
  std::copy(speech.end() - 80000, speech.end(), smart_turn.end() - 80000);
  raw("smart_turn_padded", std::move(smart_turn));
  // Shorter than a window: no frame below 160 samples, repeated reflection up to 200.
  for (std::size_t n : {0u, 1u, 100u, 159u, 160u, 161u, 200u, 201u, 250u, 399u}) {
    raw("short_" + std::to_string(n), std::vector<float>(speech.begin() + 40000, speech.begin() + 40000 + n));
  }
  raw("short_noise_170", noise(170, 0.3f, 170));
  return cases;
}

// One script run for every case (numpy's start-up is most of its cost, and CTest runs each test
// in its own process), then every case compared; the differences are printed for the record.
TEST(LogMelParity, MatchesTheNumpyReference) {
  if (!have_numpy()) {
    GTEST_SKIP() << BRISVOX_PYTHON << " cannot import numpy (apt install python3-numpy)";
  }
  if (!fs::is_directory(kLibrivoxDir)) std::cout << kLibrivoxDir << " not found: no LibriVox cases\n";
  ScratchDir dir;
  const std::vector<Case> cases = parity_cases(dir.path);
  std::string command = std::string(BRISVOX_PYTHON) + " " +
                        shell_quoted(fs::path(BRISVOX_SOURCE_DIR) / "tools/mel_reference.py") +
                        " --filters " + shell_quoted(dir.path / "filters.npy");
  for (const auto& c : cases) {
    command += " " + shell_quoted(c.reference_input) + " -o " + shell_quoted(dir.path / (c.name + ".npy"));
  }
  ASSERT_EQ(std::system(command.c_str()), 0) << "tools/mel_reference.py failed (its error is above)";

  const Mel mel_for_filters;
  const Npy filters = read_npy(dir.path / "filters.npy");
  ASSERT_EQ(filters.rows, Mel::kNumMels);
  ASSERT_EQ(filters.cols, Mel::kNumBins);
  const double filters_diff = max_abs_diff(mel_for_filters.mel_filters(), filters.values);
  std::cout << "[ parity   ] filterbank: max abs diff " << filters_diff << "\n";
  EXPECT_LE(filters_diff, 1e-8);

  Mel mel;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Npy ref = read_npy(dir.path / (c.name + ".npy"));
    ASSERT_EQ(ref.rows, Mel::kNumMels);
    ASSERT_EQ(ref.cols, Mel::num_frames(c.samples.size()));
    std::vector<float> out(Mel::num_values(c.samples.size()));
    mel.compute(c.samples, out);
    const double diff = max_abs_diff(out, ref.values);
    std::cout << "[ parity   ] " << c.name << ": " << ref.cols << " frames, max abs diff " << diff << "\n";
    EXPECT_LE(diff, kParityTolerance);
  }
}

// --- `brisvox mel` -----------------------------------------------------------------------------

#ifdef BRISVOX_CLI_PATH
int run_cli(const std::string& args) {
  return std::system((std::string(BRISVOX_CLI_PATH) + " " + args + " > /dev/null 2>&1").c_str());
}

TEST(MelCommand, WritesTheExtractorsFeaturesAsNpy) {
  ScratchDir dir;
  const fs::path out = dir.path / "sample.npy";
  ASSERT_EQ(run_cli("mel " + shell_quoted(test::sample_wav()) + " -o " + shell_quoted(out)), 0);
  const Npy npy = read_npy(out);
  EXPECT_TRUE(npy.aligned) << npy.header;
  EXPECT_NE(npy.header.find("'descr': '<f4'"), std::string::npos) << npy.header;
  EXPECT_EQ(npy.header.back(), '\n');
  const auto expected = log_mel(sample_speech());
  ASSERT_EQ(npy.rows, 80u);
  ASSERT_EQ(npy.cols, sample_speech().size() / 160);
  ASSERT_EQ(npy.values.size(), expected.size());
  EXPECT_EQ(max_abs_diff(expected, npy.values), 0.0);
  if (have_numpy()) {  // numpy itself accepts the file
    const std::string check = std::string(BRISVOX_PYTHON) +
                              " -c \"import numpy as np, sys; a = np.load(sys.argv[1]); "
                              "sys.exit(0 if a.dtype == np.float32 and a.shape == (80, " +
                              std::to_string(npy.cols) + ") else 1)\" " + shell_quoted(out);
    EXPECT_EQ(std::system(check.c_str()), 0);
  }
}

TEST(MelCommand, ResamplesOtherRatesTo16k) {
  ScratchDir dir;
  // 1 s of 8 kHz 16-bit PCM, headerless.
  std::vector<std::int16_t> pcm(8000);
  std::vector<float> as_float(pcm.size());
  for (std::size_t i = 0; i < pcm.size(); ++i) {
    pcm[i] = static_cast<std::int16_t>(
        8000.0 * std::sin(2.0 * std::numbers::pi * 300.0 * static_cast<double>(i) / 8000.0));
    as_float[i] = static_cast<float>(pcm[i]) / 32768.0f;
  }
  const fs::path in = dir.path / "tone.raw";
  std::ofstream(in, std::ios::binary).write(reinterpret_cast<const char*>(pcm.data()), 2 * 8000);
  const fs::path out = dir.path / "tone.npy";
  ASSERT_EQ(run_cli("mel --raw-rate 8000 " + shell_quoted(in) + " -o " + shell_quoted(out)), 0);
  const Npy npy = read_npy(out);
  EXPECT_EQ(npy.cols, 100u);
  EXPECT_EQ(max_abs_diff(log_mel(resample(as_float, 8000, 16000)), npy.values), 0.0);
}

TEST(MelCommand, UnwritableOutputIsAnIoError) {
  const int status = std::system((std::string(BRISVOX_CLI_PATH) + " mel " + shell_quoted(test::sample_wav()) +
                                  " -o /nonexistent/dir/x.npy 2>&1 | grep -q '\\[io\\]'")
                                     .c_str());
  EXPECT_EQ(status, 0) << "expected an [io] error";
  EXPECT_NE(run_cli("mel " + shell_quoted(test::sample_wav()) + " -o /nonexistent/dir/x.npy"), 0);
}
#endif

}  // namespace
}  // namespace brisvox
