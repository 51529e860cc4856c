// AudioReader (brisvox/audio/audio_reader.h): block-by-block decoding gives exactly what the
// whole-file readers give, whatever the block size; channels alone or mixed; the duration limit
// while decoding; headerless PCM from memory.
#include "brisvox/audio/audio_reader.h"

#include <gtest/gtest.h>
#include <sndfile.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/error.h"
#include "test_files.h"
#include "test_paths.h"

namespace brisvox {
namespace {

namespace fs = std::filesystem;

void write_pcm16_file(const fs::path& path, int format, int rate_hz, int num_channels, const std::vector<short>& interleaved) {
  SF_INFO info{};
  info.samplerate = rate_hz;
  info.channels = num_channels;
  info.format = format;
  SNDFILE* file = sf_open(path.c_str(), SFM_WRITE, &info);
  ASSERT_NE(file, nullptr) << sf_strerror(nullptr);
  const sf_count_t num_frames = static_cast<sf_count_t>(interleaved.size()) / num_channels;
  ASSERT_EQ(sf_writef_short(file, interleaved.data(), num_frames), num_frames);
  sf_close(file);
}

// Everything read_mono gives in blocks of `block` samples.
std::vector<float> read_in_blocks(AudioReader& reader, std::size_t block, int channel = -1) {
  std::vector<float> all;
  std::vector<float> buffer(block);
  while (std::size_t n = reader.read_mono(buffer, channel)) all.insert(all.end(), buffer.begin(), buffer.begin() + n);
  return all;
}

class AudioReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("brisvox_audio_reader_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(AudioReaderTest, BlocksOfAnySizeGiveTheWholeFile) {
  const Audio whole = read_audio_file(test::sample_wav());
  for (const std::size_t block : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{1} << 20}) {
    AudioReader reader = AudioReader::open(test::sample_wav());
    EXPECT_EQ(reader.sample_rate_hz(), 16000);
    EXPECT_EQ(reader.num_channels(), 1);
    ASSERT_TRUE(reader.num_frames().has_value());
    EXPECT_EQ(*reader.num_frames(), whole.samples.size());
    EXPECT_EQ(read_in_blocks(reader, block), whole.samples) << "block " << block;
    EXPECT_EQ(reader.num_frames_read(), whole.samples.size());
    std::vector<float> more(16);
    EXPECT_EQ(reader.read_mono(more), 0u);  // the end stays the end
  }
}

TEST_F(AudioReaderTest, ChannelsAloneOrMixed) {
  // Left 1000, right -3000 (in 16-bit units): alone they are themselves, mixed their mean.
  std::vector<short> frames;
  for (int i = 0; i < 10000; ++i) frames.insert(frames.end(), {1000, -3000});
  write_pcm16_file(path("call.flac"), SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 8000, 2, frames);
  for (const int channel : {-1, 0, 1}) {
    AudioReader reader = AudioReader::open(path("call.flac"));
    EXPECT_EQ(reader.num_channels(), 2);
    const std::vector<float> got = read_in_blocks(reader, 333, channel);
    ASSERT_EQ(got.size(), 10000u);
    const float want = channel == 0 ? 1000.0f / 32768 : channel == 1 ? -3000.0f / 32768 : -1000.0f / 32768;
    for (const float s : got) ASSERT_FLOAT_EQ(s, want) << "channel " << channel;
  }
  AudioReader reader = AudioReader::open(path("call.flac"));
  std::vector<float> interleaved(6);
  ASSERT_EQ(reader.read(interleaved), 3u);
  EXPECT_FLOAT_EQ(interleaved[0], 1000.0f / 32768);
  EXPECT_FLOAT_EQ(interleaved[1], -3000.0f / 32768);
  std::vector<float> mono(4);
  try {
    reader.read_mono(mono, 2);
    FAIL() << "no error for channel 2";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("has 2 channels: there is no channel 2"), std::string::npos) << e.what();
  }
}

// A FLAC whose STREAMINFO says 0 samples ("unknown", as streaming encoders write it).
std::vector<char> flac_without_length(const fs::path& file, const std::vector<short>& samples) {
  write_pcm16_file(file, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, samples);
  auto flac = test::read_bytes(file);
  EXPECT_GT(flac.size(), 26u);
  // STREAMINFO starts at byte 8; its 36-bit total-samples field is the low 4 bits of byte 21 and
  // bytes 22-25.
  flac[21] = static_cast<char>(flac[21] & 0xF0);
  std::memset(flac.data() + 22, 0, 4);
  return flac;
}

