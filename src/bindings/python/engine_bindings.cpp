// brisvox.Engine, brisvox.Stream, brisvox.Call, brisvox.Event: the engine's streams and calls for
// Python.
//
// Threads. Every call that can wait (push, finish, speak, waiting for events, close) releases the
// GIL, so that many Python threads (one per Pipecat call) share the engine's workers. A stream or a
// call may be used by one producer thread (push, finish) and one consumer thread (poll, wait,
// iteration) at once, as the engine allows, and a call's speak/mark/cancel may come from any
// thread; close() may come from any thread at any time: a shared_mutex holds it off while another
// call is inside the engine, and every call after it raises brisvox.ClosedError. Waiting is done in
// slices of kWaitSliceMs so that Ctrl-C (KeyboardInterrupt) is seen promptly. Stream and Call share
// all of this (EventSource): they differ in what an event carries and in when they have ended.
#include <fmt/format.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
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

// An event as Python sees it: the engine's record plus what goes with it, read when the event is
// taken from the engine. The payloads wait in a bounded channel only until a later one is read, so
// they are read here, with their event, never later on a Python reader's say-so.
struct PyEvent {
  Event event;
  std::string message;                   // ERROR
  std::vector<float> audio;              // TTS_AUDIO: the piece of speech
  std::optional<Transcript> transcript;  // TRANSCRIPT (nullopt: its payload was dropped)
};

// Event::payload_id of an ERROR of a call's speech side: an utterance failed, and speech.utterance_id
// says which (call.h; a stream's ERROR has 0 and a frame_index).
constexpr std::uint32_t kSpeechSideError = 1;

bool is_speech_error(const Event& e) { return e.type == EventType::kError && e.payload_id == kSpeechSideError; }

// An ERROR's message: a stream has one last error, a call one per side (Call::last_error(event)).
std::string error_message(Stream& s, const Event&) { return s.last_error(); }
std::string error_message(Call& c, const Event& e) { return c.last_error(e); }
std::string error_message(Speech& s, const Event&) { return s.last_error(); }

// When the handle next has a held event to give (a call's speech within the playout lead, its
// marks); a stream holds none.
std::optional<std::chrono::steady_clock::time_point> next_due(Stream&) { return std::nullopt; }
std::optional<std::chrono::steady_clock::time_point> next_due(Call& c) { return c.next_due(); }
std::optional<std::chrono::steady_clock::time_point> next_due(Speech&) { return std::nullopt; }

// The rate of a source's audio: what a stream or a call takes in, what a speech session gives out.
int rate_of(Stream& s) { return s.config().sample_rate_hz; }
int rate_of(Call& c) { return c.sample_rate_hz(); }
int rate_of(Speech& s) { return s.sample_rate_hz(); }

template <class Handle>
PyEvent taken(Handle& h, const Event& e) {
  PyEvent out{e, {}, {}, std::nullopt};
  switch (e.type) {
    case EventType::kError: out.message = error_message(h, e); break;
    case EventType::kTtsAudio: out.audio = h.read_audio_payload(e); break;
    case EventType::kTranscript:
    case EventType::kTranscriptPartial:
      if constexpr (!std::is_same_v<Handle, Speech>) {  // a speech session transcribes nothing
        if (e.payload == PayloadStatus::kAttached || e.payload == PayloadStatus::kTruncated) {
          out.transcript = h.read_transcript(e);
        }
      }
      break;
    default: break;
  }
  // Every ERROR of a speech session is an utterance's, as a call's speech side marks its own: one
  // rule for Event.utterance_id and for counting what has ended.
  if constexpr (std::is_same_v<Handle, Speech>) {
    if (e.type == EventType::kError) out.event.payload_id = kSpeechSideError;
  }
  return out;
}

struct PyEngine {
  std::unique_ptr<Engine> engine;
};

// The resolved path of the engine's model `name`; None when it has none.
std::optional<std::string> model_path(const PyEngine& self, const char* name) {
  const ModelSpec* spec = self.engine->config().find_model(name);
  return spec != nullptr ? std::optional(spec->path) : std::nullopt;
}

// What Stream and Call share in Python: samples in, events out, waiting, closing. `Handle` is the
// engine's brisvox::Stream or brisvox::Call (the same push/flush/poll/wait_events contract).
template <class Handle>
class EventSource {
 public:
  // `kind` and `noun`: "Stream" and "stream", or "Call" and "call", for messages. `hook`: the one
  // the handle's on_events calls.
  EventSource(Handle handle, const char* kind, const char* noun, std::shared_ptr<NotifyHook> hook)
      : handle_(std::move(handle)), kind_(kind), noun_(noun), sample_rate_hz_(rate_of(handle_)), hook_(std::move(hook)) {}
  virtual ~EventSource() = default;
  EventSource(const EventSource&) = delete;
  EventSource& operator=(const EventSource&) = delete;

