// Helpers for engine tests: feed a whole recording through a stream and collect its events.
#pragma once

#include <chrono>
#include <random>
#include <span>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/engine/engine.h"
#include "brisvox/models/vad/speech_segment.h"
#include "test_paths.h"

namespace brisvox::test {

// The bundled speech sample (third_party/audio/sample.wav), loaded once per test binary.
inline const Audio& sample_audio() {
  static const Audio audio = load_audio(sample_wav());
  return audio;
}

struct StreamResult {
  std::vector<Event> events;
  std::vector<std::pair<double, double>> segments_s;  // from speech_end events
  std::vector<float> probabilities;                   // from kVadProbability events
  bool ended = false;
};

inline void collect(Stream& s, StreamResult& r) {
  Event buf[16];
  for (std::size_t n; (n = s.poll(buf)) > 0;) {
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = buf[i];
      r.events.push_back(e);
      if (e.type == EventType::kSpeechEnd) r.segments_s.emplace_back(e.start_s, e.end_s);
      if (e.type == EventType::kVadProbability) r.probabilities.push_back(e.probability);
      if (e.type == EventType::kEndOfStream) r.ended = true;
    }
  }
}

// Pushes `audio` in chunks of random size (1..max_chunk), waiting for room as a file reader
// would, then flushes and collects events until kEndOfStream.
inline StreamResult feed_all(Stream& s, std::span<const float> audio, unsigned seed, std::size_t max_chunk = 3000) {
  StreamResult r;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> size(1, max_chunk);
  std::size_t pos = 0;
  while (pos < audio.size()) {
    const std::size_t n = std::min(size(rng), audio.size() - pos);
    std::size_t done = 0;
    while (done < n) {
      const std::size_t room = std::min(n - done, s.writable());
      if (room > 0) done += s.push(audio.subspan(pos + done, room));
      collect(s, r);
      if (done < n) s.wait_writable(std::min<std::size_t>(n - done, 512), std::chrono::milliseconds(50));
    }
    pos += n;
  }
  s.flush();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!r.ended && std::chrono::steady_clock::now() < deadline) {
    s.wait_events(std::chrono::milliseconds(10));
    collect(s, r);
  }
  return r;
}

inline std::vector<std::pair<double, double>> to_seconds(const std::vector<SpeechSegment>& segments, int rate_hz) {
  std::vector<std::pair<double, double>> out;
  for (const auto& s : segments) {
    out.emplace_back(static_cast<double>(s.start_sample) / rate_hz, static_cast<double>(s.end_sample) / rate_hz);
  }
  return out;
}

}  // namespace brisvox::test
