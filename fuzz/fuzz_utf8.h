// Whether a text a target produced (an error message for a log line or a client's JSON) is valid
// UTF-8: nlohmann's strict error handler throws on invalid UTF-8 when it writes the string.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

inline bool is_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}
