#include "formats/fields.h"

#include <filesystem>

namespace brisvox::formats {

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string rttm_id(const std::string& file) {
  std::string id = file == "-" ? std::string("stdin") : std::filesystem::path(file).stem().string();
  for (char& c : id) {
    if (c == ' ' || c == '\t') c = '_';
  }
  return id.empty() ? "audio" : id;
}

std::string trimmed(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\n");
  if (begin == std::string::npos) return {};
  const auto end = s.find_last_not_of(" \t\n");
  return s.substr(begin, end - begin + 1);
}

}  // namespace brisvox::formats
