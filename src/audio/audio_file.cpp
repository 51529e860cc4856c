#include "brisvox/audio/audio_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sndfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include "audio/container_format.h"
#include "audio/riff_wave.h"
#include "audio/virtual_sndfile.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"

namespace brisvox {
namespace {

// Samples (all channels) per sf_readf_float call: a 512 KiB block; a 1-hour 16 kHz mono file still
// takes only ~450 calls.
constexpr std::size_t kBlockSamples = 1 << 17;
constexpr std::size_t kRawBlockBytes = 1 << 16;

std::string system_message(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

// An open file descriptor, closed on destruction.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

struct OpenedFile {
  Fd fd;
  std::uint64_t size_bytes;
  bool regular;  // false for a pipe or a device: no size, no random access
};

// Opens `path` for reading; kIo if that fails or it is a directory, kBadAudio if it is empty.
OpenedFile open_audio_file(const std::string& path) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    throw Error(ErrorCode::kIo,
                fmt::format("cannot open audio file '{}': {}", path, system_message(errno)));
  }
  OpenedFile file{Fd(fd), 0, false};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw Error(ErrorCode::kIo,
                fmt::format("cannot read audio file '{}': {}", path, system_message(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    throw Error(ErrorCode::kIo,
                fmt::format("cannot read audio file '{}': it is a directory", path));
  }
  file.size_bytes = static_cast<std::uint64_t>(st.st_size);
  file.regular = S_ISREG(st.st_mode);
  // Pipes and devices report 0: only a regular file's size is known to be its length.
  if (S_ISREG(st.st_mode) && file.size_bytes == 0) {
    throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is empty (0 bytes)", path));
  }
  return file;
}

struct SndfileCloser {
  void operator()(SNDFILE* file) const noexcept { sf_close(file); }
};

std::size_t sndfile_bytes_per_sample(int format) {
  switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8:
    case SF_FORMAT_PCM_U8:
    case SF_FORMAT_ULAW:
    case SF_FORMAT_ALAW: return 1;
    case SF_FORMAT_PCM_16: return 2;
    case SF_FORMAT_PCM_24: return 3;
    case SF_FORMAT_PCM_32:
    case SF_FORMAT_FLOAT: return 4;
    case SF_FORMAT_DOUBLE: return 8;
    default: return 0;  // compressed: no fixed byte position per sample
  }
}

[[noreturn]] void throw_open_failure(const std::string& path, bool mp3 = false) {
  const int code = sf_error(nullptr);
  std::string reason = sf_strerror(nullptr);
  // libsndfile's MP3 reader (mpg123) reports data without a valid frame as "File does not exist
  // or is not a regular file (possibly a pipe?)", which sends a user looking for a missing file.
  if (mp3 && reason.find("does not exist") != std::string::npos) {
    reason = "no valid MP3 frame could be decoded (the data after the MP3 frame sync is not MPEG audio)";
  }
  switch (code) {
    case SF_ERR_UNRECOGNISED_FORMAT:
      throw Error(ErrorCode::kUnsupportedAudio,
                  fmt::format("audio file '{}' is not in a recognised format ({}); for headerless "
                              "PCM give its encoding and sample rate",
                              path, reason));
    case SF_ERR_UNSUPPORTED_ENCODING:
      throw Error(ErrorCode::kUnsupportedAudio,
                  fmt::format("audio file '{}' uses an unsupported encoding: {}", path, reason));
    case SF_ERR_SYSTEM:
      throw Error(ErrorCode::kIo, fmt::format("cannot read audio file '{}': {}", path, reason));
    default:
      // SF_ERR_MALFORMED_FILE and libsndfile's format-specific codes ("Error in WAV file. No
      // 'data' chunk marker."): the container was recognised but its contents are broken.
      throw Error(ErrorCode::kBadAudio,
                  fmt::format("audio file '{}' is corrupt or truncated: {}", path, reason));
  }
}

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

void check_raw_rate(const std::string& path, int sample_rate_hz) {
  if (sample_rate_hz <= 0 || sample_rate_hz > Resampler::kMaxRateHz) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("sample rate {} Hz for headerless audio file '{}' is out of range: "
                            "expected 1..{} Hz",
                            sample_rate_hz, path, Resampler::kMaxRateHz));
  }
}

// Decodes an input libsndfile has opened (a file or memory) into mono samples, checking it is
// complete and finite. `name` (the path) is for messages and Audio::source; `size_bytes` and
// `wav` (scan_riff_wave of the same bytes) detect a truncated WAV.
[[noreturn]] void throw_too_long(const std::string& name, double max_duration_s, double at_least_s) {
  throw Error(ErrorCode::kLimitExceeded,
              fmt::format("audio file '{}' is longer than the {} s allowed (it holds at least {:.1f} s)", name,
                          max_duration_s, at_least_s));
}

