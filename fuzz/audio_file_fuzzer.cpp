// The audio file reader on arbitrary bytes, through the in-memory path POST /v1/vad uses
// (read_audio_memory: libsndfile's container parsers behind brisvox's own checks).
//
// Invariants: the only way to fail is a brisvox::Error; a success is non-empty, finite mono audio
// at a positive rate, named as asked. The same bytes read from a file (read_audio_file) give the
// same samples or the same error, so the memory path cannot drift from the one the CLI uses.
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "brisvox/audio/audio_file.h"
#include "brisvox/error.h"
#include "fuzz_check.h"

namespace {

constexpr const char* kName = "fuzz-input";

// One scratch file per process, rewritten for every input. In memory (/dev/shm) where there is
// one: on ext4, truncating and closing a file every run flushes it to disk, which cut the rate
// tenfold.
class ScratchFile {
 public:
  ScratchFile() {
    const std::filesystem::path shm = "/dev/shm";
    const std::filesystem::path dir = ::access(shm.c_str(), W_OK) == 0 ? shm : std::filesystem::temp_directory_path();
    std::string pattern = (dir / "brisvox-fuzz-XXXXXX").string();
    fd_ = ::mkstemp(pattern.data());
    FUZZ_CHECK(fd_ >= 0, "cannot create a scratch file in %s", pattern.c_str());
    path_ = pattern;
  }
  ~ScratchFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    FUZZ_CHECK(::ftruncate(fd_, 0) == 0, "ftruncate failed");
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      FUZZ_CHECK(n > 0, "cannot write the scratch file");
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

struct Outcome {
  std::optional<brisvox::Audio> audio;
  brisvox::ErrorCode code = brisvox::ErrorCode::kInternal;
  std::string message;
};

template <typename Read>
Outcome outcome_of(Read read) {
  Outcome o;
  try {
    o.audio = read();
  } catch (const brisvox::Error& e) {
    o.code = e.code();
    o.message = e.what();
  }
  return o;
}

void check_audio(const brisvox::Audio& audio) {
  FUZZ_CHECK(!audio.samples.empty(), "a successful read returned no samples");
  FUZZ_CHECK(audio.sample_rate_hz > 0, "rate %d", audio.sample_rate_hz);
  FUZZ_CHECK(audio.num_channels_in_source > 0, "channels %d", audio.num_channels_in_source);
  FUZZ_CHECK(audio.source == kName, "source '%s'", audio.source.c_str());
  for (std::size_t i = 0; i < audio.samples.size(); ++i) {
    FUZZ_CHECK(std::isfinite(audio.samples[i]), "sample %zu is not finite", i);
  }
}

// The file path's messages name the scratch file where the memory path's name the buffer.
std::string with_name(std::string message, const std::string& path) {
  for (std::size_t at; (at = message.find(path)) != std::string::npos;) {
    message.replace(at, path.size(), kName);
  }
  return message;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ScratchFile scratch;
  const Outcome memory = outcome_of(
      [&] { return brisvox::read_audio_memory(std::as_bytes(std::span(data, size)), kName); });
  if (memory.audio) check_audio(*memory.audio);

  const std::string& path = scratch.write(data, size);
  const Outcome file = outcome_of([&] { return brisvox::read_audio_file(path); });
  FUZZ_CHECK(memory.audio.has_value() == file.audio.has_value(),
             "memory read %s, file read %s: %s%s", memory.audio ? "succeeded" : "failed",
             file.audio ? "succeeded" : "failed", memory.message.c_str(), file.message.c_str());
  if (memory.audio) {
    FUZZ_CHECK(memory.audio->sample_rate_hz == file.audio->sample_rate_hz &&
                   memory.audio->num_channels_in_source == file.audio->num_channels_in_source &&
                   memory.audio->samples == file.audio->samples,
               "memory and file reads differ (%zu vs %zu samples)", memory.audio->samples.size(),
               file.audio->samples.size());
  } else {
    const std::string file_message = with_name(file.message, path);
    FUZZ_CHECK(memory.code == file.code && memory.message == file_message,
               "memory and file reads fail differently:\n  %s\n  %s", memory.message.c_str(),
               file_message.c_str());
  }
  return 0;
}
