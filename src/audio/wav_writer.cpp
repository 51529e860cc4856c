#include "brisvox/audio/wav_writer.h"

#include <fmt/format.h>
#include <sndfile.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>

#include "brisvox/error.h"

namespace brisvox {
namespace {

void check_rate(int sample_rate_hz) {
  if (sample_rate_hz < 1 || sample_rate_hz > 768000) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("WAV sample rate must be 1 to 768000, got {}", sample_rate_hz));
  }
}

SF_INFO wav_info(int sample_rate_hz) {
  SF_INFO info{};
  info.samplerate = sample_rate_hz;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  return info;
}

// A growable in-memory file for libsndfile's virtual I/O in write mode (it seeks back to complete
// the header).
struct MemoryFile {
  std::vector<std::byte> bytes;
  sf_count_t position = 0;

  static sf_count_t length(void* self) noexcept {
    return static_cast<sf_count_t>(static_cast<MemoryFile*>(self)->bytes.size());
  }
  static sf_count_t seek(sf_count_t offset, int whence, void* self) noexcept {
    auto* f = static_cast<MemoryFile*>(self);
    sf_count_t base = 0;
    if (whence == SEEK_CUR) base = f->position;
    if (whence == SEEK_END) base = static_cast<sf_count_t>(f->bytes.size());
    if (base + offset < 0) return -1;
    f->position = base + offset;
    return f->position;
  }
  static sf_count_t read(void* buffer, sf_count_t count, void* self) noexcept {
    auto* f = static_cast<MemoryFile*>(self);
    const auto size = static_cast<sf_count_t>(f->bytes.size());
    const sf_count_t n = std::max<sf_count_t>(0, std::min(count, size - f->position));
    if (n > 0) std::memcpy(buffer, f->bytes.data() + f->position, static_cast<std::size_t>(n));
    f->position += n;
    return n;
  }
  static sf_count_t write(const void* buffer, sf_count_t count, void* self) noexcept {
    auto* f = static_cast<MemoryFile*>(self);
    try {
      const auto end = static_cast<std::size_t>(f->position + count);
      if (end > f->bytes.size()) f->bytes.resize(end);
    } catch (...) {
      return 0;  // out of memory: libsndfile reports a short write
    }
    std::memcpy(f->bytes.data() + f->position, buffer, static_cast<std::size_t>(count));
    f->position += count;
    return count;
  }
  static sf_count_t tell(void* self) noexcept { return static_cast<MemoryFile*>(self)->position; }
};

}  // namespace

struct WavWriter::Impl {
  std::string path;
  SNDFILE* file = nullptr;
  std::uint64_t written = 0;
};

WavWriter::WavWriter(const std::string& path, int sample_rate_hz) : impl_(std::make_unique<Impl>()) {
  check_rate(sample_rate_hz);
  impl_->path = path;
  SF_INFO info = wav_info(sample_rate_hz);
  errno = 0;
  impl_->file = sf_open(path.c_str(), SFM_WRITE, &info);
  if (impl_->file == nullptr) {
    const int err = errno;
    throw Error(ErrorCode::kIo, fmt::format("cannot create '{}': {}", path,
                                            err != 0 ? std::strerror(err) : sf_strerror(nullptr)));
  }
}

