#include "brisvox/audio/audio_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sndfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>
#include <vector>

#include "audio/container_format.h"
#include "audio/flac_end.h"
#include "audio/ogg_end.h"
#include "audio/riff_wave.h"
#include "audio/virtual_sndfile.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"

namespace brisvox {
namespace {

// Headerless bytes per read: 64 KiB, whatever the caller's block.
constexpr std::size_t kRawBlockBytes = 1 << 16;
// Samples (all channels) read_mono decodes per call at most: a 512 KiB scratch block, so a header
// claiming thousands of channels cannot make it huge.
constexpr std::size_t kMonoBlockSamples = 1 << 17;

std::string system_message(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

// An open file descriptor, closed on destruction.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

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

[[noreturn]] void throw_open_failure(const std::string& path, bool mp3) {
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

std::optional<SampleEncoding> headerless_encoding(const std::string& path, const AudioReadOptions& options) {
  if (options.raw_encoding) return options.raw_encoding;
  if (path == "-") return std::nullopt;
  const std::string ext = lower_extension(path);
  if (ext == ".raw" || ext == ".pcm") return SampleEncoding::kPcmS16le;
  if (ext == ".ul" || ext == ".ulaw" || ext == ".mulaw") return SampleEncoding::kMulaw;
  if (ext == ".al" || ext == ".alaw") return SampleEncoding::kAlaw;
  return std::nullopt;
}

int headerless_rate(const std::string& path, SampleEncoding encoding, int rate_hz) {
  if (rate_hz == 0) {
    // G.711 is telephony audio: 8 kHz unless told otherwise.
    if (encoding == SampleEncoding::kMulaw || encoding == SampleEncoding::kAlaw) return 8000;
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("'{}' is headerless PCM ({}): give its sample rate (--raw-rate)", path, to_string(encoding)));
  }
  if (rate_hz <= 0 || rate_hz > Resampler::kMaxRateHz) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("sample rate {} Hz for headerless audio file '{}' is out of range: "
                            "expected 1..{} Hz",
                            rate_hz, path, Resampler::kMaxRateHz));
  }
  return rate_hz;
}

[[noreturn]] void throw_too_long(const std::string& name, double max_duration_s, double at_least_s) {
  throw Error(ErrorCode::kLimitExceeded,
              fmt::format("audio file '{}' is longer than the {} s allowed (it holds at least {:.1f} s)", name,
                          max_duration_s, at_least_s));
}

}  // namespace

bool is_headerless(const std::string& path, const AudioReadOptions& options) {
  return headerless_encoding(path, options).has_value();
}

struct AudioReader::Impl {
  std::string name;
  int sample_rate_hz = 0;
  int num_channels = 1;
  std::optional<std::uint64_t> num_frames;
  std::uint64_t frames_read = 0;
  double max_duration_s = 0;
  std::uint64_t max_frames = std::numeric_limits<std::uint64_t>::max();
  bool finished = false;

  // Where the bytes come from: a file descriptor (in place when regular), or memory (a request
  // body, or a pipe's bytes read into `owned`).
  Fd fd;
  bool regular = false;
  std::uint64_t size_bytes = 0;
  std::vector<std::byte> owned;
  std::span<const std::byte> memory;
  bool in_memory = false;

  // A container, through libsndfile. The reader is declared before the SNDFILE that uses it.
  std::unique_ptr<audio::VirtualSndfile> input;
  std::unique_ptr<SNDFILE, SndfileCloser> sndfile;
  std::optional<audio::WavLayout> wav;
  std::size_t sample_bytes = 0;  // per channel sample in the file; 0 when compressed
  sf_count_t declared_frames = 0;
  bool frames_known = false;
  // A FLAC that does not declare its length: where its last frame ends (audio/flac_end.h), only to
  // refuse it for the limit before decoding it; decoding still counts what is really there.
  std::optional<std::uint64_t> flac_end_frames;

  // Headerless PCM.
  std::optional<PcmDecoder> pcm;
  std::vector<std::byte> raw_block;
  std::uint64_t raw_bytes_read = 0;

  std::vector<float> scratch;  // read_mono's interleaved block

