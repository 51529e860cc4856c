#include "cli/config_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include "brisvox/error.h"
#include "cli/config_entries.h"

namespace brisvox::cli {
namespace {

// A configuration is a few dozen lines; anything far larger is not one (/dev/zero, a log given
// by mistake) and is refused before it is read, not read whole and then ignored.
constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;

// The file's text. Only a regular file: a FIFO would block the start until someone writes to it,
// a device would be read without end.
std::string read_config(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw Error(ErrorCode::kIo, fmt::format("cannot read config file '{}'", path));
  if (!S_ISREG(st.st_mode)) {
    throw bad_config(path, "not a regular file (a FIFO, a device or a folder cannot be a configuration)");
  }
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxConfigBytes) {
    throw bad_config(path, fmt::format("{} bytes: a configuration is at most {} bytes", st.st_size, kMaxConfigBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot read config file '{}'", path));
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) throw bad_config(path, "grew past the size limit while it was read");
  return text;
}

std::string line_of(const ConfigEntry& item) { return item.line > 0 ? fmt::format("line {}: ", item.line) : std::string(); }

}  // namespace

std::vector<std::string> apply_config_file(CLI::App& command, const std::string& path) {
  const std::vector<ConfigEntry> items = parse_config_entries(read_config(path), path, command.get_name());
  std::vector<std::string> applied;
  for (const ConfigEntry& item : items) {
    const std::string& key = item.key;
    CLI::Option* option = key == "config" || key == "help" ? nullptr : command.get_option_no_throw("--" + key);
    if (option == nullptr) {
      throw bad_config(path, fmt::format("{}unknown key '{}' (keys are the long options of `brisvox {} --help` "
                                         "without the dashes, e.g. max-streams = 64)",
                                         line_of(item), key, command.get_name()));
    }
    if (option->count() > 0) continue;  // the command line wins
    try {
      if (option->get_expected_min() == 0) {  // a flag: true or false
        if (!item.is_bool) {
          throw bad_config(path, fmt::format("{}key '{}' is a flag: true or false, got {}", line_of(item),
                                             key, fmt::join(item.inputs, ", ")));
        }
        option->add_result(option->get_flag_value(key, item.inputs.front()));
      } else {
        option->add_result(item.inputs);
      }
      option->run_callback();
    } catch (const CLI::Error& e) {
      throw bad_config(path, fmt::format("{}bad value for key '{}' ({}): {}", line_of(item), key,
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
