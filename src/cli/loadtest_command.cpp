// `brisvox loadtest`: the command line of the load generator; the load test itself is src/loadtest/.
#include "cli/commands.h"
#include "loadtest/loadtest_run.h"

namespace brisvox::cli {

using loadtest::LoadtestOptions;

Command add_loadtest_command(CLI::App& app) {
  auto o = std::make_shared<LoadtestOptions>();
  app.footer(
      "Streams 16 kHz pcm_s16le audio in real time over S WebSockets (events=vad) and times each\n"
      "frame's vad event against the send of the message that completed the frame. Loopback only.\n"
      "Exit status 1 if any frame was lost or any connection failed.\n"
      "Examples:\n"
      "  brisvox loadtest --url ws://127.0.0.1:8700 --streams 300 --seconds 20\n"
      "  brisvox loadtest --spawn-server --server-args '--workers 2' --streams 100 --json\n"
      "  brisvox loadtest --calls --spawn-server --server-args '--tts-voice V --turn-model v3.2 --stt-model tiny.en' "
      "--streams 8 --seconds 60");
  app.add_option("--url", o->url, "ws://127.0.0.1:PORT[/v1/stream[?query]] of a running `brisvox serve` (loopback only)");
  app.add_flag("--spawn-server", o->spawn_server,
               "Start `brisvox serve --host 127.0.0.1 --port 0` as a child for the test, stop it at the end");
  app.add_option("--server-args", o->server_args, "Options for the spawned server, e.g. '--workers 2' (split on spaces)");
  app.add_option("--streams", o->streams, "Concurrent streams")->capture_default_str()->check(CLI::Range(1, 20000));
  app.add_option("--seconds", o->seconds, "Audio each stream sends, seconds (real time)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--wav", o->wav, "Audio to send, looped (resampled to 16 kHz; default: the bundled sample); each stream starts elsewhere in it")
      ->capture_default_str();
  app.add_option("--chunk-ms", o->chunk_ms, "Audio per message, ms: one message every chunk-ms per stream")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--ramp-s", o->ramp_s, "Open the streams evenly over this many seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--grace-s", o->grace_s, "After ramp + seconds, wait this long for the last events, then abort")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 600.0));
  app.add_option("--threads", o->threads, "Client event-loop threads")->capture_default_str()->check(CLI::Range(1, 2));
  app.add_option("--token", o->token, "Bearer token, if the server requires one");
  app.add_option("--max-p99-ms", o->max_p99_ms, "Also fail (exit 1) when the p99 event latency is above this");
  app.add_flag("--json", o->json, "Print one JSON object instead of the table");
  app.add_option("--replica-header", o->replica_header,
                 "Behind a balancer: the handshake response header naming the replica (e.g. x-brisvox-replica); "
                 "each connection's end is reported per replica");
  app.add_flag("--reconnect", o->reconnect,
               "A stream closed 1001 or cut off reconnects (refusals retried up to 10 times) and resends from its first frame "
               "without a vad event");
  app.add_flag("--calls", o->calls,
               "Calls (/v1/call: vad, turn and transcript events) instead of streams: each answers every turn_end "
               "with --reply and times its first audio (the server needs --tts-voice, --turn-model, --stt-model)");
  app.add_option("--reply", o->reply, "With --calls: what each call says at a turn's end")->capture_default_str();
  app.add_option("--split-at-s", o->split_at_s, "Also report the latency of frames sent before / after this time of the run")
      ->check(CLI::Range(0.0, 3600.0));
  return [o] { return loadtest::run_loadtest(*o); };
}

}  // namespace brisvox::cli
