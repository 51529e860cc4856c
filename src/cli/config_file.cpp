#include "cli/config_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>

#include "brisvox/error.h"

namespace brisvox::cli {
namespace {

Error bad_config(const std::string& path, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("config file '{}': {}", path, message));
}

}  // namespace

std::vector<std::string> apply_config_file(CLI::App& command, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot read config file '{}'", path));
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const CLI::Error& e) {
    throw bad_config(path, e.what());
  }
  std::vector<std::string> applied;
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // CLI11's section open/close markers
    const bool top_level = item.parents.empty();
    if (!top_level && !(item.parents.size() == 1 && item.parents[0] == command.get_name())) {
      throw bad_config(path, fmt::format("unknown section or dotted key '{}' (keys go at the top level or in [{}])",
                                         item.fullname(), command.get_name()));
    }
    const std::string key = item.name;
    CLI::Option* option = key == "config" || key == "help" ? nullptr : command.get_option_no_throw("--" + key);
    if (option == nullptr) {
      throw bad_config(path, fmt::format("unknown key '{}' (keys are the long options of `brisvox {} --help` "
                                         "without the dashes, e.g. max-streams = 64)",
                                         key, command.get_name()));
    }
    if (option->count() > 0) continue;  // the command line wins
    try {
      if (option->get_expected_min() == 0) {  // a flag: true/false, yes/no, 1/0
        option->add_result(option->get_flag_value(key, CLI::ConfigTOML().to_flag(item)));
      } else {
        option->add_result(item.inputs);
      }
      option->run_callback();
    } catch (const CLI::Error& e) {
      throw bad_config(path, fmt::format("bad value for key '{}' ({}): {}", key,
                                         fmt::join(item.inputs, ", "), e.what()));
    }
    applied.push_back(key);
  }
  return applied;
}

Error with_config_source(const Error& error, const std::string& path, const std::vector<std::string>& applied) {
  const std::string_view message = error.what();
  for (const std::string& key : applied) {
    const std::string flag = "--" + key;
    // The option's name as the message starts with it: "--port must be ...", not "--port-x".
    if (message.substr(0, flag.size()) == flag &&
        (message.size() == flag.size() || message[flag.size()] == ' ')) {
      return Error(error.code(), fmt::format("config file '{}': key '{}': {}", path, key, message));
    }
  }
  return error;
}

}  // namespace brisvox::cli
