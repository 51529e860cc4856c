// Writing mono 16-bit PCM WAV (libsndfile): to a file a piece at a time (synthesised speech,
// sentence by sentence), or whole into memory (an HTTP answer, a pipe that cannot seek back to
// the header), in WAV or in one of the compressed containers Debian's libsndfile writes (FLAC;
// MP3 through LAME; Ogg Opus through libopus: all dynamically linked by libsndfile, LGPL/BSD).
//
// Samples are int16 as given: the caller chooses the float -> int16 rule (Piper's is
// piper_to_int16, so that the files equal piper-tts's byte for byte).
// Thread-safety: a WavWriter is used by one thread at a time; encode_wav shares no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace brisvox {

class WavWriter {
 public:
  // Creates (or truncates) `path`. Throws Error(kIo) naming the path and the system's reason,
  // Error(kInvalidArgument) for a rate outside 1 to 768000.
  WavWriter(const std::string& path, int sample_rate_hz);
  ~WavWriter();  // closes, ignoring errors (call close() to see them)
  WavWriter(WavWriter&&) noexcept;
  WavWriter& operator=(WavWriter&&) noexcept;

  // Appends samples. Throws Error(kIo) when they cannot all be written (a full disk).
  void write(std::span<const std::int16_t> samples);
  // Completes the header and closes the file. Throws Error(kIo) on failure. Idempotent.
  void close();
  std::uint64_t samples_written() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A whole WAV file (RIFF header + samples) in memory. Throws Error(kInvalidArgument) for a bad
// rate, Error(kIo) if libsndfile fails.
std::vector<std::byte> encode_wav(std::span<const std::int16_t> samples, int sample_rate_hz);

enum class AudioContainer {
  kWav,      // RIFF WAVE, 16-bit PCM
  kFlac,     // FLAC, 16-bit (lossless)
  kMp3,      // MPEG-1/2 layer III (LAME's default bit rate for the rate)
  kOggOpus,  // Opus in Ogg; rates 8000, 12000, 16000, 24000 or 48000 only
};
// "wav", "flac", "mp3", "opus"; nullopt for any other name.
std::optional<AudioContainer> parse_audio_container(std::string_view name);
std::string_view to_string(AudioContainer container) noexcept;
// Its media type: audio/wav, audio/flac, audio/mpeg, audio/ogg.
std::string_view content_type(AudioContainer container) noexcept;
// Error(kInvalidArgument) naming the rates `container` takes when `sample_rate_hz` is not one.
void check_container_rate(AudioContainer container, int sample_rate_hz);
// A whole file of `container` in memory. Throws Error(kInvalidArgument) for a rate the container
// does not take (naming the rates it does), Error(kIo) if libsndfile fails (or was built without
// the container's encoder).
std::vector<std::byte> encode_audio(std::span<const std::int16_t> samples, int sample_rate_hz, AudioContainer container);

}  // namespace brisvox
