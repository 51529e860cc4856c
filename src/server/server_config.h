// Configuration of `brisvox serve`: where it listens, the engine it runs, who may connect, and the
// limits that keep one client from hurting the others. Plain structs with defaults; units in the
// names; validate() names the first bad field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "brisvox/engine/engine.h"
#include "server/server_log.h"
#include "server/telephony_metrics.h"

namespace brisvox::server {

struct ServerLimits {
  int max_streams = 1000;                              // WebSocket streams open at once; 503 beyond
  std::size_t max_message_bytes = 1 << 20;             // one WebSocket message (audio or control); 1009 beyond
  std::size_t max_control_bytes = 64 << 10;            // one text (control) message, at most max_message_bytes
  std::size_t max_body_bytes = std::size_t{64} << 20;  // POST /v1/vad body; 413 beyond
  // Decoded duration of one POST /v1/vad or /v1/transcribe body: a few KB of FLAC can hold hours
  // (a decompression bomb). 413 "audio_too_long" beyond, as soon as the header or the decoder
  // shows it. The decoded samples of one upload take at most max_upload_s * rate * 4 bytes.
  double max_upload_s = 3600;
  // POST uploads admitted at once (from their request head until their answer is sent: reading the
  // body, queued for a job thread, decoding, running). Beyond: 503 "too_many_uploads" with
  // Retry-After, before the body is read. Bounds their memory to about max_uploads *
  // (max_body_bytes + the decoded audio).
  int max_uploads = 4;
  // HTTP connections open at once (WebSocket streams, once upgraded, count in max_streams instead),
  // in all and from one client address. Beyond: 503 "too_many_connections", then close. The total
  // is lowered at start to fit the open-file limit (raised to its hard limit) with max_streams.
  int max_connections = 1024;
  int max_connections_per_client = 256;
  // WebSocket streams open at once from one client address (0: only max_streams applies). Off by
  // default: behind a reverse proxy every client has the proxy's address.
  int max_streams_per_client = 0;
  // Bytes of one request held before the parser can use them: the header (16 KiB at most), a
  // chunk-size line with its extensions, a trailer. Beast 1.74 bounds none of the last two, so the
  // session's buffer is capped: beyond, 400 and close.
  std::size_t max_request_buffer_bytes = 64 << 10;
  // A client may not send audio faster than max_rate x real time, measured with a token bucket
  // that holds burst_s of audio: any window of T seconds may carry max_rate * T + burst_s seconds
  // of audio. A faster client is paced (the server stops reading its socket), not cut off.
  double max_rate = 4.0;
  double burst_s = 2.0;
  // Audio read from the socket that the engine stream has not taken yet. Reading pauses while
  // any is held; more than this ends the session with "rate_limited" (a safety net: the session
  // reads about 250 ms at a time, so it holds at most that much).
  int pending_ms = 2000;
  // Held audio that the engine does not take for this long ends the session ("overloaded", 1013).
  int pending_timeout_ms = 10000;
  int idle_timeout_s = 30;  // no message from the client for this long: "idle_timeout", 1008
  // Outgoing messages waiting for a slow reader. Per-frame "vad" messages are dropped (counted,
  // then reported in an overload message) once half of either bound is used; speech events that
  // would overflow the bound close the session with 1008 "slow reader".
  std::size_t send_queue_messages = 1000;
  std::size_t send_queue_bytes = 1 << 20;
  // Kernel send buffer of a WebSocket connection (SO_SNDBUF). Events are small: 64 KiB carries
  // thousands, and it keeps a slow reader's backlog in the bounded, counted queue above instead
  // of in kernel memory that Linux would otherwise grow to megabytes per connection.
  int ws_send_buffer_bytes = 64 << 10;
  int drain_timeout_s = 5;      // SIGINT/SIGTERM: time open streams get to finish
  int close_timeout_ms = 3000;  // a close handshake the peer does not answer: drop the socket
  // A connection that has not sent a complete request head this long after it opened (or after its
  // previous answer) gets 408 and is closed: idle and slow-drip connections do not hold a slot.
  int request_head_timeout_s = 10;
  int http_timeout_s = 30;  // reading one whole HTTP request (head and body); 408 beyond
  // StreamConfig::buffer_ms of the engine streams. Small on purpose: audio pushed ahead of the
  // workers waits in the engine and counts as queue delay (which drives admission control), while
  // audio held by the session does not.
  int engine_buffer_ms = 128;
};

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8700;      // 0: any free port (Server::port() says which)
  int io_threads = 1;   // network threads (never run inference)
  int job_threads = 2;  // POST uploads decoded and fed at once (they wait, never infer); Server raises it to max_uploads
  EngineConfig engine;  // max_streams is raised to fit limits.max_streams
  std::string token;    // non-empty: /v1/* needs "Authorization: Bearer <token>" or ?token=
  // Origins a browser may connect from besides pages of this server (whose Origin's host:port
  // equals the Host header): "https://app.example.com", or "*" for any. Requests without an
  // Origin header (non-browser clients) are always allowed.
  std::vector<std::string> allowed_origins;
  // Host header names (without the port) this server answers to, against DNS rebinding: besides
  // these, IP literals, "localhost" and "*.localhost", and --host itself are always accepted; "*"
  // accepts any. Another Host gets 403 "forbidden_host".
  std::vector<std::string> allowed_hosts;
  std::string web_dir;  // the demo page's folder; empty: default_web_dir()
  // The applications that drive telephony calls (/v1/telephony/*): ws:// URLs brisvox connects to
  // for each call, "URL" for the calls that name none and "NAME=URL" for those whose "app"
  // parameter is NAME (--call-app, repeatable; app_url.h, docs/TELEPHONY.md). Empty: telephony
  // calls are refused.
  std::vector<std::string> call_apps;
  // Telephony calls open at once per provider, "PROVIDER=N" (--max-calls, repeatable: "twilio=50");
  // a provider not named has only max_streams. Beyond: 503 "too_many_calls" on the upgrade.
  std::vector<std::string> max_calls;
  // Twilio's Auth Token (--twilio-auth-token, or $BRISVOX_TWILIO_AUTH_TOKEN): set, every Twilio
  // Media Stream must carry a valid X-Twilio-Signature (403 twilio_signature otherwise), which
  // also stands for the server's token. `public_url` is the base URL providers reach this server
  // at ("wss://voice.example.com"), which Twilio signs; empty: "wss://" + the Host header.
  std::string twilio_auth_token;
  std::string public_url;
  // Asterisk's AudioSocket on a TCP port of its own (audiosocket_relay.h): -1, none; 0, any free
  // port (Server::audiosocket_port() says which). AudioSocket has no authentication: its host is
  // loopback unless the operator names the network Asterisk is on.
  std::string audiosocket_host = "127.0.0.1";
  int audiosocket_port = -1;
  // The rate Silero runs at for telephony calls: 0, the engine's default (the 16 kHz model, phone
  // audio upsampled: the more accurate, docs/TELEPHONY.md), or 8000 (the 8 kHz model: ~1.7x the
  // callers per core). /v1/stream and /v1/call take it per connection (model_rate).
  int phone_model_rate_hz = 0;
  // Realtime transcription sessions (/v1/realtime): the interval of the partial transcripts their
  // incremental deltas come from (SttOptions::partial_interval_ms), for every transcription model
  // name but whisper-1, whose delta OpenAI sends as one piece. 0: one delta per item for all.
  int realtime_partial_ms = 500;
  // Whisper's window for the live sessions whose protocol has no say in it: Realtime sessions and
  // telephony calls (/v1/stream, /v1/call and /v1/transcribe take the query key `window`).
  // kFull: faster-whisper's results; kFit: the window cut to the segment, about a third of the
  // encoder's CPU for a short utterance (docs/MODELS.md).
  WhisperWindow stt_window = WhisperWindow::kFull;
  // One log line per HTTP answer: client, method, target path, status, body bytes, milliseconds
  // from the request head to the answer written, and the error code of an error answer.
  bool access_log = false;
  bool log_timestamps = false;  // each log line starts with its UTC time (ISO 8601, milliseconds)
  LogFormat log_format = LogFormat::kText;  // json: one object per line (server_log.h)
  ServerLimits limits;

  void validate() const;  // Error(kInvalidArgument) naming the field
};

// <prefix>/share/brisvox/web of an installed server, else the web/ folder of the source tree it was
// built from.
std::string default_web_dir();

// ServerConfig::max_calls read: each provider's limit, 0 where none is set. Throws
// Error(kInvalidArgument) naming --max-calls for an entry that is not PROVIDER=N (N 1 to 100000)
// or names a provider twice.
std::array<int, kNumTelephonyProviders> parse_call_limits(const std::vector<std::string>& specs);

}  // namespace brisvox::server
