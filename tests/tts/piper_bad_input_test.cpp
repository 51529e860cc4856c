// Bad input and a failing espeak-ng: every case is an Error with a message a user can act on,
// nothing crashes, and a failed request leaves the next one working.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "brisvox/error.h"
#include "piper_test_util.h"

namespace brisvox {
namespace {

// Runs f, expects an Error with `code` whose message contains `fragment`.
template <typename F>
void expect_error(F&& f, ErrorCode code, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

PiperSynthesis start(const std::string& text) {
  PiperRequest r;
  r.text = text;
  return test::shared_piper().start(r);
}

TEST(PiperBadInput, EmptyAndBlankText) {
  expect_error([] { start(""); }, ErrorCode::kInvalidArgument, "empty");
  expect_error([] { start(" \n\t "); }, ErrorCode::kInvalidArgument, "empty");
}

TEST(PiperBadInput, PunctuationAloneIsNoSentence) {
  for (const char* text : {"...", "!!!", " - ", "()"}) {
    PiperSynthesis s = start(text);
    EXPECT_EQ(s.sentence_count(), 0u) << text;
    PiperChunk c;
    EXPECT_FALSE(test::shared_piper().next(s, c)) << text;
  }
}

TEST(PiperBadInput, AClauseBreakBrisvoxDoesNotKnowIsDetectedAndCounted) {
  // U+1803 (Mongolian full stop) ends a clause in espeak-ng; brisvox's punctuation table leaves it
  // out, so espeak-ng prints one clause more than predicted. The request still works: each clause
  // printed becomes a sentence, and the mismatch is counted.
  EspeakPhonemizer p{EspeakPhonemizerConfig{}};
  const auto sentences = p.phonemize("Hello there\xe1\xa0\x83 General Kenobi.");
  EXPECT_EQ(p.stats().clause_mismatches, 1u);
  ASSERT_EQ(sentences.size(), 2u);
  EXPECT_EQ(sentences[1].back(), ".");  // the line's last clause keeps its terminator
  EXPECT_EQ(p.phonemize("General Kenobi.").size(), 1u);  // and the children are in step
  EXPECT_EQ(p.stats().clause_mismatches, 1u);
}

TEST(PiperBadInput, TextOverTheLimitIsRefusedBeforeAnyWork) {
  PiperTts& tts = test::shared_piper();
  const auto before = tts.phonemizer().stats().requests;
  const std::string huge(tts.max_text_bytes() + 1, 'a');
  expect_error([&] { start(huge); }, ErrorCode::kInvalidArgument, "limit of 20000 bytes");
  EXPECT_EQ(tts.phonemizer().stats().requests, before);  // espeak-ng never saw it
  const std::string megabyte(1 << 20, 'x');
  expect_error([&] { start(megabyte); }, ErrorCode::kInvalidArgument, "limit");
}

TEST(PiperBadInput, ControlCharactersAndInvalidUtf8) {
  expect_error([] { start(std::string("Hello\x01world.")); }, ErrorCode::kInvalidArgument, "U+0001 at character 5");
  expect_error([] { start(std::string("Nul\0byte.", 9)); }, ErrorCode::kInvalidArgument, "U+0000");
  expect_error([] { start("C1 \xc2\x85 control."); }, ErrorCode::kInvalidArgument, "U+0085");
  expect_error([] { start("bad \xff byte"); }, ErrorCode::kInvalidArgument, "byte offset 4");
  expect_error([] { start("cut \xe2\x82"); }, ErrorCode::kInvalidArgument, "not valid UTF-8");
  expect_error([] { start("surrogate \xed\xa0\x80."); }, ErrorCode::kInvalidArgument, "not valid UTF-8");
  // Tab, CR and LF are text.
  EXPECT_EQ(start("Tab\tand\r\nnewline.").sentence_count(), 1u);
}

TEST(PiperBadInput, BadRequestOptions) {
  PiperTts& tts = test::shared_piper();
  PiperRequest r;
  r.text = "Fine text.";
  r.output_rate_hz = 44100;
  expect_error([&] { tts.start(r); }, ErrorCode::kInvalidArgument, "sample rate of 44100 Hz");
  r.output_rate_hz = 0;
  r.length_scale = 0.0f;
  expect_error([&] { tts.start(r); }, ErrorCode::kInvalidArgument, "length_scale");
  r.length_scale.reset();
  r.speaker_id = 1;
  expect_error([&] { tts.start(r); }, ErrorCode::kInvalidArgument, "speaker_id 1");
  r.speaker_id.reset();
  r.volume = -1.0f;
  expect_error([&] { tts.start(r); }, ErrorCode::kInvalidArgument, "volume");
}

// Issue 35 D3: values inside the old ranges made one run take gigabytes (noise_w_scale 4: 6.2 GB,
// >= 5: ONNX Runtime asked for up to 364 GB; length_scale 20 on 40 words: +1.7 GB).
TEST(PiperBadInput, ScalesThatWouldTakeGigabytesAreRefused) {
  PiperTts& tts = test::shared_piper();
  PiperRequest r;
  r.text = "Fine text.";
  for (float w : {2.01f, 4.0f, 5.0f, 10.0f}) {
    r.noise_w_scale = w;
    expect_error([&] { tts.start(r); }, ErrorCode::kInvalidArgument, "noise_w_scale");
  }
  r.noise_w_scale = kPiperMaxNoiseWScale;
  EXPECT_NO_THROW(tts.start(r));
  r.noise_w_scale.reset();
  for (float l : {4.01f, 10.0f, 20.0f}) {
    r.length_scale = l;
    expect_error([&] { tts.start(r); }, ErrorCode::kInvalidArgument, "length_scale");
  }
  r.length_scale = kPiperMaxLengthScale;
  EXPECT_NO_THROW(tts.start(r));
}

TEST(PiperBadInput, SentenceLongerThanOneRunIsRefusedWholeInStart) {
  PiperTtsConfig c;
  c.model_path = test::piper_voice_path();
  c.max_phoneme_ids = 40;
  PiperTts tts(c);
  PiperRequest r;
  r.text = "Short. This second sentence is far too long for forty phoneme ids.";
  expect_error([&] { tts.start(r); }, ErrorCode::kInvalidArgument, "sentence 2 has");
}

TEST(PiperBadInput, UnknownVoiceFilesAndBadConfigs) {
  PiperTtsConfig c;
  c.model_path = "/nonexistent/voice.onnx";
  expect_error([&] { PiperTts t(c); }, ErrorCode::kIo, "/nonexistent/voice.onnx.json");
  c.config_path = test::third_party("models/piper/en_US-joe-medium.onnx.json");
  expect_error([&] { PiperTts t(c); }, ErrorCode::kIo, "/nonexistent/voice.onnx");

  const std::string bad_json = ::testing::TempDir() + "brisvox_bad_voice.onnx.json";
  std::ofstream(bad_json) << R"({"audio": {"sample_rate": 22050}, "num_symbols": 256, "num_speakers": 1})";
  expect_error([&] { load_piper_voice_config(bad_json); }, ErrorCode::kBadModel, "phoneme_id_map");
  std::ofstream(bad_json) << "{ not json";
  expect_error([&] { load_piper_voice_config(bad_json); }, ErrorCode::kBadModel, "invalid JSON");
  std::ofstream(bad_json) << R"({"audio": {"sample_rate": 22050}, "num_symbols": 256, "num_speakers": 1,
      "phoneme_type": "pinyin", "phoneme_id_map": {"^": [1], "$": [2], "_": [0]}})";
  expect_error([&] { load_piper_voice_config(bad_json); }, ErrorCode::kModelMismatch, "pinyin");
  std::remove(bad_json.c_str());
}

TEST(PiperBadInput, EspeakNgMissingIsReportedWhenThePhonemizerStarts) {
  EspeakPhonemizerConfig c;
  c.install.executable = "/nonexistent/bin/espeak-ng";
  expect_error([&] { EspeakPhonemizer p(c); }, ErrorCode::kIo, "cannot start espeak-ng '/nonexistent/bin/espeak-ng'");
  c.install.executable = "brisvox-no-such-espeak-ng";  // looked up on PATH
  expect_error([&] { EspeakPhonemizer p(c); }, ErrorCode::kIo, "apt-get install espeak-ng");
}

TEST(PiperBadInput, UnknownEspeakVoiceIsRefused) {
  EspeakPhonemizerConfig c;
  c.voice = "xx-no-such-voice";
  expect_error([&] { EspeakPhonemizer p(c); }, ErrorCode::kInvalidArgument, "voice");
}

TEST(PiperBadInput, KilledEspeakFailsOneRequestAndTheNextWorks) {
  EspeakPhonemizer p{EspeakPhonemizerConfig{}};
  ASSERT_EQ(p.phonemize("Before the crash.").size(), 1u);
  const auto pids = p.child_pids();
  ASSERT_GT(pids[0], 0);
  ASSERT_EQ(::kill(pids[0], SIGKILL), 0);
  expect_error([&] { p.phonemize("During the crash."); }, ErrorCode::kRuntime, "killed by signal 9");
  const auto after = p.phonemize("After the crash.");
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(p.stats().restarts, 1u);
  EXPECT_NE(p.child_pids()[0], pids[0]);
}

TEST(PiperBadInput, EspeakDyingMidRequestFailsThatRequestOnly) {
  // A wrapper that forwards lines to the real espeak-ng until one holds a marker, then closes its
  // input: espeak-ng exits in the middle of that request, as a crash would.
  const EspeakInstall real = default_espeak_install();
  const std::string wrapper = ::testing::TempDir() + "brisvox_dying_espeak.sh";
  std::ofstream(wrapper) << "#!/bin/sh\nwhile IFS= read -r line; do case \"$line\" in *brisvox-die-now*) exit 3;; esac; "
                            "printf '%s\\n' \"$line\"; done | '"
                         << real.executable << "' \"$@\"\n";
  ::chmod(wrapper.c_str(), 0755);
  EspeakPhonemizerConfig c;
  c.install = real;
  c.install.executable = wrapper;
  EspeakPhonemizer p(c);
  ASSERT_EQ(p.phonemize("This works.").size(), 1u);
  expect_error([&] { p.phonemize("First sentence. Then brisvox-die-now here."); }, ErrorCode::kRuntime,
               "the next request starts it again");
  const auto after = p.phonemize("This works again.");
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(p.stats().restarts, 1u);
  std::remove(wrapper.c_str());
}

}  // namespace
}  // namespace brisvox
