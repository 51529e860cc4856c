#include "brisvox/engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "brisvox/error.h"
#include "brisvox/plural.h"
#include "engine/call/call_link.h"
#include "engine/call/call_state.h"
#include "engine/model_registry.h"
#include "engine/pipeline.h"
#include "engine/pool/run_watchdog.h"
#include "engine/speech/speech_model.h"
#include "engine/speech/speech_state.h"
#include "engine/stages/stt_stage.h"
#include "engine/stream/vad_pool.h"

namespace brisvox {

using engine::now_ns;
using engine::StreamState;

static_assert(sizeof(Event) == 48, "events are copied through a fixed ring per stream: keep them small");

std::string_view to_string(EventType type) noexcept {
  switch (type) {
    case EventType::kSpeechStart: return "speech_start";
    case EventType::kSpeechEnd: return "speech_end";
    case EventType::kVadProbability: return "vad";
    case EventType::kOverload: return "overload";
    case EventType::kError: return "error";
    case EventType::kEndOfStream: return "end_of_stream";
    case EventType::kTurnEnd: return "turn_end";
    case EventType::kTurnIncomplete: return "turn_incomplete";
    case EventType::kTranscript: return "transcript";
    case EventType::kTtsAudio: return "tts_audio";
    case EventType::kTtsEnd: return "tts_end";
    case EventType::kTtsCancelled: return "tts_cancelled";
    case EventType::kBargeIn: return "barge_in";
    case EventType::kTtsInterrupted: return "tts_interrupted";
    case EventType::kTtsMark: return "tts_mark";
    case EventType::kTranscriptPartial: return "transcript_partial";
  }
  return "unknown";
}

namespace {

int available_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

EngineConfig resolve(const EngineConfig& config) {
  config.validate();
  EngineConfig r = config;
  for (ModelSpec& m : r.models) m = m.resolved(available_cores(), config.run_timeout_ms);
  return r;
}

}  // namespace

struct Engine::Impl {
  explicit Impl(const EngineConfig& c)
      : config(resolve(c)),
        shared(static_cast<std::size_t>(config.max_streams), config.latency_budget_ms),
        models(config, shared) {}

  EngineConfig config;  // resolved
  engine::EngineShared shared;  // outlives the models: retired streams refer to nothing else
  engine::ModelRegistry models;
  // Cancels runs past run_timeout_ms (null when 0). Declared after what it watches, so that it is
  // stopped before them should the constructor throw; ~Engine stops it explicitly.
  std::unique_ptr<engine::RunWatchdog> watchdog;
  std::mutex open_mu;  // serialises open_stream's capacity check and attach
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<bool> draining{false};
  std::atomic<std::uint64_t> opened{0};
  std::atomic<std::uint64_t> refused{0};