Audio decode_opened(SNDFILE* sndfile, const SF_INFO& info, const std::string& name,
                    std::uint64_t size_bytes, const std::optional<audio::WavLayout>& wav,
                    double max_duration_s) {
  const int num_channels = info.channels;
  if (num_channels <= 0 || info.samplerate <= 0) {
    throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' declares {} channels at {} Hz",
                                                  name, num_channels, info.samplerate));
  }
  const std::size_t sample_bytes = sndfile_bytes_per_sample(info.format);
  const std::size_t frame_bytes = sample_bytes * static_cast<std::size_t>(num_channels);

  // libsndfile silently shortens a data chunk that runs past the end of the file (it only notes
  // it in its log), so a truncated WAV would otherwise load as a shorter, valid-looking recording.
  // (Compared as bytes after the offset: an RF64 size near 2^64 would wrap the sum.)
  if (wav && wav->declared_data_bytes && *wav->declared_data_bytes > size_bytes - wav->data_offset) {
    const std::uint64_t num_present = wav->data_bytes;
    std::string frames;
    if (frame_bytes > 0) {
      frames = fmt::format(" ({} of {} samples)", num_present / frame_bytes,
                           *wav->declared_data_bytes / frame_bytes);
    }
    throw Error(ErrorCode::kBadAudio,
                fmt::format("audio file '{}' is truncated: its header declares {} bytes of audio "
                            "from byte offset {}, but the file ends at byte offset {} after {} "
                            "bytes{}",
                            name, *wav->declared_data_bytes, wav->data_offset, size_bytes,
                            num_present, frames));
  }
  if (info.frames == 0) {
    throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' holds no audio samples", name));
  }

  Audio audio;
  audio.sample_rate_hz = info.samplerate;
  audio.num_channels_in_source = num_channels;
  audio.source = name;
  const bool frames_known = info.frames > 0 && info.frames < SF_COUNT_MAX;
  // Frames allowed (all when max_duration_s is 0); a declared length past it is refused before
  // anything is decoded, an undeclared one when decoding passes it.
  const double max_frames_d = max_duration_s > 0 ? max_duration_s * info.samplerate : 0.0;
  const auto max_frames = max_duration_s > 0 && max_frames_d < 9e18 ? static_cast<std::uint64_t>(max_frames_d)
                                                                      : std::numeric_limits<std::uint64_t>::max();
  if (frames_known && static_cast<std::uint64_t>(info.frames) > max_frames) {
    throw_too_long(name, max_duration_s, static_cast<double>(info.frames) / info.samplerate);
  }
  if (frames_known) {
    // Capped: a corrupt header may claim far more than the file holds. Uncompressed frames
    // cannot outnumber the bytes, so a tiny file (a request body) never reserves 128 MiB.
    sf_count_t most = 1 << 25;
    if (frame_bytes > 0) most = std::min(most, static_cast<sf_count_t>(size_bytes / frame_bytes));
    audio.samples.reserve(static_cast<std::size_t>(std::min(info.frames, most)));
  }

  // Frames per block scale down with the channel count, so a header claiming thousands of
  // channels cannot make the block huge; a short file (a request body) gets a short block.
  auto block_frames =
      static_cast<sf_count_t>(std::max<std::size_t>(1, kBlockSamples / num_channels));
  if (frames_known) block_frames = std::min(block_frames, info.frames);
  std::vector<float> block(static_cast<std::size_t>(block_frames) * num_channels);
  while (true) {
    const sf_count_t num_read = sf_readf_float(sndfile, block.data(), block_frames);
    if (num_read <= 0 && sf_error(sndfile) == SF_ERR_NO_ERROR) break;
    for (sf_count_t f = 0; f < num_read; ++f) {
      const float* frame = block.data() + f * num_channels;
      // Summed in double: finite floats in many channels can add up past FLT_MAX (found by
      // fuzz/audio_file_fuzzer: 36 channels of large float samples mixed down to +Inf); their
      // mean cannot. For stereo the result is the float sum halved, as before.
      double sum = 0.0;
      for (int c = 0; c < num_channels; ++c) {
        if (!std::isfinite(frame[c])) {
          const std::uint64_t index = audio.samples.size();
          std::string channel = num_channels > 1 ? fmt::format(" (channel {})", c) : "";
          std::string offset;
          if (wav && sample_bytes > 0) {
            offset = fmt::format(", byte offset {}",
                                 wav->data_offset + index * frame_bytes + c * sample_bytes);
          }
          throw Error(ErrorCode::kBadAudio,
                      fmt::format("audio file '{}' has a {} at sample {}{} ({:.6f} s{}): audio "
                                  "must be finite",
                                  name, std::isnan(frame[c]) ? "NaN" : "infinite value", index,
                                  channel, static_cast<double>(index) / info.samplerate, offset));
        }
        sum += frame[c];
      }
      audio.samples.push_back(static_cast<float>(sum / num_channels));
    }
    if (audio.samples.size() > max_frames) throw_too_long(name, max_duration_s, audio.duration_s());
    // Checked after using the frames that were read, so the message says how far decoding got
    // (a truncated FLAC reads short, then reports "lost sync").
    if (sf_error(sndfile) != SF_ERR_NO_ERROR) {
      const std::string declared =
          frames_known ? fmt::format(" of the {} declared", info.frames) : std::string();
      throw Error(ErrorCode::kBadAudio,
                  fmt::format("audio file '{}' is corrupt or truncated after {} samples{} "
                              "({:.3f} s): {}",
                              name, audio.samples.size(), declared, audio.duration_s(),
                              sf_strerror(sndfile)));
    }
    if (num_read <= 0) break;
  }

  if (audio.samples.empty()) {
    throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' holds no audio samples", name));
  }
  if (frames_known && static_cast<sf_count_t>(audio.samples.size()) < info.frames) {
    throw Error(ErrorCode::kBadAudio,
                fmt::format("audio file '{}' is truncated: its header declares {} samples but "
                            "only {} could be read ({:.3f} of {:.3f} s)",
                            name, info.frames, audio.samples.size(), audio.duration_s(),
                            static_cast<double>(info.frames) / info.samplerate));
  }
  return audio;
}

