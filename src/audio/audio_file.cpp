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

#include "audio/memory_sndfile.h"
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
  OpenedFile file{Fd(fd), 0};
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
  // Pipes and devices report 0: only a regular file's size is known to be its length.
  if (S_ISREG(st.st_mode) && file.size_bytes == 0) {
    throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is empty (0 bytes)", path));
  }
  return file;
}

// Reads exactly `size` bytes at `offset`, or returns false (end of file or error).
bool read_at(int fd, std::uint64_t offset, void* buffer, std::size_t size) {
  auto* p = static_cast<char*>(buffer);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

std::uint32_t load_u32le(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

struct WavDataChunk {
  std::uint64_t offset;         // of the first sample byte
  std::uint32_t declared_size;  // bytes, as the header says
};

// Reads exactly `size` bytes at `offset` of the input (a file or memory), or returns false.
using ReadAt = std::function<bool(std::uint64_t offset, void* buffer, std::size_t size)>;

// The position and declared size of a RIFF/WAVE file's 'data' chunk, if this is one.
// libsndfile silently shortens a data chunk that runs past the end of the file (it only notes it
// in its log), so a truncated WAV would otherwise load as a shorter, valid-looking recording.
std::optional<WavDataChunk> find_wav_data_chunk(const ReadAt& read_at, std::uint64_t file_size) {
  unsigned char header[12];
  if (!read_at(0, header, sizeof header)) return std::nullopt;
  if (std::memcmp(header, "RIFF", 4) != 0 || std::memcmp(header + 8, "WAVE", 4) != 0) {
    return std::nullopt;
  }
  std::uint64_t pos = 12;
  for (int i = 0; i < 1000 && pos + 8 <= file_size; ++i) {
    unsigned char chunk[8];
    if (!read_at(pos, chunk, sizeof chunk)) return std::nullopt;
    const std::uint32_t size = load_u32le(chunk + 4);
    if (std::memcmp(chunk, "data", 4) == 0) return WavDataChunk{pos + 8, size};
    pos += 8 + static_cast<std::uint64_t>(size) + (size & 1);  // chunks are word-aligned
  }
  return std::nullopt;
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

[[noreturn]] void throw_open_failure(const std::string& path) {
  const int code = sf_error(nullptr);
  const std::string reason = sf_strerror(nullptr);
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
// `wav_data` (find_wav_data_chunk of the same bytes) detect a truncated WAV.
Audio decode_opened(SNDFILE* sndfile, const SF_INFO& info, const std::string& name,
                    std::uint64_t size_bytes, const std::optional<WavDataChunk>& wav_data) {
  const int num_channels = info.channels;
  if (num_channels <= 0 || info.samplerate <= 0) {
    throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' declares {} channels at {} Hz",
                                                  name, num_channels, info.samplerate));
  }
  const std::size_t sample_bytes = sndfile_bytes_per_sample(info.format);
  const std::size_t frame_bytes = sample_bytes * static_cast<std::size_t>(num_channels);

  // 0 and 0xFFFFFFFF are what streaming writers leave when they never patch the header: the
  // length is unknown, not wrong.
  if (wav_data && wav_data->declared_size != 0 && wav_data->declared_size != 0xFFFFFFFFu &&
      wav_data->offset + wav_data->declared_size > size_bytes) {
    const std::uint64_t num_present =
        size_bytes > wav_data->offset ? size_bytes - wav_data->offset : 0;
    std::string frames;
    if (frame_bytes > 0) {
      frames = fmt::format(" ({} of {} samples)", num_present / frame_bytes,
                           wav_data->declared_size / frame_bytes);
    }
    throw Error(ErrorCode::kBadAudio,
                fmt::format("audio file '{}' is truncated: its header declares {} bytes of audio "
                            "from byte offset {}, but the file ends at byte offset {} after {} "
                            "bytes{}",
                            name, wav_data->declared_size, wav_data->offset, size_bytes,
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
          if (wav_data && sample_bytes > 0) {
            offset = fmt::format(", byte offset {}",
                                 wav_data->offset + index * frame_bytes + c * sample_bytes);
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

}  // namespace

Audio read_audio_file(const std::string& path) {
  OpenedFile file = open_audio_file(path);
  const int fd = file.fd.get();
  const std::optional<WavDataChunk> wav_data = find_wav_data_chunk(
      [fd](std::uint64_t offset, void* buffer, std::size_t size) {
        return read_at(fd, offset, buffer, size);
      },
      file.size_bytes);

  SF_INFO info{};
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    throw Error(ErrorCode::kIo,
                fmt::format("cannot read audio file '{}': {}", path, system_message(errno)));
  }
  // libsndfile does not own the descriptor: Fd closes it after sf_close.
  std::unique_ptr<SNDFILE, SndfileCloser> sndfile(sf_open_fd(fd, SFM_READ, &info, SF_FALSE));
  if (!sndfile) throw_open_failure(path);
  return decode_opened(sndfile.get(), info, path, file.size_bytes, wav_data);
}

Audio read_audio_memory(std::span<const std::byte> bytes, const std::string& name) {
  if (bytes.empty()) {
    throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is empty (0 bytes)", name));
  }
  audio::MemorySndfile memory(bytes);
  const std::optional<WavDataChunk> wav_data = find_wav_data_chunk(
      [&memory](std::uint64_t offset, void* buffer, std::size_t size) {
        return memory.read_at(offset, buffer, size);
      },
      memory.size());
  SF_INFO info{};
  std::unique_ptr<SNDFILE, SndfileCloser> sndfile(memory.open(&info));
  if (!sndfile) throw_open_failure(name);
  return decode_opened(sndfile.get(), info, name, memory.size(), wav_data);
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
