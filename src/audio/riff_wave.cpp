#include "audio/riff_wave.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "brisvox/error.h"

namespace brisvox::audio {
namespace {

// Headers are small ('fmt ' is 16 to 40 bytes, 'fact' 4, 'ds64' 28 plus a table); anything much
// larger is a corrupt size field, not a header to copy.
constexpr std::uint32_t kMaxHeaderChunkBytes = 1 << 16;
// Real files have a handful of chunks; a list of thousands of empty chunks is not worth walking.
constexpr int kMaxChunks = 4096;

std::uint32_t load_u32le(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

std::uint64_t load_u64le(const std::byte* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<std::uint64_t>(load_u32le(u)) | (static_cast<std::uint64_t>(load_u32le(u + 4)) << 32);
}

void store_u32le(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

void store_u64le(std::byte* p, std::uint64_t v) {
  store_u32le(p, static_cast<std::uint32_t>(v));
  store_u32le(p + 4, static_cast<std::uint32_t>(v >> 32));
}

// A chunk id as text when it is printable ('LIST'), else as hex (0xffffffff).
std::string chunk_name(const unsigned char* id) {
  if (std::all_of(id, id + 4, [](unsigned char c) { return std::isprint(c) != 0; })) {
    return fmt::format("'{}'", std::string(reinterpret_cast<const char*>(id), 4));
  }
  return fmt::format("0x{:02x}{:02x}{:02x}{:02x}", id[0], id[1], id[2], id[3]);
}

std::vector<std::byte> read_chunk(const ReadExactly& read_at, std::uint64_t pos, std::uint32_t size) {
  std::vector<std::byte> chunk(8 + static_cast<std::size_t>(size));
  if (!read_at(pos, chunk.data(), chunk.size())) chunk.clear();
  return chunk;
}

bool printable_id_at(const ReadExactly& read_at, std::uint64_t pos, std::uint64_t input_size) {
  unsigned char id[4];
  return pos + 8 <= input_size && read_at(pos, id, sizeof id) &&
         std::all_of(id, id + 4, [](unsigned char c) { return std::isprint(c) != 0; });
}

// Where the chunk after one ending at `end` starts. Chunks are word-aligned (a pad byte follows
// an odd size), but some writers leave the pad out: then the next id is found at `end` itself.
std::uint64_t next_chunk(const ReadExactly& read_at, std::uint64_t end, std::uint32_t size,
                         std::uint64_t input_size) {
  if ((size & 1) == 0) return end;
  if (!printable_id_at(read_at, end + 1, input_size) && printable_id_at(read_at, end, input_size)) return end;
  return end + 1;
}

}  // namespace

WavLayout scan_riff_wave(const ReadExactly& read_at, std::uint64_t input_size, bool rf64,
                         const std::string& name) {
  const auto corrupt = [&](const std::string& what) {
    return Error(ErrorCode::kBadAudio, fmt::format("audio file '{}' is a corrupt WAV file: {}", name, what));
  };
  WavLayout layout;
  layout.rf64 = rf64;
  std::optional<std::uint64_t> rf64_data_bytes;  // from 'ds64'
  std::uint64_t pos = 12;  // after 'RIFF' size 'WAVE'
  for (int i = 0; i < kMaxChunks && pos + 8 <= input_size; ++i) {
    unsigned char chunk[8];
    if (!read_at(pos, chunk, sizeof chunk)) break;
    const std::uint32_t size = load_u32le(chunk + 4);
    const std::uint64_t body = pos + 8;

    if (std::memcmp(chunk, "data", 4) == 0) {
      layout.data_offset = body;
      if (rf64 && size == 0xFFFFFFFFu) {
        if (!rf64_data_bytes) throw corrupt("it is RF64 but has no 'ds64' chunk before its 'data' chunk");
        layout.declared_data_bytes = *rf64_data_bytes;
      } else if (size != 0 && size != 0xFFFFFFFFu) {
        layout.declared_data_bytes = size;
      }
      const std::uint64_t present = input_size - body;
      layout.data_bytes = layout.declared_data_bytes ? std::min(*layout.declared_data_bytes, present) : present;
      return layout;
    }

    // Every chunk before the samples must lie inside the input: libsndfile's own walk would
    // otherwise follow a wrapped-around size (the pad byte of an odd-sized chunk may be missing).
    if (body + size > input_size) {
      throw corrupt(fmt::format("its {} chunk at byte offset {} declares {} bytes, past the end of the "
                                "file at byte offset {}, before any 'data' chunk",
                                chunk_name(chunk), pos, size, input_size));
    }
    if (rf64 && !rf64_data_bytes && std::memcmp(chunk, "ds64", 4) == 0) {
      // riffSize, dataSize, sampleCount (64-bit each), then a table this reader does not need.
      if (size < 24) {
        throw corrupt(fmt::format("its 'ds64' chunk at byte offset {} holds {} bytes, fewer than the 24 of "
                                  "its three sizes",
                                  pos, size));
      }
      std::byte sizes[24];
      if (!read_at(body, sizes, sizeof sizes)) break;
      rf64_data_bytes = load_u64le(sizes + 8);
    }
    const bool fmt_chunk = std::memcmp(chunk, "fmt ", 4) == 0;
    const bool fact_chunk = std::memcmp(chunk, "fact", 4) == 0;
    std::vector<std::byte>* keep = fmt_chunk ? &layout.fmt : fact_chunk ? &layout.fact : nullptr;
    if (keep != nullptr && keep->empty()) {
      if (size > kMaxHeaderChunkBytes) {
        throw corrupt(fmt::format("its {} chunk at byte offset {} declares {} bytes; a header chunk "
                                  "holds at most {}",
                                  chunk_name(chunk), pos, size, kMaxHeaderChunkBytes));
      }
      *keep = read_chunk(read_at, pos, size);
    }
    pos = next_chunk(read_at, body + size, size, input_size);
  }
  throw corrupt(fmt::format("it has no 'data' chunk ({} bytes, chunks walked to byte offset {})",
                            input_size, std::min(pos, input_size)));
}

std::vector<std::byte> canonical_wav_header(const WavLayout& layout) {
  std::vector<std::byte> head(12);
  std::memcpy(head.data(), layout.rf64 ? "RF64" : "RIFF", 4);
  std::memcpy(head.data() + 8, "WAVE", 4);
  std::size_t ds64_riff_size = 0;
  if (layout.rf64) {
    ds64_riff_size = head.size() + 8;
    head.resize(head.size() + 8 + 28);
    std::memcpy(head.data() + ds64_riff_size - 8, "ds64", 4);
    store_u32le(head.data() + ds64_riff_size - 4, 28);
    store_u64le(head.data() + ds64_riff_size + 8, layout.data_bytes);
    store_u64le(head.data() + ds64_riff_size + 16, 0);  // sample count: libsndfile derives it from the data size
    store_u32le(head.data() + ds64_riff_size + 24, 0);  // no table
  }
  for (const auto* chunk : {&layout.fmt, &layout.fact}) {
    head.insert(head.end(), chunk->begin(), chunk->end());
    if (chunk->size() % 2 == 1) head.push_back(std::byte{0});
  }
  const std::size_t data_header = head.size();
  head.resize(data_header + 8);
  std::memcpy(head.data() + data_header, "data", 4);
  const std::uint64_t riff_size = head.size() - 8 + layout.data_bytes;
  if (layout.rf64) {
    store_u32le(head.data() + 4, 0xFFFFFFFFu);
    store_u32le(head.data() + data_header + 4, 0xFFFFFFFFu);
    store_u64le(head.data() + ds64_riff_size, riff_size);
  } else {
    const auto clamp32 = [](std::uint64_t v) { return static_cast<std::uint32_t>(std::min<std::uint64_t>(v, 0xFFFFFFFFu)); };
    store_u32le(head.data() + 4, clamp32(riff_size));
    store_u32le(head.data() + data_header + 4, clamp32(layout.data_bytes));
  }
  return head;
}

}  // namespace brisvox::audio
