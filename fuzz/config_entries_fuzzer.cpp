// The parser of `brisvox serve --config` files (cli/config_entries.h) on arbitrary text: the file
// may be written by anyone who can write the server's configuration, and the loader must fail
// closed on whatever it does not fully understand (issue 35 D6).
//
// Invariants: it returns entries or throws brisvox::Error(kInvalidArgument) whose message names the
// file, nothing else; entries come in the order they are written (lines from 1, never decreasing)
// and each holds at least one value unless it is an empty array; a boolean entry holds exactly
// "true" or "false".
#include <cstdint>
#include <string>

#include "brisvox/error.h"
#include "cli/config_entries.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<brisvox::cli::ConfigEntry> entries;
  try {
    entries = brisvox::cli::parse_config_entries(text, "fuzz.toml", "serve");
  } catch (const brisvox::Error& e) {
    FUZZ_CHECK(e.code() == brisvox::ErrorCode::kInvalidArgument, "error code %d", static_cast<int>(e.code()));
    FUZZ_CHECK(std::string(e.what()).find("config file 'fuzz.toml': ") == 0, "message: %s", e.what());
    return 0;
  } catch (...) {
    FUZZ_CHECK(false, "parse_config_entries threw something other than brisvox::Error");
  }
  int last_line = 0;
  for (const auto& entry : entries) {
    FUZZ_CHECK(entry.line >= 1 && entry.line >= last_line, "line %d after %d", entry.line, last_line);
    last_line = entry.line;
    if (entry.is_bool) {
      FUZZ_CHECK(entry.inputs.size() == 1 && (entry.inputs[0] == "true" || entry.inputs[0] == "false"),
                 "a boolean entry '%s' with %zu values", entry.key.c_str(), entry.inputs.size());
    }
  }
  return 0;
}