  // brisvox/_aio.py: from now on the source's events queue its token on `notifier` (an event
  // loop's); returns the token, the same for as long as the source stays with that notifier.
  std::uint64_t notify_via(const std::shared_ptr<LoopNotifier>& notifier) {
    if (!hook_->attached_to(notifier.get())) {
      static std::atomic<std::uint64_t> next_token{1};
      hook_->attach(notifier, next_token.fetch_add(1, std::memory_order_relaxed));
    }
    return hook_->token();
  }

  // brisvox/_aio.py: seconds until a held event is due (0: events wait now), None when nothing
  // is held. The engine's workers wake the loop for new events, but nobody does when a held
  // event's time comes: the loop's wait must end by then.
  std::optional<double> next_due_s() {
    nb::gil_scoped_release nogil;  // a reader on another thread may hold consumer_ for a wait's slice
    std::shared_lock lock(lifetime_);
    Handle& h = open("_next_due");
    std::lock_guard consumer(consumer_);
    if (!pending_.empty()) return 0.0;
    const auto due = next_due(h);
    if (!due) return std::nullopt;
    return std::max(0.0, std::chrono::duration<double>(*due - std::chrono::steady_clock::now()).count());
  }

  int sample_rate() const { return sample_rate_hz_; }
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  bool ended() const { return ended_now(); }

  std::size_t push(nb::handle object) {
    const std::string function = name("push");
    Samples samples(object, function.c_str());
    nb::gil_scoped_release nogil;
    std::shared_lock lock(lifetime_);
    return open("push").push(samples.floats());
  }

  std::size_t writable() {
    std::shared_lock lock(lifetime_);
    return open("writable").writable();
  }

  void finish() {
    nb::gil_scoped_release nogil;
    std::shared_lock lock(lifetime_);
    open("finish").flush();
  }

  // Up to max_events pending events; never waits.
  std::vector<PyEvent> poll(std::size_t max_events) {
    std::vector<PyEvent> out;
    {
      nb::gil_scoped_release nogil;
      std::shared_lock lock(lifetime_);
      Handle& h = open("poll");
      std::lock_guard consumer(consumer_);
      fill(h, max_events);
      while (!pending_.empty() && out.size() < max_events) {
        out.push_back(hand_out());
      }
    }
    return out;
  }

  // The next event, waiting up to timeout_s (None: for ever); None on timeout or once the source
  // has ended (ended() then says which).
  std::optional<PyEvent> next_event(std::optional<double> timeout_s) {
    if (timeout_s && !(*timeout_s >= 0)) {
      throw nb::value_error(
          fmt::format("{}: timeout must be >= 0 seconds or None, got {}", name("next_event"), *timeout_s).c_str());
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
        Handle& h = open("next_event");
        std::lock_guard consumer(consumer_);
        fill(h, 64);
        if (pending_.empty() && ended_now()) return std::nullopt;
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
          // A call's wait_events also ends when its next held event is due (Call::next_due).
          if (!timed_out && h.wait_events(slice)) fill(h, 64);
        }
        if (!pending_.empty()) got = hand_out();
      }
      if (got || timed_out) return got;
      if (PyErr_CheckSignals() != 0) throw nb::python_error();  // Ctrl-C while waiting
    }
  }

  void close() {
    nb::gil_scoped_release nogil;
    std::unique_lock lock(lifetime_);
    if (closed_) return;
    closed_.store(true, std::memory_order_release);
    handle_.close();
    pending_.clear();
    hook_->fire();  // an event loop waiting for this source looks again, and finds it closed
  }

 protected:
  // Whether nothing more will come: a stream's END_OF_STREAM was handed out (PyCall adds its
  // speech). Any thread.
  virtual bool ended_now() const { return end_of_stream_.load(std::memory_order_acquire); }
  // Each event as it is handed to Python (consumer_ held).
  virtual void handing_out(const PyEvent& e) {
    if (e.event.type == EventType::kEndOfStream) end_of_stream_.store(true, std::memory_order_release);
  }

  std::string name(const char* method) const { return fmt::format("{}.{}", kind_, method); }

  // The handle, or ClosedError naming the method (lifetime_ held, shared or not).
  Handle& open(const char* method) {
    if (closed_.load(std::memory_order_acquire)) {
      throw Error(ErrorCode::kClosed, fmt::format("{}: the {} is closed", name(method), noun_));
    }
    return handle_;
  }

  Handle handle_;
  const char* kind_;
  const char* noun_;
  const int sample_rate_hz_;
  std::shared_mutex lifetime_;  // shared: a call inside the engine; exclusive: close()

 private:
  // Moves what the engine has into pending_ (consumer_ held), with what goes with each event.
  void fill(Handle& h, std::size_t want) {
    Event buffer[64];
    while (pending_.size() < want) {
      const std::size_t got = h.poll(std::span(buffer, std::min<std::size_t>(64, want - pending_.size())));
      for (std::size_t i = 0; i < got; ++i) pending_.push_back(taken(h, buffer[i]));
      if (got == 0) break;
    }
  }

  PyEvent hand_out() {
    PyEvent e = std::move(pending_.front());
    pending_.pop_front();
    handing_out(e);
    return e;
  }

  std::shared_ptr<NotifyHook> hook_;
  std::mutex consumer_;  // one consumer at a time (poll / next_event)
  std::deque<PyEvent> pending_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> end_of_stream_{false};  // END_OF_STREAM was handed out
};

