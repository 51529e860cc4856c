// Query strings of the audio endpoints: `/v1/stream?sample_rate=8000&encoding=mulaw&threshold=0.6`.
//
// Every key is checked: an unknown or repeated key, a malformed number or an out-of-range value is
// an Error(kInvalidArgument) whose message names the key and the accepted values (the server
// answers it with HTTP 400 "bad_request"). Values are percent-decoded ('+' is a space).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "brisvox/audio/pcm.h"
#include "brisvox/engine/engine.h"

namespace brisvox::server {

// A query's keys and values, percent-decoded.
using QueryParams = std::map<std::string, std::string>;

// Splits and percent-decodes "a=1&b=x%20y" (the part after '?'). Error(kInvalidArgument) on a
// repeated key, an empty key or a bad escape.
QueryParams parse_query_string(std::string_view query);

// A query value true/1 or false/0; Error(kInvalidArgument) naming `key` otherwise.
bool parse_query_bool(const std::string& key, const std::string& value);

// The part of a request target after '?' ("" if none), and the path before it.
std::string_view target_query(std::string_view target);
std::string_view target_path(std::string_view target);

// What a client asked for, with every default filled in.
struct AudioRequest {
  StreamConfig stream;  // sample_rate_hz and the pipeline: vad (model rate, parameters, events=vad), turn
  SampleEncoding encoding = SampleEncoding::kPcmS16le;
  bool encoding_given = false;  // POST /v1/vad: the body is headerless PCM only when given
  bool sample_rate_given = false;
  std::string name = "request";  // POST /v1/vad, /v1/transcribe: the "file" of the result
  std::string tag;               // the client's call id (request_tag.h); "" when not given
};

enum class AudioEndpoint { kStream, kVad, kTranscribe, kCall };

// Keys of both endpoints:
//   sample_rate (1000..768000; stream default 16000), encoding (pcm_s16le|pcm_f32le|mulaw|alaw;
//   stream default pcm_s16le), model_rate (8000|16000), events (comma list: vad), token (checked
//   elsewhere), and the segmenter's: threshold, neg_threshold, min_speech_ms, max_speech_s,
//   min_silence_ms, speech_pad_ms, min_silence_at_max_speech_ms, use_max_poss_sil_at_max_speech;
//   the turn stage's (events=turn): stop_ms, pre_speech_ms, max_silence_ms, turn_threshold; the
//   stt stage's (events=transcript, and always on kTranscribe): language, window (full|fit); tag
//   (the client's call id, request_tag.h).
// kVad and kTranscribe also take name (the "file" of the result).
// kCall takes the keys of kStream (a call's caller side; its other keys are call_params.h's, which
// `other_keys` lists in the message of an unknown key).
AudioRequest parse_audio_request(std::string_view query, AudioEndpoint endpoint);
AudioRequest parse_audio_request(const QueryParams& params, AudioEndpoint endpoint, std::string_view other_keys = {});

// Error(kInvalidArgument) naming the server's option to start it with when `stream` asks for a
// stage whose model `engine` does not have (events=turn without --turn-model, transcripts without
// --stt-model): the engine's own message names its config, a server's client needs the flag.
void check_stream_models(const EngineConfig& engine, const StreamConfig& stream);

}  // namespace brisvox::server
