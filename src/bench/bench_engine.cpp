// `brisvox bench`: the engine phases. One feeder thread pushes audio into every stream; the
// calling thread polls their events, samples the backlog and takes the measurements.
#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>
#include <span>
#include <thread>

#include "brisvox/error.h"
#include "brisvox/runtime/runtime_info.h"
#include "bench/bench_runner.h"

namespace brisvox::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kFramePeriodNs = 32'000'000;
constexpr std::size_t kMaxFramesPerPush = 8;      // LoopedAudio::kTailSamples covers this
constexpr auto kTick = std::chrono::milliseconds(10);  // event polling and backlog sampling
constexpr std::size_t kPushTimes = 64;  // > frames a stream can hold (its ring), see StreamContext

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Shared by every stream of a phase: the window whose frames count, and their latencies.
struct LatencyRecorder {
  std::atomic<std::int64_t> window_start_ns{std::numeric_limits<std::int64_t>::max()};
  std::atomic<std::int64_t> window_end_ns{std::numeric_limits<std::int64_t>::max()};
  LatencyHistogram histogram;
};

// What the bench keeps per stream. The feeder's fields and the worker's sit on separate cache
// lines: the worker writes its counter on every frame.
struct alignas(64) StreamContext {
  // --- feeder thread only ---
  std::size_t audio_pos = 0;
  std::uint64_t samples_accepted = 0;
  std::int64_t phase_ns = 0;     // realtime: offset of this stream's frames within the 32 ms period
  std::int64_t next_due_ns = 0;  // realtime: when the next frame is due
  bool started = false;
  // Push time of frame k at [k % kPushTimes], written before the push that completes it. The
  // push publishes it (the ring's release store) before the worker can run the frame, and the entry
  // is rewritten only 64 frames later, long after the frame was consumed (a ring holds 8).
  std::array<std::int64_t, kPushTimes> frame_push_ns{};

  // --- the stream's worker only (on_events), and its count for the backlog sampler ---
  alignas(64) std::uint64_t frames_done = 0;
  std::atomic<std::uint64_t> frames_done_shared{0};
  LatencyRecorder* recorder = nullptr;

  // Runs on the worker after each frame, right where the engine records added_latency. Frames
  // arrive in order and each makes exactly one call (no stream is flushed during a phase), so the
  // k-th call is frame k.
  void on_frame_done() noexcept {
    const std::uint64_t k = frames_done++;
    frames_done_shared.store(k + 1, std::memory_order_relaxed);
    const std::int64_t pushed = frame_push_ns[k % kPushTimes];
    if (pushed >= recorder->window_start_ns.load(std::memory_order_relaxed) &&
        pushed < recorder->window_end_ns.load(std::memory_order_relaxed)) {
      recorder->histogram.record(static_cast<double>(now_ns() - pushed) / 1000.0);
    }
  }
};

// The one thread that feeds every stream.
class Feeder {
 public:
  Feeder(std::vector<Stream>& streams, std::vector<StreamContext>& contexts, const LoopedAudio& audio,
         bool realtime)
      : streams_(streams), contexts_(contexts), audio_(audio), realtime_(realtime) {}
  ~Feeder() { stop(); }
  Feeder(const Feeder&) = delete;
  Feeder& operator=(const Feeder&) = delete;

