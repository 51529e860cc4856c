#include "brisvox/audio/audio_file.h"

#include <gtest/gtest.h>
#include <sndfile.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numbers>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "brisvox/audio/wav_writer.h"
#include "brisvox/error.h"
#include "test_files.h"
#include "test_paths.h"

namespace brisvox {
namespace {

namespace fs = std::filesystem;

void write_bytes(const fs::path& path, const void* data, std::size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// Writes interleaved 16-bit frames with libsndfile; returns false if this libsndfile build cannot
// write `format` (e.g. built without Vorbis).
bool write_shorts(const fs::path& path, int format, int rate_hz, int num_channels,
                  const std::vector<short>& interleaved) {
  SF_INFO info{};
  info.samplerate = rate_hz;
  info.channels = num_channels;
  info.format = format;
  if (!sf_format_check(&info)) return false;
  SNDFILE* file = sf_open(path.c_str(), SFM_WRITE, &info);
  if (file == nullptr) return false;
  const sf_count_t num_frames = static_cast<sf_count_t>(interleaved.size()) / num_channels;
  const bool ok = sf_writef_short(file, interleaved.data(), num_frames) == num_frames;
  sf_close(file);
  return ok;
}

void write_floats(const fs::path& path, int format, int rate_hz, const std::vector<float>& interleaved,
                  int num_channels = 1) {
  SF_INFO info{};
  info.samplerate = rate_hz;
  info.channels = num_channels;
  info.format = format;
  SNDFILE* file = sf_open(path.c_str(), SFM_WRITE, &info);
  ASSERT_NE(file, nullptr) << sf_strerror(nullptr);
  const auto num_frames = static_cast<sf_count_t>(interleaved.size()) / num_channels;
  ASSERT_EQ(sf_writef_float(file, interleaved.data(), num_frames), num_frames);
  sf_close(file);
}

std::vector<short> sine_shorts(int num_samples, double freq_hz, int rate_hz, double amplitude) {
  std::vector<short> out(static_cast<std::size_t>(num_samples));
  for (int i = 0; i < num_samples; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<short>(std::lround(
        amplitude * 32767.0 * std::sin(2.0 * std::numbers::pi * freq_hz * i / rate_hz)));
  }
  return out;
}

class AudioFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("brisvox_audio_test_") + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `load`, expecting an Error with `code` whose message names `file` and contains `text`.
  template <typename F>
  void expect_error(F load, ErrorCode code, const std::string& file, const std::string& text = "") {
    try {
      load();
      FAIL() << "no error for " << file;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << "got " << to_string(e.code()) << ": " << e.what();
      const std::string message = e.what();
      EXPECT_NE(message.find(file), std::string::npos) << message;
      EXPECT_NE(message.find(text), std::string::npos) << message;
    }
  }

  fs::path dir_;
};

TEST_F(AudioFileTest, ReadsTheBundledSpeechSample) {
  if (!fs::exists(test::sample_wav())) GTEST_SKIP() << test::sample_wav() << " missing: run scripts/setup.sh";
  const Audio audio = load_audio(test::sample_wav());
  // As soxi reports it: 16000 Hz, 1 channel, 16-bit, 454880 samples (28.43 s).
  EXPECT_EQ(audio.sample_rate_hz, 16000);
  EXPECT_EQ(audio.num_channels_in_source, 1);
  EXPECT_EQ(audio.source, test::sample_wav());
  ASSERT_EQ(audio.samples.size(), 454880u);
  EXPECT_NEAR(audio.duration_s(), 28.43, 0.001);

  // Every sample equals the file's 16-bit little-endian data (a canonical 44-byte header) / 32768.
  const auto bytes = test::read_bytes(test::sample_wav());
  ASSERT_EQ(bytes.size(), 44u + 2u * audio.samples.size());
  float peak = 0.0f;
  for (std::size_t i = 0; i < audio.samples.size(); ++i) {
    const auto lo = static_cast<unsigned char>(bytes[44 + 2 * i]);
    const auto hi = static_cast<unsigned char>(bytes[45 + 2 * i]);
    const auto value = static_cast<std::int16_t>(lo | (hi << 8));
    ASSERT_EQ(audio.samples[i], value / 32768.0f) << "sample " << i;
    peak = std::max(peak, std::abs(audio.samples[i]));
  }
  EXPECT_GT(peak, 0.05f);  // speech, not silence
  EXPECT_LE(peak, 1.0f);
}

TEST_F(AudioFileTest, MixesStereoDownToTheMeanOfTheChannels) {
  const std::vector<short> stereo = {1000, 3000, -2000, 2000, 32767, 32767, -32768, 0};
  ASSERT_TRUE(write_shorts(path("stereo.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 2, stereo));
  const Audio audio = load_audio(path("stereo.wav"));
  EXPECT_EQ(audio.num_channels_in_source, 2);
  ASSERT_EQ(audio.samples.size(), 4u);
  EXPECT_EQ(audio.samples[0], 2000.0f / 32768.0f);
  EXPECT_EQ(audio.samples[1], 0.0f);
  EXPECT_EQ(audio.samples[2], 32767.0f / 32768.0f);
  EXPECT_EQ(audio.samples[3], -0.5f);
}

TEST_F(AudioFileTest, MixesThreeChannels) {
  const std::vector<short> frames = {300, 600, 900, -3000, 0, 0};
  ASSERT_TRUE(write_shorts(path("three.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 8000, 3, frames));
  const Audio audio = read_audio_file(path("three.wav"));
  EXPECT_EQ(audio.num_channels_in_source, 3);
  ASSERT_EQ(audio.samples.size(), 2u);
  EXPECT_NEAR(audio.samples[0], 600.0f / 32768.0f, 1e-7);
  EXPECT_NEAR(audio.samples[1], -1000.0f / 32768.0f, 1e-7);
}

// Found by fuzz/audio_file_fuzzer (fuzz/corpus/audio_file_fuzzer/regression-au-36-channel-*):
// finite float samples in several channels summed past FLT_MAX, and the mixdown returned +Inf.
TEST_F(AudioFileTest, MixdownOfHugeFiniteSamplesStaysFinite) {
  const float huge = std::numeric_limits<float>::max();
  write_floats(path("huge.wav"), SF_FORMAT_WAV | SF_FORMAT_FLOAT, 8000, {huge, huge, huge, huge, -huge, -huge, -huge, 0.0f}, 4);
  const Audio audio = read_audio_file(path("huge.wav"));
  ASSERT_EQ(audio.samples.size(), 2u);
  EXPECT_EQ(audio.samples[0], huge);
  EXPECT_EQ(audio.samples[1], static_cast<float>(-0.75 * static_cast<double>(huge)));
}

TEST_F(AudioFileTest, FlacRoundTripIsExact) {
  const auto tone = sine_shorts(12345, 440.0, 16000, 0.7);
  ASSERT_TRUE(write_shorts(path("tone.flac"), SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, tone));
  const Audio audio = load_audio(path("tone.flac"));
  EXPECT_EQ(audio.sample_rate_hz, 16000);
  ASSERT_EQ(audio.samples.size(), tone.size());
  for (std::size_t i = 0; i < tone.size(); ++i) {
    ASSERT_EQ(audio.samples[i], tone[i] / 32768.0f) << i;
  }
}

TEST_F(AudioFileTest, OggVorbisRoundTripKeepsTheSignal) {
  const auto tone = sine_shorts(16000, 440.0, 16000, 0.5);
  if (!write_shorts(path("tone.ogg"), SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1, tone)) {
    GTEST_SKIP() << "this libsndfile cannot write Ogg Vorbis";
  }
  const Audio audio = load_audio(path("tone.ogg"));
  EXPECT_EQ(audio.sample_rate_hz, 16000);
  ASSERT_EQ(audio.samples.size(), tone.size());
  // Lossy: compare energy-normalised correlation with the original, away from the edges.
  double dot = 0, energy_a = 0, energy_b = 0;
  for (std::size_t i = 1000; i < tone.size() - 1000; ++i) {
    const double a = audio.samples[i];
    const double b = tone[i] / 32768.0;
    dot += a * b;
    energy_a += a * a;
    energy_b += b * b;
  }
  EXPECT_GT(dot / std::sqrt(energy_a * energy_b), 0.99);
  EXPECT_NEAR(std::sqrt(energy_a / energy_b), 1.0, 0.05);
}

TEST_F(AudioFileTest, Reads44100HzAtItsOwnRate) {
  const auto tone = sine_shorts(44100 / 2, 1000.0, 44100, 0.5);
  ASSERT_TRUE(write_shorts(path("cd.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 44100, 1, tone));
  const Audio audio = load_audio(path("cd.wav"));
  EXPECT_EQ(audio.sample_rate_hz, 44100);
  EXPECT_EQ(audio.samples.size(), 22050u);
  EXPECT_DOUBLE_EQ(audio.duration_s(), 0.5);
}

TEST_F(AudioFileTest, FloatWavKeepsValues) {
  const std::vector<float> samples = {0.0f, 0.25f, -0.75f, 1.0f};
  write_floats(path("float.wav"), SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, samples);
  EXPECT_EQ(load_audio(path("float.wav")).samples, samples);
}

TEST_F(AudioFileTest, RejectsNanInAFloatWavWithIndexTimeAndByteOffset) {
  std::vector<float> samples(200, 0.1f);
  samples[160] = std::numeric_limits<float>::quiet_NaN();
  write_floats(path("nan.wav"), SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, samples);
  try {
    load_audio(path("nan.wav"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadAudio);
    const std::string message = e.what();
    EXPECT_NE(message.find(path("nan.wav")), std::string::npos) << message;
    EXPECT_NE(message.find("NaN at sample 160 "), std::string::npos) << message;
    EXPECT_NE(message.find("0.010000 s"), std::string::npos) << message;
    // The offset named must be where the NaN's bytes really are.
    const auto pos = message.find("byte offset ");
    ASSERT_NE(pos, std::string::npos) << message;
    const std::size_t offset = std::stoul(message.substr(pos + 12));
    const auto bytes = test::read_bytes(path("nan.wav"));
    ASSERT_LE(offset + 4, bytes.size());
    float value = 0;
    std::memcpy(&value, bytes.data() + offset, 4);
    EXPECT_TRUE(std::isnan(value)) << "offset " << offset;
  }
}

TEST_F(AudioFileTest, RejectsInfinityInAFloatWav) {
  std::vector<float> samples(10, 0.1f);
  samples[3] = -std::numeric_limits<float>::infinity();
  write_floats(path("inf.wav"), SF_FORMAT_WAV | SF_FORMAT_FLOAT, 8000, samples);
  expect_error([&] { load_audio(path("inf.wav")); }, ErrorCode::kBadAudio, path("inf.wav"),
               "infinite value at sample 3");
}

TEST_F(AudioFileTest, MissingFileIsAnIoError) {
  expect_error([&] { load_audio(path("nope.wav")); }, ErrorCode::kIo, path("nope.wav"),
               "No such file");
  expect_error(
      [&] {
        load_audio(path("nope.raw"), {SampleEncoding::kPcmS16le, 16000});
      },
      ErrorCode::kIo, path("nope.raw"), "No such file");
}

TEST_F(AudioFileTest, DirectoryIsAnIoError) {
  expect_error([&] { load_audio(dir_.string()); }, ErrorCode::kIo, dir_.string(), "directory");
}

TEST_F(AudioFileTest, EmptyFileIsBadAudio) {
  write_bytes(path("empty.wav"), "", 0);
  expect_error([&] { load_audio(path("empty.wav")); }, ErrorCode::kBadAudio, path("empty.wav"),
               "empty");
  write_bytes(path("empty.raw"), "", 0);
  expect_error(
      [&] {
        load_audio(path("empty.raw"), {std::nullopt, 16000});
      },
      ErrorCode::kBadAudio, path("empty.raw"), "empty");
}

TEST_F(AudioFileTest, ZeroLengthWavIsBadAudio) {
  ASSERT_TRUE(write_shorts(path("zero.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, {}));
  ASSERT_GT(fs::file_size(path("zero.wav")), 0u);
  expect_error([&] { load_audio(path("zero.wav")); }, ErrorCode::kBadAudio, path("zero.wav"),
               "no audio samples");
}

TEST_F(AudioFileTest, TruncatedWavIsBadAudioNamingWhereItEnds) {
  ASSERT_TRUE(write_shorts(path("full.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1,
                           sine_shorts(1600, 440.0, 16000, 0.5)));
  auto bytes = test::read_bytes(path("full.wav"));
  ASSERT_EQ(bytes.size(), 44u + 3200u);
  // libsndfile alone would read the 478 samples present and say nothing.
  write_bytes(path("cut.wav"), bytes.data(), 1000);
  expect_error([&] { load_audio(path("cut.wav")); }, ErrorCode::kBadAudio, path("cut.wav"),
               "truncated: its header declares 3200 bytes of audio from byte offset 44, but the "
               "file ends at byte offset 1000");
  // Cut inside the header: the container is recognised but broken.
  write_bytes(path("header.wav"), bytes.data(), 30);
  expect_error([&] { load_audio(path("header.wav")); }, ErrorCode::kBadAudio, path("header.wav"));
}

TEST_F(AudioFileTest, StreamedWavWithUnpatchedSizeIsAccepted) {
  // Writers that stream a WAV and never seek back leave 0xFFFFFFFF as the data size.
  ASSERT_TRUE(write_shorts(path("full.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1,
                           sine_shorts(800, 440.0, 16000, 0.5)));
  auto bytes = test::read_bytes(path("full.wav"));
  std::memset(bytes.data() + 40, 0xFF, 4);
  write_bytes(path("streamed.wav"), bytes.data(), bytes.size());
  EXPECT_EQ(load_audio(path("streamed.wav")).samples.size(), 800u);
}

TEST_F(AudioFileTest, TruncatedFlacIsBadAudio) {
  ASSERT_TRUE(write_shorts(path("full.flac"), SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1,
                           sine_shorts(16000, 440.0, 16000, 0.5)));
  auto bytes = test::read_bytes(path("full.flac"));
  write_bytes(path("cut.flac"), bytes.data(), bytes.size() / 2);
  expect_error([&] { load_audio(path("cut.flac")); }, ErrorCode::kBadAudio, path("cut.flac"));
}

// Issue 35: libsndfile read a cut Ogg as a shorter recording (a server answered 200).
TEST_F(AudioFileTest, TruncatedOggIsBadAudio) {
  const auto tone = sine_shorts(16000, 440.0, 3 * 16000, 0.5);
  if (!write_shorts(path("full.ogg"), SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1, tone)) {
    GTEST_SKIP() << "this libsndfile cannot write Ogg Vorbis";
  }
  EXPECT_EQ(load_audio(path("full.ogg")).samples.size(), tone.size());
  auto bytes = test::read_bytes(path("full.ogg"));
  write_bytes(path("cut.ogg"), bytes.data(), bytes.size() * 2 / 3);
  expect_error([&] { load_audio(path("cut.ogg")); }, ErrorCode::kBadAudio, "is truncated or corrupt: its last");
  // Cut exactly after a complete page that is not the last: no end-of-stream flag.
  std::size_t cut = 0;
  for (std::size_t i = 4; i + 27 < bytes.size() * 2 / 3; ++i) {
    if (std::memcmp(bytes.data() + i, "OggS", 4) == 0) cut = i;
  }
  ASSERT_GT(cut, 0u);
  write_bytes(path("pages.ogg"), bytes.data(), cut);
  expect_error([&] { load_audio(path("pages.ogg")); }, ErrorCode::kBadAudio, "does not end the stream");
}

TEST_F(AudioFileTest, GarbageIsUnsupportedAudio) {
  std::vector<unsigned char> garbage(2000);
  std::uint32_t x = 12345;
  for (auto& b : garbage) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(x >> 24);
  }
  write_bytes(path("noise.wav"), garbage.data(), garbage.size());
  expect_error([&] { load_audio(path("noise.wav")); }, ErrorCode::kUnsupportedAudio,
               path("noise.wav"), "not in a recognised format");
}

// read_audio_memory (POST /v1/vad's path) reads what read_audio_file reads, and fails the same
// way naming the buffer; fuzz/audio_file_fuzzer checks the two agree on arbitrary bytes.
TEST_F(AudioFileTest, MemoryReadsEqualFileReads) {
  ASSERT_TRUE(write_shorts(path("full.flac"), SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 2,
                           sine_shorts(3200, 440.0, 16000, 0.5)));
  const auto flac = test::read_bytes(path("full.flac"));
  const Audio from_memory = read_audio_memory(std::as_bytes(std::span(flac)), "body");
  const Audio from_file = read_audio_file(path("full.flac"));
  EXPECT_EQ(from_memory.samples, from_file.samples);
  EXPECT_EQ(from_memory.sample_rate_hz, 16000);
  EXPECT_EQ(from_memory.num_channels_in_source, 2);
  EXPECT_EQ(from_memory.source, "body");

  ASSERT_TRUE(write_shorts(path("full.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1,
                           sine_shorts(1600, 440.0, 16000, 0.5)));
  const auto wav = test::read_bytes(path("full.wav"));
  const auto first = [&](std::size_t n) { return std::as_bytes(std::span(wav.data(), n)); };
  expect_error([&] { read_audio_memory(first(1000), "body"); }, ErrorCode::kBadAudio, "'body'",
               "truncated: its header declares 3200 bytes of audio from byte offset 44, but the "
               "file ends at byte offset 1000");
  expect_error([&] { read_audio_memory(first(30), "body"); }, ErrorCode::kBadAudio, "'body'");
  expect_error([&] { read_audio_memory(first(0), "body"); }, ErrorCode::kBadAudio, "'body'",
               "empty");
}

// Issue 13, defect 3 (a decompression bomb on POST /v1/vad): max_duration_s refuses longer audio
// with kLimitExceeded, from the declared length before decoding, or while decoding when the length
// is not declared (a streamed WAV); audio up to the limit reads as before.
TEST_F(AudioFileTest, MemoryReadRefusesAudioLongerThanTheLimit) {
  ASSERT_TRUE(write_shorts(path("two.flac"), SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1,
                           sine_shorts(32000, 440.0, 16000, 0.5)));
  const auto flac = test::read_bytes(path("two.flac"));
  const auto bytes = std::as_bytes(std::span(flac));
  EXPECT_EQ(read_audio_memory(bytes, "body", 2.0).samples.size(), 32000u);
  EXPECT_EQ(read_audio_memory(bytes, "body", 0).samples.size(), 32000u);  // 0: no limit
  expect_error([&] { read_audio_memory(bytes, "body", 1.5); }, ErrorCode::kLimitExceeded, "'body'",
               "longer than the 1.5 s allowed (it holds at least 2.0 s)");

  ASSERT_TRUE(write_shorts(path("full.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1,
                           sine_shorts(8000, 440.0, 16000, 0.5)));
  auto wav = test::read_bytes(path("full.wav"));
  std::memset(wav.data() + 40, 0xFF, 4);  // the data size of a streamed WAV: not declared
  const auto streamed = std::as_bytes(std::span(wav));
  EXPECT_EQ(read_audio_memory(streamed, "body", 1.0).samples.size(), 8000u);
  expect_error([&] { read_audio_memory(streamed, "body", 0.25); }, ErrorCode::kLimitExceeded, "'body'",
               "longer than the 0.25 s allowed");
  EXPECT_EQ(to_string(ErrorCode::kLimitExceeded), "limit_exceeded");
}

// --- WAV metadata (audio/riff_wave.h): libsndfile only ever sees 'fmt ', 'fact' and 'data' -----

// A RIFF chunk: id, little-endian size, body, pad byte if odd.
std::string riff_chunk(const std::string& id, const std::string& body) {
  std::string c = id;
  const auto size = static_cast<std::uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) c.push_back(static_cast<char>((size >> (8 * i)) & 0xFF));
  c += body;
  if (body.size() % 2 == 1) c.push_back('\0');
  return c;
}

std::string u32le(std::uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

// 'RIFF' size 'WAVE' + chunks, from the chunks of a plain 16 kHz mono PCM-16 WAV with metadata
// chunks put before and after its data.
std::string wav_with(const std::vector<char>& plain, const std::string& before, const std::string& after) {
  const std::string p(plain.begin(), plain.end());
  EXPECT_EQ(p.substr(36, 4), "data");
  const std::string fmt_chunk = p.substr(12, 24);
  const std::string data_chunk = p.substr(36);
  const std::string body = "WAVE" + fmt_chunk + before + data_chunk + after;
  return "RIFF" + u32le(static_cast<std::uint32_t>(body.size())) + body;
}

// Found by fuzz/audio_file_fuzzer (fuzz/corpus/audio_file_fuzzer/regression-wav-list-*):
// libsndfile 1.2.0 walks LIST subchunks with 32-bit sizes, and a subchunk of 0xFFFFFFF4 bytes
// wraps its count back to the LIST's start: sf_open never returned. (This test hangs without the
// fix; ctest's timeout ends it.)
TEST_F(AudioFileTest, AListChunkThatWrapsLibsndfilesCountIsIgnored) {
  ASSERT_TRUE(write_shorts(path("plain.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1,
                           sine_shorts(1600, 440.0, 16000, 0.5)));
  const Audio plain = read_audio_file(path("plain.wav"));
  const std::string looping_list = riff_chunk("LIST", "INFO" + std::string("IXYZ") + u32le(0xFFFFFFF4u) +
                                                          std::string(16, '\0'));
  const std::string wav = wav_with(test::read_bytes(path("plain.wav")), looping_list, "");
  write_bytes(path("list.wav"), wav.data(), wav.size());
  EXPECT_EQ(read_audio_file(path("list.wav")).samples, plain.samples);
  EXPECT_EQ(read_audio_memory(std::as_bytes(std::span(wav)), "body").samples, plain.samples);
}

TEST_F(AudioFileTest, MetadataChunksBeforeAndAfterTheDataChangeNothing) {
  ASSERT_TRUE(write_shorts(path("plain.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1,
                           sine_shorts(1601, 300.0, 16000, 0.4)));  // odd data size: a pad byte
  const Audio plain = read_audio_file(path("plain.wav"));
  const std::string info = riff_chunk("LIST", "INFO" + riff_chunk("ISFT", "brisvox test") + riff_chunk("INAM", "x"));
  const std::string before = info + riff_chunk("JUNK", std::string(7, '\0')) + riff_chunk("cue ", u32le(0));
  const std::string after = info + riff_chunk("id3 ", "tag");
  const std::string wav = wav_with(test::read_bytes(path("plain.wav")), before, after);
  write_bytes(path("meta.wav"), wav.data(), wav.size());
  const Audio a = read_audio_file(path("meta.wav"));
  EXPECT_EQ(a.samples, plain.samples);
  EXPECT_EQ(a.sample_rate_hz, 16000);
  // A writer that leaves out the pad byte after an odd-sized chunk.
  std::string unpadded = riff_chunk("ISFT", "odd");
  unpadded.pop_back();
  const std::string sloppy = wav_with(test::read_bytes(path("plain.wav")), unpadded, "");
  EXPECT_EQ(read_audio_memory(std::as_bytes(std::span(sloppy)), "body").samples, plain.samples);
}

TEST_F(AudioFileTest, AChunkBeforeTheDataThatRunsPastTheEndIsNamed) {
  ASSERT_TRUE(write_shorts(path("plain.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1,
                           sine_shorts(1600, 440.0, 16000, 0.5)));
  std::string huge_list = riff_chunk("LIST", "INFO");
  huge_list.replace(4, 4, u32le(0xFFFF0011u));
  const std::string wav = wav_with(test::read_bytes(path("plain.wav")), huge_list, "");
  write_bytes(path("huge.wav"), wav.data(), wav.size());
  expect_error([&] { read_audio_file(path("huge.wav")); }, ErrorCode::kBadAudio, path("huge.wav"),
               "corrupt WAV file: its 'LIST' chunk at byte offset 36 declares 4294901777 bytes, past the end "
               "of the file at byte offset " + std::to_string(wav.size()));
  expect_error([&] { read_audio_memory(std::as_bytes(std::span(wav)), "body"); }, ErrorCode::kBadAudio,
               "'body'", "'LIST' chunk at byte offset 36");
  const std::string no_data = "RIFF" + u32le(28) + "WAVE" + std::string(test::read_bytes(path("plain.wav")).data() + 12, 24);
  expect_error([&] { read_audio_memory(std::as_bytes(std::span(no_data)), "body"); }, ErrorCode::kBadAudio,
               "'body'", "no 'data' chunk");
}

TEST_F(AudioFileTest, Rf64IsReadThroughItsDs64Sizes) {
  const auto shorts = sine_shorts(4000, 440.0, 16000, 0.5);
  if (!write_shorts(path("long.rf64"), SF_FORMAT_RF64 | SF_FORMAT_PCM_16, 16000, 1, shorts)) {
    GTEST_SKIP() << "this libsndfile cannot write RF64";
  }
  ASSERT_TRUE(write_shorts(path("plain.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, shorts));
  const Audio rf64 = read_audio_file(path("long.rf64"));
  EXPECT_EQ(rf64.samples, read_audio_file(path("plain.wav")).samples);
  // Cut short: the ds64 data size says how much is missing.
  const auto bytes = test::read_bytes(path("long.rf64"));
  expect_error([&] { read_audio_memory(std::as_bytes(std::span(bytes.data(), bytes.size() - 1000)), "body"); },
               ErrorCode::kBadAudio, "'body'", "truncated: its header declares 8000 bytes of audio");
  // Found by fuzz/audio_file_fuzzer (regression-rf64-ds64-huge-data-size.wav): a 'ds64' data size
  // near 2^64 made libsndfile seek backwards for ever. libsndfile now sees the real size.
  ASSERT_EQ(std::string(bytes.data() + 12, 4), "ds64");
  auto huge = bytes;
  std::memset(huge.data() + 28, 0xFF, 6);  // dataSize 0x0000ffffffffffff
  expect_error([&] { read_audio_memory(std::as_bytes(std::span(huge)), "body"); }, ErrorCode::kBadAudio, "'body'",
               "truncated: its header declares 281474976710655 bytes of audio");
  std::memset(huge.data() + 28, 0xFF, 8);  // 2^64 - 1
  expect_error([&] { read_audio_memory(std::as_bytes(std::span(huge)), "body"); }, ErrorCode::kBadAudio, "'body'",
               "truncated");
}

// --- Containers (audio/container_format.h): only common ones reach libsndfile ------------------

TEST_F(AudioFileTest, AiffAuAndMp3ReadLikeWav) {
  const auto shorts = sine_shorts(3200, 440.0, 16000, 0.5);
  ASSERT_TRUE(write_shorts(path("plain.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, shorts));
  const Audio wav = read_audio_file(path("plain.wav"));
  ASSERT_TRUE(write_shorts(path("a.aiff"), SF_FORMAT_AIFF | SF_FORMAT_PCM_16, 16000, 1, shorts));
  EXPECT_EQ(read_audio_file(path("a.aiff")).samples, wav.samples);
  ASSERT_TRUE(write_shorts(path("a.au"), SF_FORMAT_AU | SF_FORMAT_PCM_16, 16000, 1, shorts));
  EXPECT_EQ(read_audio_file(path("a.au")).samples, wav.samples);
  // MP3 is lossy: the tone comes back, not the samples.
  if (write_shorts(path("a.mp3"), SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, 1, shorts)) {
    const Audio mp3 = read_audio_file(path("a.mp3"));
    EXPECT_EQ(mp3.sample_rate_hz, 16000);
    EXPECT_GT(mp3.samples.size(), 3000u);
  }
}

TEST_F(AudioFileTest, RareContainersAreRefusedBeforeLibsndfileReadsThem) {
  const auto shorts = sine_shorts(800, 440.0, 16000, 0.5);
  for (const auto& [name, format] : std::vector<std::pair<std::string, int>>{
           {"a.w64", SF_FORMAT_W64}, {"a.caf", SF_FORMAT_CAF}, {"a.voc", SF_FORMAT_VOC},
           {"a.sf", SF_FORMAT_IRCAM}, {"a.nist", SF_FORMAT_NIST}, {"a.mat", SF_FORMAT_MAT5}}) {
    if (!write_shorts(path(name), format | SF_FORMAT_PCM_16, 16000, 1, shorts)) continue;
    expect_error([&] { read_audio_file(path(name)); }, ErrorCode::kUnsupportedAudio, path(name),
                 "not in a recognised format: brisvox reads WAV, RF64, FLAC, Ogg");
  }
  // A big-endian WAV (RIFX) is not walked by riff_wave.h, so it is not opened either.
  ASSERT_TRUE(write_shorts(path("plain.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, shorts));
  auto rifx = test::read_bytes(path("plain.wav"));
  std::memcpy(rifx.data(), "RIFX", 4);
  expect_error([&] { read_audio_memory(std::as_bytes(std::span(rifx)), "body"); }, ErrorCode::kUnsupportedAudio,
               "'body'", "not in a recognised format");
}

// libsndfile skips an ID3v2 tag and looks again; only MP3 and FLAC may follow one.
TEST_F(AudioFileTest, AnId3TagMayOnlyPrecedeFlacOrMp3) {
  const auto shorts = sine_shorts(1600, 440.0, 16000, 0.5);
  std::string tag = std::string("ID3\x04\x00\x00", 6) + std::string("\x00\x00\x00\x0a", 4) + std::string(10, '\0');
  ASSERT_TRUE(write_shorts(path("a.flac"), SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, shorts));
  const auto flac = test::read_bytes(path("a.flac"));
  const std::string tagged_flac = tag + std::string(flac.begin(), flac.end());
  EXPECT_EQ(read_audio_memory(std::as_bytes(std::span(tagged_flac)), "body").samples,
            read_audio_file(path("a.flac")).samples);
  ASSERT_TRUE(write_shorts(path("a.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, shorts));
  const auto wav = test::read_bytes(path("a.wav"));
  const std::string tagged_wav = tag + std::string(wav.begin(), wav.end());
  expect_error([&] { read_audio_memory(std::as_bytes(std::span(tagged_wav)), "body"); },
               ErrorCode::kUnsupportedAudio, "'body'", "not in a recognised format");
}

// Pipes and devices have no size and no random access: their bytes are read first.
TEST_F(AudioFileTest, ReadsAWavFromAPipe) {
  const auto wav = test::read_bytes(test::sample_wav());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    std::size_t done = 0;
    while (done < wav.size()) {
      const ssize_t n = ::write(fds[1], wav.data() + done, wav.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fds[1]);
  });
  const std::string pipe_path = "/proc/self/fd/" + std::to_string(fds[0]);
  const Audio from_pipe = read_audio_file(pipe_path);
  writer.join();
  ::close(fds[0]);
  EXPECT_EQ(from_pipe.samples, read_audio_file(test::sample_wav()).samples);
  EXPECT_EQ(from_pipe.source, pipe_path);
}

TEST_F(AudioFileTest, RawS16leNeedsARateAndRoundTrips) {
  const std::vector<std::uint8_t> bytes = {0x00, 0x40, 0x00, 0xC0, 0xFF, 0x7F};
  write_bytes(path("speech.raw"), bytes.data(), bytes.size());
  expect_error([&] { load_audio(path("speech.raw")); }, ErrorCode::kInvalidArgument,
               path("speech.raw"),
               "is headerless PCM (pcm_s16le): give its sample rate (--raw-rate)");
  const Audio audio = load_audio(path("speech.raw"), {std::nullopt, 16000});
  EXPECT_EQ(audio.sample_rate_hz, 16000);
  EXPECT_EQ(audio.num_channels_in_source, 1);
  EXPECT_EQ(audio.samples, (std::vector<float>{0.5f, -0.5f, 32767.0f / 32768.0f}));
  // Upper-case extensions count; so does .pcm.
  write_bytes(path("SPEECH.PCM"), bytes.data(), bytes.size());
  EXPECT_EQ(load_audio(path("SPEECH.PCM"), {std::nullopt, 8000}).samples, audio.samples);
  expect_error([&] { load_audio(path("SPEECH.PCM")); }, ErrorCode::kInvalidArgument,
               path("SPEECH.PCM"), "--raw-rate");
}

TEST_F(AudioFileTest, RawWithAnOddByteCountIsBadAudioNamingTheOffset) {
  const std::vector<std::uint8_t> bytes = {0x00, 0x40, 0x00, 0xC0, 0xFF};
  write_bytes(path("odd.raw"), bytes.data(), bytes.size());
  expect_error(
      [&] {
        load_audio(path("odd.raw"), {std::nullopt, 16000});
      },
      ErrorCode::kBadAudio, path("odd.raw"), "byte offset 4");
  // f32: 10 bytes = 2 samples + 2 bytes.
  write_bytes(path("odd.f32"), std::vector<char>(10, 0).data(), 10);
  expect_error(
      [&] {
        load_audio(path("odd.f32"), {SampleEncoding::kPcmF32le, 16000});
      },
      ErrorCode::kBadAudio, path("odd.f32"), "byte offset 8");
}

TEST_F(AudioFileTest, G711ExtensionsDefaultTo8000Hz) {
  const std::vector<std::uint8_t> codes = {0xFF, 0x00, 0x80, 0xD5, 0x55};
  write_bytes(path("call.ul"), codes.data(), codes.size());
  const Audio mulaw = load_audio(path("call.ul"));
  EXPECT_EQ(mulaw.sample_rate_hz, 8000);
  ASSERT_EQ(mulaw.samples.size(), 5u);
  EXPECT_EQ(mulaw.samples[1], -32124.0f / 32768.0f);

  write_bytes(path("call.alaw"), codes.data(), codes.size());
  const Audio alaw = load_audio(path("call.alaw"), {std::nullopt, 16000});
  EXPECT_EQ(alaw.sample_rate_hz, 16000);
  EXPECT_EQ(alaw.samples[3], 8.0f / 32768.0f);
  EXPECT_EQ(alaw.samples[4], -8.0f / 32768.0f);

  for (const char* name : {"a.ulaw", "a.mulaw", "a.al", "a.pcm"}) {
    write_bytes(path(name), codes.data(), 4);
    EXPECT_NO_THROW(load_audio(path(name), {std::nullopt, 8000})) << name;
  }
}

TEST_F(AudioFileTest, ExplicitRawEncodingOverridesTheExtension) {
  // A valid WAV read as raw mu-law: every byte is a sample, header included.
  ASSERT_TRUE(write_shorts(path("x.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, {1, 2, 3}));
  const Audio audio = load_audio(path("x.wav"), {SampleEncoding::kMulaw, 0});
  EXPECT_EQ(audio.sample_rate_hz, 8000);
  EXPECT_EQ(audio.samples.size(), fs::file_size(path("x.wav")));
}

TEST_F(AudioFileTest, RawF32WithNanNamesFileSampleTimeAndOffset) {
  std::vector<float> samples(100, 0.0f);
  samples[40] = std::numeric_limits<float>::infinity();
  write_bytes(path("bad.f32"), samples.data(), samples.size() * 4);
  expect_error([&] { read_raw_audio(path("bad.f32"), SampleEncoding::kPcmF32le, 8000); },
               ErrorCode::kBadAudio, path("bad.f32"),
               "sample 40 at 0.005000 s (byte offset 160) is +Inf");
}

TEST_F(AudioFileTest, RawRejectsBadRates) {
  write_bytes(path("a.raw"), "\0\0", 2);
  for (int rate : {-1, 768001}) {
    expect_error([&] { read_raw_audio(path("a.raw"), SampleEncoding::kPcmS16le, rate); },
                 ErrorCode::kInvalidArgument, path("a.raw"), "out of range");
  }
}

// encode_audio (POST /v1/tts and /v1/audio/speech files) writes what the reader reads back: FLAC
// exactly, MP3 and Opus as lossy codecs do (the same length within a frame or two, the same
// loudness, the waveform close), at the rates each container takes; others are refused by name.
TEST(EncodeAudio, EveryContainerReadsBack) {
  const int rate = 24000;
  std::vector<std::int16_t> pcm(rate);  // a second of a 440 Hz tone with a slow swell
  for (std::size_t i = 0; i < pcm.size(); ++i) {
    const double t = static_cast<double>(i) / rate;
    pcm[i] = static_cast<std::int16_t>(std::lround(12000.0 * std::sin(2 * std::numbers::pi * 440 * t) * (0.5 + 0.5 * t)));
  }
  const auto rms = [](const std::vector<float>& x, std::size_t from, std::size_t to) {
    double s = 0;
    for (std::size_t i = from; i < to; ++i) s += static_cast<double>(x[i]) * x[i];
    return std::sqrt(s / static_cast<double>(to - from));
  };
  std::vector<float> original(pcm.size());
  for (std::size_t i = 0; i < pcm.size(); ++i) original[i] = static_cast<float>(pcm[i]) / 32768.0f;
  for (const AudioContainer c : {AudioContainer::kWav, AudioContainer::kFlac, AudioContainer::kMp3,
                                 AudioContainer::kOggOpus}) {
    SCOPED_TRACE(std::string(to_string(c)));
    EXPECT_EQ(parse_audio_container(to_string(c)), c);
    const std::vector<std::byte> file = encode_audio(pcm, rate, c);
    const Audio back = read_audio_memory(file, "encoded");
    EXPECT_EQ(back.sample_rate_hz, rate);
    if (c == AudioContainer::kWav || c == AudioContainer::kFlac) {
      ASSERT_EQ(back.samples, original);
      continue;
    }
    // Encoder delay and padding: within two codec frames of the length.
    EXPECT_NEAR(static_cast<double>(back.samples.size()), static_cast<double>(pcm.size()), 2 * 1152.0);
    ASSERT_GT(back.samples.size(), 20000u);
    EXPECT_NEAR(rms(back.samples, 4000, 20000), rms(original, 4000, 20000), 0.1 * rms(original, 4000, 20000));
  }
  EXPECT_EQ(content_type(AudioContainer::kMp3), "audio/mpeg");
  EXPECT_FALSE(parse_audio_container("aac"));
  const auto refusal = [&](int r, AudioContainer c) -> std::string {
    try {
      encode_audio(pcm, r, c);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refusal(22050, AudioContainer::kOggOpus).find("Opus takes"), std::string::npos);
  EXPECT_NE(refusal(23000, AudioContainer::kMp3).find("MP3 takes"), std::string::npos);
  EXPECT_NO_THROW(check_container_rate(AudioContainer::kMp3, 22050));
}

}  // namespace
}  // namespace brisvox

