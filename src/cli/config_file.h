// `--config FILE` for a subcommand: its options read from a TOML file (toml++, strict TOML 1.0),
// the command line winning over the file.
//
// CLI11 2.1's own set_config() cannot do this for a subcommand: App::_process_config_file() runs
// for the main app only, so a subcommand's --config is accepted and the file silently ignored. So
// the file is applied here, after the command line is parsed: each key fills the option of that
// name unless the command line already gave it (an environment fallback such as $BRISVOX_TOKEN is
// read later, when the option is still empty: command line > file > environment).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "brisvox/error.h"

namespace brisvox::cli {

// Applies `path` to the options of `command`: keys are long option names without the dashes
// (`max-streams = 64`, flags as `access-log = true`, repeatable options as arrays), at the top
// level or in a [<command name>] section. Throws Error(kInvalidArgument) naming the file, the line
// and the key for anything it does not fully understand: a TOML syntax error (an unclosed array
// never swallows the next line), an unknown key or section, a value the option refuses; for a file
// that is not a regular file (a FIFO, a device) or is over 1 MiB. Error(kIo) when the file cannot
// be read. Returns the keys applied (not those the command line overrode).
std::vector<std::string> apply_config_file(CLI::App& command, const std::string& path);

// A range check that runs later (ServerConfig::validate: "--port must be 0 to 65535, got 99999")
// names the option, not where its value came from: when the option is one of `applied`, the
// error returned also names the key and the file; otherwise it is `error` as it was.
Error with_config_source(const Error& error, const std::string& path, const std::vector<std::string>& applied);

}  // namespace brisvox::cli
