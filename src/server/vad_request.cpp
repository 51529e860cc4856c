#include "server/vad_request.h"

#include <fmt/format.h>

#include <span>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/engine/offline.h"
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

}  // namespace

int http_status_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kBadAudio:
      return 400;
    case ErrorCode::kUnsupportedAudio:
      return 415;
    case ErrorCode::kLimitExceeded:
      return 413;
    case ErrorCode::kOverloaded:
    case ErrorCode::kClosed:
    case ErrorCode::kInferenceTimeout:  // the machine is too slow right now: the client may retry
      return 503;
    default:
      return 500;
  }
}

std::string_view http_code_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "bad_request";
    case ErrorCode::kLimitExceeded:
      return "audio_too_long";
    default:
      return to_string(code);
  }
}

HttpAnswer run_audio_request(Engine& engine, ServerMetrics& metrics, std::string_view body, std::string_view query,
                             AudioEndpoint endpoint, const std::atomic<bool>& abort, double max_duration_s) {
  AudioRequest request;
  try {
    request = parse_audio_request(query, endpoint);
  } catch (const Error& e) {
    return error_answer(400, "bad_request", e.what());
  }
  try {
    if (body.empty()) throw Error(ErrorCode::kBadAudio, "the request body is empty: send the audio file as the body");
    Audio audio;
    if (request.encoding_given) {
      // Headerless: the duration is known from the size before anything is decoded.
      const double duration_s = static_cast<double>(body.size() / bytes_per_sample(request.encoding)) /
                                request.stream.sample_rate_hz;
      if (max_duration_s > 0 && duration_s > max_duration_s) {
        throw Error(ErrorCode::kLimitExceeded,
                    fmt::format("audio file '{}' is longer than the {} s allowed (it holds {:.1f} s)", request.name,
                                max_duration_s, duration_s));
      }
      audio.samples = decode_pcm(std::as_bytes(std::span(body.data(), body.size())), request.encoding);
      audio.sample_rate_hz = request.stream.sample_rate_hz;
      audio.num_channels_in_source = 1;
      if (audio.samples.empty()) throw Error(ErrorCode::kBadAudio, "the request body holds no complete sample");
    } else {
      // Decoded where it lies: the messages name the request (?name=), not a temporary file.
      audio = read_audio_memory(std::as_bytes(std::span(body.data(), body.size())), request.name, max_duration_s);
    }
    metrics.audio_samples_received.fetch_add(audio.samples.size(), std::memory_order_relaxed);
    const std::size_t num_samples = audio.samples.size();
    OfflineInput input{request.name, std::move(audio)};
    OfflineOptions options;
    options.stream = request.stream;
    options.abort = &abort;
    const OfflineResult r = run_offline(engine, input, options);
    if (r.error) {
      // What the engine took is its to count (analysed or discarded when the stream closed).
      metrics.count_loss(AudioLoss::kRequestFailed, num_samples - r.samples_fed);
      throw *r.error;
    }
    HttpAnswer a;
    if (endpoint == AudioEndpoint::kTranscribe) {
      a.body = transcript_json(r);  // as `brisvox transcribe --format json`
    } else {
      // The same object, key order and number format as `brisvox vad --format json`; turns as
      // `brisvox turn` prints them.
      std::vector<ResultPart> parts{ResultPart::kSegments};
      if (request.stream.vad.emit_probabilities) parts.push_back(ResultPart::kFrameProbs);
      if (request.stream.turn) parts.push_back(ResultPart::kTurns);
      a.body = result_json(r, parts);
    }
    a.body += "\n";
    return a;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kLimitExceeded) {
      return error_answer(413, http_code_for(e.code()),
                          fmt::format("{}: this server's limit is --max-upload-seconds {}; split the file or "
                                      "stream it on /v1/stream",
                                      e.what(), max_duration_s));
    }
    return error_answer(http_status_for(e.code()), http_code_for(e.code()), e.what());
  } catch (const std::exception& e) {
    return error_answer(500, "internal", e.what());
  }
}

}  // namespace brisvox::server