// Decodes an input of `size_bytes` that `read_some` reads (a file or memory). Only the containers
// of audio/container_format.h reach libsndfile; a WAV as its canonical header plus its sample
// bytes (audio/riff_wave.h says why), the others as they are.
Audio decode_input(const audio::VirtualSndfile::ReadSome& read_some, std::uint64_t size_bytes,
                   const std::string& name, double max_duration_s = 0) {
  if (size_bytes == 0) throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is empty (0 bytes)", name));
  const audio::ReadExactly read_exactly = [&read_some](std::uint64_t offset, void* buffer, std::size_t size) {
    return read_some(offset, buffer, size) == size;
  };
  const std::optional<audio::Container> container = audio::sniff_container(read_exactly, size_bytes);
  if (!container) {
    throw Error(ErrorCode::kUnsupportedAudio,
                fmt::format("audio file '{}' is not in a recognised format: brisvox reads {} files; for "
                            "headerless PCM give its encoding and sample rate",
                            name, audio::kSupportedContainers));
  }
  std::optional<audio::WavLayout> wav;
  std::vector<std::byte> head;
  audio::VirtualSndfile::ReadSome body = read_some;
  std::uint64_t body_size = size_bytes;
  if (*container == audio::Container::kWav || *container == audio::Container::kRf64) {
    wav = audio::scan_riff_wave(read_exactly, size_bytes, *container == audio::Container::kRf64, name);
    head = audio::canonical_wav_header(*wav);
    body = [&read_some, data_offset = wav->data_offset](std::uint64_t offset, void* buffer, std::size_t size) {
      return read_some(data_offset + offset, buffer, size);
    };
    body_size = wav->data_bytes;
  }
  audio::VirtualSndfile input(std::move(head), std::move(body), body_size);
  SF_INFO info{};
  std::unique_ptr<SNDFILE, SndfileCloser> sndfile(input.open(&info));
  if (!sndfile) throw_open_failure(name, *container == audio::Container::kMp3);
  return decode_opened(sndfile.get(), info, name, size_bytes, wav, max_duration_s);
}

audio::VirtualSndfile::ReadSome memory_reader(std::span<const std::byte> bytes) {
  return [bytes](std::uint64_t offset, void* buffer, std::size_t size) {
    if (offset >= bytes.size()) return std::size_t{0};
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(size, bytes.size() - offset));
    std::memcpy(buffer, bytes.data() + offset, n);
    return n;
  };
}

