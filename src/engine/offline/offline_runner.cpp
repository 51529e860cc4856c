#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>

#include "brisvox/audio/audio_reader.h"
#include "brisvox/engine/offline.h"
#include "brisvox/models/vad/silero_rates.h"

namespace brisvox {
namespace {

// Frames decoded per block: 4096 (0.26 s at 16 kHz). A job holds one block per channel plus its
// interleaved block, so 64 files in flight hold ~2 MiB of audio whatever their length.
constexpr std::size_t kBlockFrames = 4096;

// One stream of a recording: the recording (mono or a channel's mean), or one of its channels.
struct Lane {
  Stream stream;
  std::vector<float> block;   // decoded, not yet all pushed
  std::size_t block_at = 0;   // pushed up to here
  std::size_t pushed = 0;
  bool flushed = false;
  bool ended = false;
  double end_s = 0;  // the stream's length at the model rate, from kEndOfStream
  OfflineResult result;
};

struct Job {
  std::size_t index = 0;
  std::optional<AudioReader> reader;  // a file or encoded bytes, decoded as fed
  const Audio* audio = nullptr;       // or the input's own decoded audio (not copied)
  std::size_t audio_at = 0;
  int channel = -1;                   // read_mono's channel for a single lane
  int sample_rate_hz = 0;
  std::optional<std::uint64_t> num_frames;  // declared, for progress
  std::uint64_t frames_read = 0;
  std::vector<float> interleaved;     // a split recording's block, all channels
  bool read_done = false;
  std::vector<Lane> lanes;

  bool ended() const {
    return std::all_of(lanes.begin(), lanes.end(), [](const Lane& l) { return l.ended; });
  }
};

// Moves the stream's pending events into the job's result. Returns true if any were read.
bool drain_events(Lane& job) {
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
        case EventType::kTurnIncomplete:
          ++job.result.turn_incomplete_events;
          job.result.incomplete_turns.push_back({e.start_s, e.end_s, e.probability, TurnAction::Reason::kModel});
          break;
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
        case EventType::kTranscriptPartial:  // a live stream's; each segment's transcript follows
          job.stream.read_transcript(e);
          break;
        case EventType::kSpeechStart:
        case EventType::kOverload: break;  // only what fits is pushed: no refusals
        case EventType::kTtsAudio:
        case EventType::kTtsEnd:
        case EventType::kTtsCancelled:
        case EventType::kTtsInterrupted:
        case EventType::kTtsMark:
        case EventType::kBargeIn: break;  // speech sessions' and calls' events: never on a stream
      }
    }
  }
  return any;
}

// Every model frame must have its probability: a reader too slow for the event ring would lose
// some, and that must not pass silently.
void check_frame_probs(Lane& job, int sample_rate_hz, const StreamConfig& stream) {
  if (!stream.vad.emit_probabilities || job.result.error) return;
  const int model_rate = silero_model_rate_hz(sample_rate_hz, stream.vad.model_rate_hz);
  const auto total = static_cast<std::size_t>(std::llround(job.end_s * model_rate));
  const auto chunk = static_cast<std::size_t>(silero_chunk_samples(model_rate));
  const std::size_t expected = (total + chunk - 1) / chunk;
  if (job.result.frame_probs.size() != expected) {
    job.result.error = Error(ErrorCode::kInternal, fmt::format("{} of {} frame probabilities arrived (events were dropped)",
                                                               job.result.frame_probs.size(), expected));
  }
}

