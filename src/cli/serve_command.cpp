// `brisvox serve`: the engine as a network service (docs/PROTOCOL.md).
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "brisvox/error.h"
#include "cli/commands.h"
#include "cli/config_file.h"
#include "cli/file_run.h"
#include "server/server.h"
#include "server/server_log.h"

namespace brisvox::cli {
namespace {

struct ServeOptions {
  server::ServerConfig config;
  std::string models_dir;
  std::string model = "v6";
  int workers = 0;
  std::string turn_model;
  int turn_threads = 1;
  int turn_workers = 0;  // 0: the family's default (1)
  std::string stt_model;
  int stt_threads = 1;
  int stt_workers = 0;   // 0: the family's default (1)
  int stt_max_width = 1;     // a segment's decoder lanes: a stream's beam_size / best_of at most
  int stt_prompt_tokens = 0; // the longest prompt + hotwords a stream may give
  std::string stt_window = "full";  // Realtime sessions' and telephony calls'
  std::string tts_voice;
  int tts_workers = 0;
  std::string config_file;              // --config: a TOML file of these options
  std::vector<std::string> from_file;   // the keys it set (for errors that name it)
  bool token_given = false;             // --token on the command line or in the file, even empty
};

int run_serve(ServeOptions& o) {
  // A write to a pipe whose reader is gone (`brisvox serve 2>&1 | head -1`, a supervisor that
  // restarted) must be an EPIPE error, not a fatal signal: the log line is lost, the server goes on.
  // (Sockets never raise it: Asio sends with MSG_NOSIGNAL.)
  std::signal(SIGPIPE, SIG_IGN);
  if (!o.models_dir.empty()) ::setenv("BRISVOX_MODELS_DIR", o.models_dir.c_str(), 1);
  if (!o.token_given) {
    if (const char* token = std::getenv("BRISVOX_TOKEN"); token != nullptr) {
      // Set but empty is a mistake (an unset variable in a unit file), not a wish for no token.
      if (*token == '\0') {
        throw Error(ErrorCode::kInvalidArgument,
                    "$BRISVOX_TOKEN is set but empty: that would leave /v1/* open to anyone; set it to a token, "
                    "or unset it to run without one");
      }
      o.config.token = token;
    }
  }
  if (o.config.twilio_auth_token.empty()) {
    if (const char* t = std::getenv("BRISVOX_TWILIO_AUTH_TOKEN"); t != nullptr) o.config.twilio_auth_token = t;
  }
  check_workers("--workers", o.workers);
  check_workers("--turn-workers", o.turn_workers);
  check_workers("--stt-workers", o.stt_workers);
  o.config.stt_window = o.stt_window == "fit" ? WhisperWindow::kFit : WhisperWindow::kFull;
  o.config.engine.models = {ModelSpec::silero_vad(o.model)};
  o.config.engine.models[0].num_workers = o.workers;
  if (!o.turn_model.empty()) {
    ModelSpec turn = ModelSpec::smart_turn(o.turn_model);
    turn.session.intra_op_threads = o.turn_threads;
    turn.num_workers = o.turn_workers;
    o.config.engine.models.push_back(turn);
  }
  if (!o.stt_model.empty()) {
    ModelSpec stt = ModelSpec::whisper(o.stt_model);
    stt.session.intra_op_threads = o.stt_threads;
    stt.num_workers = o.stt_workers;
    if (o.stt_max_width != 1) stt.options["max_width"] = std::to_string(o.stt_max_width);
    if (o.stt_prompt_tokens != 0) stt.options["prompt_tokens"] = std::to_string(o.stt_prompt_tokens);
    o.config.engine.models.push_back(stt);
  }
  if (!o.tts_voice.empty()) {
    ModelSpec tts = ModelSpec::piper_tts(o.tts_voice);  // named "tts"; a run deadline of at least 20 s
    tts.num_workers = o.tts_workers;
    o.config.engine.models.push_back(tts);
  }
  try {
    if (o.token_given && o.config.token.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--token is empty: that would leave /v1/* open to anyone; give a token, or leave --token out "
                  "(and $BRISVOX_TOKEN unset) to run without one");
    }
    o.config.validate();
  } catch (const Error& e) {
    throw with_config_source(e, o.config_file, o.from_file);
  }
  server::Server server(o.config);  // loads the model and binds the port: errors come before the line below
  server::log_server("listening on {}", server.url());
  if (const int port = server.audiosocket_port(); port > 0) {
    server::log_server("AudioSocket on tcp://{}:{}", o.config.audiosocket_host, port);
  }
  server.run();
  return kExitOk;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  auto& c = o->config;
  auto& l = c.limits;
  app.footer(
      "Endpoints (docs/PROTOCOL.md):\n"
      "  GET  /v1/stream?sample_rate=16000&encoding=pcm_s16le   WebSocket: audio in, speech events out\n"
      "  POST /v1/vad                                            an audio file in, its segments out\n"
      "  POST /v1/transcribe                                     an audio file in, its transcript out (--stt-model)\n"
      "  POST /v1/tts, GET /v1/tts (WebSocket)                   text in, speech out (--tts-voice)\n"
      "  GET  /v1/call?sample_rate=16000                         WebSocket: a call: the caller's audio in, its events\n"
      "                                                          out, replies spoken back with barge-in (--tts-voice)\n"
      "  GET  /v1/telephony/twilio                               WebSocket: a Twilio Media Stream, a call driven by the\n"
      "                                                          --call-app application (docs/TELEPHONY.md)\n"
      "  GET  /v1/telephony/telnyx?codec=PCMU&rate=8000          WebSocket: a Telnyx media stream (RTP mode), the same\n"
      "  GET  /healthz, GET /readyz, GET /metrics (Prometheus), GET / (demo page)\n"
      "Examples:\n"
      "  brisvox serve\n"
      "  brisvox serve --host 0.0.0.0 --port 8700 --token secret --allow-origin https://app.example.com\n"
      "  curl --data-binary @call.wav http://127.0.0.1:8700/v1/vad\n"
      "  brisvox serve --tts-voice en_US-joe-medium\n"
      "  curl -d '{\"text\":\"Hello there.\"}' -o hello.wav http://127.0.0.1:8700/v1/tts\n"
      "  brisvox serve --tts-voice en_US-joe-medium --turn-model v3.2 --stt-model tiny.en-int8   (calls)");
  app.add_option("--config", o->config_file,
                 "A TOML file of these options (key = long option without the dashes, e.g. "
                 "max-streams = 64; docs/CLI.md); the command line overrides it")
      ->check(CLI::ExistingFile);
  app.add_option("--host", c.host, "Address to listen on")->capture_default_str();
  app.add_option("--port", c.port, "Port; 0 picks a free one (printed on start)")->capture_default_str();
  app.add_option("--models-dir", o->models_dir,
                 "Folder of the bundled models (default: $BRISVOX_MODELS_DIR or the build's)");
  app.add_option("--model", o->model, "v5, v6 (bundled, batched rewrite), v5-exported, v6-exported (as published) or the path of a Silero VAD .onnx")->capture_default_str();
  app.add_option("--workers", o->workers, "Inference threads (default: one per core)");
  app.add_option("--turn-model", o->turn_model,
                 "Smart Turn model, v3.2 (bundled) or a v3.x .onnx: enables events=turn (turn_end / turn_incomplete) on /v1/stream");
  app.add_option("--turn-threads", o->turn_threads, "ONNX Runtime intra-op threads per Smart Turn run")
      ->capture_default_str();
  app.add_option("--turn-workers", o->turn_workers,
                 "Smart Turn worker threads, sharing one copy of the model (default: 1)");
  app.add_option("--stt-model", o->stt_model,
                 "Whisper model folder, tiny.en or tiny.en-int8 (bundled): enables events=transcript on /v1/stream and "
                 "POST /v1/transcribe");
  app.add_option("--stt-threads", o->stt_threads, "ONNX Runtime intra-op threads per Whisper run")
      ->capture_default_str();
  app.add_option("--stt-workers", o->stt_workers,
                 "Whisper worker threads, sharing one copy of the model, each with its own decoder lanes "
                 "(default: 1; calls: docs/PERFORMANCE.md)");
  app.add_option("--stt-max-width", o->stt_max_width,
                 "The most sequences a segment may be decoded as (a stream's beam_size or best_of, 1 to 16); each "
                 "worker's decoder then has 8 x this many lanes")
      ->capture_default_str();
  app.add_option("--stt-prompt-tokens", o->stt_prompt_tokens,
                 "The longest prompt plus hotwords a stream may give, in Whisper tokens (0 to 446; 0: none)")
      ->capture_default_str();
  app.add_option("--tts-voice", o->tts_voice,
                 "Piper voice (an installed name or a VOICE.onnx path): enables POST and WebSocket /v1/tts");
  app.add_option("--tts-workers", o->tts_workers, "Text-to-speech threads, one espeak-ng pair each (default: one per core)");
  app.add_option("--io-threads", c.io_threads, "Network threads (they never run inference)")->capture_default_str();
  app.add_option("--max-streams", l.max_streams, "WebSocket streams open at once; more are refused with 503")
      ->capture_default_str();
  app.add_option("--max-message-bytes", l.max_message_bytes, "Largest WebSocket message; larger closes with 1009")
      ->capture_default_str();
  app.add_option("--max-body-bytes", l.max_body_bytes, "Largest POST /v1/vad body; larger gets 413")
      ->capture_default_str();
  app.add_option("--max-upload-seconds", l.max_upload_s,
                 "Longest decoded audio of one POST /v1/vad or /v1/transcribe; longer gets 413 audio_too_long")
      ->capture_default_str();
  app.add_option("--max-uploads", l.max_uploads,
                 "POST uploads in progress at once (reading, queued, running); more get 503 too_many_uploads")
      ->capture_default_str();
  app.add_option("--max-connections", l.max_connections,
                 "HTTP connections open at once (upgraded streams count in --max-streams); more get 503")
      ->capture_default_str();
  app.add_option("--max-connections-per-client", l.max_connections_per_client,
                 "HTTP connections open at once from one client address; more get 503")
      ->capture_default_str();
  app.add_option("--max-streams-per-client", l.max_streams_per_client,
                 "WebSocket streams open at once from one client address (0: only --max-streams); more get 503")
      ->capture_default_str();
  app.add_option("--request-head-timeout-s", l.request_head_timeout_s,
                 "A connection that sends no complete request head for this long gets 408 and is closed")
      ->capture_default_str();
  app.add_option("--http-timeout-s", l.http_timeout_s, "Time to send one whole HTTP request (head and body); 408 beyond")
      ->capture_default_str();
  app.add_option("--max-rate", l.max_rate,
                 "Most audio a client may send, in x real time (after a 2 s burst); faster clients are paced")
      ->capture_default_str();
  app.add_option("--idle-timeout-s", l.idle_timeout_s, "Close a stream whose client sends nothing for this long")
      ->capture_default_str();
  app.add_option("--token", c.token, "Require this bearer token on /v1/* (default: $BRISVOX_TOKEN; none if unset)");
  app.add_option("--call-app", c.call_apps,
                 "The application that drives telephony calls (/v1/telephony/*): a ws:// URL brisvox connects to for "
                 "each call; repeatable as NAME=URL, chosen by the call's \"app\" parameter (docs/TELEPHONY.md)");
  app.add_option("--audiosocket-port", c.audiosocket_port,
                 "A TCP port for Asterisk's AudioSocket (AudioSocket(uuid,host:port) in the dialplan), each connection a "
                 "call driven by --call-app; 0 picks a free one (default: none; docs/TELEPHONY.md)");
  app.add_option("--audiosocket-host", c.audiosocket_host,
                 "The address of the AudioSocket port: AudioSocket has no authentication, so only the network Asterisk "
                 "is on")
      ->capture_default_str();
  app.add_option("--twilio-auth-token", c.twilio_auth_token,
                 "Twilio's Auth Token: every Twilio Media Stream must then carry a valid X-Twilio-Signature (it also "
                 "stands for --token); or $BRISVOX_TWILIO_AUTH_TOKEN (docs/TELEPHONY.md)");
  app.add_option("--public-url", c.public_url,
                 "The base URL the telephony providers reach this server at, as their <Stream url> names it "
                 "(wss://voice.example.com): what Twilio signs (default: wss:// and the Host header)");
  app.add_option("--max-calls", c.max_calls,
                 "Telephony calls open at once from one provider, PROVIDER=N (repeatable: twilio=50); more get 503 "
                 "too_many_calls (default: only --max-streams)");
  app.add_option("--phone-model-rate", c.phone_model_rate_hz,
                 "The rate the VAD runs at for telephony calls: 16000 (default: 8 kHz phone audio upsampled to the 16 kHz "
                 "model, the more accurate) or 8000 (the 8 kHz model, ~1.7x the callers per core; docs/TELEPHONY.md)")
      ->check(CLI::IsMember({8000, 16000}));
  app.add_option("--stt-window", o->stt_window,
                 "Whisper's window for Realtime sessions and telephony calls, whose protocols cannot choose one: full "
                 "(faster-whisper's results) or fit (cut to the utterance: cheaper, slightly less accurate; docs/MODELS.md)")
      ->check(CLI::IsMember({"full", "fit"}))
      ->capture_default_str();
  app.add_option("--realtime-partial-ms", c.realtime_partial_ms,
                 "Realtime transcription sessions: partial transcripts every N ms of speech, sent as incremental "
                 "deltas (every model name but whisper-1, whose delta is the whole transcript, as OpenAI's); 0: one "
                 "delta per item for all, half the speech-to-text CPU (docs/OPENAI.md)")
      ->capture_default_str();
  app.add_option("--allow-origin", c.allowed_origins,
                 "A browser origin allowed besides this server's own pages (repeatable; '*' for any)");
  app.add_option("--allow-host", c.allowed_hosts,
                 "A Host name this server answers to besides IP addresses, localhost and --host (repeatable; "
                 "'*' for any): other names get 403, against DNS rebinding");
  app.add_flag("--log-timestamps", c.log_timestamps, "Start each log line with its UTC time (ISO 8601)");
  app.add_option("--log-format", c.log_format,
                 "text, or json: one JSON object per line (time, msg, and the line's fields: stream, tag, client, ...)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, server::LogFormat>{{"text", server::LogFormat::kText}, {"json", server::LogFormat::kJson}}))
      ->default_str("text");
  app.add_flag("--access-log", c.access_log,
               "Log one line per HTTP answer: client, method, path, status, bytes, ms, error code");
  app.add_option("--web-dir", c.web_dir,
                 "Folder of the demo page (default: share/brisvox/web when installed, else the source tree's web/)");
  app.add_option("--drain-timeout-s", l.drain_timeout_s,
                 "On SIGINT/SIGTERM, how long open streams get to deliver their final events")
      ->capture_default_str();
  return [o, &app] {
    if (!o->config_file.empty()) o->from_file = apply_config_file(app, o->config_file);
    o->token_given = app.get_option("--token")->count() > 0;
    return run_serve(*o);
  };
}

}  // namespace brisvox::cli
