// A Piper voice's configuration (the VOICE.onnx.json beside VOICE.onnx) and Piper's mapping from
// phonemes to model input ids.
//
// Loading reads the fields piper-tts 1.8 reads (piper/config.py): audio.sample_rate,
// espeak.voice, phoneme_type, phoneme_id_map, num_symbols, num_speakers, speaker_id_map,
// default_speaker_id, inference.{noise_scale, length_scale, noise_w}, hop_length, vowel_clusters,
// with Piper's defaults for the optional ones. Only phoneme_type "espeak" is supported (Piper's
// Chinese, Japanese, Hebrew and Thai front ends are not reproduced).
//
// Plain values: copyable, thread-safe to read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace brisvox {

struct PiperScales {
  float noise_scale = 0.667f;   // generator noise; 0 makes the audio deterministic
  float length_scale = 1.0f;    // phoneme length; > 1 is slower speech
  float noise_w_scale = 0.8f;   // duration noise; 0 makes durations deterministic
};

struct PiperVoiceConfig {
  std::string config_path;
  int sample_rate_hz = 22050;
  std::string espeak_voice;     // e.g. "en-us"
  std::string phoneme_type = "espeak";
  int num_symbols = 0;
  int num_speakers = 1;
  std::map<std::string, int> speaker_id_map;
  int default_speaker_id = 0;
  PiperScales scales;           // the voice's "inference" section
  int hop_length = 256;         // output samples per duration frame
  std::map<std::string, std::vector<std::int64_t>> phoneme_id_map;  // UTF-8 phoneme -> ids
  std::vector<std::vector<std::string>> vowel_clusters;
};

// Throws Error(kIo) if the file cannot be read, Error(kBadModel) naming the field if it is not a
// Piper voice config (bad JSON, a missing field, a wrong type, no "^", "$" or "_" in the id map),
// Error(kModelMismatch) for a phoneme_type other than "espeak".
PiperVoiceConfig load_piper_voice_config(const std::string& path);

struct PhonemeIds {
  std::vector<std::int64_t> ids;
  std::vector<std::string> missing;  // phonemes not in the map (left out, as Piper does)
};

// Piper's phonemes_to_ids: "^", pad, then each phoneme's ids followed by pad, then "$". A phoneme
// that is not in the map is skipped (Piper logs "Missing phoneme from id map").
PhonemeIds phonemes_to_ids(const std::vector<std::string>& phonemes, const PiperVoiceConfig& voice);

}  // namespace brisvox