// Such a FLAC is refused for the limit when it is opened, from where its last frame ends (six
// hours of silence took 20 s of a core to decode before the refusal), and read whole within it.
TEST_F(AudioReaderTest, UndeclaredFlacLengthComesFromItsLastFrame) {
  std::vector<short> tone(160000 + 123);  // many frames, the last one shorter than the others
  for (std::size_t i = 0; i < tone.size(); ++i) tone[i] = static_cast<short>((i * 37) % 2000 - 1000);
  const auto flac = flac_without_length(path("long.flac"), tone);
  AudioReadOptions options;
  options.max_duration_s = 9.9;
  try {
    AudioReader::open_memory(std::as_bytes(std::span(flac)), "body", options);
    FAIL() << "no error at open";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded);
    EXPECT_NE(std::string(e.what()).find("its last FLAC frame ends at 10.0 s"), std::string::npos) << e.what();
  }
  options.max_duration_s = 10.1;
  AudioReader reader = AudioReader::open_memory(std::as_bytes(std::span(flac)), "body", options);
  EXPECT_FALSE(reader.num_frames().has_value());
  EXPECT_EQ(read_in_blocks(reader, 1000).size(), tone.size());
}

// When the last frame cannot be found (here its CRC-16 is wrong), the limit is checked as decoding
// goes: what was decoded before the refusal is at most the limit plus one block.
TEST_F(AudioReaderTest, LimitWhileDecoding) {
  auto flac = flac_without_length(path("full.flac"), std::vector<short>(16000, 100));
  auto damaged = flac;
  damaged.back() = static_cast<char>(damaged.back() ^ 0x5A);
  AudioReadOptions options;
  options.max_duration_s = 0.5;
  AudioReader reader = AudioReader::open_memory(std::as_bytes(std::span(damaged)), "body", options);
  EXPECT_FALSE(reader.num_frames().has_value());
  std::vector<float> block(1000);
  std::size_t total = 0;
  try {
    while (std::size_t n = reader.read_mono(block)) total += n;
    FAIL() << "no error after " << total << " samples";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded);
    EXPECT_NE(std::string(e.what()).find("longer than the 0.5 s allowed"), std::string::npos) << e.what();
  }
  EXPECT_LE(total, 8000u);
  // Without a limit the same file reads whole.
  AudioReader all = AudioReader::open_memory(std::as_bytes(std::span(flac)), "body");
  EXPECT_EQ(read_in_blocks(all, 1000).size(), 16000u);
}

TEST_F(AudioReaderTest, HeaderlessFromMemory) {
  const std::vector<short> pcm = {0, 16384, -16384, 32767};
  const auto bytes = std::as_bytes(std::span(pcm));
  AudioReadOptions options;
  options.raw_encoding = SampleEncoding::kPcmS16le;
  options.raw_sample_rate_hz = 8000;
  AudioReader reader = AudioReader::open_memory(bytes, "body", options);
  EXPECT_EQ(reader.num_frames(), 4u);
  EXPECT_EQ(read_in_blocks(reader, 3), (std::vector<float>{0.0f, 0.5f, -0.5f, 32767.0f / 32768}));
  // Too long is known from the size, before decoding.
  options.max_duration_s = 0.0001;  // 0.8 samples
  try {
    (void)AudioReader::open_memory(bytes, "body", options);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded) << e.what();
  }
  // Half a sample at the end is a truncated body.
  options.max_duration_s = 0;
  AudioReader odd = AudioReader::open_memory(bytes.first(7), "body", options);
  EXPECT_THROW(read_in_blocks(odd, 16), Error);
}

TEST_F(AudioReaderTest, HeaderlessIsChosenByOptionsOrExtension) {
  EXPECT_TRUE(is_headerless("a.raw", {}));
  EXPECT_TRUE(is_headerless("A.UL", {}));
  EXPECT_FALSE(is_headerless("a.wav", {}));
  EXPECT_FALSE(is_headerless("-", {}));
  AudioReadOptions raw;
  raw.raw_encoding = SampleEncoding::kMulaw;
  EXPECT_TRUE(is_headerless("-", raw));
  EXPECT_TRUE(is_headerless("a.wav", raw));
}

}  // namespace
}  // namespace brisvox
