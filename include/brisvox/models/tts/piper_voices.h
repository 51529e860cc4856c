// The Piper voices installed in the models folder, and how a voice is named.
//
// A voice is VOICE.onnx with VOICE.onnx.json beside it. Installed voices live in
// <models_dir()>/piper/ (scripts/setup.sh puts en_US-joe-medium there); a voice is named either by
// its file name without ".onnx" ("en_US-joe-medium"), looked up in that folder, or by a path.
// Thread-safe: plain functions over the file system.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace brisvox {

// <models_dir()>/piper.
std::string piper_voices_dir();

struct InstalledVoice {
  std::string name;        // the file name without ".onnx"
  std::string model_path;  // VOICE.onnx
  std::string language;    // the config's espeak voice ("en-us"); empty if the config is unreadable
  int sample_rate_hz = 0;
  int num_speakers = 0;
  std::uintmax_t model_bytes = 0;
  std::string problem;     // why the config could not be read; empty when it loads
};

// Every VOICE.onnx in `dir` with a VOICE.onnx.json beside it, sorted by name (a config that does
// not load is listed with its problem). An absent folder gives an empty list.
std::vector<InstalledVoice> list_piper_voices(const std::string& dir = piper_voices_dir());

// A path (anything with a '/' or ending in ".onnx") is returned as is when the file exists;
// a name is looked up as <piper_voices_dir()>/NAME.onnx. Throws Error(kIo) naming what was looked
// for and the installed voices when there is no such file.
std::string resolve_piper_voice(std::string_view name_or_path);

}  // namespace brisvox
