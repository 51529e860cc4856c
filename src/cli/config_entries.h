// The entries of a `--config` file: strict TOML 1.0 (toml++, header-only) read into key = values
// pairs, before any of them is applied to an option (config_file.h does that). Apart so that the
// parser of a file an operator (or anyone who can write it) controls has its own fuzz target.
#pragma once

#include <string>
#include <vector>

#include "brisvox/error.h"

namespace brisvox::cli {

struct ConfigEntry {
  std::string key;                  // at the top level or in [<command>]
  std::vector<std::string> inputs;  // one scalar as text, or an array's elements
  bool is_bool = false;             // a TOML true/false (what a flag takes)
  int line = 0;                     // where it is written, from 1
};

// The entries of `text`, keys at the top level or in a [`command`] table, in the order written.
// Throws Error(kInvalidArgument) naming `path` and the line for a TOML syntax error (an unclosed
// array never swallows the next line), nesting past 256, another table, or a value no option takes
// (a date, an inline table, an array of arrays).
std::vector<ConfigEntry> parse_config_entries(const std::string& text, const std::string& path,
                                              const std::string& command);

// The error of a configuration file: kInvalidArgument, naming the file.
Error bad_config(const std::string& path, const std::string& message);

}  // namespace brisvox::cli