// All of a pipe's or a device's bytes (a WAV's chunks are walked before it is decoded).
std::vector<std::byte> read_stream(int fd, const std::string& path) {
  std::vector<std::byte> bytes;
  std::byte block[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, block, sizeof block);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(ErrorCode::kIo, fmt::format("cannot read audio file '{}' at byte offset {}: {}", path,
                                              bytes.size(), system_message(errno)));
    }
    if (n == 0) return bytes;
    bytes.insert(bytes.end(), block, block + n);
  }
}

}  // namespace

Audio read_audio_file(const std::string& path) {
  OpenedFile file = open_audio_file(path);
  const int fd = file.fd.get();
  if (!file.regular) {
    const std::vector<std::byte> bytes = read_stream(fd, path);
    return decode_input(memory_reader(bytes), bytes.size(), path);
  }
  // Up to `size` bytes at `offset`; a read error ends the input there (libsndfile then reports
  // it truncated).
  const audio::VirtualSndfile::ReadSome read_some = [fd](std::uint64_t offset, void* buffer, std::size_t size) {
    std::size_t done = 0;
    auto* p = static_cast<char*>(buffer);
    while (done < size) {
      const ssize_t n = ::pread(fd, p + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  };
  return decode_input(read_some, file.size_bytes, path);
}

Audio read_audio_memory(std::span<const std::byte> bytes, const std::string& name, double max_duration_s) {
  return decode_input(memory_reader(bytes), bytes.size(), name, max_duration_s);
}

Audio read_raw_audio(const std::string& path, SampleEncoding encoding, int sample_rate_hz) {
  check_raw_rate(path, sample_rate_hz);
  OpenedFile file = open_audio_file(path);
  const std::size_t sample_bytes = bytes_per_sample(encoding);

  Audio audio;
  audio.sample_rate_hz = sample_rate_hz;
  audio.num_channels_in_source = 1;
  audio.source = path;
  audio.samples.reserve(static_cast<std::size_t>(
      std::min<std::uint64_t>(file.size_bytes / sample_bytes, std::uint64_t{1} << 25)));

  PcmDecoder decoder(encoding, sample_rate_hz);
  std::vector<std::byte> bytes(kRawBlockBytes);
  std::vector<float> decoded(decoder.max_samples_for(kRawBlockBytes));
  std::uint64_t num_bytes_read = 0;
  while (true) {
    const ssize_t n = ::read(file.fd.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(ErrorCode::kIo, fmt::format("cannot read audio file '{}' at byte offset {}: {}",
                                              path, num_bytes_read, system_message(errno)));
    }
    if (n == 0) break;
    num_bytes_read += static_cast<std::uint64_t>(n);
    std::size_t num_decoded = 0;
    try {
      num_decoded = decoder.decode(std::span(bytes.data(), static_cast<std::size_t>(n)), decoded);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("headerless audio file '{}': {}", path, e.what()));
    }
    audio.samples.insert(audio.samples.end(), decoded.begin(),
                         decoded.begin() + static_cast<std::ptrdiff_t>(num_decoded));
  }

  if (num_bytes_read == 0) {
    throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is empty (0 bytes)", path));
  }
  if (decoder.pending_bytes() != 0) {
    throw Error(ErrorCode::kBadAudio,
                fmt::format("headerless {} audio file '{}' is truncated: its {} bytes are not a "
                            "whole number of {}-byte samples; the last sample, at byte offset {}, "
                            "is incomplete",
                            to_string(encoding), path, num_bytes_read, sample_bytes,
                            num_bytes_read - decoder.pending_bytes()));
  }
  return audio;
}

Audio load_audio(const std::string& path, const AudioReadOptions& options) {
  std::optional<SampleEncoding> encoding = options.raw_encoding;
  if (!encoding) {
    const std::string ext = lower_extension(path);
    if (ext == ".raw" || ext == ".pcm") {
      encoding = SampleEncoding::kPcmS16le;
    } else if (ext == ".ul" || ext == ".ulaw" || ext == ".mulaw") {
      encoding = SampleEncoding::kMulaw;
    } else if (ext == ".al" || ext == ".alaw") {
      encoding = SampleEncoding::kAlaw;
    }
  }
  if (!encoding) return read_audio_file(path);

  int rate_hz = options.raw_sample_rate_hz;
  if (rate_hz == 0) {
    // G.711 is telephony audio: 8 kHz unless told otherwise.
    if (*encoding == SampleEncoding::kMulaw || *encoding == SampleEncoding::kAlaw) {
      rate_hz = 8000;
    } else {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("'{}' is headerless PCM ({}): give its sample rate (--raw-rate)",
                              path, to_string(*encoding)));
    }
  }
  return read_raw_audio(path, *encoding, rate_hz);
}

}  // namespace brisvox
