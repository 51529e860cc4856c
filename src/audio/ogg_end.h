// Whether an Ogg file ends as a whole one does: with a complete page (its CRC right) that ends the
// file and carries the end-of-stream flag (RFC 3533). libsndfile reads a cut Ogg as a shorter,
// valid-looking recording (its length comes from the last granule position it finds), so a
// truncated upload would answer 200 with a shorter duration; FLAC, MP3 and WAV are checked by
// their own means in audio_reader.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "audio/riff_wave.h"

namespace brisvox::audio {

// Nothing when the input of `size` bytes ends with a complete end-of-stream page; else why not
// ("its last Ogg page is cut short", ...). Reads at most the last 128 KiB (two largest pages).
std::optional<std::string> ogg_end_problem(const ReadExactly& read_at, std::uint64_t size);

}  // namespace brisvox::audio