class PyStream : public EventSource<Stream> {
 public:
  PyStream(Stream stream, std::shared_ptr<NotifyHook> hook) : EventSource(std::move(stream), "Stream", "stream", std::move(hook)) {}

  std::string last_error() {
    std::shared_lock lock(lifetime_);
    return closed() ? std::string() : handle_.last_error();
  }
};

// What a call and a speech session share: text in (speak, mark, cancel) and the count of what was
// spoken and has ended. Utterances and marks share one sequence (1, 2, ...) and each ends with
// exactly one event (TTS_END, TTS_CANCELLED, TTS_INTERRUPTED, its ERROR, TTS_MARK): everything
// said so far has ended once that many have.
template <class Handle>
class Speaker : public EventSource<Handle> {
 public:
  using EventSource<Handle>::EventSource;

  std::uint32_t speak(const std::string& text) {
    nb::gil_scoped_release nogil;
    std::shared_lock lock(this->lifetime_);
    return issued(this->open("speak").speak(text));
  }

  std::uint32_t mark() {
    nb::gil_scoped_release nogil;
    std::shared_lock lock(this->lifetime_);
    return issued(this->open("mark").mark());
  }

  std::uint32_t cancel() {
    nb::gil_scoped_release nogil;
    std::shared_lock lock(this->lifetime_);
    return this->open("cancel").cancel();
  }

  // The message of the last ERROR event taken from the engine (a call keeps one per side).
  std::string last_error() {
    std::lock_guard lock(last_error_mu_);
    return last_error_;
  }

 protected:
  bool all_said() const {
    return speech_ended_.load(std::memory_order_acquire) >= last_issued_.load(std::memory_order_acquire);
  }

  void handing_out(const PyEvent& e) override {
    EventSource<Handle>::handing_out(e);
    switch (e.event.type) {
      case EventType::kError:
        {
          std::lock_guard lock(last_error_mu_);
          last_error_ = e.message;
        }
        if (!is_speech_error(e.event)) break;  // a call's caller side: no utterance ended
        [[fallthrough]];
      case EventType::kTtsEnd:
      case EventType::kTtsCancelled:
      case EventType::kTtsInterrupted:
      case EventType::kTtsMark: speech_ended_.fetch_add(1, std::memory_order_acq_rel); break;
      default: break;
    }
  }

 private:
  // speak() may come from several threads.
  std::uint32_t issued(std::uint32_t id) {
    std::uint32_t last = last_issued_.load(std::memory_order_relaxed);
    while (last < id && !last_issued_.compare_exchange_weak(last, id, std::memory_order_acq_rel)) {
    }
    return id;
  }

  std::atomic<std::uint32_t> last_issued_{0};
  std::atomic<std::uint32_t> speech_ended_{0};
  std::mutex last_error_mu_;
  std::string last_error_;
};

// A call ends (iteration stops, ended() is true) once its caller's END_OF_STREAM was handed out
// (after finish()) and every utterance and mark spoken so far has ended: then nothing more comes
// unless it is asked to speak again.
class PyCall : public Speaker<Call> {
 public:
  PyCall(Call call, std::shared_ptr<NotifyHook> hook)
      : Speaker(std::move(call), "Call", "call", std::move(hook)), speech_sample_rate_hz_(handle_.speech_sample_rate_hz()) {}

  int speech_sample_rate() const { return speech_sample_rate_hz_; }

 protected:
  bool ended_now() const override { return EventSource::ended_now() && all_said(); }

 private:
  const int speech_sample_rate_hz_;
};

// A speech session ends (iteration stops, ended() is true) once every utterance and mark spoken so
// far has ended; speak() again starts it anew.
class PySpeech : public Speaker<Speech> {
 public:
  PySpeech(Speech speech, std::shared_ptr<NotifyHook> hook)
      : Speaker(std::move(speech), "Speech", "speech session", std::move(hook)) {}

 protected:
  bool ended_now() const override { return all_said(); }
};

