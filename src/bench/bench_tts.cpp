#include "bench/bench_tts.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <fstream>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "bench/bench_runner.h"
#include "brisvox/engine/engine.h"
#include "brisvox/error.h"
#include "brisvox/runtime/runtime_info.h"

namespace brisvox::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

Json summary(const std::vector<double>& v) {
  const double mean = v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return {{"count", v.size()}, {"p50", quantile(v, 0.5)}, {"p90", quantile(v, 0.9)}, {"p99", quantile(v, 0.99)},
          {"mean", mean}, {"max", v.empty() ? 0.0 : *std::max_element(v.begin(), v.end())}};
}

// One reply, as the client saw it.
struct Reply {
  double first_audio_ms = 0;  // speak() -> first audio
  double whole_ms = 0;        // speak() -> kTtsEnd
  double audio_s = 0;
  bool gap = false;           // a later sentence came after the audio before it would have played
  Clock::time_point first_at;  // when the first audio came
};

// How the clients of a phase pace their replies.
enum class Pacing {
  kClosedLoop,    // the next reply as soon as the previous one was received whole
  kBurst,         // every client's next reply at the same moment (a barrier)
  kConversation,  // the next reply once the previous one has played, after the caller's turn
};
// The caller's turn between two replies in a conversation.
constexpr double kCallerTurnS = 1.0;

// Speaks `text` and waits for its end. Throws Error when it fails.
Reply speak_one(Speech& s, const std::string& text) {
  Reply r;
  const auto t0 = Clock::now();
  const std::uint32_t id = s.speak(text);
  std::optional<Clock::time_point> first;
  double queued_audio_s = 0;  // audio received so far, in seconds
  Event events[16];
  while (true) {
    s.wait_events(std::chrono::seconds(60));
    const auto now = Clock::now();
    const std::size_t n = s.poll(events);
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      if (e.speech.utterance_id != id) continue;
      if (e.type == EventType::kTtsAudio) {
        const std::vector<float> audio = s.read_audio_payload(e);
        if (!first) {
          first = now;
          r.first_at = now;
          r.first_audio_ms = ms_between(t0, now);
        } else if (ms_between(*first, now) / 1000.0 > queued_audio_s) {
          r.gap = true;  // playback from the first audio on would have run dry before this piece
        }
        queued_audio_s += static_cast<double>(audio.size()) / s.sample_rate_hz();
      } else if (e.type == EventType::kTtsEnd) {
        r.whole_ms = ms_between(t0, now);
        r.audio_s = queued_audio_s;
        return r;
      } else if (e.type == EventType::kError || e.type == EventType::kTtsCancelled) {
        throw Error(e.type == EventType::kError ? e.error_code : ErrorCode::kInternal,
                    fmt::format("the benchmark's utterance failed: {}", s.last_error()));
      }
    }
  }
}

struct ClientsResult {
  std::vector<Reply> replies;
  double wall_s = 0;
  double process_cpu_s = 0;
  double machine_busy_s = 0;
};

// `clients` threads, each with its own session, each speaking texts_for(client) one after another,
// paced as `pacing` says. In a conversation, client c starts c / clients of a turn (`turn_s`: a
// reply's audio and the caller's turn) after the first, as independent callers would.
template <typename TextsFor>
ClientsResult run_clients(Engine& engine, const SpeechConfig& session, int clients, TextsFor&& texts_for,
                          Pacing pacing = Pacing::kClosedLoop, double turn_s = 0) {
  const bool burst = pacing == Pacing::kBurst;
  std::vector<Speech> sessions;
  for (int c = 0; c < clients; ++c) sessions.push_back(engine.open_speech(session));
  std::mutex mu;
  ClientsResult out;
  std::optional<Error> failure;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::barrier round(clients);
  std::vector<std::thread> threads;
  const double cpu0 = process_cpu_s();
  const double busy0 = machine_busy_cpu_s();
  Clock::time_point t0;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      const std::vector<std::string> texts = texts_for(c);
      ++ready;
      while (!go.load()) std::this_thread::yield();
      std::vector<Reply> mine;
      bool failed = false;
      if (pacing == Pacing::kConversation) {
        std::this_thread::sleep_for(std::chrono::duration<double>(turn_s * c / clients));
      }
      for (const std::string& t : texts) {
        if (burst) round.arrive_and_wait();
        if (failed) continue;  // stays in step with the others' barriers
        if (pacing == Pacing::kConversation && !mine.empty()) {  // the reply plays, then the caller speaks
          const Reply& prev = mine.back();
          std::this_thread::sleep_until(prev.first_at + std::chrono::duration_cast<Clock::duration>(
                                                            std::chrono::duration<double>(prev.audio_s + kCallerTurnS)));
        }
        try {
          mine.push_back(speak_one(sessions[static_cast<std::size_t>(c)], t));
        } catch (const Error& e) {
          failed = true;
          std::lock_guard lock(mu);
          if (!failure) failure = e;
        }
      }
      std::lock_guard lock(mu);
      out.replies.insert(out.replies.end(), mine.begin(), mine.end());
    });
  }
  while (ready.load() < clients) std::this_thread::yield();
  t0 = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  out.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  out.process_cpu_s = process_cpu_s() - cpu0;
  out.machine_busy_s = machine_busy_cpu_s() - busy0;
  if (failure) throw *failure;
  return out;
}