  // Streams [0, n) are open and may be fed (the handles are written before this, release).
  void set_active(int n) noexcept { active_.store(n, std::memory_order_release); }
  void start() {
    epoch_ns_ = now_ns();
    thread_ = std::thread([this] { realtime_ ? run_realtime() : run_fast(); });
  }
  void stop() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
  }
  // Whole frames the streams have accepted so far.
  std::uint64_t frames_fed() const noexcept { return frames_fed_.load(std::memory_order_relaxed); }
  // CPU time the feeder thread has used, seconds.
  double cpu_s() {
    clockid_t id{};
    timespec ts{};
    if (!thread_.joinable() || pthread_getcpuclockid(thread_.native_handle(), &id) != 0 ||
        clock_gettime(id, &ts) != 0) {
      return 0.0;
    }
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  }

 private:
  // Pushes `num_frames` frames of the stream's audio, stamping the frames this push completes.
  void push_frames(Stream& stream, StreamContext& c, std::size_t num_frames) {
    const std::size_t n = num_frames * kFrameSamples;
    const std::uint64_t first = c.samples_accepted / kFrameSamples;
    const std::uint64_t end = (c.samples_accepted + n) / kFrameSamples;
    const std::int64_t t = now_ns();
    for (std::uint64_t f = first; f < end; ++f) c.frame_push_ns[f % kPushTimes] = t;
    const std::size_t accepted = stream.push(std::span(audio_.samples.data() + c.audio_pos, n));
    c.samples_accepted += accepted;
    // A real-time source cannot wait: what was refused is lost and the audio moves on.
    c.audio_pos = (c.audio_pos + (realtime_ ? n : accepted)) % audio_.length;
    frames_fed_.fetch_add(c.samples_accepted / kFrameSamples - first, std::memory_order_relaxed);
  }

  // As fast as the engine takes it: each stream gets whole frames up to writable(), so nothing
  // is refused. The pause between passes adapts so that rings stay at least half full without
  // spinning a core the workers need (on a 2-core machine the feeder competes with them).
  void run_fast() {
    auto pause = std::chrono::microseconds(200);
    while (!stop_.load(std::memory_order_relaxed)) {
      const int active = active_.load(std::memory_order_acquire);
      std::size_t most_free = 0;
      for (int i = 0; i < active; ++i) {
        Stream& s = streams_[static_cast<std::size_t>(i)];
        const std::size_t frames = std::min(s.writable() / kFrameSamples, kMaxFramesPerPush);
        most_free = std::max(most_free, frames);
        if (frames > 0) push_frames(s, contexts_[static_cast<std::size_t>(i)], frames);
      }
      if (most_free >= kMaxFramesPerPush / 2) {
        pause = std::max(pause / 2, std::chrono::microseconds(20));
      } else if (most_free <= 2) {
        pause = std::min(pause * 3 / 2, std::chrono::microseconds(2000));
      }
      std::this_thread::sleep_for(pause);
    }
  }

  // Paced: stream i gets one frame every 32 ms at its own phase. The thread wakes for the next
  // due frame, but at most once a millisecond (as a server's network thread takes what arrived
  // since its last wake-up): waking for every frame cost 0.12 of a core at 500 streams against
  // 0.05, taken from the workers on a 2-core machine. Each frame is stamped when it is pushed, so
  // the wake-up granularity does not count as engine latency.
  void run_realtime() {
    constexpr std::int64_t kMinSleepNs = 1'000'000;
    while (!stop_.load(std::memory_order_relaxed)) {
      const int active = active_.load(std::memory_order_acquire);
      const std::int64_t now = now_ns();
      std::int64_t next = now + kFramePeriodNs;
      for (int i = 0; i < active; ++i) {
        StreamContext& c = contexts_[static_cast<std::size_t>(i)];
        if (!c.started) {  // its first frame: the first period of its phase from now on
          c.started = true;
          const std::int64_t since = now - epoch_ns_ - c.phase_ns;
          const std::int64_t k = since <= 0 ? 0 : (since + kFramePeriodNs - 1) / kFramePeriodNs;
          c.next_due_ns = epoch_ns_ + c.phase_ns + k * kFramePeriodNs;
        }
        // Catch up on frames this thread was late for (as a network burst would deliver them),
        // but after a long stall start afresh rather than flood.
        for (int burst = 0; c.next_due_ns <= now && burst < 4; ++burst) {
          push_frames(streams_[static_cast<std::size_t>(i)], c, 1);
          c.next_due_ns += kFramePeriodNs;
        }
        if (c.next_due_ns <= now) c.next_due_ns = now + kFramePeriodNs;
        next = std::min(next, c.next_due_ns);
      }
      const std::int64_t wake = std::max(next, now + kMinSleepNs);
      std::this_thread::sleep_until(Clock::time_point(std::chrono::nanoseconds(wake)));
    }
  }

  std::vector<Stream>& streams_;
  std::vector<StreamContext>& contexts_;
  const LoopedAudio& audio_;
  const bool realtime_;
  std::int64_t epoch_ns_ = 0;
  std::atomic<int> active_{0};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> frames_fed_{0};
  std::thread thread_;
};

