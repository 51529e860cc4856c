// POST /v1/vad and POST /v1/transcribe: speech segments, or the transcript, of one audio file sent
// as the request body.
//
// The body is a file libsndfile recognises by its content (WAV, FLAC, OGG, ...), or headerless
// PCM when the query gives encoding= (and sample_rate= for pcm_s16le/pcm_f32le); or a
// multipart/form-data form whose field "file" is that. It is decoded a block at a time as the
// engine takes it (AudioReader): memory does not grow with the audio's duration. The audio goes
// through the engine as one stream, exactly as `brisvox vad` does, and the answer is the JSON
// object `brisvox vad --format json` prints for a file, with "file" = ?name= (default "request").
// Runs on a job thread: it waits for the engine, never on a network thread.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "brisvox/engine/engine.h"
#include "brisvox/engine/offline.h"
#include "brisvox/error.h"
#include "server/metrics.h"
#include "server/query_params.h"

namespace brisvox::server {

struct HttpAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string error_code;  // for the error counter; empty on success
};

// `endpoint`: kVad answers the document of `brisvox vad --format json`, kTranscribe that of
// `brisvox transcribe --format json`. `abort` set: give up (the server is stopping) with 503;
// `client_gone` set: give up too (no one waits for the answer). The
// decoded audio is counted in `metrics` (received, and rejected for what a failed request did not
// feed).
// max_duration_s: the longest decoded audio accepted (limits.max_upload_s); longer is 413
// "audio_too_long", refused as soon as the header or the decoder shows it.
// content_type: the request's Content-Type; multipart/form-data (`curl -F file=@call.wav`) takes
// the audio from the form field "file" (server/multipart.h), anything else is the audio itself.
HttpAnswer run_audio_request(Engine& engine, ServerMetrics& metrics, std::string_view body, std::string_view query,
                             AudioEndpoint endpoint, const std::atomic<bool>& abort, double max_duration_s,
                             std::string_view content_type = {}, const std::atomic<bool>* client_gone = nullptr);

// The engine's run of one uploaded recording (`audio`: the file's bytes) with `request`'s pipeline,
// as run_audio_request does it once the request is read: decoded a block at a time, the duration
// limit, `abort` and `client_gone` as above, the audio counted in `metrics`. Throws Error.
OfflineResult run_upload(Engine& engine, ServerMetrics& metrics, std::string_view audio, const AudioRequest& request,
                         const std::atomic<bool>& abort, double max_duration_s, const std::atomic<bool>* client_gone);
// The answer to an upload that failed with `e` (brisvox's error shape; 413 names
// --max-upload-seconds).
HttpAnswer upload_error_answer(const Error& e, double max_duration_s);

// The HTTP status for a brisvox error code (400 for bad input, 503 when overloaded, ...).
int http_status_for(ErrorCode code);
// The documented error code of an HTTP answer for a brisvox error code (docs/PROTOCOL.md):
// kInvalidArgument is "bad_request", kLimitExceeded "audio_too_long", the others their name.
std::string_view http_code_for(ErrorCode code);

}  // namespace brisvox::server