const char* event_type_doc =
    "What an Event reports. A stream's: SPEECH_START (start_s), SPEECH_END (start_s, end_s), VAD_PROBABILITY "
    "(frame_index, start_s, end_s, probability; with emit_probabilities), OVERLOAD (backlog_ms, "
    "rejected_samples), ERROR (error_code, message), END_OF_STREAM (end_s), TURN_END (start_s, end_s, "
    "probability, turn_reason), TURN_INCOMPLETE (start_s, end_s, probability) and TRANSCRIPT (start_s, end_s, "
    "text, no_speech, avg_logprob, probability: the no-speech probability; with transcripts). A call's speech "
    "(utterance_id): TTS_AUDIO (audio, start_s, end_s: where the piece lies in the utterance), TTS_END (end_s: "
    "its length), TTS_CANCELLED (cancel()), TTS_INTERRUPTED (a barge-in), TTS_MARK (mark(); end_s: when playback "
    "reaches it, in time.monotonic() seconds) and BARGE_IN (utterance_id: the one being heard; start_s, end_s: "
    "the caller's speech that stopped it).";

// The utterance (or mark) a speech event is about.
std::optional<std::uint32_t> utterance_of(const Event& e) {
  switch (e.type) {
    case EventType::kTtsAudio:
    case EventType::kTtsEnd:
    case EventType::kTtsCancelled:
    case EventType::kTtsInterrupted:
    case EventType::kTtsMark:
    case EventType::kBargeIn: return e.speech.utterance_id;
    case EventType::kError: return is_speech_error(e) ? std::optional(e.speech.utterance_id) : std::nullopt;
    default: return std::nullopt;
  }
}

std::string event_repr(const PyEvent& e) {
  const Event& v = e.event;
  switch (v.type) {
    case EventType::kSpeechStart: return fmt::format("Event(SPEECH_START, start_s={:.3f})", v.start_s);
    case EventType::kSpeechEnd: return fmt::format("Event(SPEECH_END, start_s={:.3f}, end_s={:.3f})", v.start_s, v.end_s);
    case EventType::kVadProbability:
      return fmt::format("Event(VAD_PROBABILITY, frame_index={}, probability={:.4f})", v.frame_index, v.probability);
    case EventType::kOverload:
      return fmt::format("Event(OVERLOAD, backlog_ms={}, rejected_samples={})", v.backlog_ms, v.rejected_samples);
    case EventType::kError:
      if (const auto u = utterance_of(v)) {
        return fmt::format("Event(ERROR, utterance_id={}, {}: {})", *u, to_string(v.error_code), e.message);
      }
      return fmt::format("Event(ERROR, {}: {})", to_string(v.error_code), e.message);
    case EventType::kEndOfStream: return fmt::format("Event(END_OF_STREAM, end_s={:.3f})", v.end_s);
    case EventType::kTurnEnd:
      return fmt::format("Event(TURN_END, start_s={:.3f}, end_s={:.3f}, probability={:.4f}, reason={})", v.start_s,
                         v.end_s, v.probability, to_string(v.turn_reason));
    case EventType::kTurnIncomplete:
      return fmt::format("Event(TURN_INCOMPLETE, start_s={:.3f}, end_s={:.3f}, probability={:.4f})", v.start_s,
                         v.end_s, v.probability);
    case EventType::kTranscript:
      return fmt::format("Event(TRANSCRIPT, start_s={:.3f}, end_s={:.3f}, text={})", v.start_s, v.end_s,
                         e.transcript ? fmt::format("'{}'", e.transcript->text) : std::string("None (dropped)"));
    case EventType::kTranscriptPartial:
      return fmt::format("Event(TRANSCRIPT_PARTIAL, start_s={:.3f}, end_s={:.3f}, text={}, unstable={})", v.start_s,
                         v.end_s, e.transcript ? fmt::format("'{}'", e.transcript->text) : std::string("None (dropped)"),
                         e.transcript ? fmt::format("'{}'", e.transcript->unstable) : std::string("None"));
    case EventType::kTtsAudio:
      return fmt::format("Event(TTS_AUDIO, utterance_id={}, start_s={:.3f}, end_s={:.3f}, samples={})",
                         v.speech.utterance_id, v.start_s, v.end_s, e.audio.size());
    case EventType::kTtsEnd:
    case EventType::kTtsCancelled:
    case EventType::kTtsInterrupted:
      return fmt::format("Event({}, utterance_id={}, end_s={:.3f})",
                         v.type == EventType::kTtsEnd         ? "TTS_END"
                         : v.type == EventType::kTtsCancelled ? "TTS_CANCELLED"
                                                              : "TTS_INTERRUPTED",
                         v.speech.utterance_id, v.end_s);
    case EventType::kTtsMark: return fmt::format("Event(TTS_MARK, utterance_id={})", v.speech.utterance_id);
    case EventType::kBargeIn:
      return fmt::format("Event(BARGE_IN, utterance_id={}, start_s={:.3f}, end_s={:.3f})", v.speech.utterance_id,
                         v.start_s, v.end_s);
  }
  return fmt::format("Event({})", to_string(v.type));
}

// A new Python stream or call: its on_events fires a hook of its own (brisvox/_aio.py attaches an
// event loop to it), and `open` (the engine's open_stream or open_call) runs without the GIL.
template <class Source, class Config, class Open>
Source* open_source(Config config, Open&& open) {
  auto hook = std::make_shared<NotifyHook>();
  config.on_events = [hook] { hook->fire(); };
  decltype(open(config)) handle;
  {
    nb::gil_scoped_release nogil;
    handle = open(config);
  }
  return new Source(std::move(handle), std::move(hook));
}

