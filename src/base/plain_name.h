// The one rule for a name brisvox takes from its user (a model's, a call application's): 1 to 64
// letters, digits, '-', '_' or '.', so that it reads the same in a log line, a metric label and
// JSON, unquoted.
#pragma once

#include <algorithm>
#include <string_view>

namespace brisvox {

inline bool is_plain_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

}  // namespace brisvox
