// `brisvox bench --tts-voice VOICE`: text-to-speech through the engine (Engine::open_speech), as a
// voice agent uses it.
//
// Phases:
//   alone      one client, one two-sentence reply at a time: the time to first audio with nothing
//              else to do (the floor the concurrent figures compare with);
//   concurrent --tts-concurrency clients (8), each speaking the reply again as soon as the previous
//              one ended (closed loop), --tts-requests replies each: time to first audio (speak()
//              -> the first kTtsAudio event) p50/p99, the whole reply, playback gaps (a sentence that
//              arrives after the previous one would have finished playing, had playback started at
//              the first audio), and the audio made per second per worker (x real time per core);
//   burst      the same clients, each round all starting a reply at the same moment (callers who all
//              finish their turn at once: the worst case for the last of them);
//   conversation the same clients as phone calls: each plays its reply (from its first audio on),
//              then its caller speaks for 1 s, then the next reply; the clients start spread over
//              one such turn. What a voice agent's callers hear;
//   throughput (--tts-corpus FILE, one text per line) the texts spread over the clients, as fast as
//              the engine takes them: seconds of audio per second of wall time, for comparison
//              with piper-tts on the same texts (tools/piper/tts_throughput_ab.py).
// Each client is a thread with its own speech session that waits for its events (wait_events:
// at most 1 ms late).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace brisvox::bench {

struct TtsBenchSpec {
  std::string voice;        // an installed voice's name or a VOICE.onnx path
  int concurrency = 8;
  int requests_per_client = 5;
  int workers = 0;          // TTS workers; 0: one per core
  std::string corpus;       // throughput phase: a text file, one text per line ("" skips it)
  bool fast_start = true;   // SpeechConfig::fast_start of every client's session
  std::string reply = "Sure, I can help with that. Your appointment is confirmed for Monday at two in the afternoon.";
};

// The report of the phases (every time in milliseconds). Throws Error for a bad voice or corpus.
nlohmann::ordered_json run_tts_phase(const TtsBenchSpec& spec, int cores);

}  // namespace brisvox::bench
