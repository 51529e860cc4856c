#include "server/metrics.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "server/histogram_series.h"

namespace brisvox::server {
namespace {

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <typename T>
void sample(std::string& out, std::string_view name, std::string_view type, std::string_view help, T value) {
  header(out, name, type, help);
  fmt::format_to(std::back_inserter(out), "{} {}\n", name, value);
}

// The cumulative bounds of the engine's latency histograms, from 10 us to 1 s.
constexpr double kLatencyBoundsS[] = {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                      5e-3, 1e-2,   2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1};

// A latency histogram's series; `labels` is empty or `model="vad",` (with its trailing comma).
void seconds_series(std::string& out, std::string_view name, std::string_view labels, const LatencyHistogram& h) {
  histogram_series(out, name, labels, h, kLatencyBoundsS);
}

// Runs per batch size: buckets at 1, 2, 4, ... and max_batch itself.
void batch_series(std::string& out, std::string_view labels, const ModelStats& m) {
  constexpr std::string_view name = "brisvox_batch_size";
  const std::size_t max_batch = m.batch_size_counts.empty() ? 0 : m.batch_size_counts.size() - 1;
  std::vector<std::size_t> bounds;
  for (std::size_t b = 1; b < max_batch; b *= 2) bounds.push_back(b);
  if (max_batch > 0) bounds.push_back(max_batch);
  std::uint64_t cumulative = 0, sum = 0;
  std::size_t next = 1;
  for (std::size_t bound : bounds) {
    for (; next <= bound; ++next) {
      cumulative += m.batch_size_counts[next];
      sum += m.batch_size_counts[next] * next;
    }
    fmt::format_to(std::back_inserter(out), "{}_bucket{{{}le=\"{}\"}} {}\n", name, labels, bound, cumulative);
  }
  const std::string plain = fmt::format("{{{}}}", labels.substr(0, labels.size() - 1));
  fmt::format_to(std::back_inserter(out), "{}_bucket{{{}le=\"+Inf\"}} {}\n{}_sum{} {}\n{}_count{} {}\n", name, labels,
                 cumulative, name, plain, sum, name, plain, cumulative);
}

// Label values escape backslash, quote and newline.
std::string label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void audio_accounting(std::string& out, const EngineStats& st, const ServerMetrics& server) {
  sample(out, "brisvox_audio_samples_received_total", "counter",
         "Audio samples decoded from accepted audio (WebSocket messages, POST bodies), at each stream's input rate.",
         server.audio_samples_received.load());
  sample(out, "brisvox_audio_samples_processed_total", "counter",
         "Received samples analysed by the model, counted when their stream closes (flush padding excluded).",
         st.samples_analysed);
  constexpr std::string_view name = "brisvox_audio_samples_rejected_total";
  header(out, name, "counter",
         "Received samples that will never be analysed, by reason; received = processed + rejected once all streams "
         "are closed.");
  const auto line = [&](std::string_view reason, std::uint64_t n) {
    fmt::format_to(std::back_inserter(out), "{}{{reason=\"{}\"}} {}\n", name, reason, n);
  };
  for (std::size_t i = 0; i < server.audio_samples_lost.size(); ++i) {
    line(to_string(static_cast<AudioLoss>(i)), server.audio_samples_lost[i].load());
  }
  line("stream_closed", st.samples_discarded);
  line("model_error", st.samples_failed);
}

}  // namespace

std::string_view to_string(AudioLoss loss) {
  switch (loss) {
    case AudioLoss::kReset: return "reset";
    case AudioLoss::kDisconnected: return "disconnected";
    case AudioLoss::kError: return "error";
    case AudioLoss::kShutdown: return "shutdown";
    case AudioLoss::kRequestFailed: return "request_failed";
    case AudioLoss::kCount: break;
  }
  return "unknown";
}

void ServerMetrics::count_error(std::string_view code) {
  std::lock_guard lock(mu_);
  ++errors_[std::string(code)];
}

std::map<std::string, std::uint64_t> ServerMetrics::errors() const {
  std::lock_guard lock(mu_);
  return errors_;
}

void ServerMetrics::count_http_response(std::string_view handler, int status) {
  std::lock_guard lock(mu_);
  ++http_responses_[{std::string(handler), status}];
}

std::map<std::pair<std::string, int>, std::uint64_t> ServerMetrics::http_responses() const {
  std::lock_guard lock(mu_);
  return http_responses_;
}

namespace {

// One metric with a series per model: `value(m)` of each.
template <typename F>
void per_model(std::string& out, const EngineStats& st, std::string_view name, std::string_view type,
               std::string_view help, F value) {
  header(out, name, type, help);
  for (const ModelStats& m : st.models) {
    fmt::format_to(std::back_inserter(out), "{}{{model=\"{}\"}} {}\n", name, label_value(m.name), value(m));
  }
}

void model_metrics(std::string& out, const EngineStats& st) {
  header(out, "brisvox_model_workers", "gauge", "Inference threads of each model of the registry.");
  for (const ModelStats& m : st.models) {
    fmt::format_to(std::back_inserter(out), "brisvox_model_workers{{model=\"{}\",family=\"{}\"}} {}\n",
                   label_value(m.name), to_string(m.family), m.num_workers);
  }
  per_model(out, st, "brisvox_batches_total", "counter", "Model runs.", [](const ModelStats& m) { return m.runs; });
  per_model(out, st, "brisvox_model_inputs_total", "counter", "What the runs ran: frames (VAD), analyses (turn).",
            [](const ModelStats& m) { return m.items; });
  per_model(out, st, "brisvox_run_errors_total", "counter", "Failed model runs (timeouts included).",
            [](const ModelStats& m) { return m.run_errors; });
  per_model(out, st, "brisvox_run_timeouts_total", "counter", "Model runs cancelled after run_timeout_ms.",
            [](const ModelStats& m) { return m.run_timeouts; });
  header(out, "brisvox_speech_sessions", "gauge", "Speech sessions open now, by voice (calls' included).");
  for (const ModelStats& m : st.models) {
    if (m.family == ModelFamily::kPiperTts) {
      fmt::format_to(std::back_inserter(out), "brisvox_speech_sessions{{model=\"{}\"}} {}\n", label_value(m.name),
                     m.sessions_open);
    }
  }
  per_model(out, st, "brisvox_jobs_moved_total", "counter",
            "Jobs a worker out of work took from a busy worker's queue (speech sessions between sentences).",
            [](const ModelStats& m) { return m.jobs_moved; });
  header(out, "brisvox_batch_size", "histogram", "Inputs per model run.");
  for (const ModelStats& m : st.models) batch_series(out, fmt::format("model=\"{}\",", label_value(m.name)), m);
  const auto histograms = [&](std::string_view name, std::string_view help, LatencyHistogram ModelStats::*field) {
    header(out, name, "histogram", help);
    for (const ModelStats& m : st.models) {
      seconds_series(out, name, fmt::format("model=\"{}\",", label_value(m.name)), m.*field);
    }
  };
  histograms("brisvox_queue_delay_seconds",
             "From an input being ready (a frame's last sample, a request) to the start of its model run.",
             &ModelStats::queue_delay);
  histograms("brisvox_inference_seconds", "One model run (pack, run, unpack).", &ModelStats::inference);
  histograms("brisvox_model_latency_seconds",
             "From an input being ready to its result delivered (a frame's events, a verdict back to its stream).",
             &ModelStats::latency);
  // Smart Turn models only: the other families have no turn events.
  constexpr std::string_view turn = "brisvox_turn_latency_seconds";
  header(out, turn, "histogram",
         "From the frame that asked for an end-of-turn analysis to the turn_end / turn_incomplete event it decided.");
  for (const ModelStats& m : st.models) {
    if (m.family == ModelFamily::kSmartTurn) {
      seconds_series(out, turn, fmt::format("model=\"{}\",", label_value(m.name)), m.turn_latency);
    }
  }
}

}  // namespace

std::string render_prometheus(const EngineStats& st, const ServerMetrics& server, long rss_bytes) {
  std::string out;
  out.reserve(8192);
  sample(out, "brisvox_active_streams", "gauge", "Engine streams open now.", st.active_streams);
  sample(out, "brisvox_websocket_sessions_active", "gauge", "WebSocket sessions open now.",
         server.websocket_sessions_active.load());
  sample(out, "brisvox_websocket_sessions_total", "counter", "WebSocket sessions accepted.",
         server.websocket_sessions_total.load());
  sample(out, "brisvox_streams_opened_total", "counter", "Engine streams opened.", st.streams_opened);
  sample(out, "brisvox_realtime_deltas_revised_total", "counter",
         "Realtime transcription items whose completed transcript revised words their deltas had sent.",
         server.realtime_deltas_revised.load());
  sample(out, "brisvox_streams_refused_total", "counter",
         "Streams refused: at capacity, over the latency budget, or shutting down.",
         st.streams_refused + server.streams_refused.load());
  sample(out, "brisvox_workers", "gauge", "Inference threads, every model together.", st.num_workers());
  sample(out, "brisvox_frames_processed_total", "counter", "VAD frames analysed.", st.frames_processed());
  // The VAD models' latency is the engine's added latency: a frame's last sample to its events.
  LatencyHistogram added;
  for (const ModelStats& m : st.models) {
    if (m.family == ModelFamily::kSileroVad) added.merge(m.latency);
  }
  header(out, "brisvox_added_latency_seconds", "histogram", "From a frame's last sample to its events being ready.");
  seconds_series(out, "brisvox_added_latency_seconds", "", added);
  model_metrics(out, st);
  sample(out, "brisvox_samples_rejected_total", "counter",
         "Samples an engine stream refused at first (the server holds them back and retries).", st.samples_rejected);
  header(out, "brisvox_events_dropped_total", "counter",
         "Per-frame probability events not delivered: by the engine (event ring full) or the server (slow reader).");
  fmt::format_to(std::back_inserter(out), "brisvox_events_dropped_total{{stage=\"engine\"}} {}\n", st.events_dropped);
  fmt::format_to(std::back_inserter(out), "brisvox_events_dropped_total{{stage=\"send_queue\"}} {}\n",
                 server.messages_dropped.load());
  sample(out, "brisvox_overload_events_total", "counter", "Overload events raised by the engine.", st.overload_events);
  sample(out, "brisvox_payloads_dropped_total", "counter",
         "Payloads (segment audio) that did not fit their stream's channel: the reader fell behind.",
         st.payloads_dropped);
  header(out, "brisvox_errors_total", "counter", "Errors reported to clients, by code.");
  for (const auto& [code, n] : server.errors()) {
    fmt::format_to(std::back_inserter(out), "brisvox_errors_total{{code=\"{}\"}} {}\n", label_value(code), n);
  }
  sample(out, "brisvox_audio_received_bytes_total", "counter", "Audio bytes received on WebSocket streams.",
         server.audio_bytes_received.load());
  audio_accounting(out, st, server);
  sample(out, "brisvox_http_requests_total", "counter", "HTTP requests read (upgrades included).",
         server.http_requests.load());
  if (rss_bytes > 0) {
    sample(out, "brisvox_process_resident_memory_bytes", "gauge", "Resident set size of the server process.",
           rss_bytes);
  }
  return out;
}

namespace {

int open_fds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count - 1;  // the directory stream's own descriptor
}

// utime + stime (fields 14, 15) and starttime (field 22, in clock ticks after boot) of
// /proc/self/stat; the command name (field 2) may hold spaces, so fields are counted after ')'.
bool process_times(double& cpu_s, double& start_since_boot_s) {
  std::ifstream f("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0, start = 0;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
    if (i == 22) start = std::stoull(field);
  }
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  cpu_s = static_cast<double>(utime + stime) / tick;
  start_since_boot_s = static_cast<double>(start) / tick;
  return true;
}

double boot_time_s() {
  std::ifstream f("/proc/stat");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return 0;
}

}  // namespace

