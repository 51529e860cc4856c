// The chunk layout of a RIFF/WAVE (or RF64) file, and the canonical header that replaces its
// metadata when the file is decoded.
//
// Why: libsndfile 1.2.0 parses WAV metadata chunks (LIST/INFO, cue, smpl, ...) with 32-bit size
// arithmetic that a crafted file can wrap around; fuzz/audio_file_fuzzer found a 316-byte WAV whose
// LIST chunk made sf_open loop for ever (fuzz/corpus/audio_file_fuzzer/regression-wav-list-*).
// Every WAV is therefore walked here first, and libsndfile is given only what decoding needs:
// 'fmt ', 'fact' (RF64: a 'ds64' with the real sizes) and the sample bytes of 'data'. Metadata is not used by brisvox.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace brisvox::audio {

// Reads exactly `size` bytes at `offset` of the input (a file or memory), or returns false.
using ReadExactly = std::function<bool(std::uint64_t offset, void* buffer, std::size_t size)>;

struct WavLayout {
  bool rf64 = false;
  std::vector<std::byte> fmt;   // the first 'fmt ' chunk, header included; empty if none
  std::vector<std::byte> fact;  // the first 'fact' chunk, header included; empty if none
  std::uint64_t data_offset = 0;  // of the first sample byte in the input
  std::uint64_t data_bytes = 0;   // the sample bytes to decode (to the end of the input at most)
  // The data size the header declares, if it declares one: 0 and 0xFFFFFFFF are what streaming
  // writers leave when they never patch the header (RF64: the 'ds64' size).
  std::optional<std::uint64_t> declared_data_bytes;
};

// The layout of an input that sniff_container (container_format.h) found to be RIFF/WAVE
// (`rf64` false) or RF64/WAVE. Throws Error(kBadAudio) naming `name`, the chunk and its byte
// offset when a chunk before the sample data runs past the end of the input, or when there is no
// 'data' chunk.
WavLayout scan_riff_wave(const ReadExactly& read_at, std::uint64_t input_size, bool rf64,
                         const std::string& name);

// RIFF (RF64) + 'WAVE' + ds64 + fmt + fact + the 'data' chunk header: what goes before the
// layout's `data_bytes` sample bytes. Every size in it is recomputed from what is really there
// (libsndfile seeks by them: a huge RF64 data size made it loop too), so a WAV that declares
// more than it holds reaches libsndfile shortened; audio_file.cpp reports it as truncated.
std::vector<std::byte> canonical_wav_header(const WavLayout& layout);

}  // namespace brisvox::audio