Json clients_json(const ClientsResult& r, int workers) {
  std::vector<double> first, whole;
  double audio_s = 0;
  std::size_t gaps = 0;
  for (const Reply& x : r.replies) {
    first.push_back(x.first_audio_ms);
    whole.push_back(x.whole_ms);
    audio_s += x.audio_s;
    gaps += x.gap ? 1 : 0;
  }
  const double x_rt = r.wall_s > 0 ? audio_s / r.wall_s : 0.0;
  return {{"replies", r.replies.size()},
          {"first_audio_ms", summary(first)},
          {"whole_reply_ms", summary(whole)},
          {"replies_with_a_playback_gap", gaps},
          {"audio_s", audio_s},
          {"wall_s", r.wall_s},
          {"x_realtime", x_rt},
          {"x_realtime_per_core", x_rt / workers},
          {"process_cpu_cores", r.wall_s > 0 ? r.process_cpu_s / r.wall_s : 0.0},
          {"machine_busy_cores", r.wall_s > 0 ? r.machine_busy_s / r.wall_s : 0.0}};
}

std::vector<std::string> read_corpus(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot open the TTS corpus '{}'", path));
  std::vector<std::string> texts;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) texts.push_back(line);
  }
  if (texts.empty()) throw Error(ErrorCode::kInvalidArgument, fmt::format("the TTS corpus '{}' has no text", path));
  return texts;
}

}  // namespace

Json run_tts_phase(const TtsBenchSpec& spec, int cores) {
  if (spec.concurrency < 1 || spec.requests_per_client < 1) {
    throw Error(ErrorCode::kInvalidArgument, "--tts-concurrency and --tts-requests must be at least 1");
  }
  EngineConfig ec;
  ec.models = {ModelSpec::piper_tts(spec.voice)};
  ec.models[0].num_workers = spec.workers;
  ec.admission_control = false;
  Engine engine(ec);
  const int workers = engine.config().model("tts").num_workers;
  Json out;
  out["voice"] = engine.config().model("tts").path;
  out["workers"] = workers;
  out["cores"] = cores;
  out["reply"] = spec.reply;
  out["fast_start"] = spec.fast_start;
  SpeechConfig session;
  session.fast_start = spec.fast_start;

  // Warm-up: each worker's first runs size ONNX Runtime's arena (not counted).
  run_clients(engine, session, workers, [&](int) { return std::vector<std::string>(2, spec.reply); });

  const ClientsResult alone =
      run_clients(engine, session, 1, [&](int) { return std::vector<std::string>(static_cast<std::size_t>(spec.requests_per_client), spec.reply); });
  out["alone"] = clients_json(alone, 1);

  const ModelStats before = engine.stats().model("tts");
  const ClientsResult loaded = run_clients(engine, session, spec.concurrency, [&](int) {
    return std::vector<std::string>(static_cast<std::size_t>(spec.requests_per_client), spec.reply);
  });
  out["concurrent"] = clients_json(loaded, workers);
  out["concurrent"]["clients"] = spec.concurrency;
  const ModelStats after = engine.stats().model("tts");
  out["concurrent"]["model_runs"] = after.runs - before.runs;

  // Bursts: every client speaks at the same moment, as callers who all finish their turn at once.
  const ClientsResult bursts = run_clients(
      engine, session, spec.concurrency,
      [&](int) { return std::vector<std::string>(static_cast<std::size_t>(spec.requests_per_client), spec.reply); },
      Pacing::kBurst);
  out["burst"] = clients_json(bursts, workers);
  out["burst"]["clients"] = spec.concurrency;

  // Conversations: each client plays its reply, then the caller speaks for kCallerTurnS before
  // the next one; the clients start spread over one such turn (voice agents on the phone).
  double reply_audio_s = 0;
  for (const Reply& r : alone.replies) reply_audio_s += r.audio_s / static_cast<double>(alone.replies.size());
  const ClientsResult talks = run_clients(
      engine, session, spec.concurrency,
      [&](int) { return std::vector<std::string>(static_cast<std::size_t>(spec.requests_per_client), spec.reply); },
      Pacing::kConversation, reply_audio_s + kCallerTurnS);
  out["conversation"] = clients_json(talks, workers);
  out["conversation"]["clients"] = spec.concurrency;
  out["conversation"]["caller_turn_s"] = kCallerTurnS;

  if (!spec.corpus.empty()) {
    const std::vector<std::string> texts = read_corpus(spec.corpus);
    const std::uint64_t moved_before = engine.stats().model("tts").jobs_moved;
    const ClientsResult t = run_clients(engine, session, spec.concurrency, [&](int c) {
      std::vector<std::string> mine;
      for (std::size_t i = static_cast<std::size_t>(c); i < texts.size(); i += static_cast<std::size_t>(spec.concurrency)) {
        mine.push_back(texts[i]);
      }
      return mine;
    });
    Json j = clients_json(t, workers);
    out["throughput"] = {{"corpus", spec.corpus},
                         {"texts", texts.size()},
                         {"audio_s", j["audio_s"]},
                         {"wall_s", j["wall_s"]},
                         {"x_realtime", j["x_realtime"]},
                         {"x_realtime_per_core", j["x_realtime_per_core"]},
                         {"process_cpu_cores", j["process_cpu_cores"]},
                         {"machine_busy_cores", j["machine_busy_cores"]},
                         {"sessions_moved", engine.stats().model("tts").jobs_moved - moved_before}};
  }
  return out;
}

}  // namespace brisvox::bench
