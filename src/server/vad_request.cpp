#include "server/vad_request.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/error.h"
#include "brisvox/models/vad/segmenter_params.h"
#include "server/messages.h"
#include "server/query_params.h"

namespace brisvox::server {
namespace {

HttpAnswer error_answer(int status, std::string_view code, std::string_view message) {
  HttpAnswer a;
  a.status = status;
  a.error_code = std::string(code);
  a.body = http_error_body(code, message);
  return a;
}

struct Result {
  std::vector<std::pair<double, double>> segments_s;
  std::vector<float> frame_probs;
  nlohmann::ordered_json turns = nlohmann::ordered_json::array();  // with events=turn
};

// Feeds the audio as fast as the stream takes it (as `brisvox vad` does) and collects the events.
// `pushed`: samples the stream took so far, also when this throws.
Result run_stream(Engine& engine, const Audio& audio, StreamConfig config, const std::atomic<bool>& abort,
                  std::size_t& pushed) {
  config.sample_rate_hz = audio.sample_rate_hz;
  config.turn_wait_for_verdict = true;  // a whole file: the result must not depend on timing
  Stream stream = engine.open_stream(config);
  Result r;
  bool flushed = false;
  bool ended = false;
  double end_s = 0;
  Event events[32];
  while (!ended) {
    if (abort.load()) throw Error(ErrorCode::kClosed, "the server is shutting down");
    bool progress = false;
    if (pushed < audio.samples.size()) {
      const std::size_t room = std::min(audio.samples.size() - pushed, stream.writable());
      if (room > 0) {
        pushed += stream.push(std::span(audio.samples).subspan(pushed, room));
        progress = true;
      }
    } else if (!flushed) {
      stream.flush();
      flushed = true;
      progress = true;
    }
    for (std::size_t n; (n = stream.poll(events)) > 0;) {
      progress = true;
      for (std::size_t i = 0; i < n; ++i) {
        const Event& e = events[i];
        switch (e.type) {
          case EventType::kSpeechEnd:
            r.segments_s.emplace_back(e.start_s, e.end_s);
            break;
          case EventType::kVadProbability:
            r.frame_probs.push_back(e.probability);
            break;
          case EventType::kTurnEnd: {
            nlohmann::ordered_json t{{"start", e.start_s}, {"end", e.end_s}};
            if (e.probability >= 0.0f) t["probability"] = e.probability; else t["probability"] = nullptr;
            t["reason"] = std::string(to_string(e.turn_reason));
            r.turns.push_back(std::move(t));
            break;
          }
          case EventType::kError:
            throw Error(e.error_code, stream.last_error());
          case EventType::kEndOfStream:
            ended = true;
            end_s = e.end_s;
            break;
          default:
            break;  // speech starts; no overload (only what fits is pushed); no other types asked for
        }
      }
    }
    if (!progress) stream.wait_events(std::chrono::microseconds(500));
  }
  if (config.emit_probabilities) {
    // As `brisvox vad --frame-probs`: every model frame must have its probability.
    const int model_rate =
        config.model_rate_hz != 0 ? config.model_rate_hz : (audio.sample_rate_hz == 8000 ? 8000 : 16000);
    const auto chunk = static_cast<std::size_t>(vad_window_samples(model_rate));
    const auto total = static_cast<std::size_t>(std::llround(end_s * model_rate));
    const std::size_t expected = (total + chunk - 1) / chunk;
    if (r.frame_probs.size() != expected) {
      throw Error(ErrorCode::kInternal, fmt::format("{} of {} frame probabilities arrived (events were dropped)",
                                                    r.frame_probs.size(), expected));
    }
  }
  return r;
}

}  // namespace

int http_status_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kBadAudio:
      return 400;
    case ErrorCode::kUnsupportedAudio:
      return 415;
    case ErrorCode::kOverloaded:
    case ErrorCode::kClosed:
    case ErrorCode::kInferenceTimeout:  // the machine is too slow right now: the client may retry
      return 503;
    default:
      return 500;
  }
}

HttpAnswer run_vad_request(Engine& engine, ServerMetrics& metrics, std::string_view body, std::string_view query,
                           const std::atomic<bool>& abort) {
  AudioRequest request;
  try {
    request = parse_audio_request(query, AudioEndpoint::kVad);
  } catch (const Error& e) {
    return error_answer(400, "bad_request", e.what());
  }
  try {
    if (body.empty()) throw Error(ErrorCode::kBadAudio, "the request body is empty: send the audio file as the body");
    Audio audio;
    if (request.encoding_given) {
      audio.samples = decode_pcm(std::as_bytes(std::span(body.data(), body.size())), request.encoding);
      audio.sample_rate_hz = request.stream.sample_rate_hz;
      audio.num_channels_in_source = 1;
      if (audio.samples.empty()) throw Error(ErrorCode::kBadAudio, "the request body holds no complete sample");
    } else {
      // Decoded where it lies: the messages name the request (?name=), not a temporary file.
      audio = read_audio_memory(std::as_bytes(std::span(body.data(), body.size())), request.name);
    }
    metrics.audio_samples_received.fetch_add(audio.samples.size(), std::memory_order_relaxed);
    std::size_t pushed = 0;
    Result r;
    try {
      r = run_stream(engine, audio, request.stream, abort, pushed);
    } catch (...) {
      // What the engine took is its to count (analysed or discarded when the stream closed).
      metrics.count_loss(AudioLoss::kRequestFailed, audio.samples.size() - pushed);
      throw;
    }
    // The same object, key order and number format as `brisvox vad --format json`.
    nlohmann::ordered_json j;
    j["file"] = request.name;
    j["sample_rate"] = audio.sample_rate_hz;
    j["duration"] = audio.duration_s();
    j["segments"] = nlohmann::ordered_json::array();
    for (const auto& [start, end] : r.segments_s) j["segments"].push_back({{"start", start}, {"end", end}});
    if (request.stream.emit_probabilities) j["frame_probs"] = r.frame_probs;
    if (request.stream.detect_turns) j["turns"] = r.turns;  // as `brisvox turn` prints them
    HttpAnswer a;
    a.body = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    return a;
  } catch (const Error& e) {
    return error_answer(http_status_for(e.code()), to_string(e.code()), e.what());
  } catch (const std::exception& e) {
    return error_answer(500, "internal", e.what());
  }
}

}  // namespace brisvox::server
