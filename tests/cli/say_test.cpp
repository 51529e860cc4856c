// End-to-end tests of `brisvox say` and `brisvox voices` with the real Piper voice: the WAV and
// the raw PCM it writes hold exactly the model layer's samples (noise scales 0, Piper's int16
// rule), and bad input gives the documented exit status and a message naming the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/models/tts/piper_tts.h"
#include "cli_process.h"
#include "test_paths.h"

namespace brisvox::test {
namespace {

ProcessResult brisvox_say(std::vector<std::string> args) {
  args.insert(args.begin(), BRISVOX_CLI_PATH);
  return run_process(args);
}

const char* kText = "Good morning. Your package arrives on Tuesday.";

// The model layer's audio for kText, deterministic, as piper-tts writes it (int16).
std::vector<std::int16_t> reference_pcm(int rate_hz = 0) {
  PiperTtsConfig c;
  c.model_path = third_party("models/piper/en_US-joe-medium.onnx");
  static PiperTts tts(c);
  PiperRequest r;
  r.text = kText;
  r.noise_scale = 0.0f;
  r.noise_w_scale = 0.0f;
  r.output_rate_hz = rate_hz;
  PiperSynthesis s = tts.start(r);
  std::vector<std::int16_t> out;
  PiperChunk chunk;
  while (tts.next(s, chunk)) {
    const auto pcm = piper_to_int16(chunk.samples);
    out.insert(out.end(), pcm.begin(), pcm.end());
  }
  return out;
}

std::vector<std::int16_t> as_int16(const std::vector<float>& x) {
  std::vector<std::int16_t> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = static_cast<std::int16_t>(std::lround(x[i] * 32768.0f));
  return out;
}

TEST(CliSay, WavHoldsTheModelLayersSamples) {
  TempDir dir;
  const std::string wav = dir.file("out.wav");
  const ProcessResult r = brisvox_say({"say", "--noise-scale", "0", "--noise-w-scale", "0", "-o", wav, kText});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("2 sentences"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("first audio after"), std::string::npos) << r.err;
  const Audio a = read_audio_file(wav);
  EXPECT_EQ(a.sample_rate_hz, 22050);
  EXPECT_EQ(a.num_channels_in_source, 1);
  EXPECT_EQ(as_int16(a.samples), reference_pcm());
}

TEST(CliSay, RawPcmToStdoutAtAnotherRate) {
  TempDir dir;
  const std::string text_file = dir.file("reply.txt");
  std::ofstream(text_file) << kText;
  const ProcessResult r = brisvox_say({"say", "--noise-scale", "0", "--noise-w-scale", "0", "--rate", "16000",
                                       "--format", "raw", "-o", "-", "-q", "--text-file", text_file});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(r.err.empty()) << r.err;  // -q
  ASSERT_EQ(r.out.size() % 2, 0u);
  std::vector<std::int16_t> got(r.out.size() / 2);
  std::memcpy(got.data(), r.out.data(), r.out.size());
  EXPECT_EQ(got, reference_pcm(16000));
}

TEST(CliSay, WavToStdoutIsAWholeFile) {
  TempDir dir;
  const ProcessResult r = brisvox_say({"say", "-q", "-o", "-", "Short."});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string wav = dir.file("piped.wav");
  std::ofstream(wav, std::ios::binary) << r.out;
  const Audio a = read_audio_file(wav);
  EXPECT_EQ(a.sample_rate_hz, 22050);
  EXPECT_GT(a.duration_s(), 0.2);
}

TEST(CliSay, BadInputIsAUsageErrorNamingTheProblem) {
  TempDir dir;
  ProcessResult r = brisvox_say({"say", "-o", dir.file("x.wav")});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("no text"), std::string::npos) << r.describe();

  r = brisvox_say({"say", "-o", dir.file("x.wav"), "   "});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("text is empty"), std::string::npos) << r.describe();

  const std::string bad = dir.file("bad.txt");
  std::ofstream(bad, std::ios::binary) << "caf\xe9 latin-1";
  r = brisvox_say({"say", "-o", dir.file("x.wav"), "--text-file", bad});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.describe();

  r = brisvox_say({"say", "--rate", "44100", "-o", dir.file("x.wav"), "Hi."});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("44100"), std::string::npos) << r.describe();

  r = brisvox_say({"say", "--format", "mp3", "-o", dir.file("x.wav"), "Hi."});
  EXPECT_EQ(r.exit_code, 2) << r.describe();

  r = brisvox_say({"say", "--voice", "no-such-voice", "-o", dir.file("x.wav"), "Hi."});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.err.find("error [io]"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("installed: en_US-joe-medium"), std::string::npos) << r.describe();
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.wav")));
}

// Issue 35: /dev/zero was read whole (then bad_alloc) before the 20 000-byte limit was checked.
TEST(CliSay, AHugeTextFileIsRefusedWithoutReadingItWhole) {
  TempDir dir;
  const ProcessResult r = brisvox_say({"say", "-o", dir.file("x.wav"), "--text-file", "/dev/zero"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("longer than 20000 bytes"), std::string::npos) << r.describe();
  EXPECT_LT(r.max_rss_kib, 1 << 20) << r.describe();
}

// Issue 35: `brisvox vad x.wav > /dev/full` exited 0 with nothing written.
TEST(CliOutput, AFullStandardOutputIsAFailure) {
  for (const char* command : {"vad", "voices"}) {
    std::string line = std::string("exec '") + BRISVOX_CLI_PATH + "' " + command;
    if (std::string(command) == "vad") line += " '" + sample_wav() + "'";
    const ProcessResult r = run_process({"sh", "-c", line + " > /dev/full"});
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.describe();
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << command << ": " << r.describe();
  }
}

TEST(CliVoices, ListsTheBundledVoice) {
  ProcessResult r = brisvox_say({"voices"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("en_US-joe-medium"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("22050"), std::string::npos) << r.out;
  r = brisvox_say({"voices", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  bool found = false;
  for (const auto& v : j) {
    if (v.at("name") != "en_US-joe-medium") continue;
    found = true;
    EXPECT_EQ(v.at("language"), "en-us");
    EXPECT_EQ(v.at("sample_rate"), 22050);
    EXPECT_EQ(v.at("speakers"), 1);
  }
  EXPECT_TRUE(found) << r.out;
  TempDir empty;
  r = brisvox_say({"voices", "--dir", empty.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("no Piper voice"), std::string::npos) << r.describe();
}

}  // namespace
}  // namespace brisvox::test
