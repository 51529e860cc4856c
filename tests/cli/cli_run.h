// The CLI under test (BRISVOX_CLI_PATH) run with arguments, and its output read as lines or as
// JSON Lines: what the CLI's end-to-end test files share.
#pragma once

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "cli_process.h"

namespace brisvox::test {

inline const std::string kCli = BRISVOX_CLI_PATH;

inline ProcessResult brisvox(std::vector<std::string> args, const std::string& stdin_path = "/dev/null") {
  args.insert(args.begin(), kCli);
  return run_process(args, stdin_path);
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// One JSON object per line of `out`.
inline std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> docs;
  for (const std::string& line : lines_of(out)) docs.push_back(nlohmann::json::parse(line));
  return docs;
}

}  // namespace brisvox::test
