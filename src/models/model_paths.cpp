#include "brisvox/models/model_paths.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "base/install_dirs.h"
#include "base/log.h"
#include "brisvox/error.h"

namespace brisvox {
namespace {

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// "v5-exported" -> "v5"; empty when the name is no bundled alias.
std::string_view bundled_version(std::string_view name, bool& exported) {
  exported = false;
  if (name == "v5" || name == "v6") return name;
  if (name == "v5-exported" || name == "v6-exported") {
    exported = true;
    return name.substr(0, 2);
  }
  return {};
}

// Where models_dir() looks, in order, and why it chose what it did: for the errors of a missing model.
std::string models_dir_search() {
  const char* env = std::getenv("BRISVOX_MODELS_DIR");
  if (env != nullptr && *env != '\0') return fmt::format("the models folder is $BRISVOX_MODELS_DIR='{}'", env);
  return fmt::format("$BRISVOX_MODELS_DIR is unset; folders tried: '{}' (installed layout), '{}' (build default)",
                     detail::installed_data_dir("models"), BRISVOX_DEFAULT_MODELS_DIR);
}

std::string missing_bundled(std::string_view what, std::string_view path) {
  return fmt::format("{} not found at '{}' ({}): run scripts/setup.sh, or set BRISVOX_MODELS_DIR to the folder "
                     "holding it",
                     what, path, models_dir_search());
}

}  // namespace

// $BRISVOX_MODELS_DIR, else <prefix>/share/brisvox/models beside an installed binary, else the build's
// default: an installed brisvox never reaches into the checkout it was built from, and a build-tree
// binary (no share/ above it) keeps using the folder scripts/setup.sh fills.
std::string models_dir() {
  if (const char* env = std::getenv("BRISVOX_MODELS_DIR"); env != nullptr && *env != '\0') return env;
  if (std::string installed = detail::installed_data_dir("models"); !installed.empty() && file_exists(installed)) {
    return installed;
  }
  return BRISVOX_DEFAULT_MODELS_DIR;
}

std::string resolve_vad_model(std::string_view name_or_path) {
  bool exported = false;
  const std::string_view version = bundled_version(name_or_path, exported);
  if (version.empty()) {
    std::string path(name_or_path);
    if (!file_exists(path)) {
      throw Error(ErrorCode::kIo, fmt::format("model file '{}' not found (use v5, v6, v5-exported, "
                                              "v6-exported or a path to a Silero VAD .onnx file)",
                                              path));
    }
    return path;
  }
  const std::string published = fmt::format("{}/silero_vad_{}.onnx", models_dir(), version);
  if (!exported) {
    const std::string flat = fmt::format("{}/silero_vad_{}.flat.onnx", models_dir(), version);
    if (file_exists(flat)) return flat;
    if (file_exists(published)) {
      // Works, at about a third of the batched throughput: say how to get the rest.
      detail::log(LogLevel::kWarn,
                  "'{}' not found: using the exported graph '{}' (same results, ~3x slower in "
                  "batches); run tools/flatten_silero.py {} {}",
                  flat, published, published, flat);
      return published;
    }
  }
  if (!file_exists(published)) {
    throw Error(ErrorCode::kIo, missing_bundled(fmt::format("bundled model '{}'", name_or_path), published));
  }
  return published;
}

std::string resolve_stt_model(std::string_view name_or_path) {
  // -int8: the same weights with the linear layers as 8-bit blocks (scripts/setup.sh,
  // tools/whisper/weight_quant.py). base and base-int8: multilingual (docs/MODELS.md).
  if (std::find(std::begin(kBundledSttModels), std::end(kBundledSttModels), name_or_path) !=
      std::end(kBundledSttModels)) {
    const std::string folder = fmt::format("{}/whisper-{}", models_dir(), name_or_path);
    if (!file_exists(folder)) {
      throw Error(ErrorCode::kIo, missing_bundled(fmt::format("bundled Whisper model '{}'", name_or_path), folder));
    }
    return folder;
  }
  std::string folder(name_or_path);
  if (!file_exists(folder)) {
    throw Error(ErrorCode::kIo, fmt::format("Whisper model folder '{}' not found (use tiny.en, tiny.en-int8, base, base-int8 or "
                                            "the path of a folder in brisvox's, sherpa-onnx's or Optimum's layout)",
                                            folder));
  }
  return folder;
}

std::string resolve_turn_model(std::string_view name_or_path) {
  if (name_or_path == "v3.2") {
    const std::string path = fmt::format("{}/smart-turn-v3.2-cpu.onnx", models_dir());
    if (!file_exists(path)) {
      throw Error(ErrorCode::kIo, missing_bundled("bundled Smart Turn model 'v3.2'", path));
    }
    return path;
  }
  std::string path(name_or_path);
  if (!file_exists(path)) {
    throw Error(ErrorCode::kIo, fmt::format("Smart Turn model file '{}' not found (use v3.2 or a path to a Smart Turn "
                                            "v3.x .onnx file)",
                                            path));
  }
  return path;
}

}  // namespace brisvox
