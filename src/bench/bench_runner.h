// The measurements behind `brisvox bench`: the engine under load (as fast as it goes, or paced
// in real time) and the baseline peers ship (one ONNX Runtime session per stream, one Run per
// frame). bench_command.cpp chooses the phases and prints the report.
//
// Every phase runs for a warm-up, then for a measured window; only the window counts. Nothing here
// reads a clock on a worker's hot path except the added-latency recorder (one steady_clock read
// per frame, in the stream's on_events callback).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/latency_histogram.h"

namespace brisvox::bench {

// The streams every VAD bench drives: Silero at 16 kHz, 512-sample frames (16000 / 512 a second).
inline constexpr std::size_t kFrameSamples = 512;
inline constexpr double kFramesPerStreamSecond = 31.25;

// 16 kHz audio looped for any number of streams: `samples` holds the recording followed by its
// first kTailSamples again, so that any read of up to kTailSamples from a position below
// num_samples() is contiguous.
struct LoopedAudio {
  static constexpr std::size_t kTailSamples = 8192;
  std::vector<float> samples;
  std::size_t length = 0;  // samples of the recording itself
  std::string source;
  int source_rate_hz = 0;

  // Reads a file (any rate: resampled to 16 kHz). Error(kBadAudio) if shorter than one frame.
  static LoopedAudio load(const std::string& path);
  // Where stream `index` of `count` starts: spread evenly over the recording.
  std::size_t offset_for(std::size_t index, std::size_t count) const noexcept;
};

struct EnginePhaseSpec {
  std::string name;  // "capacity", "latency", "realtime": for messages
  EngineConfig engine;
  int num_streams = 200;
  // Paced: every stream gets one 512-sample frame every 32 ms, the streams' phases spread evenly
  // over the 32 ms. Otherwise as fast as the engine takes it (never more than writable()).
  bool realtime = false;
  double warmup_s = 1.0;
  double measure_s = 10.0;
  // Opens the streams in two parts, 0.5 s apart, and takes the RSS slope between them (see
  // EnginePhaseResult::rss_per_stream_kib).
  bool measure_rss = false;
};

struct EnginePhaseResult {
  int num_streams = 0;
  int num_workers = 0;
  bool realtime = false;
  double measured_s = 0;              // the window, as timed
  std::uint64_t frames_fed = 0;       // whole frames pushed in the window
  std::uint64_t frames_processed = 0; // frames the workers ran in the window
  double frames_per_s = 0;
  // frames_per_s / 31.25 / workers: real-time 16 kHz streams one worker keeps up with. A capacity
  // only when the phase ran as fast as possible.
  double streams_per_core = 0;
  std::uint64_t batches = 0;
  double mean_batch = 0;
  std::vector<std::uint64_t> batch_size_counts;  // [b], in the window
  double inference_us_per_batch = 0;              // window mean of one Run (pack + run + unpack)
  double inference_us_per_frame = 0;              // the same, per stream in the batch
  // Frame complete (its last sample pushed) -> its events available, frames pushed in the window
  // only. Recorded in on_events, which the worker calls right where it records
  // EngineStats::added_latency: the same interval, without the warm-up.
  LatencyHistogram added_latency;
  // From EngineStats (cumulative since the engine started: includes the warm-up).
  LatencyHistogram added_latency_engine;
  LatencyHistogram queue_delay_engine;
  LatencyHistogram inference_engine;
  // Realtime: frames pushed but not yet processed, at the end of the window and at worst
  // (sampled every 10 ms).
  std::uint64_t backlog_frames_end = 0;
  std::uint64_t backlog_frames_max = 0;
  std::uint64_t samples_rejected = 0;  // in the window
  std::uint64_t overload_events = 0;
  std::uint64_t events_dropped = 0;
  std::uint64_t run_errors = 0;
  std::uint64_t speech_segments = 0;   // kSpeechEnd events read in the window (proof of work)
  // Realtime: nothing refused, and the backlog at the end under one frame per stream.
  bool kept_up = false;
  double process_cpu_cores = 0;  // CPU time of the whole process over the window / wall time
  double feeder_cpu_cores = 0;   // the feeder thread's share of it
  double other_cpu_cores = 0;    // other processes over the window: noise when above ~0.1
  // RSS slope between the two parts of the streams, divided by the streams of the second part:
  // what one more open, fed stream costs. Fixed costs (sessions, ORT's working set) cancel out;
  // paced, ORT's working set still grows with the batches that more streams bring.
  std::optional<double> rss_per_stream_kib;
  long rss_before_streams_bytes = 0;  // after the engine started, before any stream
  long rss_after_streams_bytes = 0;   // with every stream open and warmed up
};

// Creates an engine, opens and feeds the streams from `audio` (ONE feeder thread; this thread
// polls events and samples the backlog), measures, closes everything. Throws Error.
EnginePhaseResult run_engine_phase(const EnginePhaseSpec& spec, const LoopedAudio& audio);

struct BaselineSpec {
  std::string model_path;
  int num_streams = 32;
  int num_threads = 1;
  double warmup_s = 1.0;
  double measure_s = 10.0;
};

struct BaselineResult {
  int num_streams = 0;
  int num_threads = 0;
  double measured_s = 0;
  std::uint64_t frames = 0;
  double frames_per_s = 0;
  double streams_per_core = 0;  // frames_per_s / 31.25 / threads
  LatencyHistogram run;          // one Run at batch 1, in the window
  double process_cpu_cores = 0;
  double other_cpu_cores = 0;
  std::optional<double> rss_per_stream_kib;  // RSS slope per session, as for the engine
};

// B streams, each with its own SileroVad (max batch 1, one intra-op thread) and segmenter, run
// frame by frame, as fast as possible, on `num_threads` threads that own B / threads streams
// each. Throws Error.
BaselineResult run_baseline(const BaselineSpec& spec, const LoopedAudio& audio);

// Process CPU time (user + system), seconds.
double process_cpu_s();
// With process_cpu_s, brisvox::machine_busy_cpu_s() (runtime_info.h) tells how much other work
// (a compiler) competed with the measurement.
// Resident set size after handing freed heap memory back to the system (malloc_trim): the pages
// in use. Without the trim, stream slots would reuse the pages an engine's construction freed
// (ORT's graph optimisation temporaries) and look almost free: measured 3.8 KiB per stream
// instead of ~20.
long resident_bytes();

}  // namespace brisvox::bench