  // Up to `size` bytes at `offset`; a read error ends the input there (libsndfile then reports
  // it truncated).
  std::size_t read_at(std::uint64_t offset, void* buffer, std::size_t size) const {
    if (in_memory) {
      if (offset >= memory.size()) return 0;
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(size, memory.size() - offset));
      std::memcpy(buffer, memory.data() + offset, n);
      return n;
    }
    std::size_t done = 0;
    auto* p = static_cast<char*>(buffer);
    while (done < size) {
      const ssize_t n = ::pread(fd.get(), p + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }

  void check_rate(int min_hz) const {
    if (min_hz > 0 && sample_rate_hz < min_hz) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("'{}' is audio at {} Hz: the rate must be at least {} Hz", name, sample_rate_hz, min_hz));
    }
  }

  void set_limit(double limit_s) {
    max_duration_s = limit_s;
    const double max_frames_d = limit_s > 0 ? limit_s * sample_rate_hz : 0.0;
    if (limit_s > 0 && max_frames_d < 9e18) max_frames = static_cast<std::uint64_t>(max_frames_d);
    if (num_frames && *num_frames > max_frames) {
      throw_too_long(name, max_duration_s, static_cast<double>(*num_frames) / sample_rate_hz);
    }
    if (!num_frames && flac_end_frames && *flac_end_frames > max_frames) {
      throw Error(ErrorCode::kLimitExceeded,
                  fmt::format("audio file '{}' is longer than the {} s allowed (its last FLAC frame ends at {:.1f} s)",
                              name, max_duration_s, static_cast<double>(*flac_end_frames) / sample_rate_hz));
    }
  }

  double seconds_read() const { return static_cast<double>(frames_read) / sample_rate_hz; }

  void open_fd(const std::string& path) {
    int raw_fd = -1;
    if (path == "-") {
      // A duplicate: closing it leaves the process's stdin alone.
      raw_fd = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
      if (raw_fd < 0) {
        throw Error(ErrorCode::kIo, fmt::format("cannot read standard input: {}", system_message(errno)));
      }
    } else {
      do {
        raw_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      } while (raw_fd < 0 && errno == EINTR);
      if (raw_fd < 0) {
        throw Error(ErrorCode::kIo, fmt::format("cannot open audio file '{}': {}", path, system_message(errno)));
      }
    }
    fd = Fd(raw_fd);
    struct stat st {};
    if (::fstat(raw_fd, &st) != 0) {
      throw Error(ErrorCode::kIo, fmt::format("cannot read audio file '{}': {}", path, system_message(errno)));
    }
    if (S_ISDIR(st.st_mode)) {
      throw Error(ErrorCode::kIo, fmt::format("cannot read audio file '{}': it is a directory", path));
    }
    size_bytes = static_cast<std::uint64_t>(st.st_size);
    // Pipes and devices report 0: only a regular file's size is known to be its length. A
    // redirected stdin (`< file.wav`) is a regular file, read in place like any other.
    regular = S_ISREG(st.st_mode);
    if (regular && ::lseek(raw_fd, 0, SEEK_CUR) > 0) regular = false;  // stdin part-read: treat as a stream
    if (regular && size_bytes == 0) {
      throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is empty (0 bytes)", path));
    }
  }

  // All of a pipe's or a device's bytes (a WAV's chunks are walked before it is decoded).
  void slurp() {
    std::byte block[1 << 16];
    while (true) {
      const ssize_t n = ::read(fd.get(), block, sizeof block);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        throw Error(ErrorCode::kIo, fmt::format("cannot read audio file '{}' at byte offset {}: {}", name,
                                                owned.size(), system_message(errno)));
      }
      if (n == 0) break;
      owned.insert(owned.end(), block, block + n);
    }
    memory = owned;
    in_memory = true;
    size_bytes = owned.size();
  }

  // Only the containers of audio/container_format.h reach libsndfile; a WAV as its canonical
  // header plus its sample bytes (audio/riff_wave.h says why), the others as they are.
  void open_container() {
    if (size_bytes == 0) throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is empty (0 bytes)", name));
    const audio::ReadExactly read_exactly = [this](std::uint64_t offset, void* buffer, std::size_t size) {
      return read_at(offset, buffer, size) == size;
    };
    const std::optional<audio::Container> container = audio::sniff_container(read_exactly, size_bytes);
    if (!container) {
      throw Error(ErrorCode::kUnsupportedAudio,
                  fmt::format("audio file '{}' is not in a recognised format: brisvox reads {} files; for "
                              "headerless PCM give its encoding and sample rate",
                              name, audio::kSupportedContainers));
    }
    if (*container == audio::Container::kOgg) {
      if (const auto problem = audio::ogg_end_problem(read_exactly, size_bytes)) {
        throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is truncated or corrupt: {}", name, *problem));
      }
    }
    std::vector<std::byte> head;
    audio::VirtualSndfile::ReadSome body = [this](std::uint64_t offset, void* buffer, std::size_t size) {
      return read_at(offset, buffer, size);
    };
    std::uint64_t body_size = size_bytes;
    if (*container == audio::Container::kWav || *container == audio::Container::kRf64) {
      wav = audio::scan_riff_wave(read_exactly, size_bytes, *container == audio::Container::kRf64, name);
      head = audio::canonical_wav_header(*wav);
      body = [this, data_offset = wav->data_offset](std::uint64_t offset, void* buffer, std::size_t size) {
        return read_at(data_offset + offset, buffer, size);
      };
      body_size = wav->data_bytes;
    }
    input = std::make_unique<audio::VirtualSndfile>(std::move(head), std::move(body), body_size);
    SF_INFO info{};
    sndfile.reset(input->open(&info));
    if (!sndfile) throw_open_failure(name, *container == audio::Container::kMp3);

    num_channels = info.channels;
    sample_rate_hz = info.samplerate;
    if (num_channels <= 0 || sample_rate_hz <= 0) {
      throw Error(ErrorCode::kBadAudio,
                  fmt::format("audio file '{}' declares {} channels at {} Hz", name, num_channels, sample_rate_hz));
    }
    sample_bytes = sndfile_bytes_per_sample(info.format);
    const std::size_t frame_bytes = sample_bytes * static_cast<std::size_t>(num_channels);
    // libsndfile silently shortens a data chunk that runs past the end of the file (it only notes
    // it in its log), so a truncated WAV would otherwise load as a shorter, valid-looking recording.
    // (Compared as bytes after the offset: an RF64 size near 2^64 would wrap the sum.)
    if (wav && wav->declared_data_bytes && *wav->declared_data_bytes > size_bytes - wav->data_offset) {
      const std::uint64_t num_present = wav->data_bytes;
      std::string frames;
      if (frame_bytes > 0) {
        frames = fmt::format(" ({} of {} samples)", num_present / frame_bytes, *wav->declared_data_bytes / frame_bytes);
      }
      throw Error(ErrorCode::kBadAudio,
                  fmt::format("audio file '{}' is truncated: its header declares {} bytes of audio "
                              "from byte offset {}, but the file ends at byte offset {} after {} "
                              "bytes{}",
                              name, *wav->declared_data_bytes, wav->data_offset, size_bytes, num_present, frames));
    }
    if (info.frames == 0) throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' holds no audio samples", name));
    declared_frames = info.frames;
    frames_known = info.frames > 0 && info.frames < SF_COUNT_MAX;
    if (frames_known) num_frames = static_cast<std::uint64_t>(info.frames);
    if (!frames_known && *container == audio::Container::kFlac) {
      flac_end_frames = audio::flac_end_sample(read_exactly, size_bytes);
    }
  }

  void open_headerless(SampleEncoding encoding, int rate_hz) {
    sample_rate_hz = headerless_rate(name, encoding, rate_hz);
    num_channels = 1;
    pcm.emplace(encoding, sample_rate_hz);
    if (regular || in_memory) num_frames = size_bytes / bytes_per_sample(encoding);
    if (in_memory && size_bytes == 0) {
      throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is empty (0 bytes)", name));
    }
  }

  std::size_t read_container(std::span<float> out) {
    const auto frames_wanted = static_cast<sf_count_t>(out.size() / num_channels);
    const sf_count_t num_read = sf_readf_float(sndfile.get(), out.data(), frames_wanted);
    const std::size_t frame_bytes = sample_bytes * static_cast<std::size_t>(num_channels);
    for (sf_count_t i = 0; i < std::max<sf_count_t>(num_read, 0) * num_channels; ++i) {
      if (std::isfinite(out[static_cast<std::size_t>(i)])) continue;
      const std::uint64_t index = frames_read + static_cast<std::uint64_t>(i / num_channels);
      const auto c = static_cast<int>(i % num_channels);
      const std::string channel = num_channels > 1 ? fmt::format(" (channel {})", c) : "";
      std::string offset;
      if (wav && sample_bytes > 0) {
        offset = fmt::format(", byte offset {}", wav->data_offset + index * frame_bytes + c * sample_bytes);
      }
      throw Error(ErrorCode::kBadAudio,
                  fmt::format("audio file '{}' has a {} at sample {}{} ({:.6f} s{}): audio must be finite", name,
                              std::isnan(out[static_cast<std::size_t>(i)]) ? "NaN" : "infinite value", index,
                              channel, static_cast<double>(index) / sample_rate_hz, offset));
    }
    if (num_read > 0) frames_read += static_cast<std::uint64_t>(num_read);
    if (frames_read > max_frames) throw_too_long(name, max_duration_s, seconds_read());
    // Checked after using the frames that were read, so the message says how far decoding got
    // (a truncated FLAC reads short, then reports "lost sync").
    if (sf_error(sndfile.get()) != SF_ERR_NO_ERROR) {
      const std::string declared = frames_known ? fmt::format(" of the {} declared", declared_frames) : std::string();
      throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is corrupt or truncated after {} samples{} "
                                                    "({:.3f} s): {}",
                                                    name, frames_read, declared, seconds_read(),
                                                    sf_strerror(sndfile.get())));
    }
    if (num_read > 0) return static_cast<std::size_t>(num_read);
    if (frames_read == 0) throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' holds no audio samples", name));
    if (frames_known && static_cast<sf_count_t>(frames_read) < declared_frames) {
      throw Error(ErrorCode::kBadAudio,
                  fmt::format("audio file '{}' is truncated: its header declares {} samples but "
                              "only {} could be read ({:.3f} of {:.3f} s)",
                              name, declared_frames, frames_read, seconds_read(),
                              static_cast<double>(declared_frames) / sample_rate_hz));
    }
    finished = true;
    return 0;
  }

  std::size_t read_headerless(std::span<float> out) {
    const std::size_t sample_size = bytes_per_sample(pcm->encoding());
    const std::size_t num_bytes = std::min(out.size(), kRawBlockBytes / sample_size) * sample_size;
    raw_block.resize(num_bytes);
    while (true) {
      std::size_t n = 0;
      if (in_memory) {
        n = read_at(raw_bytes_read, raw_block.data(), num_bytes);
      } else {
        ssize_t got = 0;
        do {
          got = ::read(fd.get(), raw_block.data(), num_bytes);
        } while (got < 0 && errno == EINTR);
        if (got < 0) {
          throw Error(ErrorCode::kIo, fmt::format("cannot read audio file '{}' at byte offset {}: {}", name,
                                                  raw_bytes_read, system_message(errno)));
        }
        n = static_cast<std::size_t>(got);
      }
      if (n == 0) break;
      raw_bytes_read += n;
      std::size_t num_decoded = 0;
      try {
        num_decoded = pcm->decode(std::span(raw_block.data(), n), out);
      } catch (const Error& e) {
        throw Error(e.code(), fmt::format("headerless audio file '{}': {}", name, e.what()));
      }
      frames_read += num_decoded;
      if (frames_read > max_frames) throw_too_long(name, max_duration_s, seconds_read());
      if (num_decoded > 0) return num_decoded;  // else only part of a sample arrived: read on
    }
    if (raw_bytes_read == 0) throw Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is empty (0 bytes)", name));
    if (pcm->pending_bytes() != 0) {
      throw Error(ErrorCode::kBadAudio,
                  fmt::format("headerless {} audio file '{}' is truncated: its {} bytes are not a "
                              "whole number of {}-byte samples; the last sample, at byte offset {}, "
                              "is incomplete",
                              to_string(pcm->encoding()), name, raw_bytes_read, sample_size,
                              raw_bytes_read - pcm->pending_bytes()));
    }
    finished = true;
    return 0;
  }
};

