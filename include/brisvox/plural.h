#pragma once
// "1 stream", "2 streams": a count and its noun, for the messages and log lines people read.
#include <cstddef>
#include <string>
#include <string_view>

namespace brisvox {

// plural_s defaults to singular + "s"; pass it for nouns that do not take a plain s.
inline std::string count_of(std::size_t n, std::string_view singular, std::string_view plural_s = {}) {
  std::string out = std::to_string(n);
  out += ' ';
  if (n == 1) {
    out += singular;
  } else if (!plural_s.empty()) {
    out += plural_s;
  } else {
    out += singular;
    out += 's';
  }
  return out;
}

}  // namespace brisvox
