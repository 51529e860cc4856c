// The names of WhisperLanguageDetection, apart from the search: the protocol parsers take them
// without linking the decoder (the fuzz targets, fuzz/CMakeLists.txt).
#include "brisvox/models/stt/whisper_search.h"

namespace brisvox {

std::string_view to_string(WhisperLanguageDetection d) noexcept {
  return d == WhisperLanguageDetection::kEach ? "each" : "first";
}

std::optional<WhisperLanguageDetection> parse_language_detection(std::string_view name) noexcept {
  if (name == "first") return WhisperLanguageDetection::kFirst;
  if (name == "each") return WhisperLanguageDetection::kEach;
  return std::nullopt;
}

}  // namespace brisvox