struct Snapshot {
  EngineStats stats;
  std::uint64_t frames_fed = 0;
  double process_cpu_s = 0;
  double machine_cpu_s = 0;
  double feeder_cpu_s = 0;
  Clock::time_point at;
};

}  // namespace

EnginePhaseResult run_engine_phase(const EnginePhaseSpec& spec, const LoopedAudio& audio) {
  if (spec.num_streams < 1) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{} phase: needs at least one stream", spec.name));
  }
  const auto num_streams = static_cast<std::size_t>(spec.num_streams);
  EngineConfig config = spec.engine;
  config.max_streams = std::max(config.max_streams, spec.num_streams);
  // The bench opens streams while the engine is loaded on purpose; it counts overload events
  // instead of being refused.
  config.admission_control = false;

  // Owners before what depends on them: the workers call into the contexts until the engine is
  // gone, and the feeder uses the streams until it is stopped.
  LatencyRecorder recorder;
  std::vector<StreamContext> contexts(num_streams);
  Engine engine(config);
  EnginePhaseResult result;
  result.num_streams = spec.num_streams;
  result.num_workers = engine.num_workers();
  result.realtime = spec.realtime;
  result.rss_before_streams_bytes = resident_bytes();
  std::vector<Stream> streams(num_streams);
  Feeder feeder(streams, contexts, audio, spec.realtime);

  // With the RSS measurement the streams open in two parts. Paced, they are halves whose phases
  // interleave, so that each half alone is spread evenly over the 32 ms too. Fast, the first part
  // is large enough for full batches (max_batch streams per worker): otherwise ORT's working set,
  // which grows with the batch, would count as the second part's (measured: max batch 64 with
  // 200 streams gave 30 KiB per stream against 21).
  std::size_t first_part = spec.measure_rss && num_streams >= 2 ? num_streams / 2 : num_streams;
  if (first_part < num_streams && !spec.realtime) {
    const std::size_t full = static_cast<std::size_t>(engine.config().models.at(0).max_batch) *
                             static_cast<std::size_t>(result.num_workers);
    first_part = std::max(first_part, std::min(full, num_streams - num_streams / 4));
  }
  for (std::size_t i = 0; i < num_streams; ++i) {
    StreamContext& c = contexts[i];
    c.recorder = &recorder;
    c.audio_pos = audio.offset_for(i, num_streams);
    const std::size_t place = i < first_part ? (first_part == num_streams ? i : 2 * i) : 2 * (i - first_part) + 1;
    c.phase_ns = static_cast<std::int64_t>(place % num_streams) * kFramePeriodNs / static_cast<std::int64_t>(num_streams);
  }
  auto open = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      StreamConfig sc;
      StreamContext* c = &contexts[i];
      sc.on_events = [c] { c->on_frame_done(); };
      streams[i] = engine.open_stream(sc);
    }
    feeder.set_active(static_cast<int>(to));
  };

  // Polls every open stream's events each tick (so no event ring fills) and, when asked, samples
  // the backlog: frames accepted but not yet run.
  bool counting = false;
  auto run_for = [&](double seconds, std::size_t open_streams) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    Event events[32];
    while (Clock::now() < deadline) {
      std::this_thread::sleep_for(std::min<Clock::duration>(kTick, deadline - Clock::now()));
      for (std::size_t i = 0; i < open_streams; ++i) {
        for (std::size_t n; (n = streams[i].poll(events)) > 0;) {
          if (!counting) continue;
          for (std::size_t e = 0; e < n; ++e) result.speech_segments += events[e].type == EventType::kSpeechEnd;
        }
      }
      if (counting) {
        const std::uint64_t fed = feeder.frames_fed();
        std::uint64_t done = 0;
        for (std::size_t i = 0; i < open_streams; ++i) done += contexts[i].frames_done_shared.load(std::memory_order_relaxed);
        result.backlog_frames_max = std::max<std::uint64_t>(result.backlog_frames_max, fed > done ? fed - done : 0);
      }
    }
  };
  auto snapshot = [&] {
    Snapshot s;
    s.at = Clock::now();
    s.stats = engine.stats();
    s.frames_fed = feeder.frames_fed();
    s.process_cpu_s = process_cpu_s();
    s.machine_cpu_s = machine_busy_cpu_s();
    s.feeder_cpu_s = feeder.cpu_s();
    return s;
  };

  if (first_part < num_streams) {
    open(0, first_part);
    feeder.start();
    run_for(0.5, first_part);
    const long rss_half = resident_bytes();
    open(first_part, num_streams);
    run_for(0.5, num_streams);
    const long rss_all = resident_bytes();
    result.rss_per_stream_kib =
        static_cast<double>(rss_all - rss_half) / 1024.0 / static_cast<double>(num_streams - first_part);
  } else {
    open(0, num_streams);
    feeder.start();
  }
  run_for(spec.warmup_s, num_streams);
  result.rss_after_streams_bytes = resident_bytes();
  if (spec.measure_rss && !result.rss_per_stream_kib) {  // one stream: no slope, the plain delta
    result.rss_per_stream_kib =
        static_cast<double>(result.rss_after_streams_bytes - result.rss_before_streams_bytes) / 1024.0;
  }

  const Snapshot s0 = snapshot();
  recorder.window_start_ns.store(now_ns(), std::memory_order_relaxed);
  counting = true;
  run_for(spec.measure_s, num_streams);
  recorder.window_end_ns.store(now_ns(), std::memory_order_relaxed);
  counting = false;
  const Snapshot s1 = snapshot();
  feeder.stop();

  const double wall_s = std::chrono::duration<double>(s1.at - s0.at).count();
  // The engine's one model (the bench's config has only the VAD).
  const EngineStats& a = s0.stats;
  const EngineStats& b = s1.stats;
  const ModelStats& va = a.models.at(0);
  const ModelStats& vb = b.models.at(0);
  result.measured_s = wall_s;
  result.frames_fed = s1.frames_fed - s0.frames_fed;
  result.frames_processed = vb.items - va.items;
  result.frames_per_s = static_cast<double>(result.frames_processed) / wall_s;
  result.streams_per_core = result.frames_per_s / kFramesPerStreamSecond / result.num_workers;
  result.batches = vb.runs - va.runs;
  result.mean_batch = result.batches ? static_cast<double>(result.frames_processed) / static_cast<double>(result.batches) : 0.0;
  result.batch_size_counts.resize(vb.batch_size_counts.size());
  for (std::size_t i = 0; i < vb.batch_size_counts.size(); ++i) {
    result.batch_size_counts[i] = vb.batch_size_counts[i] - (i < va.batch_size_counts.size() ? va.batch_size_counts[i] : 0);
  }
  const double inference_us = vb.inference.sum_us() - va.inference.sum_us();
  result.inference_us_per_batch = result.batches ? inference_us / static_cast<double>(result.batches) : 0.0;
  result.inference_us_per_frame =
      result.frames_processed ? inference_us / static_cast<double>(result.frames_processed) : 0.0;
  result.added_latency = recorder.histogram;
  result.added_latency_engine = vb.latency;
  result.queue_delay_engine = vb.queue_delay;
  result.inference_engine = vb.inference;
  result.backlog_frames_end = s1.frames_fed > vb.items ? s1.frames_fed - vb.items : 0;
  result.samples_rejected = b.samples_rejected - a.samples_rejected;
  result.overload_events = b.overload_events - a.overload_events;
  result.events_dropped = b.events_dropped - a.events_dropped;
  result.run_errors = vb.run_errors - va.run_errors;
  result.kept_up = result.samples_rejected == 0 && result.backlog_frames_end <= num_streams;
  result.process_cpu_cores = (s1.process_cpu_s - s0.process_cpu_s) / wall_s;
  result.feeder_cpu_cores = (s1.feeder_cpu_s - s0.feeder_cpu_s) / wall_s;
  result.other_cpu_cores =
      std::max(0.0, (s1.machine_cpu_s - s0.machine_cpu_s) / wall_s - result.process_cpu_cores);
  return result;
}

}  // namespace brisvox::bench
