#include "brisvox/models/tts/piper_voices.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "brisvox/error.h"
#include "brisvox/models/model_paths.h"
#include "brisvox/models/tts/piper_voice.h"

namespace brisvox {

namespace fs = std::filesystem;

std::string piper_voices_dir() { return (fs::path(models_dir()) / "piper").string(); }

std::vector<InstalledVoice> list_piper_voices(const std::string& dir) {
  std::vector<InstalledVoice> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() != ".onnx" || !entry.is_regular_file(ec)) continue;
    const std::string config = p.string() + ".json";
    if (!fs::exists(config, ec)) continue;  // a model without its config is no voice (e.g. a rewrite)
    InstalledVoice v;
    v.name = p.stem().string();
    v.model_path = p.string();
    v.model_bytes = entry.file_size(ec);
    try {
      const PiperVoiceConfig c = load_piper_voice_config(config);
      v.language = c.espeak_voice;
      v.sample_rate_hz = c.sample_rate_hz;
      v.num_speakers = c.num_speakers;
    } catch (const Error& e) {
      v.problem = e.what();
    }
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const InstalledVoice& a, const InstalledVoice& b) { return a.name < b.name; });
  return out;
}

std::string resolve_piper_voice(std::string_view name_or_path) {
  const std::string given(name_or_path);
  std::error_code ec;
  const bool is_path = given.find('/') != std::string::npos || given.ends_with(".onnx");
  const std::string path = is_path ? given : (fs::path(piper_voices_dir()) / (given + ".onnx")).string();
  if (!given.empty() && fs::is_regular_file(path, ec)) return path;
  std::string installed;
  for (const InstalledVoice& v : list_piper_voices()) installed += (installed.empty() ? "" : ", ") + v.name;
  throw Error(ErrorCode::kIo,
              fmt::format("Piper voice '{}' not found{}: give a VOICE.onnx path (with VOICE.onnx.json beside it) or "
                          "the name of a voice in {} (installed: {}; `brisvox voices` lists them)",
                          given, is_path ? "" : fmt::format(" (looked for '{}')", path), piper_voices_dir(),
                          installed.empty() ? "none" : installed));
}

}  // namespace brisvox
