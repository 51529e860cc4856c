// The whole-file readers: AudioReader (audio_reader.cpp) to the end, mixed down to mono.
#include "brisvox/audio/audio_file.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace brisvox {
namespace {

Audio read_all(AudioReader reader) {
  Audio audio;
  audio.sample_rate_hz = reader.sample_rate_hz();
  audio.num_channels_in_source = reader.num_channels();
  audio.source = reader.name();
  // Capped: a corrupt header may claim far more than the file holds.
  if (reader.num_frames()) {
    audio.samples.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(*reader.num_frames(), 1 << 25)));
  }
  constexpr std::size_t kBlock = 1 << 16;
  std::size_t size = 0;
  while (true) {
    audio.samples.resize(size + kBlock);
    const std::size_t n = reader.read_mono(std::span(audio.samples).subspan(size, kBlock));
    size += n;
    if (n == 0) break;
  }
  audio.samples.resize(size);
  audio.samples.shrink_to_fit();
  return audio;
}

}  // namespace

Audio read_audio_file(const std::string& path) { return read_all(AudioReader::open(path)); }

Audio read_audio_memory(std::span<const std::byte> bytes, const std::string& name, double max_duration_s) {
  AudioReadOptions options;
  options.max_duration_s = max_duration_s;
  return read_all(AudioReader::open_memory(bytes, name, options));
}

Audio read_raw_audio(const std::string& path, SampleEncoding encoding, int sample_rate_hz) {
  AudioReadOptions options;
  options.raw_encoding = encoding;
  options.raw_sample_rate_hz = sample_rate_hz;
  return read_all(AudioReader::open(path, options));
}

Audio load_audio(const std::string& path, const AudioReadOptions& options) {
  return read_all(AudioReader::open(path, options));
}

}  // namespace brisvox
