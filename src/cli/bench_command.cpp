// `brisvox bench`: the command line of the benchmark; the benchmark itself is src/bench/.
#include "bench/bench_run.h"
#include "cli/commands.h"

namespace brisvox::cli {

using bench::BenchOptions;

Command add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  app.add_option("--streams", o->num_streams, "Streams of the load phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--seconds", o->seconds, "Measured seconds per phase (after the warm-up)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--warmup-seconds", o->warmup_s, "Warm-up before each measured window (not counted)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--workers", o->num_workers, "Engine workers, and baseline threads (0: one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_option("--max-batch", o->max_batch, "Frames per Run (EngineConfig::max_batch)")
      ->capture_default_str()
      ->check(CLI::Range(1, 512));
  app.add_option("--gather-wait-us", o->gather_wait_us, "How long a worker waits to fill a batch")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--model", o->model, "Silero VAD model: v5, v6, v5-exported, v6-exported or a path to an .onnx file")->capture_default_str();
  app.add_option("--wav", o->wav, "Audio to loop (any rate, resampled to 16 kHz; default: the bundled sample)");
  auto* realtime = app.add_flag("--realtime", o->realtime,
                                "Pace the load phase: 512 samples every 32 ms per stream, phases spread evenly");
  app.add_flag("--fast", o->fast, "Feed the load phase as fast as the engine takes it (the default)")->excludes(realtime);
  app.add_option("--latency-load", o->latency_load, "Streams of the latency phase, as a fraction of the measured capacity")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 4.0));
  app.add_option("--latency-streams", o->latency_streams, "Streams of the latency phase (overrides --latency-load)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--baseline-streams", o->baseline_streams, "Streams of the baseline, a session each")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_flag("--skip-load", o->skip_load, "Skip the load phase (the latency phase then needs --latency-streams, "
                                             "else it uses --streams)");
  app.add_flag("--skip-latency", o->skip_latency, "Skip the paced latency phase");
  app.add_flag("--skip-baseline", o->skip_baseline, "Skip the session-per-stream baseline");
  app.add_option("--turn-model", o->turn_model,
                 "Also time end-of-turn analyses (features + Smart Turn, v3.2 or a file) at 1, 2, 4 threads: "
                 "turn_latency_ms_p50");
  app.add_option("--turn-runs", o->turn_runs, "Analyses per thread setting")->capture_default_str()->check(CLI::Range(1, 10000));
  app.add_option("--stt-model", o->stt_model,
                 "Also run live streams with speech-to-text (Whisper folder, tiny.en or tiny.en-int8): transcript latency, throughput");
  app.add_option("--stt-streams", o->stt_streams, "Real-time streams of the stt phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--stt-window", o->stt_window, "Whisper encoder window of the stt phase: full or fit")
      ->capture_default_str();
  app.add_option("--stt-seconds", o->stt_seconds, "Measured seconds of the stt phase")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  app.add_option("--stt-threads", o->stt_threads, "ONNX Runtime intra-op threads per Whisper run")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--stt-workers", o->stt_workers, "Whisper workers of the stt phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--stt-max-batch", o->stt_max_batch, "Whisper decoder lanes per worker (segments decoded together)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--tts-voice", o->tts_voice,
                 "Also time text-to-speech with this Piper voice: first audio of a two-sentence reply, alone and "
                 "under --tts-concurrency clients, real-time factor per core");
  app.add_option("--tts-concurrency", o->tts_concurrency, "Clients speaking at once in the TTS phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--tts-requests", o->tts_requests, "Replies per client in the TTS phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--tts-fast-start", o->tts_fast_start,
                 "Speech sessions synthesise the first clause of a reply alone (SpeechConfig::fast_start)")
      ->capture_default_str();
  app.add_option("--tts-reply", o->tts_reply, "The reply the TTS phases speak (default: a two-sentence reply)");
  app.add_option("--tts-workers", o->tts_workers, "TTS workers (0: one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_option("--tts-corpus", o->tts_corpus,
                 "A text file, one text per line: also the throughput of the TTS workers on it (x real time)");
  app.add_flag("--json", o->json, "Print one JSON object (progress goes to stderr when it is a terminal)");
  app.footer(
      "Phases (each: --warmup-seconds, then --seconds measured):\n"
      "  load      --streams streams fed as fast as possible: streams_per_core = frames/s / 31.25 / workers,\n"
      "            and the RSS per stream (slope between opening part and all of the streams).\n"
      "            With --realtime, paced instead: kept up? latency?\n"
      "  latency   paced, round(--latency-load x capacity x workers) streams: added latency p50/p99/p99.9\n"
      "            (a frame's last sample pushed -> its events ready to poll).\n"
      "  baseline  --baseline-streams streams with a session each (batch 1, one thread), as sherpa-onnx and\n"
      "            pipecat run Silero, on as many threads as workers: speedup_vs_baseline.\n"
      "  tts       (--tts-voice) one client alone, then --tts-concurrency clients in a closed loop, each\n"
      "            speaking a two-sentence reply --tts-requests times: time to first audio p50/p99, gaps,\n"
      "            x real time per core; with --tts-corpus, the throughput on those texts.\n"
      "The fast capacity overstates what paced streams sustain (smaller batches, the feeder's share of\n"
      "the cores): on 2 cores, 80 % of it is near the real-time limit. Lower --latency-load for the knee.\n"
      "Examples:\n"
      "  brisvox bench                                  all three phases, ~35 s, readable table\n"
      "  brisvox bench --json > bench.json              the same as one JSON object\n"
      "  brisvox bench --max-batch 64 --gather-wait-us 1000 --skip-baseline\n"
      "  brisvox bench --realtime --streams 500 --seconds 30    can this machine serve 500 live streams?\n"
      "  brisvox bench --skip-load --latency-streams 300 --skip-baseline\n"
      "  brisvox bench --model v6 --wav call_8k.wav --workers 4\n"
      "  brisvox bench --skip-load --skip-latency --skip-baseline --tts-voice en_US-joe-medium   TTS only");
  return [o] { return bench::run_bench(*o); };
}

}  // namespace brisvox::cli
