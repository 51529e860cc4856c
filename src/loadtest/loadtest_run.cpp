// `brisvox loadtest`: many real-time WebSocket streams against `brisvox serve` on this machine;
// event latency, lost frames, errors, memory. The client is loadtest_runner.cpp.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "brisvox/error.h"
#include "brisvox/runtime/runtime_info.h"
#include "loadtest/loadtest_run.h"
#include "loadtest/loadtest_runner.h"
#include "loadtest/loadtest_support.h"

namespace brisvox::loadtest {
namespace {

using Json = nlohmann::ordered_json;



double mib(double bytes) { return std::round(bytes / (1024.0 * 1024.0) * 10.0) / 10.0; }
double r3(double x) { return std::round(x * 1000.0) / 1000.0; }

std::optional<Samples> scrape(const Target& target, bool quiet, const char* when) {
  std::string why;
  auto body = http_get(target, "/metrics", 5.0, &why);
  if (!body) {
    if (!quiet) std::fprintf(stderr, "brisvox loadtest: warning: no server metrics %s (%s)\n", when, why.c_str());
    return std::nullopt;
  }
  return parse_prometheus(*body);
}

Json rss_mib(const std::optional<Samples>& s) {
  if (!s) return nullptr;
  const auto v = sample_value(*s, "brisvox_process_resident_memory_bytes");
  return v ? Json(mib(*v)) : Json(nullptr);
}

// The server's own view of the run: counters as end - start, histograms as mean and p99 bucket.
Json server_view(const Samples& a, const Samples& b, const std::optional<Samples>& loaded) {
  const auto delta = [&](const std::string& key) -> Json {
    const auto e = sample_value(b, key);
    if (!e) return nullptr;
    return std::llround(*e - sample_value(a, key).value_or(0.0));
  };
  // The server's VAD model is "vad": its series carry that label.
  const std::string vad = "model=\"vad\"";
  const auto mean_ms = [&](const std::string& name, const std::string& labels = "") -> Json {
    const std::string suffix = labels.empty() ? "" : "{" + labels + "}";
    const double n = sample_value(b, name + "_count" + suffix).value_or(0) -
                     sample_value(a, name + "_count" + suffix).value_or(0);
    const double sum = sample_value(b, name + "_sum" + suffix).value_or(0) -
                       sample_value(a, name + "_sum" + suffix).value_or(0);
    return n > 0 ? Json(r3(sum / n * 1000.0)) : Json(nullptr);
  };
  const auto p99_le_ms = [&](const std::string& name, const std::string& labels = "") -> Json {
    const auto le = histogram_quantile_le(a, b, name, labels, 0.99);
    if (!le) return nullptr;
    return std::isinf(*le) ? Json("+Inf") : Json(r3(*le * 1000.0));
  };
  Json j;
  j["workers"] = std::llround(sample_value(b, "brisvox_workers").value_or(0));
  if (loaded) j["active_streams_under_load"] = std::llround(sample_value(*loaded, "brisvox_active_streams").value_or(0));
  j["websocket_sessions"] = delta("brisvox_websocket_sessions_total");
  j["frames_processed"] = delta("brisvox_frames_processed_total");
  const std::string batches_key = "brisvox_batches_total{" + vad + "}";
  j["batches"] = delta(batches_key);
  const double frames = sample_value(b, "brisvox_frames_processed_total").value_or(0) -
                        sample_value(a, "brisvox_frames_processed_total").value_or(0);
  const double batches = sample_value(b, batches_key).value_or(0) - sample_value(a, batches_key).value_or(0);
  j["mean_batch"] = batches > 0 ? Json(r3(frames / batches)) : Json(nullptr);
  j["added_latency_mean_ms"] = mean_ms("brisvox_added_latency_seconds");
  j["added_latency_p99_bucket_ms"] = p99_le_ms("brisvox_added_latency_seconds");
  j["queue_delay_mean_ms"] = mean_ms("brisvox_queue_delay_seconds", vad);
  j["queue_delay_p99_bucket_ms"] = p99_le_ms("brisvox_queue_delay_seconds", vad);
  j["inference_mean_ms"] = mean_ms("brisvox_inference_seconds", vad);
  j["samples_rejected"] = delta("brisvox_samples_rejected_total");
  j["events_dropped_engine"] = delta("brisvox_events_dropped_total{stage=\"engine\"}");
  j["events_dropped_send_queue"] = delta("brisvox_events_dropped_total{stage=\"send_queue\"}");
  j["overload_events"] = delta("brisvox_overload_events_total");
  j["run_errors"] = delta("brisvox_run_errors_total{" + vad + "}");
  j["streams_refused"] = delta("brisvox_streams_refused_total");
  Json errors = Json::object();
  const std::string prefix = "brisvox_errors_total{code=\"";
  for (auto it = b.lower_bound(prefix); it != b.end() && it->first.starts_with(prefix); ++it) {
    const double d = it->second - sample_value(a, it->first).value_or(0);
    if (d > 0) errors[it->first.substr(prefix.size(), it->first.size() - prefix.size() - 2)] = std::llround(d);
  }
  j["errors"] = std::move(errors);
  // Calls: where a reply's time goes (the turn's verdict, the transcript, the voice's queue and runs).
  if (sample_value(b, "brisvox_call_sessions_total").value_or(0) > sample_value(a, "brisvox_call_sessions_total").value_or(0)) {
    const std::string turn = "model=\"turn\"", stt = "model=\"stt\"", tts = "model=\"tts\"";
    j["call"] = {{"first_audio_mean_ms", mean_ms("brisvox_call_first_audio_seconds")},
                 {"first_audio_p99_bucket_ms", p99_le_ms("brisvox_call_first_audio_seconds")},
                 {"turn_latency_mean_ms", mean_ms("brisvox_turn_latency_seconds", turn)},
                 {"turn_latency_p99_bucket_ms", p99_le_ms("brisvox_turn_latency_seconds", turn)},
                 {"stt_latency_mean_ms", mean_ms("brisvox_model_latency_seconds", stt)},
                 {"tts_queue_delay_mean_ms", mean_ms("brisvox_queue_delay_seconds", tts)},
                 {"tts_queue_delay_p99_bucket_ms", p99_le_ms("brisvox_queue_delay_seconds", tts)},
                 {"tts_run_mean_ms", mean_ms("brisvox_inference_seconds", tts)},
                 {"barge_ins", delta("brisvox_call_barge_ins_total")}};
  }
  return j;
}

std::vector<std::string> split_args(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string a; in >> a;) out.push_back(a);
  return out;
}

}  // namespace

