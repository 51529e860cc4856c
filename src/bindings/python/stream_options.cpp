#include "stream_options.h"

#include <fmt/format.h>
#include <nanobind/stl/string.h>

#include <string>

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

}  // namespace

StreamOptions parse_stream_options(const nb::kwargs& kwargs, const char* function) {
  StreamOptions o;
  StreamConfig& c = o.config;
  TurnOptions turn;
  for (auto [k, v] : kwargs) {
    const std::string key = nb::cast<std::string>(k);
    auto integer = [&] { return value_of<int>(v, key, function, "an int"); };
    auto real = [&] { return value_of<double>(v, key, function, "a float"); };
    auto flag = [&] { return value_of<bool>(v, key, function, "a bool"); };
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
    else if (key == "emit_probabilities") o.emit_probabilities = flag();
    else if (key == "turn") o.turn = flag();
    else if (key == "turn_stop_ms") turn.params.stop_ms = integer();
    else if (key == "turn_pre_speech_ms") turn.params.pre_speech_ms = integer();
    else if (key == "turn_max_silence_ms") turn.params.max_silence_ms = integer();
    else if (key == "turn_threshold") turn.params.turn_threshold = real();
    else if (key == "turn_wait_for_verdict") turn.wait_for_verdict = flag();
    else {
      throw nb::type_error(fmt::format("{}: unknown option '{}' (options: sample_rate, buffer_ms, model_rate, "
                                       "threshold, neg_threshold, min_speech_ms, min_silence_ms, speech_pad_ms, "
                                       "max_speech_s, min_silence_at_max_speech_ms, "
                                       "use_max_poss_sil_at_max_speech, emit_probabilities, turn, turn_stop_ms, "
                                       "turn_pre_speech_ms, turn_max_silence_ms, turn_threshold, "
                                       "turn_wait_for_verdict)",
                                       function, key)
                               .c_str());
    }
  }
  c.vad.emit_probabilities = o.emit_probabilities;
  if (o.turn) c.turn = turn;
  c.validate();
  return o;
}

}  // namespace brisvox::python
