#include "server/query_params.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "brisvox/error.h"
#include "server/request_tag.h"

namespace brisvox::server {
namespace {

[[noreturn]] void bad_query(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, message); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size() || hex_value(s[i + 1]) < 0 || hex_value(s[i + 2]) < 0) {
        bad_query(fmt::format("bad percent escape in query '{}'", s));
      }
      const int hi = hex_value(s[i + 1]);
      const int lo = hex_value(s[i + 2]);
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

long long parse_int(const std::string& key, const std::string& value) {
  long long v = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end) {
    bad_query(fmt::format("query key '{}' must be an integer, got '{}'", key, value));
  }
  return v;
}

int parse_int_in(const std::string& key, const std::string& value, long long lo, long long hi) {
  const long long v = parse_int(key, value);
  if (v < lo || v > hi) bad_query(fmt::format("query key '{}' must be {} to {}, got {}", key, lo, hi, v));
  return static_cast<int>(v);
}

double parse_double(const std::string& key, const std::string& value) {
  double v = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end || std::isnan(v)) {
    bad_query(fmt::format("query key '{}' must be a number, got '{}'", key, value));
  }
  return v;
}

}  // namespace

bool parse_query_bool(const std::string& key, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  bad_query(fmt::format("query key '{}' must be true, false, 1 or 0, got '{}'", key, value));
}

std::string_view target_query(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
}

std::string_view target_path(std::string_view target) { return target.substr(0, target.find('?')); }

QueryParams parse_query_string(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;  // "a=1&&b=2"
    const auto eq = pair.find('=');
    std::string key = percent_decode(pair.substr(0, eq));
    std::string value = eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1));
    if (key.empty()) bad_query("empty key in query");
    if (out.contains(key)) bad_query(fmt::format("query key '{}' is given twice", key));
    out.emplace(std::move(key), std::move(value));
  }
  return out;
}

AudioRequest parse_audio_request(std::string_view query, AudioEndpoint endpoint) {
  return parse_audio_request(parse_query_string(query), endpoint);
}