int run_loadtest(const LoadtestOptions& o) {
  if (o.spawn_server == !o.url.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "give --url ws://127.0.0.1:PORT or --spawn-server (one of them)");
  }
  if (!o.spawn_server && !o.server_args.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--server-args goes with --spawn-server");
  }
  raise_open_file_limit();
  const std::size_t chunk_samples = static_cast<std::size_t>(o.chunk_ms) * kRateHz / 1000;
  const LoopedPcm audio = LoopedPcm::load(o.wav.empty() ? std::string(BRISVOX_DEFAULT_SAMPLE_WAV) : o.wav, chunk_samples);

  std::unique_ptr<ServerProcess> server;
  Target target;
  if (o.spawn_server) {
    server = std::make_unique<ServerProcess>(split_args(o.server_args), 120.0);
    target = parse_target(fmt::format("ws://127.0.0.1:{}", server->port()));
  } else {
    target = parse_target(o.url);
  }
  // Calls: /v1/call with turns and transcripts (and the vad events every frame is timed by).
  if (o.calls && target.path.starts_with("/v1/stream?")) {
    target.path = "/v1/call?sample_rate=16000&encoding=pcm_s16le&events=vad,turn,transcript";
  }
  std::fprintf(stderr, "brisvox loadtest: %d streams x %g s (ramp %g s, %d ms chunks) -> ws://%s%s\n", o.streams,
               o.seconds, o.ramp_s, o.chunk_ms, target.host_header.c_str(), target.path.c_str());

  const auto metrics_start = scrape(target, false, "before the run");
  std::mutex loaded_mu;
  std::optional<Samples> metrics_loaded;
  LoadSpec spec;
  spec.target = target;
  spec.token = o.token;
  spec.streams = o.streams;
  spec.seconds = o.seconds;
  spec.chunk_ms = o.chunk_ms;
  spec.ramp_s = o.ramp_s;
  spec.grace_s = o.grace_s;
  spec.threads = o.threads;
  spec.replica_header = o.replica_header;
  spec.reconnect = o.reconnect;
  spec.split_at_s = o.split_at_s;
  spec.calls = o.calls;
  spec.reply = o.reply;
  // Under full load: the middle of [ramp, seconds] when every stream is sending.
  spec.probe_at_s = o.seconds > o.ramp_s ? (o.ramp_s + o.seconds) / 2 : o.seconds;
  spec.probe = [&] {
    auto s = scrape(target, true, "under load");
    std::lock_guard lock(loaded_mu);
    metrics_loaded = std::move(s);
  };

  const double load_start = load_average_1m();
  const double busy0 = machine_busy_cpu_s();
  const double cpu0 = self_cpu_s();
  const double server_cpu0 = server ? process_cpu_s(server->pid()) : 0.0;
  LoadResult r = run_load(spec, audio);
  const double client_cpu = self_cpu_s() - cpu0;
  const double server_cpu = server ? process_cpu_s(server->pid()) - server_cpu0 : 0.0;
  const double busy = machine_busy_cpu_s() - busy0;
  const double load_end = load_average_1m();
  const auto metrics_end = scrape(target, false, "after the run");
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const double client_rss_peak_mib = mib(static_cast<double>(usage.ru_maxrss) * 1024.0);
  int server_exit = 0;
  if (server) server_exit = server->stop(10.0);

  const bool p99_ok = o.max_p99_ms <= 0 || (r.latency.count() > 0 && r.latency.p99_us() / 1000.0 <= o.max_p99_ms);
  // Frames a reconnection sent again were not lost to the call.
  const std::uint64_t call_frames_lost = r.frames_lost - std::min(r.frames_lost, r.frames_resent);
  const bool ok = call_frames_lost == 0 && r.connection_failures == 0 && p99_ok;

  Json j;
  j["streams"] = r.streams;
  j["seconds"] = o.seconds;
  j["chunk_ms"] = o.chunk_ms;
  j["ramp_s"] = o.ramp_s;
  j["client_threads"] = o.threads;
  j["url"] = fmt::format("ws://{}{}", target.host_header, target.path);
  j["wav"] = audio.source;
  j["frames_sent"] = r.frames_sent;
  j["frames_received"] = r.frames_received;
  j["frames_lost"] = r.frames_lost;
  j["streams_with_loss"] = r.streams_with_loss;
  if (o.reconnect) {
    j["frames_resent"] = r.frames_resent;
    j["call_frames_lost"] = call_frames_lost;
    j["reconnects"] = r.reconnects;
    j["reconnects_failed"] = r.reconnects_failed;
    j["reconnect_failure_reasons"] = r.reconnect_failure_reasons;
  }
  j["frames_out_of_order"] = r.frames_out_of_order;
  j["latency_samples"] = r.latency.count();
  j["mean_event_latency_ms"] = r3(r.latency.mean_us() / 1000.0);
  j["p50_event_latency_ms"] = r3(r.latency.p50_us() / 1000.0);
  j["p99_event_latency_ms"] = r3(r.latency.p99_us() / 1000.0);
  j["p999_event_latency_ms"] = r3(r.latency.p999_us() / 1000.0);
  j["max_event_latency_ms"] = r3(r.latency.max_us() / 1000.0);
  if (r.frames_unmeasured > 0) j["frames_unmeasured"] = r.frames_unmeasured;
  const auto latency_json = [](const LatencyHistogram& h) {
    return Json{{"samples", h.count()}, {"p50_ms", r3(h.p50_us() / 1000.0)}, {"p99_ms", r3(h.p99_us() / 1000.0)},
                {"max_ms", r3(h.max_us() / 1000.0)}};
  };
  if (o.split_at_s > 0) {
    j["split_at_s"] = o.split_at_s;
    j["latency_before_split"] = latency_json(r.latency_before_split);
    j["latency_after_split"] = latency_json(r.latency_after_split);
  }
  if (!o.replica_header.empty()) {
    Json replicas = Json::object();
    for (const auto& [name, rs] : r.replicas) {
      Json& out = replicas[name.empty() ? "(no " + o.replica_header + " header)" : name];
      out = {{"connections", rs.connections},
             {"completed", rs.completed},
             {"closed_1001", rs.going_away},
             {"closed_1001_after_final_events", rs.going_away_final_events},
             {"cut_off", rs.cut_off},
             {"other_end", rs.other},
             {"reconnects_landed", rs.reconnects_landed},
             {"frames_sent", rs.frames_sent},
             {"frames_unanswered", rs.frames_unanswered},
             {"latency", latency_json(rs.latency)}};
      if (o.split_at_s > 0) out["latency_before_split"] = latency_json(rs.latency_before_split);
    }
    j["replicas"] = std::move(replicas);
  }
  if (o.calls) {
    j["calls"] = {{"turns", r.turns},
                  {"transcripts", r.transcripts},
                  {"replies_started", r.replies_started},
                  {"replies_done", r.replies_done},
                  {"replies_interrupted", r.replies_interrupted},
                  {"turn_end_to_first_audio", latency_json(r.first_audio)}};
  }
  j["errors"] = r.errors;
  j["overloads"] = r.overloads;
  j["overload_dropped_messages"] = r.overload_dropped_messages;
  j["speech_events"] = r.speech_events;
  j["connections_opened"] = r.opened;
  j["connections_completed"] = r.completed;
  j["connection_failures"] = r.connection_failures;
  j["connections_aborted"] = r.aborted;
  j["failure_reasons"] = r.failure_reasons;
  j["messages_sent"] = r.messages_sent;
  j["audio_sent_s"] = r3(r.audio_sent_s);
  j["send_rate_msgs_per_s"] = std::round(r.send_rate_msgs_per_s);
  j["target_msgs_per_s"] = std::round(r.target_msgs_per_s);
  j["send_realtime_factor_min"] = r3(r.realtime_factor_min);
  j["send_realtime_factor_mean"] = r3(r.realtime_factor_mean);
  j["send_lag_p99_ms"] = r3(r.send_lag.p99_us() / 1000.0);
  j["send_lag_max_ms"] = r3(r.send_lag.max_us() / 1000.0);
  j["server_rss_mib_start"] = rss_mib(metrics_start);
  j["server_rss_mib_loaded"] = rss_mib(metrics_loaded);
  j["server_rss_mib_end"] = rss_mib(metrics_end);
  j["client_rss_mib"] = client_rss_peak_mib;
  j["client_cpu_s"] = r3(client_cpu);
  j["client_cpu_cores"] = r3(client_cpu / r.wall_s);
  j["wall_s"] = r3(r.wall_s);
  if (metrics_start && metrics_end) j["server"] = server_view(*metrics_start, *metrics_end, metrics_loaded);
  if (server) {
    j["spawned_server"] = {{"cpu_s", r3(server_cpu)}, {"cpu_cores", r3(server_cpu / r.wall_s)}, {"exit_status", server_exit}};
  }
  const double other = busy - client_cpu - server_cpu;
  j["machine"] = {{"cores", std::thread::hardware_concurrency()},
                  {"load_1m_start", load_start},
                  {"load_1m_end", load_end},
                  {"busy_cores", r3(busy / r.wall_s)},
                  // other processes (without --spawn-server this includes the server): noise when large
                  {server ? "other_cores" : "other_cores_incl_server", r3(other / r.wall_s)}};
  j["ok"] = ok;

  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    const auto row = [](const char* name, const std::string& value) { std::printf("  %-28s %s\n", name, value.c_str()); };
    const auto num = [](const Json& v) { return v.is_null() ? std::string("-") : v.dump(); };
    std::printf("brisvox loadtest: %d streams x %g s against %s\n", r.streams, o.seconds, j["url"].get<std::string>().c_str());
    row("connections", fmt::format("{} opened, {} completed, {} failed ({} aborted)", r.opened, r.completed,
                                   r.connection_failures, r.aborted));
    for (const auto& [why, n] : r.failure_reasons) row("  failure", fmt::format("{} x {}", n, why));
    row("frames sent / received", fmt::format("{} / {}", r.frames_sent, r.frames_received));
    row("frames lost", fmt::format("{} ({} streams)", r.frames_lost, r.streams_with_loss));
    row("event latency ms", fmt::format("p50 {:.2f}  p99 {:.2f}  p99.9 {:.2f}  max {:.2f}  ({} frames after the ramp)",
                                        r.latency.p50_us() / 1000.0, r.latency.p99_us() / 1000.0,
                                        r.latency.p999_us() / 1000.0, r.latency.max_us() / 1000.0, r.latency.count()));
    if (o.calls) {
      row("calls", fmt::format("{} turns answered, {} transcripts; replies {} started, {} done, {} interrupted",
                               r.turns, r.transcripts, r.replies_started, r.replies_done, r.replies_interrupted));
      row("turn end -> first audio ms", fmt::format("p50 {:.1f}  p99 {:.1f}  max {:.1f}  ({} replies)",
                                                    r.first_audio.p50_us() / 1000.0, r.first_audio.p99_us() / 1000.0,
                                                    r.first_audio.max_us() / 1000.0, r.first_audio.count()));
    }
    row("errors", r.errors.empty() ? "none" : Json(r.errors).dump());
    row("overloads", fmt::format("{} ({} vad messages dropped)", r.overloads, r.overload_dropped_messages));
    row("send rate", fmt::format("{:.0f} msg/s of {:.0f} target, real-time factor min {:.3f}, lag p99 {:.2f} ms max "
                                 "{:.2f} ms",
                                 r.send_rate_msgs_per_s, r.target_msgs_per_s, r.realtime_factor_min,
                                 r.send_lag.p99_us() / 1000.0, r.send_lag.max_us() / 1000.0));
    row("server RSS MiB", fmt::format("start {}  under load {}  end {}", num(j["server_rss_mib_start"]),
                                      num(j["server_rss_mib_loaded"]), num(j["server_rss_mib_end"])));
    row("client", fmt::format("RSS {} MiB, CPU {:.2f} s ({:.2f} cores)", client_rss_peak_mib, client_cpu,
                              client_cpu / r.wall_s));
    if (j.contains("server")) {
      const Json& s = j["server"];
      row("server metrics", fmt::format("frames {}  mean batch {}  added latency mean {} ms p99 <= {} ms",
                                        num(s["frames_processed"]), num(s["mean_batch"]),
                                        num(s["added_latency_mean_ms"]), num(s["added_latency_p99_bucket_ms"])));
      row("", fmt::format("queue delay mean {} ms, inference mean {} ms, dropped {} + {}, refused {}",
                          num(s["queue_delay_mean_ms"]), num(s["inference_mean_ms"]), num(s["events_dropped_engine"]),
                          num(s["events_dropped_send_queue"]), num(s["streams_refused"])));
    }
    if (j.contains("server") && j["server"].contains("call")) {
      const Json& c = j["server"]["call"];
      row("server: call time", fmt::format("first audio mean {} ms (p99 <= {}), turn verdict mean {} ms, transcript "
                                           "mean {} ms, voice queue mean {} ms (p99 <= {}), sentence run mean {} ms",
                                           num(c["first_audio_mean_ms"]), num(c["first_audio_p99_bucket_ms"]),
                                           num(c["turn_latency_mean_ms"]), num(c["stt_latency_mean_ms"]),
                                           num(c["tts_queue_delay_mean_ms"]), num(c["tts_queue_delay_p99_bucket_ms"]),
                                           num(c["tts_run_mean_ms"])));
    }
    if (server) row("spawned server CPU", fmt::format("{:.2f} s ({:.2f} cores)", server_cpu, server_cpu / r.wall_s));
    row("machine", fmt::format("load {:.2f} -> {:.2f}, busy {:.2f} cores of {}", load_start, load_end, busy / r.wall_s,
                               std::thread::hardware_concurrency()));
    row("result", ok ? "ok" : (p99_ok ? "FAILED (frames lost or connections failed)" : "FAILED (p99 over --max-p99-ms)"));
  }
  return ok ? 0 : 1;
}

}  // namespace brisvox::loadtest