WavWriter::~WavWriter() {
  if (impl_ && impl_->file) sf_close(impl_->file);
}
WavWriter::WavWriter(WavWriter&&) noexcept = default;
WavWriter& WavWriter::operator=(WavWriter&& other) noexcept {
  if (this != &other) {
    if (impl_ && impl_->file) sf_close(impl_->file);
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void WavWriter::write(std::span<const std::int16_t> samples) {
  if (!impl_->file) throw Error(ErrorCode::kClosed, fmt::format("'{}' is already closed", impl_->path));
  const auto n = static_cast<sf_count_t>(samples.size());
  if (n == 0) return;
  if (sf_write_short(impl_->file, samples.data(), n) != n) {
    throw Error(ErrorCode::kIo, fmt::format("cannot write to '{}': {}", impl_->path, sf_strerror(impl_->file)));
  }
  impl_->written += samples.size();
}

void WavWriter::close() {
  if (!impl_->file) return;
  SNDFILE* f = impl_->file;
  impl_->file = nullptr;
  if (sf_close(f) != 0) throw Error(ErrorCode::kIo, fmt::format("cannot complete '{}'", impl_->path));
}

std::uint64_t WavWriter::samples_written() const noexcept { return impl_->written; }

std::vector<std::byte> encode_wav(std::span<const std::int16_t> samples, int sample_rate_hz) {
  return encode_audio(samples, sample_rate_hz, AudioContainer::kWav);
}

std::optional<AudioContainer> parse_audio_container(std::string_view name) {
  if (name == "wav") return AudioContainer::kWav;
  if (name == "flac") return AudioContainer::kFlac;
  if (name == "mp3") return AudioContainer::kMp3;
  if (name == "opus") return AudioContainer::kOggOpus;
  return std::nullopt;
}

std::string_view to_string(AudioContainer container) noexcept {
  switch (container) {
    case AudioContainer::kWav: return "wav";
    case AudioContainer::kFlac: return "flac";
    case AudioContainer::kMp3: return "mp3";
    case AudioContainer::kOggOpus: return "opus";
  }
  return "wav";
}

std::string_view content_type(AudioContainer container) noexcept {
  switch (container) {
    case AudioContainer::kWav: return "audio/wav";
    case AudioContainer::kFlac: return "audio/flac";
    case AudioContainer::kMp3: return "audio/mpeg";
    case AudioContainer::kOggOpus: return "audio/ogg";
  }
  return "application/octet-stream";
}

void check_container_rate(AudioContainer container, int sample_rate_hz) {
  check_rate(sample_rate_hz);
  const auto one_of = [&](std::initializer_list<int> rates) {
    return std::find(rates.begin(), rates.end(), sample_rate_hz) != rates.end();
  };
  switch (container) {
    case AudioContainer::kWav:
      return;
    case AudioContainer::kFlac:
      if (sample_rate_hz <= 655350) return;
      throw Error(ErrorCode::kInvalidArgument, fmt::format("FLAC takes rates up to 655350 Hz, not {}", sample_rate_hz));
    case AudioContainer::kMp3:
      // LAME's rates: MPEG-1 (32, 44.1, 48 kHz), MPEG-2 (16, 22.05, 24) and MPEG-2.5 (8, 11.025, 12).
      if (one_of({8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000})) return;
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("MP3 takes 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100 or 48000 Hz, not {}",
                              sample_rate_hz));
    case AudioContainer::kOggOpus:
      if (one_of({8000, 12000, 16000, 24000, 48000})) return;
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("Opus takes 8000, 12000, 16000, 24000 or 48000 Hz, not {}", sample_rate_hz));
  }
}

std::vector<std::byte> encode_audio(std::span<const std::int16_t> samples, int sample_rate_hz,
                                    AudioContainer container) {
  check_container_rate(container, sample_rate_hz);
  SF_INFO info = wav_info(sample_rate_hz);
  switch (container) {
    case AudioContainer::kWav: break;
    case AudioContainer::kFlac: info.format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16; break;
    case AudioContainer::kMp3: info.format = SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III; break;
    case AudioContainer::kOggOpus: info.format = SF_FORMAT_OGG | SF_FORMAT_OPUS; break;
  }
  MemoryFile mem;
  mem.bytes.reserve(64 + (container == AudioContainer::kWav ? samples.size() * 2 : samples.size() / 4));
  SF_VIRTUAL_IO io{&MemoryFile::length, &MemoryFile::seek, &MemoryFile::read, &MemoryFile::write, &MemoryFile::tell};
  const std::string_view name = to_string(container);
  SNDFILE* f = sf_open_virtual(&io, SFM_WRITE, &info, &mem);
  if (f == nullptr) throw Error(ErrorCode::kIo, fmt::format("cannot encode {}: {}", name, sf_strerror(nullptr)));
  const auto n = static_cast<sf_count_t>(samples.size());
  const bool ok = n == 0 || sf_write_short(f, samples.data(), n) == n;
  const std::string why = ok ? "" : sf_strerror(f);
  if (sf_close(f) != 0 || !ok) throw Error(ErrorCode::kIo, fmt::format("cannot encode {}: {}", name, why));
  return std::move(mem.bytes);
}

}  // namespace brisvox
