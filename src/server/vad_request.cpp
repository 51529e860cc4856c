#include "server/vad_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/engine/offline.h"
#include "brisvox/error.h"
#include "brisvox/formats/result_json.h"
#include "server/messages.h"
#include "server/multipart.h"
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

OfflineResult run_upload(Engine& engine, ServerMetrics& metrics, std::string_view audio, const AudioRequest& request,
                         const std::atomic<bool>& abort, double max_duration_s, const std::atomic<bool>* client_gone) {
  // Decoded a block at a time as the engine takes it (AudioReader): what a request holds is its
  // audio and a few blocks, however long the audio; the limit is checked from the header (or a
  // headerless audio's size) before anything is decoded, else as decoding passes it.
  OfflineOptions options;
  options.stream = request.stream;
  options.abort = &abort;
  options.cancel = client_gone;
  options.read.max_duration_s = max_duration_s;
  if (request.encoding_given) {
    options.read.raw_encoding = request.encoding;
    options.read.raw_sample_rate_hz = request.stream.sample_rate_hz;
  }
  // The messages name the request (?name=), not a temporary file.
  const OfflineInput input{request.name, std::nullopt, std::as_bytes(std::span(audio.data(), audio.size()))};
  const OfflineResult r = run_offline(engine, input, options);
  metrics.audio_samples_received.fetch_add(r.samples_read, std::memory_order_relaxed);
  if (r.error) {
    // What the engine took is its to count (analysed or discarded when the stream closed).
    metrics.count_loss(AudioLoss::kRequestFailed, r.samples_read - std::min(r.samples_read, r.samples_fed));
    throw *r.error;
  }
  return r;
}

HttpAnswer upload_error_answer(const Error& e, double max_duration_s) {
  if (e.code() == ErrorCode::kLimitExceeded) {
    return error_answer(413, http_code_for(e.code()),
                        fmt::format("{}: this server's limit is --max-upload-seconds {}; split the file or "
                                    "stream it on /v1/stream",
                                    e.what(), max_duration_s));
  }
  return error_answer(http_status_for(e.code()), http_code_for(e.code()), e.what());
}

HttpAnswer run_audio_request(Engine& engine, ServerMetrics& metrics, std::string_view body, std::string_view query,
                             AudioEndpoint endpoint, const std::atomic<bool>& abort, double max_duration_s,
                             std::string_view content_type, const std::atomic<bool>* client_gone) {
  AudioRequest request;
  try {
    request = parse_audio_request(query, endpoint);
    check_stream_models(engine.config(), request.stream);
  } catch (const Error& e) {
    return error_answer(400, "bad_request", e.what());
  }
  try {
    if (is_multipart_form(content_type)) {
      const FormFile file = form_field(body, content_type, "file");
      body = file.data;
      // The uploaded file's name names the result, unless the query gave one.
      if (!file.filename.empty() && parse_query_string(query).count("name") == 0) request.name = file.filename;
      if (body.empty()) throw Error(ErrorCode::kBadAudio, "the form field 'file' is empty: it holds no audio");
    }
    if (body.empty()) throw Error(ErrorCode::kBadAudio, "the request body is empty: send the audio file as the body");
    const OfflineResult r = run_upload(engine, metrics, body, request, abort, max_duration_s, client_gone);
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
    return upload_error_answer(e, max_duration_s);
  } catch (const std::exception& e) {
    return error_answer(500, "internal", e.what());
  }
}

}  // namespace brisvox::server
