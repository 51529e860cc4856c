// brisvox.Engine, brisvox.Stream, brisvox.Event: the engine's streams for Python.
//
// Threads. Every call that can wait (push, finish, waiting for events, close) releases the GIL, so
// that many Python threads (one per Pipecat call) share the engine's workers. A stream may be used
// by one producer thread (push, finish) and one consumer thread (poll, wait, iteration) at once, as
// the engine allows; close() may come from any thread at any time: a shared_mutex holds it off
// while another call is inside the engine, and every call after it raises brisvox.ClosedError.
// Waiting is done in slices of kWaitSliceMs so that Ctrl-C (KeyboardInterrupt) is seen promptly.
#include <fmt/format.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "bindings.h"
#include "brisvox/engine/engine.h"
#include "brisvox/error.h"
#include "loop_notifier.h"
#include "samples.h"
#include "stream_options.h"

namespace brisvox::python {
namespace {

constexpr int kWaitSliceMs = 50;

// An event as Python sees it: the engine's record plus the message of an ERROR event.
struct PyEvent {
  Event event;
  std::string message;
};

struct PyEngine {
  std::unique_ptr<Engine> engine;
};

class PyStream {
 public:
  // `hook`: the one the stream's on_events calls (Engine.open_stream).
  PyStream(Stream stream, int sample_rate_hz, std::shared_ptr<NotifyHook> hook)
      : stream_(std::move(stream)), sample_rate_hz_(sample_rate_hz), hook_(std::move(hook)) {}

  // brisvox/_aio.py: from now on the stream's events queue its token on `notifier` (an event
  // loop's); returns the token, the same for as long as the stream stays with that notifier.
  std::uint64_t notify_via(const std::shared_ptr<LoopNotifier>& notifier) {
    if (!hook_->attached_to(notifier.get())) {
      static std::atomic<std::uint64_t> next_token{1};
      hook_->attach(notifier, next_token.fetch_add(1, std::memory_order_relaxed));
    }
    return hook_->token();
  }

  int sample_rate() const { return sample_rate_hz_; }
  bool closed() const { return closed_; }
  bool ended() const { return ended_; }

  std::size_t push(nb::handle object) {
    Samples samples(object, "Stream.push");
    nb::gil_scoped_release nogil;
    std::shared_lock lock(lifetime_);
    return open("Stream.push").push(samples.floats());
  }

  std::size_t writable() {
    std::shared_lock lock(lifetime_);
    return open("Stream.writable").writable();
  }

  void finish() {
    nb::gil_scoped_release nogil;
    std::shared_lock lock(lifetime_);
    open("Stream.finish").flush();
  }

  // Up to max_events pending events; never waits.
  std::vector<PyEvent> poll(std::size_t max_events) {
    std::vector<PyEvent> out;
    {
      nb::gil_scoped_release nogil;
      std::shared_lock lock(lifetime_);
      Stream& s = open("Stream.poll");
      std::lock_guard consumer(consumer_);
      fill(s, max_events);
      while (!pending_.empty() && out.size() < max_events) {
        out.push_back(std::move(pending_.front()));
        pending_.pop_front();
      }
    }
    return out;
  }

  // The next event, waiting up to timeout_s (None: for ever); None on timeout or after the
  // END_OF_STREAM event was returned (ended() then says which).
  std::optional<PyEvent> next_event(std::optional<double> timeout_s) {
    if (timeout_s && !(*timeout_s >= 0)) {
      throw nb::value_error(fmt::format("Stream.next_event: timeout must be >= 0 seconds or None, got {}", *timeout_s)
                                .c_str());
    }
    const auto deadline = timeout_s ? std::optional(std::chrono::steady_clock::now() +
                                                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                        std::chrono::duration<double>(*timeout_s)))
                                    : std::nullopt;
    for (;;) {
      std::optional<PyEvent> got;
      bool timed_out = false;
      {
        nb::gil_scoped_release nogil;
        std::shared_lock lock(lifetime_);
        Stream& s = open("Stream.next_event");
        std::lock_guard consumer(consumer_);
        if (ended_ && pending_.empty()) return std::nullopt;
        fill(s, 64);
        if (pending_.empty()) {
          auto slice = std::chrono::microseconds(kWaitSliceMs * 1000);
          if (deadline) {
            const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
                *deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) {
              timed_out = true;
            } else if (left < slice) {
              slice = left;
            }
          }
          if (!timed_out && s.wait_events(slice)) fill(s, 64);
        }
        if (!pending_.empty()) {
          got = std::move(pending_.front());
          pending_.pop_front();
          if (got->event.type == EventType::kEndOfStream) ended_ = true;
        }
      }
      if (got || timed_out) return got;
      if (PyErr_CheckSignals() != 0) throw nb::python_error();  // Ctrl-C while waiting
    }
  }

