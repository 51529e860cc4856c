#include "cli/file_runner.h"

#include <fmt/format.h>

#include <deque>
#include <map>
#include <memory>
#include <cmath>

#include "brisvox/models/vad/silero_vad.h"

namespace brisvox::cli {
namespace {

struct Job {
  std::size_t index = 0;
  Audio audio;
  Stream stream;
  std::size_t pushed = 0;
  bool flushed = false;
  bool ended = false;
  double end_s = 0;  // the stream's length at the model rate, from kEndOfStream
  FileResult result;
};

// Moves the stream's pending events into the job's result. Returns true if any were read.
bool drain_events(Job& job) {
  Event events[32];
  bool any = false;
  for (std::size_t n; (n = job.stream.poll(events)) > 0;) {
    any = true;
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      switch (e.type) {
        case EventType::kSpeechEnd: job.result.segments_s.emplace_back(e.start_s, e.end_s); break;
        case EventType::kVadProbability: job.result.frame_probs.push_back(e.probability); break;
        case EventType::kError:
          if (!job.result.error) job.result.error = Error(e.error_code, job.stream.last_error());
          break;
        case EventType::kEndOfStream:
          job.ended = true;
          job.end_s = e.end_s;
          break;
        case EventType::kTurnEnd: job.result.turns.push_back({e.start_s, e.end_s, e.probability, e.turn_reason}); break;
        case EventType::kTurnIncomplete: ++job.result.turn_incomplete_events; break;
        case EventType::kSpeechStart:
        case EventType::kOverload: break;  // a file feeder pushes only what fits: no refusals
      }
    }
  }
  return any;
}

}  // namespace

void run_files(Engine& engine, const std::vector<std::string>& files, const FileRunnerOptions& options,
               const std::function<void(const FileResult&)>& on_result) {
  std::deque<std::unique_ptr<Job>> active;
  std::map<std::size_t, FileResult> finished;  // waiting for earlier files before being reported
  std::size_t next_file = 0;
  std::size_t next_report = 0;
  auto report_ready = [&] {
    for (auto it = finished.find(next_report); it != finished.end(); it = finished.find(next_report)) {
      on_result(it->second);
      finished.erase(it);
      ++next_report;
    }
  };
  while (next_file < files.size() || !active.empty()) {
    while (active.size() < options.max_open && next_file < files.size()) {
      auto job = std::make_unique<Job>();
      job->index = next_file;
      job->result.file = files[next_file++];
      try {
        job->audio = load_audio(job->result.file, options.read);
        job->result.input_sample_rate_hz = job->audio.sample_rate_hz;
        job->result.duration_s = job->audio.duration_s();
        StreamConfig sc = options.stream;
        sc.sample_rate_hz = job->audio.sample_rate_hz;
        job->stream = engine.open_stream(sc);
        active.push_back(std::move(job));
      } catch (const Error& e) {
        job->result.error = e;
        finished.emplace(job->index, std::move(job->result));
      }
    }
    bool progress = false;
    for (auto& job : active) {
      const auto& samples = job->audio.samples;
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
      if (options.stream.emit_probabilities && !job.result.error) {
        // Every model frame must have its probability: a reader too slow for the event ring
        // would lose some, and that must not pass silently.
        const int model_rate = options.stream.model_rate_hz != 0 ? options.stream.model_rate_hz
                                                                 : (job.audio.sample_rate_hz == 8000 ? 8000 : 16000);
        const auto total = static_cast<std::size_t>(std::llround(job.end_s * model_rate));
        const auto chunk = static_cast<std::size_t>(silero_chunk_samples(model_rate));
        const std::size_t expected = (total + chunk - 1) / chunk;
        if (job.result.frame_probs.size() != expected) {
          job.result.error = Error(ErrorCode::kInternal,
                                   fmt::format("{} of {} frame probabilities arrived (events were dropped)",
                                               job.result.frame_probs.size(), expected));
        }
      }
      finished.emplace(job.index, std::move(job.result));
      it = active.erase(it);
    }
    report_ready();
    if (!progress && !active.empty()) active.front()->stream.wait_events(std::chrono::microseconds(500));
  }
  report_ready();
}

}  // namespace brisvox::cli
