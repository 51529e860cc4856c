// End-to-end tests of what the file commands (`brisvox vad`, `brisvox turn`) share (cli/file_run.h):
// per-channel runs of a two-channel call, standard input, --raw-rate on a WAV, the progress bar in
// audio seconds, memory that does not grow with a file's duration, `turn` with the options of
// `vad`, and help texts that say what the commands read.
//
// The call: left channel silence, right channel the bundled speech sample (agent silent, caller
// talking), made with SoX; the right channel alone must give exactly the sample's segments.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "test_paths.h"

namespace brisvox::test {
namespace {

using nlohmann::json;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The files of the suite, made once with SoX.
class CliFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sox_ = find_program("sox");
    if (sox_.empty()) return;
    dir_ = new TempDir();
    const auto run = [](const std::vector<std::string>& argv) {
      const ProcessResult r = run_process(argv);
      if (r.exit_code != 0) throw std::runtime_error(r.describe());
    };
    // 454880 samples at 16 kHz: exactly as long as the sample.
    run({sox_, "-D", "-n", "-r", "16000", "-c", "1", "-b", "16", file("silence.wav"), "trim", "0s", "454880s"});
    run({sox_, "-D", "-M", file("silence.wav"), sample_wav(), file("call.wav")});
    run({sox_, "-D", sample_wav(), "-t", "raw", "-e", "signed", "-b", "16", file("sample.s16")});
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (sox_.empty()) GTEST_SKIP() << "needs sox";
  }
  static std::string file(const std::string& name) { return dir_->file(name); }

  // The sample's segments from `brisvox vad` on the file itself.
  static json sample_segments() {
    const ProcessResult r = brisvox({"vad", sample_wav()});
    if (r.exit_code != 0) throw std::runtime_error(r.describe());
    return json::parse(r.out).at("segments");
  }

  static inline std::string sox_;
  static inline TempDir* dir_ = nullptr;
};