AudioReader::AudioReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AudioReader::AudioReader(AudioReader&&) noexcept = default;
AudioReader& AudioReader::operator=(AudioReader&&) noexcept = default;
AudioReader::~AudioReader() = default;

AudioReader AudioReader::open(const std::string& path, const AudioReadOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->name = path;
  const std::optional<SampleEncoding> encoding = headerless_encoding(path, options);
  // The rate is checked before the file is opened: a bad --raw-rate is the same error for every file.
  if (encoding) headerless_rate(path, *encoding, options.raw_sample_rate_hz);
  impl->open_fd(path);
  if (encoding) {
    impl->open_headerless(*encoding, options.raw_sample_rate_hz);
  } else {
    if (!impl->regular) impl->slurp();
    impl->open_container();
  }
  impl->check_rate(options.min_sample_rate_hz);
  impl->set_limit(options.max_duration_s);
  return AudioReader(std::move(impl));
}

AudioReader AudioReader::open_memory(std::span<const std::byte> bytes, const std::string& name,
                                     const AudioReadOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->memory = bytes;
  impl->in_memory = true;
  impl->size_bytes = bytes.size();
  // Only the options choose headerless here: a name is not a file name.
  if (options.raw_encoding) {
    impl->open_headerless(*options.raw_encoding, options.raw_sample_rate_hz);
  } else {
    impl->open_container();
  }
  impl->check_rate(options.min_sample_rate_hz);
  impl->set_limit(options.max_duration_s);
  return AudioReader(std::move(impl));
}

