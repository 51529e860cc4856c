// `brisvox voices`: the Piper voices installed in the models folder (piper_voices.h), for
// `brisvox say --voice NAME` and `brisvox serve --tts-voice NAME`.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "brisvox/models/tts/piper_voices.h"
#include "cli/commands.h"

namespace brisvox::cli {
namespace {

struct VoicesOptions {
  std::string dir;
  bool json = false;
};

int run_voices(const VoicesOptions& o) {
  const std::string dir = o.dir.empty() ? piper_voices_dir() : o.dir;
  const std::vector<InstalledVoice> voices = list_piper_voices(dir);
  if (o.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const InstalledVoice& v : voices) {
      nlohmann::ordered_json j;
      j["name"] = v.name;
      j["language"] = v.language;
      j["sample_rate"] = v.sample_rate_hz;
      j["speakers"] = v.num_speakers;
      j["model_bytes"] = v.model_bytes;
      j["path"] = v.model_path;
      if (!v.problem.empty()) j["problem"] = v.problem;
      out.push_back(j);
    }
    fmt::print("{}\n", out.dump(2));
    return kExitOk;
  }
  if (voices.empty()) {
    fmt::print(stderr, "brisvox voices: no Piper voice in {} (scripts/setup.sh installs en_US-joe-medium; a voice is "
                       "VOICE.onnx with VOICE.onnx.json beside it)\n", dir);
    return kExitOk;
  }
  fmt::print("{:<28} {:<10} {:>7} {:>8} {:>8}  {}\n", "NAME", "LANGUAGE", "RATE", "SPEAKERS", "MB", "PATH");
  for (const InstalledVoice& v : voices) {
    if (!v.problem.empty()) {
      fmt::print("{:<28} unusable: {}\n", v.name, v.problem);
      continue;
    }
    fmt::print("{:<28} {:<10} {:>7} {:>8} {:>8.1f}  {}\n", v.name, v.language, v.sample_rate_hz, v.num_speakers,
               static_cast<double>(v.model_bytes) / 1e6, v.model_path);
  }
  return kExitOk;
}

}  // namespace

Command add_voices_command(CLI::App& app) {
  auto o = std::make_shared<VoicesOptions>();
  app.footer(
      "Lists VOICE.onnx files with a VOICE.onnx.json beside them in the voices folder\n"
      "(<models dir>/piper; $BRISVOX_MODELS_DIR replaces the models dir). Use a NAME with\n"
      "`brisvox say --voice NAME` or `brisvox serve --tts-voice NAME`.\n"
      "Examples:\n"
      "  brisvox voices\n"
      "  brisvox voices --json\n"
      "  brisvox voices --dir ~/piper-voices");
  app.add_option("--dir", o->dir, "Folder to list instead of the models folder's piper/");
  app.add_flag("--json", o->json, "Print a JSON array (name, language, sample_rate, speakers, model_bytes, path)");
  return [o] { return run_voices(*o); };
}

}  // namespace brisvox::cli