  // open_stream() and open_call()'s stream: `config` validated; `barge_in` and `call` for a call's;
  // `admitted` for a session's next stream (no capacity or admission check).
  std::shared_ptr<StreamState> open_stream(StreamConfig config, const BargeInOptions* barge_in,
                                           std::shared_ptr<engine::CallLink> call, bool admitted = false);
  // open_speech() and open_call()'s speech: `config` validated; `wake` a call's shared wake-up.
  std::shared_ptr<engine::SpeechState> open_speech(const SpeechConfig& config, std::shared_ptr<engine::ReaderWake> wake);
};

Engine::Engine(const EngineConfig& config) : impl_(std::make_unique<Impl>(config)) {
  Impl& m = *impl_;
  // One watchdog for every model with a deadline (none when no model has one).
  if (std::any_of(m.config.models.begin(), m.config.models.end(), [](const ModelSpec& s) { return s.run_timeout_ms > 0; })) {
    m.watchdog = std::make_unique<engine::RunWatchdog>();
  }
  m.models.start(m.watchdog.get());
  if (m.watchdog) m.watchdog->start();
  for (const ModelSpec& spec : m.config.models) {
    detail::log(LogLevel::kInfo, "engine: model '{}' ({}) {}: {} workers, max batch {}, gather wait {} us, run timeout {} ms",
                spec.name, to_string(spec.family), spec.path, spec.num_workers, spec.max_batch, spec.max_gather_wait_us,
                spec.run_timeout_ms);
  }
  detail::log(LogLevel::kInfo, "engine: up to {}", count_of(m.config.max_streams, "stream"));
}

Engine::~Engine() {
  drain();
  // Request models first (after the drain nothing is in flight, and their deliveries need the VAD
  // workers alive), then the VAD workers. The watchdog keeps watching while the workers finish
  // (a run may still hang), and stops before they are freed.
  impl_->models.stop();
  if (impl_->watchdog) impl_->watchdog->stop();
}

const EngineConfig& Engine::config() const noexcept { return impl_->config; }
int Engine::num_workers() const noexcept { return impl_->models.num_workers(); }

Stream Engine::open_stream(const StreamConfig& requested) {
  requested.validate();
  return Stream(impl_->open_stream(requested, nullptr, nullptr));
}

Stream Engine::open_stream(const StreamConfig& requested, const Stream& continues) {
  if (!continues) {
    throw Error(ErrorCode::kInvalidArgument,
                "open_stream(config, continues): the stream it continues is closed; open a new stream with "
                "open_stream(config), which admission control may refuse");
  }
  requested.validate();
  return Stream(impl_->open_stream(requested, nullptr, nullptr, /*admitted=*/true));
}

std::shared_ptr<StreamState> Engine::Impl::open_stream(StreamConfig stream, const BargeInOptions* barge_in,
                                                       std::shared_ptr<engine::CallLink> call, bool admitted) {
  engine::VadPool* vad = models.vad_pool(stream.vad.model);
  if (vad == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("the stream's vad stage names model '{}', which this engine has no Silero VAD model "
                            "under (its models: {})",
                            stream.vad.model, models.describe()));
  }
  const int model_rate = silero_model_rate_hz(stream.sample_rate_hz, stream.vad.model_rate_hz);
  stream.vad.model_rate_hz = model_rate;  // what Stream::config() reports
  std::shared_ptr<engine::ReaderWake> wake = call ? call->wake : nullptr;
  std::vector<std::unique_ptr<engine::Stage>> stages =
      engine::make_stages(stream, model_rate, models, barge_in, std::move(call));
  std::lock_guard lock(open_mu);
  if (draining.load()) throw Error(ErrorCode::kClosed, "the engine is shutting down: no new streams");
  const int active = static_cast<int>(shared.streams.size());
  if (!admitted && active >= config.max_streams) {
    refused.fetch_add(1, std::memory_order_relaxed);
    throw Error(ErrorCode::kOverloaded, fmt::format("engine at capacity: {} of {} streams open (EngineConfig::max_streams)",
                                                    active, config.max_streams));
  }
  if (config.admission_control && !admitted) {
    const double p99 = vad->recent_p99_queue_delay_us(now_ns());
    if (p99 > config.latency_budget_ms * 1000.0) {
      refused.fetch_add(1, std::memory_order_relaxed);
      throw Error(ErrorCode::kOverloaded,
                  fmt::format("engine over its latency budget: queue delay p99 {:.1f} ms > {} ms over the last second; "
                              "refusing new streams ({} open)",
                              p99 / 1000.0, config.latency_budget_ms, active));
    }
  }
  const int worker = vad->least_loaded_worker();
  auto state =
      std::make_shared<StreamState>(next_id.fetch_add(1), stream, *vad, worker, std::move(stages), std::move(wake));
  vad->adapter(worker).attach();
  shared.streams.add(state);
  opened.fetch_add(1, std::memory_order_relaxed);
  return state;
}