int AudioReader::sample_rate_hz() const noexcept { return impl_->sample_rate_hz; }
int AudioReader::num_channels() const noexcept { return impl_->num_channels; }
std::optional<std::uint64_t> AudioReader::num_frames() const noexcept { return impl_->num_frames; }
std::uint64_t AudioReader::num_frames_read() const noexcept { return impl_->frames_read; }
const std::string& AudioReader::name() const noexcept { return impl_->name; }

std::size_t AudioReader::read(std::span<float> interleaved) {
  Impl& m = *impl_;
  if (m.finished) return 0;
  if (interleaved.size() < static_cast<std::size_t>(m.num_channels)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("AudioReader::read: a block of {} samples holds no whole frame of {} channels",
                            interleaved.size(), m.num_channels));
  }
  return m.pcm ? m.read_headerless(interleaved) : m.read_container(interleaved);
}

std::size_t AudioReader::read_mono(std::span<float> out, int channel) {
  Impl& m = *impl_;
  if (channel >= m.num_channels) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("audio file '{}' has {} channel{}: there is no channel {} (channels count from 0)", m.name,
                            m.num_channels, m.num_channels == 1 ? "" : "s", channel));
  }
  if (m.num_channels == 1) return read(out);
  const std::size_t num_frames =
      std::min(out.size(), std::max<std::size_t>(1, kMonoBlockSamples / static_cast<std::size_t>(m.num_channels)));
  if (num_frames == 0) return 0;
  m.scratch.resize(num_frames * static_cast<std::size_t>(m.num_channels));
  const std::size_t n = read(m.scratch);
  const auto num_channels = static_cast<std::size_t>(m.num_channels);
  for (std::size_t f = 0; f < n; ++f) {
    const float* frame = m.scratch.data() + f * num_channels;
    if (channel >= 0) {
      out[f] = frame[channel];
      continue;
    }
    // Summed in double: finite floats in many channels can add up past FLT_MAX (found by
    // fuzz/audio_file_fuzzer: 36 channels of large float samples mixed down to +Inf); their
    // mean cannot. For stereo the result is the float sum halved, as before.
    double sum = 0.0;
    for (std::size_t c = 0; c < num_channels; ++c) sum += frame[c];
    out[f] = static_cast<float>(sum / static_cast<double>(num_channels));
  }
  return n;
}

}  // namespace brisvox
