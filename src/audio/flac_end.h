// Where a FLAC stream ends, read from its last frame's header: so that a FLAC whose STREAMINFO
// does not declare its length (0 samples: "unknown", as streaming encoders write it) can be
// refused for the duration limit before it is decoded. Decoding six hours of silence to find out
// takes 20 s of a core; reading the last frame takes microseconds.
#pragma once

#include <cstdint>
#include <optional>

#include "audio/riff_wave.h"

namespace brisvox::audio {

// The number of samples (per channel) the FLAC stream of `size` bytes holds, taken from its last
// frame: the frame (RFC 9639, section 9) that ends exactly at the end of the input, its header's
// CRC-8 and the whole frame's CRC-16 right. Nothing when the input does not start with "fLaC" and
// its STREAMINFO, or no such frame is found in its last bytes (trailing tags, a damaged end):
// decoding then finds the length as it goes. Reads the STREAMINFO and at most the last
// max(STREAMINFO's largest frame, 64 KiB) bytes, capped at 1 MiB.
std::optional<std::uint64_t> flac_end_sample(const ReadExactly& read_at, std::uint64_t size);

}  // namespace brisvox::audio