  std::string last_error() {
    std::shared_lock lock(lifetime_);
    return closed_ ? std::string() : stream_.last_error();
  }

  void close() {
    nb::gil_scoped_release nogil;
    std::unique_lock lock(lifetime_);
    if (closed_) return;
    closed_ = true;
    stream_.close();
    pending_.clear();
    hook_->fire();  // an event loop waiting for this stream looks again, and finds it closed
  }

 private:
  Stream& open(const char* function) {
    if (closed_) throw Error(ErrorCode::kClosed, fmt::format("{}: the stream is closed", function));
    return stream_;
  }

  // Moves what the engine has into pending_ (consumer_ held), with ERROR events' messages.
  void fill(Stream& s, std::size_t want) {
    Event buffer[64];
    while (pending_.size() < want) {
      const std::size_t got = s.poll(std::span(buffer, std::min<std::size_t>(64, want - pending_.size())));
      for (std::size_t i = 0; i < got; ++i) {
        pending_.push_back(PyEvent{buffer[i], buffer[i].type == EventType::kError ? s.last_error() : std::string()});
      }
      if (got == 0) break;
    }
  }

  Stream stream_;
  int sample_rate_hz_;
  std::shared_ptr<NotifyHook> hook_;
  std::shared_mutex lifetime_;  // shared: a call inside the engine; exclusive: close()
  std::mutex consumer_;         // one consumer at a time (poll / next_event)
  std::deque<PyEvent> pending_;
  bool closed_ = false;
  bool ended_ = false;  // END_OF_STREAM was handed out
};

const char* event_type_doc =
    "What an Event reports. SPEECH_START (start_s), SPEECH_END (start_s, end_s), VAD_PROBABILITY "
    "(frame_index, start_s, end_s, probability; with emit_probabilities), OVERLOAD (backlog_ms, "
    "rejected_samples), ERROR (error_code, message), END_OF_STREAM (end_s), TURN_END (start_s, end_s, "
    "probability, turn_reason) and TURN_INCOMPLETE (start_s, end_s, probability).";

}  // namespace

