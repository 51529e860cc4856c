#include "stream_options.h"

#include <fmt/format.h>
#include <nanobind/stl/string.h>

#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include "brisvox/error.h"

namespace brisvox::python {
namespace {

template <class T>
T value_of(nb::handle value, const std::string& key, const char* function, const char* type) {
  // bool is an int in Python: refuse it where a number is meant, and numbers where a flag is.
  const bool is_bool = PyBool_Check(value.ptr());
  if constexpr (std::is_same_v<T, bool>) {
    if (is_bool) return value.ptr() == Py_True;
  } else if (!is_bool) {
    T out{};
    if (nb::try_cast(value, out)) return out;
  }
  throw nb::type_error(fmt::format("{}: {} must be {}, got {}", function, key, type,
                                   nb::type_name(value.type()).c_str())
                           .c_str());
}

constexpr const char* kStreamNames =
    "sample_rate, buffer_ms, model_rate, threshold, neg_threshold, min_speech_ms, min_silence_ms, speech_pad_ms, "
    "max_speech_s, min_silence_at_max_speech_ms, use_max_poss_sil_at_max_speech, emit_probabilities, turn, "
    "turn_stop_ms, turn_pre_speech_ms, turn_max_silence_ms, turn_threshold, turn_wait_for_verdict, transcripts, "
    "language, language_detection, window, prompt, hotwords, word_timestamps, partial_ms, decoding, beam_size, best_of, "
    "temperatures";
constexpr const char* kCallNames =
    "voice_options, volume, fast_start, speech_sample_rate, max_queued, barge_in, barge_in_min_speech_ms, "
    "barge_in_on_turn_end, playout_lead_ms";
constexpr const char* kSpeechNames = "sample_rate, voice_options, volume, fast_start, max_queued";

[[noreturn]] void unknown(const char* function, const std::string& key, const std::string& names) {
  throw nb::type_error(fmt::format("{}: unknown option '{}' (options: {})", function, key, names).c_str());
}

// A stream's options as they come: the stages' own are kept apart until the end, when the flags
// that ask for the stages (turn=, transcripts=) have been seen, whatever the order of the names.
class StreamParse {
 public:
  explicit StreamParse(const char* function) : function_(function) {}

  // Takes `key` if it is a stream option; false if it is not one.
  bool take(const std::string& key, nb::handle v) {
    StreamConfig& c = o_.config;
    auto integer = [&] { return value_of<int>(v, key, function_, "an int"); };
    auto real = [&] { return value_of<double>(v, key, function_, "a float"); };
    auto flag = [&] { return value_of<bool>(v, key, function_, "a bool"); };
    if (key == "sample_rate") c.sample_rate_hz = integer();
    else if (key == "buffer_ms") c.buffer_ms = integer();
    else if (key == "model_rate") c.vad.model_rate_hz = integer();
    else if (key == "threshold") c.vad.params.threshold = real();
    else if (key == "neg_threshold") c.vad.params.neg_threshold = real();
    else if (key == "min_speech_ms") c.vad.params.min_speech_ms = integer();
    else if (key == "min_silence_ms") c.vad.params.min_silence_ms = integer();
    else if (key == "speech_pad_ms") c.vad.params.speech_pad_ms = integer();
    else if (key == "max_speech_s") c.vad.params.max_speech_s = real();
    else if (key == "min_silence_at_max_speech_ms") c.vad.params.min_silence_at_max_speech_ms = integer();
    else if (key == "use_max_poss_sil_at_max_speech") c.vad.params.use_max_poss_sil_at_max_speech = flag();
    else if (key == "emit_probabilities") o_.emit_probabilities = flag();
    else if (key == "turn") o_.turn = flag();
    else if (key == "turn_stop_ms") turn_.params.stop_ms = integer();
    else if (key == "turn_pre_speech_ms") turn_.params.pre_speech_ms = integer();
    else if (key == "turn_max_silence_ms") turn_.params.max_silence_ms = integer();
    else if (key == "turn_threshold") turn_.params.turn_threshold = real();
    else if (key == "turn_wait_for_verdict") turn_.wait_for_verdict = flag();
    else if (key == "transcripts") o_.transcripts = flag();
    else if (key == "language") stt_.decode.language = value_of<std::string>(v, key, function_, "a str");
    else if (key == "window") stt_.window = window(value_of<std::string>(v, key, function_, "a str"));
    else if (key == "language_detection") stt_.language_detection = detection(value_of<std::string>(v, key, function_, "a str"));
    else if (key == "prompt") stt_.decode.prompt = value_of<std::string>(v, key, function_, "a str");
    else if (key == "hotwords") stt_.decode.hotwords = value_of<std::string>(v, key, function_, "a str");
    else if (key == "word_timestamps") stt_.word_timestamps = flag();
    else if (key == "partial_ms") stt_.partial_interval_ms = integer();
    else if (key == "decoding") decoding(value_of<std::string>(v, key, function_, "a str"));
    else if (key == "beam_size") beam_size_ = integer();
    else if (key == "best_of") best_of_ = integer();
    else if (key == "temperatures") temperatures_ = temperatures(v);
    else return false;
    return true;
  }