AudioRequest parse_audio_request(const QueryParams& params, AudioEndpoint endpoint, std::string_view other_keys) {
  const bool live = endpoint == AudioEndpoint::kStream || endpoint == AudioEndpoint::kCall;
  AudioRequest r;
  r.stream.sample_rate_hz = 16000;
  SegmenterParams& p = r.stream.vad.params;
  TurnParams turn;  // used when events= lists turn
  bool wants_turn = false;
  SttOptions stt;     // used when events= lists transcript, and on /v1/transcribe
  bool wants_stt = endpoint == AudioEndpoint::kTranscribe;
  // decoding= sets a preset that beam_size, best_of and temperatures refine, in any order.
  std::optional<int> beam_size, best_of;
  std::optional<std::vector<float>> temperatures;
  for (const auto& [key, value] : params) {
    if (key == "sample_rate") {
      r.stream.sample_rate_hz =
          parse_int_in(key, value, StreamConfig::kMinSampleRateHz, StreamConfig::kMaxSampleRateHz);
      r.sample_rate_given = true;
    } else if (key == "encoding") {
      r.encoding = parse_encoding(value);
      r.encoding_given = true;
    } else if (key == "model_rate") {
      r.stream.vad.model_rate_hz = parse_int_in(key, value, 0, 16000);
      if (r.stream.vad.model_rate_hz != 8000 && r.stream.vad.model_rate_hz != 16000) {
        bad_query(fmt::format("query key 'model_rate' must be 8000 or 16000, got {}", value));
      }
    } else if (key == "events") {
      std::string_view list = value;
      while (!list.empty()) {
        const auto comma = list.find(',');
        const std::string_view item = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        if (item == "vad") {
          r.stream.vad.emit_probabilities = true;
        } else if (item == "turn") {
          wants_turn = true;  // check_stream_models checks the server has a turn model
        } else if (item == "transcript") {
          wants_stt = true;  // the engine checks it has a Whisper model
        } else if (!item.empty()) {
          bad_query(
              fmt::format("query key 'events' lists unknown event type '{}': the optional events are: vad, turn, "
                          "transcript (speech_start, speech_end, overload and error are always sent)",
                          item));
        }
      }
    } else if (key == "tag") {
      r.tag = parse_tag(value);
    } else if (key == "token") {
      // Checked by the access policy before the query is parsed.
    } else if (key == "name" && !live) {
      r.name = value;
    } else if (key == "language") {
      if (value.empty() || value.size() > 8) {
        bad_query(fmt::format("query key 'language' must be a language code such as en, or auto, got '{}'", value));
      }
      stt.decode.language = value;
    } else if (key == "language_detection") {
      const auto d = parse_language_detection(value);
      if (!d) bad_query(fmt::format("query key 'language_detection' must be first or each, got '{}'", value));
      stt.language_detection = *d;
    } else if (key == "prompt") {
      if (value.size() > 4096) bad_query("query key 'prompt' is longer than 4096 bytes");
      stt.decode.prompt = value;
    } else if (key == "hotwords") {
      if (value.size() > 4096) bad_query("query key 'hotwords' is longer than 4096 bytes");
      stt.decode.hotwords = value;
    } else if (key == "word_timestamps") {
      stt.word_timestamps = parse_query_bool(key, value);
    } else if (key == "partial_ms" && live) {
      stt.partial_interval_ms = parse_int_in(key, value, 0, 10'000);
    } else if (key == "decoding") {
      if (value == "faster-whisper") use_faster_whisper_decoding(stt.decode, stt.fallback);
      else if (value != "greedy") bad_query(fmt::format("query key 'decoding' must be greedy or faster-whisper, got '{}'", value));
    } else if (key == "beam_size") {
      beam_size = parse_int_in(key, value, 1, 16);
    } else if (key == "best_of") {
      best_of = parse_int_in(key, value, 1, 16);
    } else if (key == "temperatures") {
      try {
        temperatures = parse_temperatures(value);
      } catch (const Error& e) {
        bad_query(fmt::format("query key 'temperatures': {}", e.what()));
      }
    } else if (key == "window") {
      if (value == "full") stt.window = WhisperWindow::kFull;
      else if (value == "fit") stt.window = WhisperWindow::kFit;
      else bad_query(fmt::format("query key 'window' must be full or fit, got '{}'", value));
    } else if (key == "threshold") {
      p.threshold = parse_double(key, value);
    } else if (key == "neg_threshold") {
      p.neg_threshold = parse_double(key, value);
    } else if (key == "min_speech_ms") {
      p.min_speech_ms = parse_int_in(key, value, 0, std::numeric_limits<int>::max());
    } else if (key == "max_speech_s") {
      p.max_speech_s = parse_double(key, value);
    } else if (key == "min_silence_ms") {
      p.min_silence_ms = parse_int_in(key, value, 0, std::numeric_limits<int>::max());
    } else if (key == "speech_pad_ms") {
      p.speech_pad_ms = parse_int_in(key, value, 0, std::numeric_limits<int>::max());
    } else if (key == "min_silence_at_max_speech_ms") {
      p.min_silence_at_max_speech_ms = parse_int_in(key, value, 0, std::numeric_limits<int>::max());
    } else if (key == "use_max_poss_sil_at_max_speech") {
      p.use_max_poss_sil_at_max_speech = parse_query_bool(key, value);
    } else if (key == "stop_ms") {
      turn.stop_ms = parse_int_in(key, value, 0, 60000);
    } else if (key == "pre_speech_ms") {
      turn.pre_speech_ms = parse_int_in(key, value, 0, 8000);
    } else if (key == "max_silence_ms") {
      turn.max_silence_ms = parse_int_in(key, value, 0, 600000);
    } else if (key == "turn_threshold") {
      turn.turn_threshold = parse_double(key, value);
    } else {
      bad_query(
          fmt::format("unknown query key '{}'; accepted: sample_rate, encoding, model_rate, events, token, {}"
                      "threshold, neg_threshold, min_speech_ms, max_speech_s, min_silence_ms, speech_pad_ms, "
                      "min_silence_at_max_speech_ms, use_max_poss_sil_at_max_speech, stop_ms, pre_speech_ms, "
                      "max_silence_ms, turn_threshold, language, language_detection, window, tag{}",
                      key, live ? "" : "name, ", other_keys.empty() ? "" : fmt::format(", {}", other_keys)));
    }
  }
  if (live || r.encoding_given) {
    if (!r.sample_rate_given && (r.encoding == SampleEncoding::kMulaw || r.encoding == SampleEncoding::kAlaw)) {
      r.stream.sample_rate_hz = 8000;  // G.711 is 8 kHz unless said otherwise
    } else if (!r.sample_rate_given && !live) {
      bad_query(fmt::format("headerless {} audio needs query key 'sample_rate'", to_string(r.encoding)));
    }
  }
  if (wants_turn) {
    r.stream.turn = TurnOptions{};
    r.stream.turn->params = turn;
  }
  if (beam_size) stt.decode.beam_size = *beam_size;
  if (best_of) stt.decode.best_of = *best_of;
  if (temperatures) stt.fallback.temperatures = *temperatures;
  if (wants_stt) r.stream.stt = stt;
  // The segmenter's own checks name its fields, which are the query's keys.
  p.validate();
  r.stream.validate();
  return r;
}

void check_stream_models(const EngineConfig& engine, const StreamConfig& stream) {
  auto has = [&](const std::string& name, ModelFamily family) {
    const ModelSpec* m = engine.find_model(name);
    return m != nullptr && m->family == family;
  };
  if (stream.turn && !has(stream.turn->model, ModelFamily::kSmartTurn)) {
    throw Error(ErrorCode::kInvalidArgument,
                "this server has no end-of-turn model for events=turn: start it with --turn-model v3.2 (or PATH)");
  }
  if (stream.stt && !has(stream.stt->model, ModelFamily::kWhisper)) {
    throw Error(ErrorCode::kInvalidArgument,
                "this server has no Whisper model for transcripts: start it with --stt-model tiny.en (or FOLDER)");
  }
}

}  // namespace brisvox::server
