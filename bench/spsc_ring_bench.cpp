// The engine's per-stream sample ring (src/engine/spsc_ring.h), one 512-sample frame at a time:
// what push() costs the caller and what taking a frame costs the worker, without the threads.
#include <benchmark/benchmark.h>

#include <span>
#include <vector>

#include "engine/sync/spsc_ring.h"

namespace {

using brisvox::engine::SpscRing;

constexpr std::size_t kFrameSamples = 512;
constexpr std::size_t kRingSamples = 4096;  // a stream's default 256 ms at 16 kHz

// The caller writes a frame, the worker takes it with read(): one full round trip.
void BM_SpscRingWriteRead(benchmark::State& state) {
  SpscRing<float> ring(kRingSamples);
  std::vector<float> in(kFrameSamples, 0.25f);
  std::vector<float> out(kFrameSamples);
  for (auto _ : state) {
    ring.write(in);
    ring.read(out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kFrameSamples * sizeof(float)));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_SpscRingWriteRead);

// As the worker does it: peek the frame into the batch's staging row, consume after the run.
// The ring is kept half full so that frames straddle the wrap-around as they do in use.
void BM_SpscRingWritePeekConsume(benchmark::State& state) {
  SpscRing<float> ring(kRingSamples);
  std::vector<float> in(kFrameSamples, 0.25f);
  std::vector<float> row(kFrameSamples);
  for (std::size_t i = 0; i < 4; ++i) ring.write(std::span(in.data(), 300));  // odd offset
  for (auto _ : state) {
    ring.write(in);
    ring.peek(row);
    ring.consume(kFrameSamples);
    benchmark::DoNotOptimize(row.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kFrameSamples * sizeof(float)));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_SpscRingWritePeekConsume);

}  // namespace
