// What a /v1/call client asks for (docs/PROTOCOL.md, "Calls"): the query of the upgrade, and the
// JSON messages it sends on the socket. Every key is checked, as for /v1/stream and /v1/tts: an
// unknown key, a value of the wrong type or out of range is an Error(kInvalidArgument) naming the
// key (answered 400 "bad_request" before the upgrade). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "brisvox/engine/engine.h"
#include "server/query_params.h"
#include "server/tts_params.h"

namespace brisvox::server {

struct CallRequest {
  AudioRequest audio;  // the caller's side: rate, encoding (also the speech's), pipeline, tag
  TtsOptions voice;    // the voice and its settings; speech.sample_rate_hz 0: the call's rate
  BargeInOptions barge_in;
  int playout_lead_ms = 500;
};

// GET /v1/call?...: /v1/stream's keys (sample_rate, encoding, events, the segmenter's, the turn's,
// the transcripts', tag, token), the voice's (voice, length_scale, noise_scale, noise_w_scale,
// speaker_id, volume, fast_start), and the call's own: barge_in (true|false, default true),
// barge_in_min_ms (32..10000, default 400), barge_in_on (speech|turn_end, default speech),
// playout_lead_ms (0..60000, default 500).
CallRequest parse_call_request(std::string_view query);

// Messages a client sends: {"type":"speak","text":"...","id":...} (id optional: a string of at
// most 256 bytes or an integer, echoed in the speak's events; default: the utterance's number),
// {"type":"cancel"}, {"type":"mark","name":"..."} (at most 256 bytes), {"type":"close"}. Other
// fields are ignored.
enum class CallMessageType { kSpeak, kCancel, kMark, kClose };
struct CallMessage {
  bool ok = false;
  CallMessageType type = CallMessageType::kSpeak;
  std::string text;  // kSpeak
  std::string id;    // kSpeak: the client's id as JSON (a string with its quotes, or an integer); "" none
  std::string name;  // kMark
  std::string error; // !ok: what was wrong
};
// Never throws.
CallMessage parse_call_message(std::string_view json_text);

}  // namespace brisvox::server
