// `brisvox loadtest` as a library call: its options, and the run that drives the streams and prints
// the report (a table, or one JSON object). The cli binds the options to the command line.
#pragma once

#include <string>

namespace brisvox::loadtest {

struct LoadtestOptions {
  std::string url;
  bool spawn_server = false;
  std::string server_args;
  std::string wav;  // empty: the bundled sample
  std::string token;
  int streams = 100;
  double seconds = 10;
  int chunk_ms = 32;
  double ramp_s = 2;
  double grace_s = 10;
  int threads = 1;
  double max_p99_ms = 0;
  bool json = false;
  std::string replica_header;  // behind a balancer: the response header naming the replica
  bool reconnect = false;      // reconnect after a 1001 close or a cut-off, resuming the audio
  double split_at_s = 0;       // > 0: latency also reported before / after this time of the run
  // Calls (/v1/call) instead of streams: each answers every turn_end with `reply` and times the
  // reply's first audio from that turn_end. The server needs a voice, a turn model and (for the
  // default query's transcripts) a Whisper model.
  bool calls = false;
  std::string reply = "Thanks, I have that. Let me check the calendar and come back to you in a moment.";
};

// Runs the load test and prints the report on stdout: 0 when every stream completed without loss
// (and within max_p99_ms when set), 1 otherwise. Throws Error for bad options.
int run_loadtest(const LoadtestOptions& options);

}  // namespace brisvox::loadtest