// Names of the things Stream, Call and Speech bind alike, and how their docs differ.
struct SourceDocs {
  const char* noun;        // "stream" / "call" / "speech session"
  const char* end;         // what iteration runs until
  const char* ended;       // the `ended` property
};

// The events' side every source has (EventSource), bound once for each.
template <class Source>
void bind_events(nb::class_<Source>& cls, const SourceDocs& d) {
  cls.def("poll", &Source::poll, nb::arg("max_events") = 64, "The pending events (at most max_events); never waits.")
      .def("next_event", &Source::next_event, nb::arg("timeout") = nb::none(),
           fmt::format("The next event, waiting up to `timeout` seconds (None: as long as it takes), with the GIL "
                       "released; None on timeout or once the {} has ended ({}).",
                       d.noun, d.end)
               .c_str())
      .def_prop_ro("last_error", &Source::last_error, "The message of the last ERROR event (\"\" if none).")
      .def_prop_ro("closed", &Source::closed)
      .def_prop_ro("ended", &Source::ended, d.ended)
      .def("close", &Source::close,
           fmt::format("Ends the {} now (unread events and unfinished audio are discarded). Idempotent; from any "
                       "thread (a wait in progress raises ClosedError).",
                       d.noun)
               .c_str())
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](Source& s, nb::args) { s.close(); })
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__",
           [](Source& s) {
             std::optional<PyEvent> e = s.next_event(std::nullopt);
             if (!e) throw nb::stop_iteration();
             return *e;
           })
      .def("__aiter__", [](nb::handle self) { return self; })
      .def("__anext__",
           [](nb::handle self) {
             // The coroutine is Python's (brisvox/_aio.py): the event loop is woken through its
             // LoopNotifier, so the loop keeps running and no thread waits.
             return nb::module_::import_("brisvox._aio").attr("next_event")(self);
           })
      .def("_notify_via", &Source::notify_via, nb::arg("notifier"),
           "brisvox._aio: queue this source's token on `notifier` whenever the engine wrote events; returns the token.")
      .def("_next_due", &Source::next_due_s,
           "brisvox._aio: seconds until a held event is due (0: events wait now), None when none is held.");
}

// The audio-in side of a stream and a call.
template <class Source>
void bind_audio_in(nb::class_<Source>& cls, const SourceDocs& d) {
  cls.def("push", &Source::push, nb::arg("samples"),
          fmt::format("Copies samples (1-D float32 in [-1, 1] or int16, mono, at the {0}'s sample_rate) into the {0}; "
                      "returns how many were taken (fewer when the buffer is full: push the rest later). Never waits "
                      "for inference. TypeError: another dtype; ValueError: not 1-D; BadAudioError: NaN/Inf; "
                      "ClosedError: after finish() or close().",
                      d.noun)
              .c_str())
      .def("writable", &Source::writable, "How many samples push() would take now.")
      .def("finish", &Source::finish,
           "End of the audio in: what is buffered is processed, the last segment closed, then END_OF_STREAM.")
      .def_prop_ro("sample_rate", &Source::sample_rate, "The rate of push()'s samples, Hz.");
}

