// What one open stream costs the engine: the heap it allocates per stream, counted block by block
// (this binary replaces malloc, tests/counting_malloc.h), not guessed from RSS (whose slope in
// `brisvox bench` varied from 20 to 35 KiB over five runs). The figure is docs/PERFORMANCE.md's.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "brisvox/engine/engine.h"
#include "counting_malloc.h"
#include "test_paths.h"

namespace brisvox {
namespace {

constexpr int kStreams = 64;
// The bound for a 16 kHz VAD stream with the default configuration.
constexpr double kMaxBytesPerVadStream = 16 * 1024;
// malloc's own header per block (glibc on 64-bit), which malloc_usable_size does not include.
constexpr double kAllocatorHeaderBytes = 8;

struct PerStream {
  double bytes = 0;         // heap per stream, allocator headers included
  double allocations = 0;   // blocks per stream
};

// Opens kStreams streams of `config` on a fresh engine, and counts what they add. (Fresh: a closed
// stream's memory is freed by its worker after its next batch, which would blur the count.)
PerStream per_stream(const EngineConfig& engine_config, const StreamConfig& config) {
  Engine engine(engine_config);
  std::vector<Stream> streams;
  streams.reserve(kStreams);
  const test::HeapGrowth g = test::heap_growth_in([&] {
    for (int i = 0; i < kStreams; ++i) streams.push_back(engine.open_stream(config));
  });
  PerStream p;
  p.allocations = static_cast<double>(g.allocations) / kStreams;
  p.bytes = static_cast<double>(g.net_bytes) / kStreams + p.allocations * kAllocatorHeaderBytes;
  return p;
}

EngineConfig engine_config(bool with_turn) {
  EngineConfig c;
  c.model("vad").path = test::bundled_model("silero_vad_v5.onnx");
  c.model("vad").num_workers = 1;
  if (with_turn) c.models.push_back(ModelSpec::smart_turn(test::generated_model("smart_turn_tiny.onnx")));
  return c;
}

TEST(StreamMemory, AVadStreamAt16kHzCostsAtMost16KiB) {
  const PerStream p = per_stream(engine_config(false), StreamConfig{});
  std::printf("a 16 kHz VAD stream (buffer_ms %d): %.0f bytes in %.1f blocks\n", StreamConfig{}.buffer_ms, p.bytes,
              p.allocations);
  RecordProperty("bytes_per_16k_vad_stream", std::to_string(p.bytes));
  EXPECT_LE(p.bytes, kMaxBytesPerVadStream);
  EXPECT_GT(p.bytes, 8 * 1024) << "the 128 ms sample ring alone is 8 KiB: is the counter in effect?";
}

TEST(StreamMemory, OtherPipelinesCostWhatTheirStagesKeep) {
  const EngineConfig engine = engine_config(true);
  StreamConfig telephony;
  telephony.sample_rate_hz = 8000;
  const PerStream at8k = per_stream(engine, telephony);
  telephony.vad.model_rate_hz = 8000;
  const PerStream native8k = per_stream(engine, telephony);
  StreamConfig resampled;
  resampled.sample_rate_hz = 44100;
  const PerStream at44k = per_stream(engine, resampled);
  StreamConfig turns;
  turns.turn = TurnOptions{};
  const PerStream with_turn = per_stream(engine, turns);
  StreamConfig segments;
  segments.vad.segment_audio = true;
  segments.vad.max_segment_audio_s = 10.0;
  const PerStream with_segments = per_stream(engine, segments);
  std::printf("8 kHz VAD, native: %.0f bytes; 8 kHz upsampled: %.0f; 44.1 kHz (resampled): %.0f; 16 kHz + turn: %.0f; 16 kHz + 10 s segment audio: "
              "%.0f\n",
              native8k.bytes, at8k.bytes, at44k.bytes, with_turn.bytes, with_segments.bytes);
  EXPECT_LE(native8k.bytes, kMaxBytesPerVadStream);
  // The 2x upsampler's front: its output block (2 x 1024 samples) and ~1.3 KB of filter history.
  EXPECT_LE(at8k.bytes, kMaxBytesPerVadStream + 10 * 1024);
  EXPECT_LT(at8k.bytes, at44k.bytes / 2) << "the doubling needs none of libsoxr's block buffers";
  // The turn stage keeps 9.5 s of audio (16 kHz float: 608 000 bytes) and little else.
  EXPECT_GT(with_turn.bytes, 608'000);
  EXPECT_LT(with_turn.bytes, 608'000 + 32 * 1024);
  // Segment audio: the history (10 s + look-ahead) and a payload channel of one 10 s segment
  // (640 000 bytes, rounded up to a power of two).
  EXPECT_GT(with_segments.bytes, 2 * 640'000);
  EXPECT_LT(with_segments.bytes, 660'000 + 1024 * 1024 + 32 * 1024);
}

}  // namespace
}  // namespace brisvox
