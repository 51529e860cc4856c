#include <fmt/format.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>

#include "brisvox/engine/offline.h"
#include "brisvox/models/vad/silero_rates.h"

namespace brisvox {
namespace {

struct Job {
  std::size_t index = 0;
  Audio loaded;                 // a file read here
  const Audio* audio = nullptr; // `loaded`, or the input's own audio (not copied)
  Stream stream;
  std::size_t pushed = 0;
  bool flushed = false;
  bool ended = false;
  double end_s = 0;  // the stream's length at the model rate, from kEndOfStream
  OfflineResult result;
};

// Moves the stream's pending events into the job's result. Returns true if any were read.
bool drain_events(Job& job) {
  Event events[32];
  bool any = false;
  for (std::size_t n; !job.ended && (n = job.stream.poll(events)) > 0;) {
    any = true;
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      switch (e.type) {
        case EventType::kSpeechEnd: job.result.segments_s.emplace_back(e.start_s, e.end_s); break;
        case EventType::kVadProbability: job.result.frame_probs.push_back(e.probability); break;
        case EventType::kError:
          // The recording's result is wrong from here on: end it with the first error.
          job.result.error = Error(e.error_code, job.stream.last_error());
          job.ended = true;
          return true;
        case EventType::kEndOfStream:
          job.ended = true;
          job.end_s = e.end_s;
          break;
        case EventType::kTurnEnd: job.result.turns.push_back({e.start_s, e.end_s, e.probability, e.turn_reason}); break;
        case EventType::kTurnIncomplete: ++job.result.turn_incomplete_events; break;
        case EventType::kTranscript: {
          std::optional<Transcript> t = job.stream.read_transcript(e);
          if (!t) {
            job.result.error = Error(ErrorCode::kInternal, "a transcript's payload was lost (the reader fell behind)");
            job.ended = true;
            return true;
          }
          job.result.transcripts.push_back({e.start_s, e.end_s, std::move(*t)});
          break;
        }
        case EventType::kSpeechStart:
        case EventType::kOverload: break;  // only what fits is pushed: no refusals
        case EventType::kTtsAudio:
        case EventType::kTtsEnd:
        case EventType::kTtsCancelled: break;  // speech sessions' events: never on a stream
      }
    }
  }
  return any;
}

// Every model frame must have its probability: a reader too slow for the event ring would lose
// some, and that must not pass silently.
void check_frame_probs(Job& job, const StreamConfig& stream) {
  if (!stream.vad.emit_probabilities || job.result.error) return;
  const int model_rate = silero_model_rate_hz(job.audio->sample_rate_hz, stream.vad.model_rate_hz);
  const auto total = static_cast<std::size_t>(std::llround(job.end_s * model_rate));
  const auto chunk = static_cast<std::size_t>(silero_chunk_samples(model_rate));
  const std::size_t expected = (total + chunk - 1) / chunk;
  if (job.result.frame_probs.size() != expected) {
    job.result.error = Error(ErrorCode::kInternal, fmt::format("{} of {} frame probabilities arrived (events were dropped)",
                                                               job.result.frame_probs.size(), expected));
  }
}

}  // namespace

void run_offline(Engine& engine, std::span<const OfflineInput> inputs, const OfflineOptions& options,
                 const std::function<void(const OfflineResult&)>& on_result) {
  StreamConfig stream_config = options.stream;
  // A recording's result must not depend on how fast its analyses run.
  if (stream_config.turn) stream_config.turn->wait_for_verdict = true;
  const std::size_t max_open = std::max<std::size_t>(options.max_open, 1);
  std::deque<std::unique_ptr<Job>> active;
  std::map<std::size_t, OfflineResult> finished;  // waiting for earlier inputs before being reported
  std::size_t next_input = 0;
  std::size_t next_report = 0;
  auto report_ready = [&] {
    for (auto it = finished.find(next_report); it != finished.end(); it = finished.find(next_report)) {
      on_result(it->second);
      finished.erase(it);
      ++next_report;
    }
  };
  auto aborted = [&] { return options.abort != nullptr && options.abort->load(std::memory_order_relaxed); };
  while (next_input < inputs.size() || !active.empty()) {
    if (aborted()) {
      for (auto& job : active) {
        job->result.error = Error(ErrorCode::kClosed, "stopped before the end of the recording (shutting down)");
        finished.emplace(job->index, std::move(job->result));
      }
      active.clear();
      for (; next_input < inputs.size(); ++next_input) {
        OfflineResult r;
        r.file = inputs[next_input].name;
        r.error = Error(ErrorCode::kClosed, "not started (shutting down)");
        finished.emplace(next_input, std::move(r));
      }
      break;
    }
    while (active.size() < max_open && next_input < inputs.size()) {
      const OfflineInput& input = inputs[next_input];
      auto job = std::make_unique<Job>();
      job->index = next_input++;
      job->result.file = input.name;
      try {
        if (input.audio) {
          job->audio = &*input.audio;
        } else {
          job->loaded = load_audio(input.name, options.read);
          job->audio = &job->loaded;
        }
        job->result.input_sample_rate_hz = job->audio->sample_rate_hz;
        job->result.duration_s = job->audio->duration_s();
        StreamConfig sc = stream_config;
        sc.sample_rate_hz = job->audio->sample_rate_hz;
        job->stream = engine.open_stream(sc);
        active.push_back(std::move(job));
      } catch (const Error& e) {
        job->result.error = e;
        finished.emplace(job->index, std::move(job->result));
      }
    }
    bool progress = false;
    for (auto& job : active) {
      const auto& samples = job->audio->samples;
      if (job->pushed < samples.size()) {
        const std::size_t room = std::min(samples.size() - job->pushed, job->stream.writable());
        if (room > 0) {
          job->pushed += job->stream.push(std::span(samples).subspan(job->pushed, room));
          progress = true;
        }
      } else if (!job->flushed) {
        job->stream.flush();
        job->flushed = true;
        progress = true;
      }
      progress |= drain_events(*job);
    }
    for (auto it = active.begin(); it != active.end();) {
      Job& job = **it;
      if (!job.ended) {
        ++it;
        continue;
      }
      check_frame_probs(job, stream_config);
      job.result.samples_fed = job.pushed;
      finished.emplace(job.index, std::move(job.result));
      it = active.erase(it);  // closes the stream
    }
    report_ready();
    if (!progress && !active.empty()) active.front()->stream.wait_events(std::chrono::microseconds(500));
  }
  report_ready();
}

OfflineResult run_offline(Engine& engine, const OfflineInput& input, const OfflineOptions& options) {
  OfflineResult out;
  run_offline(engine, std::span(&input, 1), options, [&out](const OfflineResult& r) { out = r; });
  return out;
}

}  // namespace brisvox
