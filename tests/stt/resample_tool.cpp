// brisvox_stt_resample IN OUT.f32: reads IN with brisvox's audio reader, resamples it to 16 kHz
// with brisvox's resampler (libsoxr) as WhisperTranscriber does, and writes the samples as raw
// float32 (native byte order). tools/whisper/make_goldens.py feeds these exact samples to
// faster-whisper, so the golden transcripts and brisvox's start from the same audio.
#include <cstdio>
#include <exception>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IN OUT.f32\n", argv[0]);
    return 2;
  }
  try {
    const brisvox::Audio audio = brisvox::load_audio(argv[1]);
    const std::vector<float> out = audio.sample_rate_hz == 16000 ? audio.samples
                                                                 : brisvox::resample(audio.samples, audio.sample_rate_hz, 16000);
    std::FILE* f = std::fopen(argv[2], "wb");
    if (f == nullptr || std::fwrite(out.data(), sizeof(float), out.size(), f) != out.size() || std::fclose(f) != 0) {
      std::fprintf(stderr, "cannot write %s\n", argv[2]);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
