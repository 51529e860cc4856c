#include "brisvox/models/model_paths.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>

#include "brisvox/error.h"

namespace brisvox {

std::string models_dir() {
  if (const char* env = std::getenv("BRISVOX_MODELS_DIR"); env != nullptr && *env != '\0') return env;
  return BRISVOX_DEFAULT_MODELS_DIR;
}

std::string resolve_vad_model(std::string_view name_or_path) {
  std::string path;
  bool bundled = false;
  if (name_or_path == "v5" || name_or_path == "v6") {
    path = fmt::format("{}/silero_vad_{}.onnx", models_dir(), name_or_path);
    bundled = true;
  } else {
    path = std::string(name_or_path);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw Error(ErrorCode::kIo,
                bundled ? fmt::format("bundled model '{}' not found at '{}': run scripts/setup.sh, "
                                      "or set BRISVOX_MODELS_DIR to the folder holding it",
                                      name_or_path, path)
                        : fmt::format("model file '{}' not found (use v5, v6 or a path to a Silero "
                                      "VAD .onnx file)",
                                      path));
  }
  return path;
}

}  // namespace brisvox
