// Shared pieces of `brisvox bench`: looped audio, CPU and memory probes.
#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "brisvox/runtime/runtime_info.h"
#include "bench/bench_runner.h"

namespace brisvox::bench {
LoopedAudio LoopedAudio::load(const std::string& path) {
  Audio audio = load_audio(path);
  LoopedAudio out;
  out.source = path;
  out.source_rate_hz = audio.sample_rate_hz;
  out.samples = audio.sample_rate_hz == 16000 ? std::move(audio.samples)
                                              : resample(audio.samples, audio.sample_rate_hz, 16000);
  out.length = out.samples.size();
  if (out.length < 512) {
    throw Error(ErrorCode::kBadAudio,
                fmt::format("'{}' holds {} samples at 16 kHz: the benchmark needs at least one 512-sample frame",
                            path, out.length));
  }
  // The tail repeats the start (as often as needed for a very short file).
  out.samples.reserve(out.length + kTailSamples);
  for (std::size_t i = 0; i < kTailSamples; ++i) out.samples.push_back(out.samples[i % out.length]);
  return out;
}

std::size_t LoopedAudio::offset_for(std::size_t index, std::size_t count) const noexcept {
  if (count == 0) return 0;
  return static_cast<std::size_t>(static_cast<double>(index) / static_cast<double>(count) *
                                  static_cast<double>(length)) % length;
}


double process_cpu_s() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

long resident_bytes() {
  malloc_trim(0);
  return process_rss_bytes();
}

}  // namespace brisvox::bench