// Decodes the job's next block into its lanes' blocks, once every lane has pushed the last one.
// Returns true if anything was read; a decoding error ends every lane with it.
bool refill(Job& job) {
  if (job.read_done) return false;
  for (const Lane& lane : job.lanes) {
    if (!lane.ended && lane.block_at < lane.block.size()) return false;  // an ended lane takes no more
  }
  std::size_t n = 0;
  try {
    if (job.audio != nullptr) {
      const auto& samples = job.audio->samples;
      n = std::min(kBlockFrames, samples.size() - job.audio_at);
      Lane& lane = job.lanes.front();
      lane.block.assign(samples.begin() + static_cast<std::ptrdiff_t>(job.audio_at),
                        samples.begin() + static_cast<std::ptrdiff_t>(job.audio_at + n));
      job.audio_at += n;
    } else if (job.lanes.size() == 1) {
      Lane& lane = job.lanes.front();
      lane.block.resize(kBlockFrames);
      n = job.reader->read_mono(lane.block, job.channel);
      lane.block.resize(n);
    } else {
      const std::size_t num_channels = job.lanes.size();
      job.interleaved.resize(kBlockFrames * num_channels);
      n = job.reader->read(job.interleaved);
      for (std::size_t c = 0; c < num_channels; ++c) {
        std::vector<float>& block = job.lanes[c].block;
        block.resize(n);
        for (std::size_t f = 0; f < n; ++f) block[f] = job.interleaved[f * num_channels + c];
      }
    }
  } catch (const Error& e) {
    for (Lane& lane : job.lanes) {
      lane.result.error = e;
      lane.ended = true;
    }
    job.read_done = true;
    return true;
  }
  for (Lane& lane : job.lanes) lane.block_at = 0;
  job.frames_read += n;
  if (n == 0) job.read_done = true;
  return true;
}

