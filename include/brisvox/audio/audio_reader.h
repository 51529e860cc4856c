// Decoding an audio file a block at a time: the one decoding path of brisvox. The whole-file
// readers (audio_file.h), the offline runner (`brisvox vad` on a 2-hour file) and POST /v1/vad
// all read through it, so what a recording costs in memory is one block, not its duration
// (docs/PERFORMANCE.md has the figures).
//
//   AudioReader r = AudioReader::open("call.wav");
//   std::vector<float> block(4096);
//   while (std::size_t n = r.read_mono(block)) consume(std::span(block).first(n));
//
// Inputs: a path, "-" for standard input, or bytes in memory (a request body). Containers are
// those of audio/container_format.h, by content; headerless PCM is chosen as load_audio
// (audio_file.h) says. A regular file is read in place (pread); a pipe (stdin) holding a
// container is read into memory first (its chunks are walked before decoding), headerless PCM
// from a pipe is decoded as it arrives.
//
// Errors are those of audio_file.h, thrown by open() (what the header shows) or read*() (what
// decoding finds: NaN, truncation, corruption, the duration limit). Not thread-safe; move-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "brisvox/audio/pcm.h"

namespace brisvox {

struct AudioReadOptions {
  // Set: read the file as headerless PCM of this encoding, whatever its extension.
  std::optional<SampleEncoding> raw_encoding;
  // Rate of headerless files; 0 = not given (required for pcm_s16le/pcm_f32le, 8000 for G.711).
  int raw_sample_rate_hz = 0;
  // > 0: audio longer than this is refused with Error(kLimitExceeded) as soon as the header
  // declares it or decoding reaches it (a few KB of FLAC can hold hours). 0: no limit.
  double max_duration_s = 0;
  // > 0: a file whose rate is below this is refused with Error(kInvalidArgument) before the
  // duration limit is looked at (a 1 Hz WAV is a bad request, not audio too long).
  int min_sample_rate_hz = 0;
};

// Whether load_audio / AudioReader::open read `path` as headerless PCM (by options.raw_encoding or
// the extension), rather than by its header. "-" (stdin) is headerless only with raw_encoding.
bool is_headerless(const std::string& path, const AudioReadOptions& options);

class AudioReader {
 public:
  // Opens `path` ("-": standard input) and reads its header.
  static AudioReader open(const std::string& path, const AudioReadOptions& options = {});
  // The same for bytes in memory; `name` stands for the path in messages. The bytes must outlive
  // the reader (they are not copied).
  static AudioReader open_memory(std::span<const std::byte> bytes, const std::string& name,
                                 const AudioReadOptions& options = {});

  AudioReader(AudioReader&&) noexcept;
  AudioReader& operator=(AudioReader&&) noexcept;
  ~AudioReader();

  int sample_rate_hz() const noexcept;
  int num_channels() const noexcept;
  // Frames the header declares (or a headerless file's size implies); nullopt when unknown (a
  // streamed WAV, some MP3s, headerless PCM on a pipe).
  std::optional<std::uint64_t> num_frames() const noexcept;
  std::uint64_t num_frames_read() const noexcept;
  const std::string& name() const noexcept;

  // Decodes the next frames into `interleaved` (num_channels() samples per frame; its size is
  // rounded down to whole frames); returns the frames written, 0 at the end of the audio (after
  // checking it was complete: a file that holds no sample or fewer than it declares throws).
  std::size_t read(std::span<float> interleaved);
  // As read(), one sample per frame: the mean of the channels (`channel` < 0, in double, as the
  // mixdown of audio_file.h), or channel `channel` alone (0-based; kInvalidArgument if the file
  // has no such channel).
  std::size_t read_mono(std::span<float> out, int channel = -1);

 private:
  struct Impl;
  explicit AudioReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
