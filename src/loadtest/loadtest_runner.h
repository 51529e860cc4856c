// The client of `brisvox loadtest`: S WebSocket streams on Boost.Beast/Asio, each sending 16 kHz
// pcm_s16le audio in real time and timing the `vad` events it gets back. With LoadSpec::calls the
// streams are calls (/v1/call): each also answers every turn_end with a reply (a speak) and times
// the reply's first audio from that turn_end.
//
// Threads: `threads` (1 or 2) event loops, each owning every threads-th stream (no locks, no
// strands: a stream lives on one loop). Each stream: connect at t0 + ramp_s * i / S; once open,
// one chunk every chunk_ms, on a steady timer with an absolute schedule (no drift), its phase
// i / S of the chunk period (the streams' sends are spread evenly over the period); after
// `seconds` of audio, {"type":"close"}; then it reads until the server closes. The whole run is
// bounded: at t0 + ramp_s + seconds + grace_s every stream still open is aborted.
//
// Event latency: the send time (the write handed to the socket) of the message that completed
// frame k is kept in a ring per stream; the `vad` event whose "t" is frame k's start is timed
// against it on arrival. Only frames sent after the ramp (t0 + ramp_s) count.
//
// Behind a balancer (scripts/scale_test.sh): `replica_header` names the handshake response header
// that says which replica took the connection (HAProxy sets it, deploy/haproxy/), and each
// connection's end is kept per replica: completed, closed 1001 with or without its final events
// (every speech_start answered by its speech_end before the close), cut off (no close frame: the
// replica died). With `reconnect`, a stream closed 1001 or cut off opens a new connection to the
// same URL (a refused attempt is tried again, with a growing pause, up to 10 times) and resumes at its first frame without a vad event (what a telephony bridge does: the
// call's audio is kept until the engine answers it), so the call loses nothing it sent.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "brisvox/latency_histogram.h"
#include "loadtest/loadtest_support.h"

namespace brisvox::loadtest {

inline constexpr int kRateHz = 16000;
inline constexpr int kFrameSamples = 512;  // one model frame at 16 kHz (32 ms)

// 16 kHz s16 audio looped: `samples` is the recording and then its start again (tail), so that any
// chunk starting below `length` is contiguous.
struct LoopedPcm {
  std::vector<std::int16_t> samples;
  std::size_t length = 0;
  std::string source;
  // Reads any file brisvox reads (resampled to 16 kHz), with a tail of tail_samples.
  static LoopedPcm load(const std::string& path, std::size_t tail_samples);
};

struct LoadSpec {
  Target target;
  std::string token;
  int streams = 100;
  double seconds = 10;
  int chunk_ms = 32;
  double ramp_s = 2;
  double grace_s = 10;
  int threads = 1;
  // Called once from a helper thread at t0 + probe_at_s (for the server's /metrics under load).
  std::function<void()> probe;
  double probe_at_s = 0;
  std::string replica_header;  // e.g. "x-brisvox-replica"; empty: not tracked
  bool reconnect = false;
  double split_at_s = 0;       // > 0: latency also kept for frames sent before / after t0 + split_at_s
  // Calls (/v1/call, the target's path): at each turn_end the stream speaks `reply`, and the time
  // from that turn_end to the reply's first audio is kept (LoadResult::first_audio).
  bool calls = false;
  std::string reply;
};

// The connections one replica took (a reconnected stream counts once per connection).
struct ReplicaStats {
  int connections = 0;
  int completed = 0;                    // close 1000 after our close
  int going_away = 0;                   // close 1001 (the replica drained)
  int going_away_final_events = 0;      // ... with every speech_start answered by its speech_end first
  int cut_off = 0;                      // ended without a close frame (the replica died)
  int other = 0;                        // any other end (another close code, a write error, aborted)
  int reconnects_landed = 0;            // reconnections that this replica took
  std::uint64_t frames_sent = 0;
  std::uint64_t frames_unanswered = 0;  // sent on this replica's connections, no vad event on them
  LatencyHistogram latency;             // frames sent after the ramp
  LatencyHistogram latency_before_split;  // ... and before spec.split_at_s (with one)
};

struct LoadResult {
  int streams = 0;
  int opened = 0;                              // handshakes that succeeded
  int completed = 0;                           // ended by the server's close 1000 after our close
  int connection_failures = 0;                 // not opened, or ended any other way (aborted included)
  int aborted = 0;                             // still open at the deadline
  std::map<std::string, int> failure_reasons;  // "connect: Connection refused", "HTTP 503 ...", "close 1013 ..."
  std::uint64_t messages_sent = 0;
  double audio_sent_s = 0;
  std::uint64_t frames_sent = 0;      // whole 512-sample frames sent
  std::uint64_t frames_received = 0;  // their vad events
  std::uint64_t frames_lost = 0;      // sum over streams of sent - received
  int streams_with_loss = 0;
  std::uint64_t frames_out_of_order = 0;  // a vad event whose frame is not the next one expected
  std::uint64_t frames_unmeasured = 0;    // received too late for the ring of send times
  std::uint64_t vad_after_last_frame = 0; // the zero-padded partial frame of the close
  std::uint64_t speech_events = 0;
  std::map<std::string, std::uint64_t> errors;  // error events by code
  std::uint64_t overloads = 0;
  std::uint64_t overload_dropped_messages = 0;
  LatencyHistogram latency;   // event latency, frames sent after the ramp
  LatencyHistogram send_lag;  // a chunk's write start minus its scheduled time (client or TCP backpressure)
  double send_rate_msgs_per_s = 0;    // while every stream was sending (ramp .. seconds), else overall
  double target_msgs_per_s = 0;
  double realtime_factor_min = 0;     // per stream: audio sent / wall time it took; 1.0 = real time
  double realtime_factor_mean = 0;
  double wall_s = 0;
  // With spec.replica_header / reconnect / split_at_s:
  std::map<std::string, ReplicaStats> replicas;  // "" when the header is absent
  int reconnects = 0;             // new connections after a 1001 or a cut-off
  int reconnects_failed = 0;      // attempts refused or failed (each tried again, up to 10 in a row)
  std::map<std::string, int> reconnect_failure_reasons;
  std::uint64_t frames_resent = 0;  // frames sent again on a new connection (unanswered on the old one)
  LatencyHistogram latency_before_split, latency_after_split;
  // With spec.calls:
  std::uint64_t turns = 0;            // turn_end events (each answered by a speak)
  std::uint64_t transcripts = 0;
  std::uint64_t replies_started = 0;  // speak_started
  std::uint64_t replies_done = 0;     // speak_done
  std::uint64_t replies_interrupted = 0;  // interrupted (a barge-in: the caller's next utterance)
  LatencyHistogram first_audio;       // turn_end received -> the reply's first audio received
};

// Runs the test; returns when every stream has ended (or been aborted).
LoadResult run_load(const LoadSpec& spec, const LoopedPcm& audio);

}  // namespace brisvox::loadtest