// Opens the input's reader and one stream per lane.
void open_job(Engine& engine, Job& job, const OfflineInput& input, const OfflineOptions& options,
              const StreamConfig& stream_config) {
  int num_lanes = 1;
  if (input.audio) {
    job.audio = &*input.audio;
    job.sample_rate_hz = job.audio->sample_rate_hz;
    job.num_frames = job.audio->samples.size();
    if (options.channel > 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("'{}' is mono audio: there is no channel {} (channels count from 0)", input.name,
                              options.channel));
    }
  } else {
    AudioReadOptions read = options.read;
    if (read.min_sample_rate_hz == 0) read.min_sample_rate_hz = StreamConfig::kMinSampleRateHz;
    job.reader = input.encoded.empty() ? AudioReader::open(input.name, read)
                                       : AudioReader::open_memory(input.encoded, input.name, read);
    job.sample_rate_hz = job.reader->sample_rate_hz();
    job.num_frames = job.reader->num_frames();
    const int num_channels = job.reader->num_channels();
    if (options.channel >= num_channels) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("audio file '{}' has {} channel{}: there is no channel {} (channels count from 0)",
                              input.name, num_channels, num_channels == 1 ? "" : "s", options.channel));
    }
    if (options.split_channels) num_lanes = num_channels;
    job.channel = options.channel;
  }
  StreamConfig sc = stream_config;
  sc.sample_rate_hz = job.sample_rate_hz;
  job.lanes.resize(static_cast<std::size_t>(num_lanes));
  for (int c = 0; c < num_lanes; ++c) {
    Lane& lane = job.lanes[static_cast<std::size_t>(c)];
    lane.result.file = input.name;
    lane.result.channel = options.split_channels ? c : options.channel;
    lane.result.input_sample_rate_hz = job.sample_rate_hz;
    if (job.num_frames) lane.result.duration_s = static_cast<double>(*job.num_frames) / job.sample_rate_hz;
    lane.stream = engine.open_stream(sc);
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
  // Waiting for earlier inputs before being reported: one result per lane.
  std::map<std::size_t, std::vector<OfflineResult>> finished;
  std::size_t next_input = 0;
  std::size_t next_report = 0;
  std::size_t num_done = 0;
  double seconds_done = 0;  // of finished inputs
  auto finish = [&](std::size_t index, std::vector<OfflineResult> results, double seconds) {
    finished.emplace(index, std::move(results));
    ++num_done;
    seconds_done += seconds;
  };
  auto report_ready = [&] {
    for (auto it = finished.find(next_report); it != finished.end(); it = finished.find(next_report)) {
      for (const OfflineResult& r : it->second) on_result(r);
      finished.erase(it);
      ++next_report;
    }
  };
  auto last_progress = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto report_progress = [&](bool force) {
    if (!options.on_progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_progress < std::chrono::milliseconds(100)) return;
    last_progress = now;
    OfflineProgress p;
    p.num_inputs = inputs.size();
    p.num_done = num_done;
    p.seconds_read = seconds_done;
    double share = static_cast<double>(num_done);
    for (const auto& job : active) {
      if (job->sample_rate_hz > 0) p.seconds_read += static_cast<double>(job->frames_read) / job->sample_rate_hz;
      if (job->num_frames && *job->num_frames > 0) {
        share += std::min(1.0, static_cast<double>(job->frames_read) / static_cast<double>(*job->num_frames));
      }
    }
    p.fraction = inputs.empty() ? 1.0 : share / static_cast<double>(inputs.size());
    options.on_progress(p);
  };
  auto set = [](const std::atomic<bool>* flag) { return flag != nullptr && flag->load(std::memory_order_relaxed); };
  while (next_input < inputs.size() || !active.empty()) {
    if (set(options.abort) || set(options.cancel)) {
      const char* why = set(options.abort) ? "shutting down" : "the caller went away";
      for (auto& job : active) {
        std::vector<OfflineResult> results;
        for (Lane& lane : job->lanes) {
          lane.result.error = Error(ErrorCode::kClosed, fmt::format("stopped before the end of the recording ({})", why));
          results.push_back(std::move(lane.result));
        }
        finish(job->index, std::move(results), 0);
      }
      active.clear();
      for (; next_input < inputs.size(); ++next_input) {
        OfflineResult r;
        r.file = inputs[next_input].name;
        r.error = Error(ErrorCode::kClosed, fmt::format("not started ({})", why));
        std::vector<OfflineResult> results;
        results.push_back(std::move(r));
        finish(next_input, std::move(results), 0);
      }
      break;
    }
    // max_open counts streams: a split recording takes one per channel.
    std::size_t num_streams = 0;
    for (const auto& job : active) num_streams += job->lanes.size();
    while (num_streams < max_open && next_input < inputs.size()) {
      const OfflineInput& input = inputs[next_input];
      auto job = std::make_unique<Job>();
      job->index = next_input++;
      try {
        open_job(engine, *job, input, options, stream_config);
        num_streams += job->lanes.size();
        active.push_back(std::move(job));
      } catch (const Error& e) {
        OfflineResult r;
        r.file = input.name;
        r.channel = options.channel;
        r.error = e;
        std::vector<OfflineResult> results;
        results.push_back(std::move(r));
        finish(job->index, std::move(results), 0);
      }
    }
    bool progress = false;
    for (auto& job : active) {
      progress |= refill(*job);
      bool all_pushed = job->read_done;
      for (Lane& lane : job->lanes) {
        if (lane.ended) continue;
        if (lane.block_at < lane.block.size()) {
          const std::size_t room = std::min(lane.block.size() - lane.block_at, lane.stream.writable());
          if (room > 0) {
            const std::size_t n = lane.stream.push(std::span(lane.block).subspan(lane.block_at, room));
            lane.block_at += n;
            lane.pushed += n;
            progress = true;
          }
          if (lane.block_at < lane.block.size()) all_pushed = false;
        }
      }
      for (Lane& lane : job->lanes) {
        if (all_pushed && !lane.flushed && !lane.ended) {
          lane.stream.flush();
          lane.flushed = true;
          progress = true;
        }
        progress |= drain_events(lane);
      }
    }
    for (auto it = active.begin(); it != active.end();) {
      Job& job = **it;
      if (!job.ended()) {
        ++it;
        continue;
      }
      std::vector<OfflineResult> results;
      for (Lane& lane : job.lanes) {
        check_frame_probs(lane, job.sample_rate_hz, stream_config);
        lane.result.samples_fed = lane.pushed;
        lane.result.samples_read = job.frames_read;
        if (job.read_done && !lane.result.error) {
          lane.result.duration_s = static_cast<double>(lane.result.samples_read) / job.sample_rate_hz;
        }
        results.push_back(std::move(lane.result));
      }
      const double seconds = static_cast<double>(job.frames_read) / std::max(job.sample_rate_hz, 1);
      finish(job.index, std::move(results), seconds);
      it = active.erase(it);  // closes the streams
    }
    report_ready();
    report_progress(false);
    if (!progress && !active.empty()) {
      Job& front = *active.front();
      for (Lane& lane : front.lanes) {
        if (!lane.ended) {
          lane.stream.wait_events(std::chrono::microseconds(500));
          break;
        }
      }
    }
  }
  report_ready();
  report_progress(true);
}

OfflineResult run_offline(Engine& engine, const OfflineInput& input, const OfflineOptions& options) {
  OfflineResult out;
  run_offline(engine, std::span(&input, 1), options, [&out](const OfflineResult& r) { out = r; });
  return out;
}

}  // namespace brisvox