void bind_engine(nb::module_& m) {
  nb::enum_<EventType>(m, "EventType", event_type_doc)
      .value("SPEECH_START", EventType::kSpeechStart)
      .value("SPEECH_END", EventType::kSpeechEnd)
      .value("VAD_PROBABILITY", EventType::kVadProbability)
      .value("OVERLOAD", EventType::kOverload)
      .value("ERROR", EventType::kError)
      .value("END_OF_STREAM", EventType::kEndOfStream)
      .value("TURN_END", EventType::kTurnEnd)
      .value("TURN_INCOMPLETE", EventType::kTurnIncomplete);
  nb::enum_<TurnAction::Reason>(m, "TurnReason", "Why a TURN_END came.")
      .value("MODEL", TurnAction::Reason::kModel, "Smart Turn said the speaker finished")
      .value("TIMEOUT", TurnAction::Reason::kTimeout, "turn_max_silence_ms passed without a complete verdict")
      .value("END_OF_STREAM", TurnAction::Reason::kEndOfStream, "the stream ended during the turn");

  nb::class_<PyEvent>(m, "Event", "One event of a stream. Times are seconds of stream audio.")
      .def_prop_ro("type", [](const PyEvent& e) { return e.event.type; })
      .def_prop_ro("start_s", [](const PyEvent& e) { return e.event.start_s; })
      .def_prop_ro("end_s", [](const PyEvent& e) { return e.event.end_s; })
      .def_prop_ro("probability",
                   [](const PyEvent& e) -> std::optional<float> {
                     const EventType t = e.event.type;
                     const bool has = t == EventType::kVadProbability || t == EventType::kTurnIncomplete ||
                                      (t == EventType::kTurnEnd && e.event.probability >= 0.0f);
                     return has ? std::optional(e.event.probability) : std::nullopt;
                   },
                   "VAD_PROBABILITY, TURN_INCOMPLETE, TURN_END (None: a TURN_END without a verdict)")
      .def_prop_ro("frame_index",
                   [](const PyEvent& e) -> std::optional<std::int64_t> {
                     return e.event.type == EventType::kVadProbability ? std::optional(e.event.frame_index)
                                                                        : std::nullopt;
                   })
      .def_prop_ro("backlog_ms", [](const PyEvent& e) { return e.event.backlog_ms; })
      .def_prop_ro("rejected_samples", [](const PyEvent& e) { return e.event.rejected_samples; })
      .def_prop_ro("turn_reason",
                   [](const PyEvent& e) -> std::optional<TurnAction::Reason> {
                     return e.event.type == EventType::kTurnEnd ? std::optional(e.event.turn_reason)
                                                                 : std::nullopt;
                   })
      .def_prop_ro("error_code",
                   [](const PyEvent& e) -> std::optional<std::string> {
                     return e.event.type == EventType::kError ? std::optional(std::string(to_string(e.event.error_code)))
                                                               : std::nullopt;
                   },
                   "ERROR: the stable code name (\"bad_audio\", \"runtime\", ...)")
      .def_prop_ro("message", [](const PyEvent& e) { return e.message; }, "ERROR: what went wrong")
      .def("__repr__", [](const PyEvent& e) {
        const Event& v = e.event;
        switch (v.type) {
          case EventType::kSpeechStart: return fmt::format("Event(SPEECH_START, start_s={:.3f})", v.start_s);
          case EventType::kSpeechEnd:
            return fmt::format("Event(SPEECH_END, start_s={:.3f}, end_s={:.3f})", v.start_s, v.end_s);
          case EventType::kVadProbability:
            return fmt::format("Event(VAD_PROBABILITY, frame_index={}, probability={:.4f})", v.frame_index,
                               v.probability);
          case EventType::kOverload:
            return fmt::format("Event(OVERLOAD, backlog_ms={}, rejected_samples={})", v.backlog_ms, v.rejected_samples);
          case EventType::kError: return fmt::format("Event(ERROR, {}: {})", to_string(v.error_code), e.message);
          case EventType::kEndOfStream: return fmt::format("Event(END_OF_STREAM, end_s={:.3f})", v.end_s);
          case EventType::kTurnEnd:
            return fmt::format("Event(TURN_END, start_s={:.3f}, end_s={:.3f}, probability={:.4f}, reason={})",
                               v.start_s, v.end_s, v.probability, to_string(v.turn_reason));
          case EventType::kTurnIncomplete:
            return fmt::format("Event(TURN_INCOMPLETE, start_s={:.3f}, end_s={:.3f}, probability={:.4f})", v.start_s,
                               v.end_s, v.probability);
          default: return fmt::format("Event({})", to_string(v.type));
        }
      });

  nb::class_<PyStream>(m, "Stream",
                       "One audio stream of an Engine (Engine.open_stream). Push samples, read events; "
                       "iterate (for / async for) to read events until END_OF_STREAM. A context manager: "
                       "closed on exit.")
      .def("push", &PyStream::push, nb::arg("samples"),
           "Copies samples (1-D float32 in [-1, 1] or int16, mono, at the stream's rate) into the stream; "
           "returns how many were taken (fewer when the stream's buffer is full: push the rest later). "
           "Never waits for inference. TypeError: another dtype; ValueError: not 1-D; BadAudioError: NaN/Inf; "
           "ClosedError: after finish() or close().")
      .def("writable", &PyStream::writable, "How many samples push() would take now.")
      .def("finish", &PyStream::finish,
           "End of input: what is buffered is processed, the last segment closed, then END_OF_STREAM.")
      .def("poll", &PyStream::poll, nb::arg("max_events") = 64, "The pending events (at most max_events); never waits.")
      .def("next_event", &PyStream::next_event, nb::arg("timeout") = nb::none(),
           "The next event, waiting up to `timeout` seconds (None: as long as it takes), with the GIL "
           "released; None on timeout or once END_OF_STREAM was returned.")
      .def_prop_ro("last_error", &PyStream::last_error, "The message of the last ERROR event (\"\" if none).")
      .def_prop_ro("sample_rate", &PyStream::sample_rate)
      .def_prop_ro("closed", &PyStream::closed)
      .def_prop_ro("ended", &PyStream::ended, "True once END_OF_STREAM was returned.")
      .def("close", &PyStream::close,
           "Stops the stream now (unread events and unfinished audio are discarded). Idempotent.")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](PyStream& s, nb::args) { s.close(); })
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__",
           [](PyStream& s) {
             std::optional<PyEvent> e = s.next_event(std::nullopt);
             if (!e) throw nb::stop_iteration();
             return *e;
           })
      .def("__aiter__", [](nb::handle self) { return self; })
      .def("__anext__", [](nb::handle self) {
        // The coroutine is Python's (brisvox/_aio.py): the event loop is woken through its
        // LoopNotifier, so the loop keeps running and no thread waits.
        return nb::module_::import_("brisvox._aio").attr("next_event")(self);
      })
      .def("_notify_via", &PyStream::notify_via, nb::arg("notifier"),
           "brisvox._aio: queue this stream's token on `notifier` whenever the engine wrote events; "
           "returns the token.");

  nb::class_<LoopNotifier>(m, "_LoopNotifier",
                           "brisvox._aio's wake-up of an asyncio event loop: an eventfd that becomes readable "
                           "when streams attached to it (Stream._notify_via) have new events.")
      .def(nb::new_([] { return std::make_shared<LoopNotifier>(); }))
      .def("fileno", &LoopNotifier::fd, "The eventfd to watch (loop.add_reader).")
      .def("take", &LoopNotifier::take,
           "The tokens of the streams with new events since the last call (each once); the fd is read "
           "empty. Never waits.");

  nb::class_<PyEngine>(m, "Engine",
                       "The engine: models loaded once, inference workers, streams batched together. One per "
                       "process is the intent (brisvox.shared_engine).")
      .def(
          "__init__",
          [](PyEngine* self, const std::string& vad_model, std::optional<std::string> turn_model, int vad_workers,
             int vad_max_batch, int vad_gather_wait_us, int turn_workers, int max_streams, int latency_budget_ms,
             bool admission_control, int run_timeout_ms) {
            EngineConfig config;
            config.models = {ModelSpec::silero_vad(vad_model.empty() ? "v6" : vad_model)};
            config.models[0].num_workers = vad_workers;
            config.models[0].max_batch = vad_max_batch;
            config.models[0].max_gather_wait_us = vad_gather_wait_us;
            if (turn_model && !turn_model->empty()) {
              config.models.push_back(ModelSpec::smart_turn(*turn_model));
              config.models[1].num_workers = turn_workers;
            }
            config.max_streams = max_streams;
            config.latency_budget_ms = latency_budget_ms;
            config.admission_control = admission_control;
            config.run_timeout_ms = run_timeout_ms;
            std::unique_ptr<Engine> engine;
            {
              nb::gil_scoped_release nogil;
              engine = std::make_unique<Engine>(config);
            }
            new (self) PyEngine{std::move(engine)};
          },
          nb::kw_only(), nb::arg("vad_model") = "v6", nb::arg("turn_model") = nb::none(), nb::arg("vad_workers") = 0,
          nb::arg("vad_max_batch") = 0, nb::arg("vad_gather_wait_us") = -1, nb::arg("turn_workers") = 0,
          nb::arg("max_streams") = 4096, nb::arg("latency_budget_ms") = 100, nb::arg("admission_control") = true, nb::arg("run_timeout_ms") = 2000,
          "Loads the models and starts the workers. vad_model: 'v6' (default), 'v5', 'v5-exported', "
          "'v6-exported' or a Silero VAD .onnx path; turn_model: None, 'v3.2' or a Smart Turn .onnx path "
          "(needed by streams with turn=True); *_workers 0: the defaults (one VAD worker per core, one "
          "Smart Turn worker); vad_max_batch 0: 32 windows per run; vad_gather_wait_us: how long a VAD "
          "worker waits for a fuller batch (-1: 2000).")
      .def(
          "open_stream",
          [](PyEngine& self, const nb::kwargs& kwargs) {
            StreamOptions o = parse_stream_options(kwargs, "Engine.open_stream");
            const int rate = o.config.sample_rate_hz;
            auto hook = std::make_shared<NotifyHook>();
            o.config.on_events = [hook] { hook->fire(); };
            Stream s;
            {
              nb::gil_scoped_release nogil;
              s = self.engine->open_stream(o.config);
            }
            return new PyStream(std::move(s), rate, std::move(hook));
          },
          nb::keep_alive<0, 1>(),  // a stream keeps its engine alive
          "Opens a stream. Keyword options (defaults): sample_rate (16000; 8000/16000 native, others "
          "resampled), buffer_ms (128), threshold (0.5), neg_threshold (auto), min_speech_ms (250), "
          "min_silence_ms (100), speech_pad_ms (30), max_speech_s (inf), min_silence_at_max_speech_ms (98), "
          "use_max_poss_sil_at_max_speech (True), model_rate (auto), emit_probabilities (False), turn "
          "(False), turn_stop_ms (200), turn_pre_speech_ms (500), turn_max_silence_ms (3000), "
          "turn_threshold (0.5), turn_wait_for_verdict (False). OverloadedError at capacity.")
      .def_prop_ro("num_workers", [](const PyEngine& self) { return self.engine->num_workers(); },
                   "Inference threads of every model together.")
      .def_prop_ro("vad_model_path", [](const PyEngine& self) { return self.engine->config().model("vad").path; })
      .def_prop_ro("turn_model_path", [](const PyEngine& self) -> std::optional<std::string> {
        const ModelSpec* t = self.engine->config().find_model("turn");
        return t != nullptr ? std::optional(t->path) : std::nullopt;
      });
}

// The engine of a PyEngine object, for offline_bindings.cpp.
Engine& engine_of(nb::handle py_engine) { return *nb::cast<PyEngine&>(py_engine).engine; }

}  // namespace brisvox::python
