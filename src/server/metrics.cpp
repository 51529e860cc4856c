#include "server/metrics.h"

#include <fmt/format.h>

#include <iterator>
#include <vector>

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

// An engine distribution (microseconds) as a histogram in seconds.
void seconds_histogram(std::string& out, std::string_view name, std::string_view help,
                       const EngineStats::Distribution& d) {
  header(out, name, "histogram", help);
  for (const auto& [bound_us, count] : d.buckets) {
    fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"{}\"}} {}\n", name, bound_us / 1e6, count);
  }
  fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, d.count, name,
                 d.sum_us / 1e6, name, d.count);
}

void batch_histogram(std::string& out, const EngineStats& st) {
  constexpr std::string_view name = "brisvox_batch_size";
  header(out, name, "histogram", "Frames per model run.");
  const std::size_t max_batch = st.batch_size_counts.empty() ? 0 : st.batch_size_counts.size() - 1;
  std::vector<std::size_t> bounds;  // 1, 2, 4, ... and max_batch itself
  for (std::size_t b = 1; b < max_batch; b *= 2) bounds.push_back(b);
  if (max_batch > 0) bounds.push_back(max_batch);
  std::uint64_t cumulative = 0, sum = 0;
  std::size_t next = 1;
  for (std::size_t bound : bounds) {
    for (; next <= bound; ++next) {
      cumulative += st.batch_size_counts[next];
      sum += st.batch_size_counts[next] * next;
    }
    fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"{}\"}} {}\n", name, bound, cumulative);
  }
  fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cumulative,
                 name, sum, name, cumulative);
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

std::string render_prometheus(const EngineStats& st, const ServerMetrics& server, long rss_bytes) {
  std::string out;
  out.reserve(8192);
  sample(out, "brisvox_active_streams", "gauge", "Engine streams open now.", st.active_streams);
  sample(out, "brisvox_websocket_sessions_active", "gauge", "WebSocket sessions open now.",
         server.websocket_sessions_active.load());
  sample(out, "brisvox_websocket_sessions_total", "counter", "WebSocket sessions accepted.",
         server.websocket_sessions_total.load());
  sample(out, "brisvox_streams_opened_total", "counter", "Engine streams opened.", st.streams_opened);
  sample(out, "brisvox_streams_refused_total", "counter",
         "Streams refused: at capacity, over the latency budget, or shutting down.",
         st.streams_refused + server.streams_refused.load());
  sample(out, "brisvox_workers", "gauge", "Inference threads.", st.num_workers);
  sample(out, "brisvox_frames_processed_total", "counter", "Model frames analysed.", st.frames_processed);
  sample(out, "brisvox_batches_total", "counter", "Model runs.", st.batches);
  batch_histogram(out, st);
  seconds_histogram(out, "brisvox_queue_delay_seconds", "From a frame's last sample to the start of its model run.",
                    st.queue_delay);
  seconds_histogram(out, "brisvox_inference_seconds", "One model run (pack, run, unpack).", st.inference);
  seconds_histogram(out, "brisvox_added_latency_seconds", "From a frame's last sample to its events being ready.",
                    st.added_latency);
  sample(out, "brisvox_samples_rejected_total", "counter",
         "Samples an engine stream refused at first (the server holds them back and retries).", st.samples_rejected);
  header(out, "brisvox_events_dropped_total", "counter",
         "Per-frame probability events not delivered: by the engine (event ring full) or the server (slow reader).");
  fmt::format_to(std::back_inserter(out), "brisvox_events_dropped_total{{stage=\"engine\"}} {}\n", st.events_dropped);
  fmt::format_to(std::back_inserter(out), "brisvox_events_dropped_total{{stage=\"send_queue\"}} {}\n",
                 server.messages_dropped.load());
  sample(out, "brisvox_overload_events_total", "counter", "Overload events raised by the engine.", st.overload_events);
  sample(out, "brisvox_run_errors_total", "counter", "Failed VAD model runs (timeouts included).", st.run_errors);
  sample(out, "brisvox_run_timeouts_total", "counter", "VAD runs cancelled after run_timeout_ms.", st.run_timeouts);
  sample(out, "brisvox_turn_errors_total", "counter", "Failed Smart Turn runs (timeouts included).", st.turn_errors);
  sample(out, "brisvox_turn_timeouts_total", "counter", "Smart Turn runs cancelled after run_timeout_ms.",
         st.turn_timeouts);
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

}  // namespace brisvox::server