// The text-in side of a call and a speech session (Speaker). `mark`: when its TTS_MARK comes.
template <class Source>
void bind_speaker(nb::class_<Source>& cls, const char* mark) {
  cls.def("speak", &Source::speak, nb::arg("text"),
          "Queues `text` after what was spoken before; returns its utterance id (1, 2, ...; shared with mark()). "
          "Its audio comes as TTS_AUDIO events, then TTS_END (or TTS_CANCELLED, TTS_INTERRUPTED, ERROR). "
          "InvalidArgumentError: empty, too long or malformed text; OverloadedError: max_queued wait already. "
          "Never waits for synthesis.")
      .def("mark", &Source::mark,
           fmt::format("A mark after what was spoken so far: a TTS_MARK with this id comes {} (or at once when what "
                       "was before it is stopped). Returns its id.",
                       mark)
               .c_str())
      .def("cancel", &Source::cancel,
           "Stops every utterance spoken so far (TTS_CANCELLED each); no more audio of them comes. Returns the last "
           "utterance id stopped (0: none).");
}

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
      .value("TURN_INCOMPLETE", EventType::kTurnIncomplete)
      .value("TRANSCRIPT", EventType::kTranscript)
      .value("TTS_AUDIO", EventType::kTtsAudio)
      .value("TTS_END", EventType::kTtsEnd)
      .value("TTS_CANCELLED", EventType::kTtsCancelled)
      .value("BARGE_IN", EventType::kBargeIn)
      .value("TTS_INTERRUPTED", EventType::kTtsInterrupted)
      .value("TTS_MARK", EventType::kTtsMark)
      .value("TRANSCRIPT_PARTIAL", EventType::kTranscriptPartial);
  nb::enum_<TurnAction::Reason>(m, "TurnReason", "Why a TURN_END came.")
      .value("MODEL", TurnAction::Reason::kModel, "Smart Turn said the speaker finished")
      .value("TIMEOUT", TurnAction::Reason::kTimeout, "turn_max_silence_ms passed without a complete verdict")
      .value("END_OF_STREAM", TurnAction::Reason::kEndOfStream, "the stream ended during the turn");

  nb::class_<PyEvent>(m, "Event",
                      "One event of a stream, a call or a speech session. Times are seconds of the stream's (the "
                      "caller's) audio, except a speech event's (see EventType).")
      .def_prop_ro("type", [](const PyEvent& e) { return e.event.type; })
      .def_prop_ro("start_s", [](const PyEvent& e) { return e.event.start_s; })
      .def_prop_ro("end_s", [](const PyEvent& e) { return e.event.end_s; })
      .def_prop_ro("probability",
                   [](const PyEvent& e) -> std::optional<float> {
                     const EventType t = e.event.type;
                     const bool has = t == EventType::kVadProbability || t == EventType::kTurnIncomplete ||
                                      t == EventType::kTranscript || t == EventType::kTranscriptPartial ||
                                      (t == EventType::kTurnEnd && e.event.probability >= 0.0f);
                     return has ? std::optional(e.event.probability) : std::nullopt;
                   },
                   "VAD_PROBABILITY, TURN_INCOMPLETE, TURN_END (None: a TURN_END without a verdict), TRANSCRIPT "
                   "(Whisper's no-speech probability)")
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
      .def_prop_ro("utterance_id", [](const PyEvent& e) { return utterance_of(e.event); },
                   "TTS_*: the utterance (speak()) or mark (mark()) it belongs to; BARGE_IN: the utterance being "
                   "heard then (0: none yet); ERROR of the call's speech: the utterance that failed; else None")
      .def_prop_ro("audio",
                   [](nb::pointer_and_handle<PyEvent> self) -> nb::object {
                     PyEvent& e = *self.p;
                     if (e.event.type != EventType::kTtsAudio) return nb::none();
                     // A view of the event's own samples: the array keeps the event alive.
                     static float none = 0.0f;
                     const std::size_t shape[1] = {e.audio.size()};
                     return nb::cast(nb::ndarray<nb::numpy, float, nb::ndim<1>>(
                         e.audio.empty() ? &none : e.audio.data(), 1, shape, self.h));
                   },
                   "TTS_AUDIO: the piece of speech, float32 in [-1, 1] at the call's speech_sample_rate (the speech "
                   "session's sample_rate); else None")
      .def_prop_ro("text",
                   [](const PyEvent& e) -> std::optional<std::string> {
                     return e.transcript ? std::optional(e.transcript->text) : std::nullopt;
                   },
                   "TRANSCRIPT: the words, as Whisper writes them (a leading space; \"\" when no_speech); None for "
                   "other events, and for a TRANSCRIPT whose text was dropped (the reader fell behind)")
      .def_prop_ro("no_speech",
                   [](const PyEvent& e) -> std::optional<bool> {
                     return e.transcript ? std::optional(e.transcript->no_speech) : std::nullopt;
                   },
                   "TRANSCRIPT: Whisper's no-speech rule fired (the segment holds no speech)")
      .def_prop_ro("avg_logprob",
                   [](const PyEvent& e) -> std::optional<float> {
                     return e.transcript ? std::optional(e.transcript->avg_logprob) : std::nullopt;
                   },
                   "TRANSCRIPT: the mean log-probability of its tokens")
      .def_prop_ro("language",
                   [](const PyEvent& e) -> std::optional<std::string> {
                     return e.transcript ? std::optional(e.transcript->language) : std::nullopt;
                   },
                   "TRANSCRIPT: the language it was decoded in: the stream's language, the detected one "
                   "(a multilingual model without one), or 'en' (English-only models)")
      .def_prop_ro("language_probability",
                   [](const PyEvent& e) -> std::optional<float> {
                     return e.transcript ? std::optional(e.transcript->language_probability) : std::nullopt;
                   },
                   "TRANSCRIPT: the detection probability of its language (1.0 when the language was given)")
      .def_prop_ro("unstable",
                   [](const PyEvent& e) -> std::optional<std::string> {
                     if (!e.transcript || e.event.type != EventType::kTranscriptPartial) return std::nullopt;
                     return e.transcript->unstable;
                   },
                   "TRANSCRIPT_PARTIAL: the latest decode's text after `text` (which two consecutive decodes "
                   "agreed on); it may still change. None for other events")
      .def_prop_ro("words",
                   [](const PyEvent& e) -> nb::object {
                     if (!e.transcript) return nb::none();
                     nb::list words;
                     for (const WhisperWord& w : e.transcript->words) {
                       nb::dict d;
                       d["start"] = w.start_s;
                       d["end"] = w.end_s;
                       d["word"] = w.text;
                       d["probability"] = w.probability;
                       words.append(d);
                     }
                     return words;
                   },
                   "TRANSCRIPT: with word_timestamps=True, its words as dicts {start, end, word, probability} "
                   "(stream seconds; the word with its leading space, as faster-whisper's Word); [] without")
      .def("__repr__", &event_repr);

  nb::class_<PyStream> stream(m, "Stream",
                              "One audio stream of an Engine (Engine.open_stream). Push samples, read events; "
                              "iterate (for / async for) to read events until END_OF_STREAM. A context manager: "
                              "closed on exit.");
  const SourceDocs stream_docs{"stream", "END_OF_STREAM was returned", "True once END_OF_STREAM was returned."};
  bind_events(stream, stream_docs);
  bind_audio_in(stream, stream_docs);

  nb::class_<PyCall> call(
      m, "Call",
      "A call of an Engine (Engine.open_call): the caller's audio in (push, finish) with the stream's events out, "
      "and the call's speech (speak, mark, cancel) as TTS_* events, with barge-in: when the caller's speech is "
      "confirmed while the call is speaking, the speech stops (BARGE_IN, then TTS_INTERRUPTED). Speech is handed "
      "out at most playout_lead_ms ahead of real-time playback, marks when playback reaches them. Iteration (for "
      "/ async for) ends once the caller's END_OF_STREAM was returned (after finish()) and every utterance and "
      "mark has ended. A context manager: closed on exit.");
  const SourceDocs call_docs{"call",
                            "its caller's END_OF_STREAM was returned and every utterance and mark spoken has ended",
                            "True once the caller's END_OF_STREAM was returned and every utterance and mark spoken so "
                            "far has ended (speak() again makes it False)."};
  bind_events(call, call_docs);
  bind_audio_in(call, call_docs);
  bind_speaker(call, "when playback reaches it");
  call.def_prop_ro("speech_sample_rate", &PyCall::speech_sample_rate, "The rate of TTS_AUDIO's samples, Hz.");

  nb::class_<PySpeech> speech(
      m, "Speech",
      "A speech session of an Engine (Engine.open_speech): text in (speak, mark, cancel), its audio out as "
      "TTS_AUDIO events sentence by sentence, each utterance ending with TTS_END (TTS_CANCELLED, ERROR). Its "
      "sessions share the voice's workers with every other session and call of the engine. Iteration (for / async "
      "for) ends once every utterance and mark spoken so far has ended. A context manager: closed on exit.");
  bind_events(speech, SourceDocs{"speech session", "every utterance and mark spoken has ended",
                                 "True once every utterance and mark spoken so far has ended (speak() again makes it "
                                 "False)."});
  bind_speaker(speech,
               "once what was spoken before it has been handed out (end_s: when real-time playback of it would reach "
               "the mark)");
  speech.def_prop_ro("sample_rate", &PySpeech::sample_rate, "The rate of TTS_AUDIO's samples, Hz.");

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
             bool admission_control, int run_timeout_ms, std::optional<std::string> voice, nb::handle voice_options,
             int tts_workers, std::optional<std::string> stt_model, int stt_workers, int stt_max_width,
             int stt_prompt_tokens) {
            EngineConfig config;
            config.models = {ModelSpec::silero_vad(vad_model.empty() ? "v6" : vad_model)};
            config.models[0].num_workers = vad_workers;
            config.models[0].max_batch = vad_max_batch;
            config.models[0].max_gather_wait_us = vad_gather_wait_us;
            if (turn_model && !turn_model->empty()) {
              config.models.push_back(ModelSpec::smart_turn(*turn_model));
              config.models.back().num_workers = turn_workers;
            }
            if (voice && !voice->empty()) {
              config.models.push_back(ModelSpec::piper_tts(*voice));
              config.models.back().num_workers = tts_workers;
              config.models.back().options = model_options(voice_options, "Engine", "voice_options");
            } else if (!voice_options.is_none()) {
              throw nb::type_error("Engine: voice_options are the settings of a voice: give voice= too");
            }
            if (stt_model && !stt_model->empty()) {
              config.models.push_back(ModelSpec::whisper(*stt_model));
              config.models.back().num_workers = stt_workers;
              if (stt_max_width != 1) config.models.back().options["max_width"] = std::to_string(stt_max_width);
              if (stt_prompt_tokens != 0) {
                config.models.back().options["prompt_tokens"] = std::to_string(stt_prompt_tokens);
              }
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
          nb::arg("max_streams") = 4096, nb::arg("latency_budget_ms") = 100, nb::arg("admission_control") = true,
          nb::arg("run_timeout_ms") = 2000, nb::arg("voice") = nb::none(), nb::arg("voice_options") = nb::none(),
          nb::arg("tts_workers") = 0, nb::arg("stt_model") = nb::none(), nb::arg("stt_workers") = 0,
          nb::arg("stt_max_width") = 1, nb::arg("stt_prompt_tokens") = 0,
          "Loads the models and starts the workers. vad_model: 'v6' (default), 'v5', 'v5-exported', "
          "'v6-exported' or a Silero VAD .onnx path; turn_model: None, 'v3.2' or a Smart Turn .onnx path "
          "(needed by streams with turn=True); voice: None or a Piper voice (VOICE.onnx with VOICE.onnx.json "
          "beside it, or an installed voice's name), needed by calls; voice_options: the voice's default "
          "settings (noise_scale, length_scale, noise_w_scale, speaker_id; config: the JSON's path); stt_model: "
          "None, a Whisper alias ('tiny.en') or model folder (needed by transcripts=True); *_workers 0: the "
          "defaults (one VAD and one TTS worker per core, one Smart Turn and one Whisper worker); vad_max_batch 0: "
          "32 windows per run; vad_gather_wait_us: how long a VAD worker waits for a fuller batch (-1: 2000); "
          "stt_max_width: the widest beam_size / best_of a stream may ask (1 to 16); stt_prompt_tokens: the "
          "longest prompt + hotwords a stream may give, in tokens (0 to 446).")
      .def(
          "open_stream",
          [](PyEngine& self, const nb::kwargs& kwargs) {
            return open_source<PyStream>(parse_stream_options(kwargs, "Engine.open_stream").config,
                                         [&](const StreamConfig& c) { return self.engine->open_stream(c); });
          },
          nb::keep_alive<0, 1>(),  // a stream keeps its engine alive
          "Opens a stream. Keyword options (defaults): sample_rate (16000; every rate reaches the 16 kHz model, "
          "model_rate=8000 runs the 8 kHz model), buffer_ms (128), threshold (0.5), neg_threshold (auto), min_speech_ms (250), "
          "min_silence_ms (100), speech_pad_ms (30), max_speech_s (inf), min_silence_at_max_speech_ms (98), "
          "use_max_poss_sil_at_max_speech (True), model_rate (auto), emit_probabilities (False), turn "
          "(False), turn_stop_ms (200), turn_pre_speech_ms (500), turn_max_silence_ms (3000), "
          "turn_threshold (0.5), turn_wait_for_verdict (False), transcripts (False: TRANSCRIPT events, which need "
          "the engine's stt_model), language ('en'), window ('full' or 'fit'). OverloadedError at capacity.")
      .def(
          "open_call",
          [](PyEngine& self, const nb::kwargs& kwargs) {
            return open_source<PyCall>(parse_call_options(kwargs, "Engine.open_call"),
                                       [&](const CallConfig& c) { return self.engine->open_call(c); });
          },
          nb::keep_alive<0, 1>(),  // a call keeps its engine alive
          "Opens a call (needs the engine's voice). Keyword options: open_stream's, for the caller's side "
          "(sample_rate is the call's: its speech comes at that rate too), and the speech's: voice_options "
          "({name: float}, over the engine's), volume (1.0), fast_start (True), speech_sample_rate (0: the call's), "
          "max_queued (16); and the call's: barge_in (True), barge_in_min_speech_ms (400), barge_in_on_turn_end "
          "(False; needs turn=True), playout_lead_ms (500; 0: hand speech out as soon as it is made). "
          "OverloadedError at capacity.")
      .def(
          "open_speech",
          [](PyEngine& self, const nb::kwargs& kwargs) {
            return open_source<PySpeech>(parse_speech_options(kwargs, "Engine.open_speech"),
                                         [&](const SpeechConfig& c) { return self.engine->open_speech(c); });
          },
          nb::keep_alive<0, 1>(),  // a speech session keeps its engine alive
          "Opens a speech session (needs the engine's voice). Keyword options: sample_rate (0: the voice's own; "
          "8000, 16000, 24000 or 48000 resampled), voice_options ({name: float}, over the engine's), volume (1.0), "
          "fast_start (True: the first clause of each utterance alone first), max_queued (16). OverloadedError at "
          "capacity.")
      .def_prop_ro("num_workers", [](const PyEngine& self) { return self.engine->num_workers(); },
                   "Inference threads of every model together.")
      .def_prop_ro("vad_model_path", [](const PyEngine& self) { return self.engine->config().model("vad").path; })
      .def_prop_ro("turn_model_path", [](const PyEngine& self) { return model_path(self, "turn"); })
      .def_prop_ro("voice_path", [](const PyEngine& self) { return model_path(self, "tts"); })
      .def_prop_ro("stt_model_path", [](const PyEngine& self) { return model_path(self, "stt"); });
}

// The engine of a PyEngine object, for offline_bindings.cpp.
Engine& engine_of(nb::handle py_engine) { return *nb::cast<PyEngine&>(py_engine).engine; }

}  // namespace brisvox::python