std::string render_process_and_limits(const LimitGauges& limits, const ServerMetrics& server) {
  std::string out;
  header(out, "brisvox_http_responses_total", "counter", "HTTP answers sent, by handler and status code.");
  for (const auto& [key, n] : server.http_responses()) {
    fmt::format_to(std::back_inserter(out), "brisvox_http_responses_total{{handler=\"{}\",code=\"{}\"}} {}\n",
                   label_value(key.first), key.second, n);
  }
  double cpu_s = 0, start_s = 0;
  if (process_times(cpu_s, start_s)) {
    sample(out, "process_cpu_seconds_total", "counter", "User and system CPU time of the process, seconds.", cpu_s);
    if (const double btime = boot_time_s(); btime > 0) {
      sample(out, "process_start_time_seconds", "gauge", "Start time of the process, seconds since the Unix epoch.",
             btime + start_s);
    }
  }
  if (const int fds = open_fds(); fds >= 0) {
    sample(out, "process_open_fds", "gauge", "Open file descriptors.", fds);
  }
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    sample(out, "process_max_fds", "gauge", "The open-file limit (soft).", static_cast<unsigned long long>(lim.rlim_cur));
  }
  header(out, "brisvox_build_info", "gauge", "The version of this server (always 1).");
  fmt::format_to(std::back_inserter(out), "brisvox_build_info{{version=\"{}\"}} 1\n", label_value(BRISVOX_VERSION));
  sample(out, "brisvox_http_connections_open", "gauge", "HTTP connections open now (upgraded streams not counted).",
         limits.connections);
  sample(out, "brisvox_http_connections_max", "gauge", "--max-connections (after fitting the open-file limit).",
         limits.max_connections);
  sample(out, "brisvox_uploads_in_progress", "gauge", "POST uploads being read, queued or run now.", limits.uploads);
  sample(out, "brisvox_uploads_max", "gauge", "--max-uploads.", limits.max_uploads);
  return out;
}

}  // namespace brisvox::server