TEST_F(CliFiles, SplitChannelsGivesOneResultPerChannel) {
  const ProcessResult r = brisvox({"vad", "--channels", "split", file("call.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::vector<json> out = json_lines(r.out);
  ASSERT_EQ(out.size(), 2u) << r.out;
  EXPECT_EQ(out[0].at("channel"), 0);
  EXPECT_EQ(out[1].at("channel"), 1);
  EXPECT_EQ(out[0].at("file"), file("call.wav"));
  EXPECT_TRUE(out[0].at("segments").empty()) << out[0].dump();  // the silent agent
  EXPECT_EQ(out[1].at("segments"), sample_segments());            // the caller, sample for sample
  EXPECT_DOUBLE_EQ(out[1].at("duration").get<double>(), 454880.0 / 16000);
  // Mixed (the default), the result has no "channel".
  const ProcessResult mixed = brisvox({"vad", file("call.wav")});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.describe();
  EXPECT_FALSE(json::parse(mixed.out).contains("channel"));
}

TEST_F(CliFiles, SplitChannelsInEveryFormat) {
  const json segments = sample_segments();
  ProcessResult r = brisvox({"vad", "--channels", "split", "--format", "csv", file("call.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2 + segments.size()) << r.out;
  EXPECT_EQ(lines[0], "file,channel,start,end");
  EXPECT_EQ(lines[1], file("call.wav") + ",0,,");  // read, and silent: not the same as missing
  EXPECT_TRUE(lines[2].starts_with(file("call.wav") + ",1,")) << lines[2];

  r = brisvox({"vad", "--channels", "split", "--format", "rttm", file("call.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), segments.size()) << r.out;
  for (const std::string& line : lines) EXPECT_TRUE(line.starts_with("SPEAKER call 2 ")) << line;  // RTTM counts from 1

  r = brisvox({"vad", "--channels", "split", "--format", "audacity", file("call.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), segments.size()) << r.out;
  for (const std::string& line : lines) EXPECT_TRUE(line.ends_with("\tspeech (channel 1)")) << line;

  // -o: one file per input, its channels in order.
  TempDir out;
  r = brisvox({"vad", "--channels", "split", "-o", out.path().string(), file("call.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::ifstream in(out.file("call.json"));
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<json> docs = json_lines(text.str());
  ASSERT_EQ(docs.size(), 2u) << text.str();
  EXPECT_EQ(docs[1].at("segments"), segments);
}

TEST_F(CliFiles, ChannelPicksOne) {
  ProcessResult r = brisvox({"vad", "--channel", "1", file("call.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::vector<json> out = json_lines(r.out);
  ASSERT_EQ(out.size(), 1u) << r.out;
  EXPECT_EQ(out[0].at("channel"), 1);
  EXPECT_EQ(out[0].at("segments"), sample_segments());
  r = brisvox({"vad", "--channel", "2", file("call.wav")});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "has 2 channels: there is no channel 2")) << r.describe();
  r = brisvox({"vad", "--channel", "0", "--channels", "split", file("call.wav")});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "exclude each other")) << r.describe();
  r = brisvox({"vad", "--channels", "left", file("call.wav")});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--channels must be mix or split")) << r.describe();
}

TEST_F(CliFiles, StandardInput) {
  const json segments = sample_segments();
  // A redirected file, a pipe of a WAV, a pipe of headerless PCM: the same segments.
  ProcessResult r = brisvox({"vad", "-"}, sample_wav());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json j = json::parse(r.out);
  EXPECT_EQ(j.at("file"), "-");
  EXPECT_EQ(j.at("segments"), segments);
  r = run_process({"sh", "-c", "cat \"$1\" | \"$0\" vad -", kCli, sample_wav()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(json::parse(r.out).at("segments"), segments);
  r = run_process({"sh", "-c", "cat \"$1\" | \"$0\" vad --raw-encoding pcm_s16le --raw-rate 16000 -", kCli,
                   file("sample.s16")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(json::parse(r.out).at("segments"), segments);
  // -o names it stdin.
  TempDir out;
  r = brisvox({"vad", "--format", "csv", "-o", out.path().string(), "-"}, sample_wav());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(std::filesystem::exists(out.file("stdin.csv")));
  r = brisvox({"vad", "-", "-"}, sample_wav());
  EXPECT_EQ(r.exit_code, 2) << r.describe();
}

TEST_F(CliFiles, RawRateOnAWavIsRefusedNotIgnored) {
  const ProcessResult r = brisvox({"vad", "--raw-rate", "8000", sample_wav()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--raw-rate 8000 is for headerless input")) << r.describe();
  EXPECT_EQ(r.out, "");
}

TEST_F(CliFiles, SilentFileHasACsvRow) {
  const ProcessResult r = brisvox({"vad", "--format", "csv", file("silence.wav"), "/nonexistent.wav"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_EQ(r.out, "file,start,end\n" + file("silence.wav") + ",,\n");
  EXPECT_TRUE(contains(r.err, "/nonexistent.wav")) << r.describe();
}

TEST_F(CliFiles, ProgressCountsAudioSeconds) {
  const ProcessResult r = brisvox({"vad", "--progress", sample_wav()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // The last update: the whole file read, 28 s of audio.
  EXPECT_TRUE(contains(r.err, "1/1 file, 28 s of audio read")) << r.err;
  EXPECT_TRUE(contains(r.err, "[==============================]")) << r.err;
}

TEST_F(CliFiles, SummaryCountsFilesAudioAndFailures) {
  const ProcessResult r = brisvox({"vad", "--no-progress", "--summary", sample_wav(), "/nonexistent.wav"});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "brisvox vad: 2 file(s), 28.4 s of audio in ")) << r.err;
  EXPECT_TRUE(contains(r.err, "x real time), 1 failed; the models loaded in ")) << r.err;
}

// A 10-minute file costs no more memory than a 28-second one: it is decoded a block at a time
// (before: +38 MB of float samples, the whole file).
TEST_F(CliFiles, LongFileInBoundedMemory) {
  // 10 minutes: decoded whole, 38 MB of float samples. Made here, not for every test (CTest runs
  // each test in its own process).
  const ProcessResult made =
      run_process({sox_, "-D", "-n", "-r", "16000", "-c", "1", "-b", "16", file("long.wav"), "trim", "0", "600"});
  ASSERT_EQ(made.exit_code, 0) << made.describe();
  const ProcessResult small = brisvox({"vad", "--workers", "1", sample_wav()});
  const ProcessResult big = brisvox({"vad", "--workers", "1", file("long.wav")});
  ASSERT_EQ(small.exit_code, 0) << small.describe();
  ASSERT_EQ(big.exit_code, 0) << big.describe();
  EXPECT_DOUBLE_EQ(json::parse(big.out).at("duration").get<double>(), 600.0);
  EXPECT_LT(big.max_rss_kib - small.max_rss_kib, 12 * 1024)
      << "peak RSS " << big.max_rss_kib << " KiB for 600 s vs " << small.max_rss_kib << " KiB for 28 s";
}

TEST_F(CliFiles, TurnHasTheOptionsOfVad) {
  const std::string model = generated_model("smart_turn_tiny.onnx");
  ProcessResult r = brisvox({"turn", "--turn-model", model, "--min-silence-ms", "300", "--channels", "split",
                             file("call.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::vector<json> out = json_lines(r.out);
  ASSERT_EQ(out.size(), 2u) << r.out;
  EXPECT_TRUE(out[0].at("turns").empty());
  EXPECT_FALSE(out[1].at("turns").empty());
  ASSERT_TRUE(out[1].contains("incomplete")) << out[1].dump();
  for (const json& i : out[1].at("incomplete")) EXPECT_LT(i.at("start").get<double>(), i.at("end").get<double>());
  const std::size_t num_verdicts = out[1].at("turns").size() + out[1].at("incomplete").size();

  TempDir dir;
  r = brisvox({"turn", "--turn-model", model, "--min-silence-ms", "300", "--channel", "1", "--format", "csv", "-o",
               dir.path().string(), file("call.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::ifstream in(dir.file("call.csv"));
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<std::string> lines = lines_of(text.str());
  ASSERT_EQ(lines.size(), 1 + num_verdicts) << text.str();
  EXPECT_EQ(lines[0], "file,channel,start,end,probability,reason");

  // Headerless input, as for vad.
  r = brisvox({"turn", "--turn-model", model, "--raw-encoding", "pcm_s16le", "--raw-rate", "16000",
               file("sample.s16")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_FALSE(json::parse(r.out).at("turns").empty());
  r = brisvox({"turn", "--turn-model", model, "--format", "rttm", sample_wav()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (const std::string& line : lines_of(r.out)) EXPECT_TRUE(line.starts_with("SPEAKER sample 1 ")) << line;
}

TEST(CliFilesHelp, SubcommandHelpSaysWhatItReads) {
  for (const char* command : {"mel", "doctor"}) {
    const ProcessResult r = brisvox({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    // Not the global examples: its own.
    EXPECT_FALSE(contains(r.out, "brisvox serve --port")) << command << ":\n" << r.out;
    EXPECT_TRUE(contains(r.out, std::string("brisvox ") + command)) << r.out;
  }
  const ProcessResult vad = brisvox({"vad", "--help"});
  EXPECT_TRUE(contains(vad.out, "MP3")) << vad.out;
  EXPECT_TRUE(contains(vad.out, "G.711")) << vad.out;
  EXPECT_TRUE(contains(vad.out, "--channels")) << vad.out;
}

TEST(CliFilesHelp, OptionErrorsNameTheOption) {
  ProcessResult r = brisvox({"vad", "--workers", "5000", sample_wav()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--workers must be")) << r.describe();
  EXPECT_FALSE(contains(r.err, "num_workers")) << r.describe();
  // A global option after the subcommand.
  r = brisvox({"vad", "--log-level", "error", sample_wav()});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

}  // namespace
}  // namespace brisvox::test