  // The options with the stages asked for; not validated yet.
  StreamOptions finish() {
    // What decoding= set, then what refines it, whatever the order of the names.
    if (beam_size_) stt_.decode.beam_size = *beam_size_;
    if (best_of_) stt_.decode.best_of = *best_of_;
    if (temperatures_) stt_.fallback.temperatures = *temperatures_;
    o_.config.vad.emit_probabilities = o_.emit_probabilities;
    if (o_.turn) o_.config.turn = turn_;
    if (o_.transcripts) o_.config.stt = stt_;
    return o_;
  }

 private:
  WhisperLanguageDetection detection(const std::string& name) const {
    if (const auto d = parse_language_detection(name)) return *d;
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: language_detection must be 'first' or 'each', got '{}'", function_, name));
  }
  void decoding(const std::string& name) {
    if (name == "faster-whisper") use_faster_whisper_decoding(stt_.decode, stt_.fallback);
    else if (name != "greedy") {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: decoding must be 'greedy' or 'faster-whisper', got '{}'", function_, name));
    }
  }
  std::vector<float> temperatures(nb::handle v) const {
    std::vector<float> out;
    if (!nb::isinstance<nb::sequence>(v) || nb::isinstance<nb::str>(v)) {
      throw nb::type_error(fmt::format("{}: temperatures must be a sequence of floats, got {}", function_,
                                       nb::type_name(v.type()).c_str())
                               .c_str());
    }
    for (nb::handle item : v) out.push_back(static_cast<float>(value_of<double>(item, "temperatures", function_, "a float")));
    return out;
  }
  WhisperWindow window(const std::string& name) const {
    if (name == "full") return WhisperWindow::kFull;
    if (name == "fit") return WhisperWindow::kFit;
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: window must be 'full' (30 s, Whisper's own) or 'fit' (cut to the segment), got '{}'",
                            function_, name));
  }

