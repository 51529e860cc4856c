// Which audio containers brisvox hands to libsndfile, recognised by their first bytes.
//
// libsndfile reads some 25 containers, many of them rare and old (PAF, SVX, VOC, IRCAM, MAT, PVF,
// XI, HTK, SDS, AVR, SD2, WVE, MPC2K, ...). Its WAV and RF64 readers alone had two endless loops
// on crafted headers (docs/RELIABILITY.md); a server that decodes files from the network should
// not expose the rest. Only the containers below are opened; everything else is refused before
// libsndfile sees a byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "audio/riff_wave.h"

namespace brisvox::audio {

enum class Container { kWav, kRf64, kFlac, kOgg, kMp3, kAiff, kAu };

// For messages: what brisvox reads.
inline constexpr std::string_view kSupportedContainers =
    "WAV, RF64, FLAC, Ogg (Vorbis, Opus, FLAC), MP3, AIFF and AU";

// The container of an input of `input_size` bytes, from its first bytes (after an ID3v2 tag for
// MP3 and FLAC); nullopt if it is none of the supported ones.
std::optional<Container> sniff_container(const ReadExactly& read_at, std::uint64_t input_size);

}  // namespace brisvox::audio
