// `brisvox mel FILE -o OUT.npy`: Whisper's log-mel features of a whole recording, as the float32
// [80, frames] NumPy array tools/mel_reference.py writes (to compare, or to feed a model by hand).
// The audio is mixed to mono and resampled to 16 kHz, never normalised.
#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/log_mel.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "cli/commands.h"

namespace brisvox::cli {
namespace {

struct MelOptions {
  std::string file;
  std::string output;
  std::string raw_encoding;
  int raw_rate_hz = 0;
};

// The NPY v1.0 header of a C-order little-endian float32 array of `shape`: magic, version, the
// header length (uint16 LE), then the dict padded with spaces and ended by '\n' so that the data
// starts at a multiple of 64 bytes.
std::string npy_header(std::size_t rows, std::size_t cols) {
  std::string dict =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols);
  constexpr std::size_t kPreamble = 10;  // magic (6) + version (2) + length (2)
  const std::size_t unpadded = kPreamble + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string header("\x93NUMPY\x01\x00", 8);
  header.push_back(static_cast<char>(dict.size() & 0xff));
  header.push_back(static_cast<char>(dict.size() >> 8));
  return header + dict;
}

void write_npy(const std::string& path, std::span<const float> values, std::size_t rows,
               std::size_t cols) {
  static_assert(std::endian::native == std::endian::little, "NPY '<f4' is written as in memory");
  struct Closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file(std::fopen(path.c_str(), "wb"));
  if (!file) {
    throw Error(ErrorCode::kIo, fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  const std::string header = npy_header(rows, cols);
  const bool ok =
      std::fwrite(header.data(), 1, header.size(), file.get()) == header.size() &&
      std::fwrite(values.data(), sizeof(float), values.size(), file.get()) == values.size();
  if (!ok || std::fclose(file.release()) != 0) {
    throw Error(ErrorCode::kIo, fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
}

int run_mel(const MelOptions& o) {
  AudioReadOptions read;
  if (!o.raw_encoding.empty()) read.raw_encoding = parse_encoding(o.raw_encoding);
  read.raw_sample_rate_hz = o.raw_rate_hz;
  Audio audio = load_audio(o.file, read);
  if (audio.sample_rate_hz != LogMelExtractor::kSampleRateHz) {
    audio.samples = resample(audio.samples, audio.sample_rate_hz, LogMelExtractor::kSampleRateHz);
  }
  const std::vector<float> features = log_mel(audio.samples);
  write_npy(o.output, features, LogMelExtractor::kNumMels,
            LogMelExtractor::num_frames(audio.samples.size()));
  return kExitOk;
}

}  // namespace

Command add_mel_command(CLI::App& app) {
  auto o = std::make_shared<MelOptions>();
  // Its own footer: a subcommand without one shows the global examples (CLI11 inherits it).
  app.footer(
      "Output: a NumPy .npy of float32 [80, frames], Whisper's log-mel spectrogram (16 kHz, 100 frames/s).\n"
      "Examples:\n"
      "  brisvox mel speech.wav -o mel.npy\n"
      "  brisvox mel --raw-encoding mulaw call.ul -o call.npy\n"
      "  python3 -c \"import numpy; print(numpy.load('mel.npy').shape)\"");
  app.add_option("file", o->file,
                 "Audio file: WAV, RF64, FLAC, Ogg, MP3, AIFF, AU (any rate, mixed to mono), headerless PCM/G.711, "
                 "or - for standard input")
      ->required();
  app.add_option("-o,--output", o->output, "The .npy to write: float32 [80, frames], 100 frames/s")
      ->required();
  app.add_option("--raw-encoding", o->raw_encoding,
                 "Headerless input: pcm_s16le, pcm_f32le, mulaw or alaw");
  app.add_option("--raw-rate", o->raw_rate_hz,
                 "Sample rate of headerless input (.raw/.pcm/.ul/.al or --raw-encoding; G.711 defaults to 8000)");
  return [o] { return run_mel(*o); };
}

}  // namespace brisvox::cli
