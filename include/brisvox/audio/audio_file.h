// Reading whole audio files into mono float samples (through AudioReader, audio_reader.h; read
// long files with it a block at a time instead: these hold the whole recording).
//
// Containers and codecs are whatever libsndfile reads (WAV, FLAC, OGG/Vorbis, AIFF, ...), plus
// headerless PCM (see SampleEncoding). The rate is kept as found: resample with
// brisvox/audio/resampler.h. Every failure is a brisvox::Error whose message names the file:
//   kIo               the file cannot be opened or read (with the system's reason)
//   kBadAudio         empty, no samples, truncated, corrupt, or NaN/Inf samples (with the sample
//                     index, its time and, where known, its byte offset)
//   kUnsupportedAudio a format or encoding libsndfile does not recognise
//   kInvalidArgument  a headerless file without a sample rate, or a bad rate
// Thread-safe: the functions share no state.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "brisvox/audio/audio_reader.h"
#include "brisvox/audio/pcm.h"

namespace brisvox {

struct Audio {
  std::vector<float> samples;      // mono; integer sources scaled to [-1, 1); float sources as is
  int sample_rate_hz = 0;          // rate of `samples` (that of the source)
  int num_channels_in_source = 0;  // channels before the mixdown (mean of the channels)
  std::string source;              // the path it was read from (or the name of a memory buffer)

  double duration_s() const noexcept {
    return sample_rate_hz > 0 ? static_cast<double>(samples.size()) / sample_rate_hz : 0.0;
  }
};

// Reads a file libsndfile recognises, mixing multichannel audio down to mono (the mean).
Audio read_audio_file(const std::string& path);

// Reads a file held in memory (an HTTP request body) exactly as read_audio_file reads one from
// disk, with the same checks and errors (kIo aside). `name` stands for the path in messages and
// in Audio::source. The bytes are only read during the call.
// max_duration_s > 0: audio longer than this is refused with Error(kLimitExceeded) as soon as the
// header declares it or the decoder reaches it (a few KB of FLAC can hold hours: what is decoded
// before the refusal is at most max_duration_s plus one 128 Ki-sample block).
Audio read_audio_memory(std::span<const std::byte> bytes, const std::string& name, double max_duration_s = 0);

// Reads headerless mono samples. sample_rate_hz must be in [1, 768000]. The byte count must be a
// multiple of the sample size (else kBadAudio naming the offset of the incomplete sample).
Audio read_raw_audio(const std::string& path, SampleEncoding encoding, int sample_rate_hz);

// Reads any supported file, choosing by options and extension (case-insensitive):
//   raw_encoding set          headerless, that encoding
//   .raw .pcm                 headerless pcm_s16le
//   .ul .ulaw .mulaw          headerless mu-law
//   .al .alaw                 headerless A-law
//   anything else             libsndfile (by content, not by extension)
//   "-"                       standard input (headerless only with raw_encoding)
// A headerless pcm_s16le/pcm_f32le file needs options.raw_sample_rate_hz (kInvalidArgument
// otherwise); G.711 defaults to 8000 Hz.
Audio load_audio(const std::string& path, const AudioReadOptions& options = {});

}  // namespace brisvox