  const char* function_;
  StreamOptions o_;
  std::optional<int> beam_size_;
  std::optional<int> best_of_;
  std::optional<std::vector<float>> temperatures_;
  TurnOptions turn_;
  SttOptions stt_;
};

// A call's voice_options: {name: float} (None: the voice's own settings).
std::map<std::string, double, std::less<>> voice_settings(nb::handle v, const char* function) {
  std::map<std::string, double, std::less<>> out;
  if (v.is_none()) return out;
  if (!nb::isinstance<nb::dict>(v)) {
    throw nb::type_error(fmt::format("{}: voice_options must be a dict of setting name -> float, got {}", function,
                                     nb::type_name(v.type()).c_str())
                             .c_str());
  }
  for (auto [name, value] : nb::borrow<nb::dict>(v)) {
    const std::string n = value_of<std::string>(name, "voice_options key", function, "a str");
    out[n] = value_of<double>(value, "voice_options['" + n + "']", function, "a float");
  }
  return out;
}

// A speech setting that a call (rate_key "speech_sample_rate") and a speech session ("sample_rate")
// both take; false when `key` is none of them.
bool take_speech_option(const std::string& key, nb::handle v, SpeechConfig& c, const char* function,
                        std::string_view rate_key) {
  if (key == "voice_options") c.voice_options = voice_settings(v, function);
  else if (key == "volume") c.volume = static_cast<float>(value_of<double>(v, key, function, "a float"));
  else if (key == "fast_start") c.fast_start = value_of<bool>(v, key, function, "a bool");
  else if (key == rate_key) c.sample_rate_hz = value_of<int>(v, key, function, "an int");
  else if (key == "max_queued") c.max_queued = value_of<int>(v, key, function, "an int");
  else return false;
  return true;
}

}  // namespace

StreamOptions parse_stream_options(const nb::kwargs& kwargs, const char* function) {
  StreamParse parse(function);
  for (auto [k, v] : kwargs) {
    const std::string key = nb::cast<std::string>(k);
    if (!parse.take(key, v)) unknown(function, key, kStreamNames);
  }
  StreamOptions o = parse.finish();
  o.config.validate();
  return o;
}

CallConfig parse_call_options(const nb::kwargs& kwargs, const char* function) {
  StreamParse parse(function);
  CallConfig c;
  for (auto [k, v] : kwargs) {
    const std::string key = nb::cast<std::string>(k);
    if (parse.take(key, v) || take_speech_option(key, v, c.speak, function, "speech_sample_rate")) continue;
    auto integer = [&] { return value_of<int>(v, key, function, "an int"); };
    auto flag = [&] { return value_of<bool>(v, key, function, "a bool"); };
    if (key == "barge_in") c.barge_in.enabled = flag();
    else if (key == "barge_in_min_speech_ms") c.barge_in.min_speech_ms = integer();
    else if (key == "barge_in_on_turn_end") c.barge_in.on_turn_end = flag();
    else if (key == "playout_lead_ms") c.playout_lead_ms = integer();
    else unknown(function, key, fmt::format("{}, {}", kStreamNames, kCallNames));
  }
  c.listen = parse.finish().config;
  c.validate();
  return c;
}

SpeechConfig parse_speech_options(const nb::kwargs& kwargs, const char* function) {
  SpeechConfig c;
  for (auto [k, v] : kwargs) {
    const std::string key = nb::cast<std::string>(k);
    if (!take_speech_option(key, v, c, function, "sample_rate")) unknown(function, key, kSpeechNames);
  }
  c.validate();
  return c;
}

std::map<std::string, std::string, std::less<>> model_options(nb::handle dict, const char* function,
                                                              const char* argument) {
  std::map<std::string, std::string, std::less<>> out;
  if (dict.is_none()) return out;
  if (!nb::isinstance<nb::dict>(dict)) {
    throw nb::type_error(fmt::format("{}: {} must be a dict of setting name -> str, int or float, got {}", function,
                                     argument, nb::type_name(dict.type()).c_str())
                             .c_str());
  }
  for (auto [name, value] : nb::borrow<nb::dict>(dict)) {
    const std::string n = value_of<std::string>(name, fmt::format("{} key", argument), function, "a str");
    const bool number = !PyBool_Check(value.ptr()) && (PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr()));
    if (!number && !PyUnicode_Check(value.ptr())) {
      throw nb::type_error(fmt::format("{}: {}['{}'] must be a str, an int or a float, got {}", function, argument, n,
                                       nb::type_name(value.type()).c_str())
                               .c_str());
    }
    // str(): the shortest text that reads back as the same number (what the engine's stod reads).
    out[n] = nb::cast<std::string>(nb::str(value));
  }
  return out;
}

}  // namespace brisvox::python
