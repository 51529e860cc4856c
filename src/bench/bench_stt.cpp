#include "bench/bench_stt.h"

#include <fmt/format.h>

#include <chrono>
#include <deque>
#include <thread>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/error.h"
#include "brisvox/latency_histogram.h"
#include "brisvox/runtime/runtime_info.h"

namespace brisvox::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct StreamState {
  Stream stream;
  std::size_t audio_pos = 0;
  std::uint64_t pushed = 0;
  std::deque<Clock::time_point> ends;  // poll times of speech_end events without their transcript yet
  bool ended = false;
};

nlohmann::ordered_json model_json(const ModelStats& a, const ModelStats& b) {
  const std::uint64_t runs = b.runs - a.runs;
  const std::uint64_t items = b.items - a.items;
  nlohmann::ordered_json j;
  j["runs"] = runs;
  j["inputs"] = items;
  j["mean_batch"] = runs ? static_cast<double>(items) / static_cast<double>(runs) : 0.0;
  j["run_errors"] = b.run_errors - a.run_errors;
  j["inference_s"] = (b.inference.sum_us() - a.inference.sum_us()) / 1e6;
  nlohmann::ordered_json sizes = nlohmann::ordered_json::object();
  for (std::size_t s = 1; s < b.batch_size_counts.size(); ++s) {
    const std::uint64_t n = b.batch_size_counts[s] - (s < a.batch_size_counts.size() ? a.batch_size_counts[s] : 0);
    if (n > 0) sizes[std::to_string(s)] = n;
  }
  j["batch_size_counts"] = sizes;
  return j;
}

}  // namespace

nlohmann::ordered_json run_stt_phase(const SttPhaseSpec& spec, const LoopedAudio& audio) {
  if (spec.num_streams < 1) throw Error(ErrorCode::kInvalidArgument, "stt phase: needs at least one stream");
  EngineConfig ec;
  ec.models = {ModelSpec::silero_vad(spec.vad_model), ModelSpec::whisper(spec.stt_model)};
  ec.models[0].num_workers = spec.vad_workers;
  ec.models[1].num_workers = spec.stt_workers;
  ec.models[1].max_batch = spec.stt_max_batch;
  ec.models[1].session.intra_op_threads = spec.stt_threads;
  ec.max_streams = std::max(ec.max_streams, spec.num_streams);
  ec.admission_control = false;
  Engine engine(ec);

  std::vector<StreamState> streams(static_cast<std::size_t>(spec.num_streams));
  StreamConfig sc;
  sc.stt = SttOptions{};
  sc.stt->window = spec.window;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    streams[i].stream = engine.open_stream(sc);
    streams[i].audio_pos = audio.offset_for(i, streams.size());
  }

  LatencyHistogram latency;  // speech_end -> transcript, segments that ended in the window
  double speech_s = 0;       // audio of the segments transcribed in the window
  std::uint64_t transcripts = 0, empty_transcripts = 0;
  const Clock::time_point t0 = Clock::now();
  const double warmup_s = 5.0;
  const Clock::time_point window_start = t0 + std::chrono::milliseconds(static_cast<int>(warmup_s * 1000));
  const Clock::time_point window_end =
      window_start + std::chrono::milliseconds(static_cast<long long>(spec.seconds * 1000));
  EngineStats before;
  bool measuring = false, flushed = false;
  const double busy0 = machine_busy_cpu_s();
  const auto deadline = window_end + std::chrono::seconds(120);  // the last transcripts
  Event events[32];
  while (true) {
    const Clock::time_point now = Clock::now();
    if (!measuring && now >= window_start) {
      before = engine.stats();
      measuring = true;
    }
    if (now >= window_end && !flushed) {
      for (auto& s : streams) s.stream.flush();
      flushed = true;
    }
    if (now >= deadline) break;
    bool all_ended = flushed;
    for (auto& s : streams) {
      if (!flushed) {
        // Real time: every stream has had (now - t0) of audio.
        const auto due = static_cast<std::uint64_t>(seconds_between(t0, now) * 16000.0);
        while (s.pushed < due) {
          const std::size_t n = std::min<std::size_t>(std::min<std::uint64_t>(due - s.pushed, LoopedAudio::kTailSamples),
                                                       audio.length - s.audio_pos);
          const std::size_t taken = s.stream.push(std::span(audio.samples.data() + s.audio_pos, n));
          s.pushed += n;  // a live source cannot wait: what was refused is gone (counted by the engine)
          s.audio_pos = (s.audio_pos + n) % audio.length;
          if (taken < n) break;
        }
      }
      for (std::size_t n; (n = s.stream.poll(events)) > 0;) {
        const Clock::time_point at = Clock::now();
        for (std::size_t e = 0; e < n; ++e) {
          const Event& ev = events[e];
          if (ev.type == EventType::kSpeechEnd) s.ends.push_back(at);
          if (ev.type == EventType::kEndOfStream) s.ended = true;
          if (ev.type != EventType::kTranscript) continue;
          const std::optional<Transcript> t = s.stream.read_transcript(ev);
          const Clock::time_point ended_at = s.ends.empty() ? at : s.ends.front();
          if (!s.ends.empty()) s.ends.pop_front();
          if (ended_at < window_start || ended_at >= window_end) continue;
          latency.record(std::chrono::duration<double, std::micro>(at - ended_at).count());
          speech_s += ev.end_s - ev.start_s;
          ++transcripts;
          if (!t || t->text.empty()) ++empty_transcripts;
        }
      }
      all_ended &= s.ended;
    }
    if (all_ended) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const EngineStats after = engine.stats();
  const double wall_s = spec.seconds;
  const double busy_cores = (machine_busy_cpu_s() - busy0) / seconds_between(t0, Clock::now());
  nlohmann::ordered_json j;
  j["streams"] = spec.num_streams;
  j["model"] = engine.config().model("stt").path;
  j["window"] = to_string(spec.window);
  j["stt_workers"] = spec.stt_workers;
  j["stt_threads"] = spec.stt_threads;
  j["stt_max_batch"] = spec.stt_max_batch;
  j["seconds"] = wall_s;
  j["transcripts"] = transcripts;
  j["empty_transcripts"] = empty_transcripts;
  j["speech_s"] = speech_s;
  // Speech transcribed per wall second of the window (the streams produce it in real time: under
  // the compute limit this equals the speech the streams say, above it the backlog grows).
  j["speech_s_per_s"] = speech_s / wall_s;
  j["transcript_latency_ms"] = {{"count", latency.count()},      {"p50", latency.p50_us() / 1000.0},
                                {"p90", latency.p90_us() / 1000.0}, {"p99", latency.p99_us() / 1000.0},
                                {"max", latency.max_us() / 1000.0}};
  j["whisper"] = model_json(before.model("stt"), after.model("stt"));
  const double inference_s = j["whisper"]["inference_s"].get<double>();
  j["whisper_compute_s_per_speech_s"] = speech_s > 0 ? inference_s / speech_s : 0.0;
  j["machine_busy_cores"] = busy_cores;
  j["samples_rejected"] = after.samples_rejected - before.samples_rejected;
  return j;
}

}  // namespace brisvox::bench