std::shared_ptr<engine::SpeechState> Engine::Impl::open_speech(const SpeechConfig& speech,
                                                               std::shared_ptr<engine::ReaderWake> wake) {
  engine::SpeechModel* voice = models.speech_model(speech.model);
  if (voice == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("the speech session names voice '{}', but the engine has no Piper voice under that name (add "
                            "ModelSpec::piper_tts(VOICE) to EngineConfig::models; its models: {})",
                            speech.model, models.describe()));
  }
  if (draining.load()) throw Error(ErrorCode::kClosed, "the engine is shutting down: no new speech sessions");
  return voice->open(speech, next_id.fetch_add(1), std::move(wake));
}

Speech Engine::open_speech(const SpeechConfig& config) {
  config.validate();
  return Speech(impl_->open_speech(config, nullptr));
}

Call Engine::open_call(const CallConfig& requested) {
  requested.validate();
  CallConfig config = requested;
  config.listen.on_events = config.on_events;
  config.speak.on_events = config.on_events;
  // The call speaks at its own rate (the voice refuses a rate it cannot give).
  if (config.speak.sample_rate_hz == 0) config.speak.sample_rate_hz = config.listen.sample_rate_hz;
  // Pieces of about 100 ms: the playout clock hands speech out a piece at a time, so its lead is
  // kept to within one piece (two wait in the channel: the synthesis waits behind them).
  if (config.speak.payload_buffer_bytes == 0) {
    config.speak.payload_buffer_bytes = std::max(16384, 2 * config.speak.sample_rate_hz / 10 * static_cast<int>(sizeof(float)));
  }
  auto link = std::make_shared<engine::CallLink>();
  link->speech = impl_->open_speech(config.speak, link->wake);
  Speech speech(link->speech);  // closed again if the stream cannot be opened
  Stream stream(impl_->open_stream(config.listen, &config.barge_in, link));
  return Call(std::make_shared<engine::CallState>(std::move(stream), std::move(speech), std::move(link),
                                                  config.playout_lead_ms));
}

void Engine::drain() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.open_mu);
    m.draining.store(true);
  }
  for (const auto& p : m.models.pools()) {
    if (p->spec().family == ModelFamily::kPiperTts) static_cast<engine::SpeechModel*>(p.get())->refuse_new_work();
  }
  const std::vector<std::shared_ptr<StreamState>> all = m.shared.streams.snapshot();
  for (auto& s : all) {
    if (!s->flush_requested.load()) {
      s->flush_ns = now_ns();
      s->flush_requested.store(true, std::memory_order_release);
    }
    s->vad_pool->schedule(s.get());
  }
  for (auto& s : all) {
    while (!s->finished_flag.load(std::memory_order_acquire) && !s->close_requested.load()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

EngineStats Engine::stats() const {
  const Impl& m = *impl_;
  EngineStats st;
  st.streams_opened = m.opened.load();
  st.streams_refused = m.refused.load();
  const engine::StreamTotals& t = m.shared.totals;
  // The closed streams' totals and the open streams, read under the registry's lock: a stream
  // that closes meanwhile is counted once, in one or the other (StreamRegistry::remove).
  const auto read_totals = [&st, &t] {
    st.samples_analysed = t.samples_analysed.load();
    st.samples_failed = t.samples_failed.load();
    st.samples_discarded = t.samples_discarded.load();
    st.samples_rejected = t.samples_rejected.load();
    st.events_dropped = t.events_dropped.load();
    st.payloads_dropped = t.payloads_dropped.load();
    st.payloads_unread = t.payloads_unread.load();
    st.overload_events = t.overload_events.load();
  };
  m.shared.streams.visit(read_totals, [&st](const StreamState& s) {
    ++st.active_streams;
    st.samples_rejected += s.samples_rejected.load();
    st.events_dropped += s.output.events_dropped();
    st.payloads_dropped += s.output.payloads_dropped();
    st.payloads_unread += s.output.payloads_unread();
  });
  st.models = m.models.stats();
  return st;
}

}  // namespace brisvox
