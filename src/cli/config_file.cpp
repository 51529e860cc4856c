#include "cli/config_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <toml++/toml.h>

#include "brisvox/error.h"

namespace brisvox::cli {
namespace {

// A configuration is a few dozen lines; anything far larger is not one (/dev/zero, a log given
// by mistake) and is refused before it is read, not read whole and then ignored.
constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;

Error bad_config(const std::string& path, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("config file '{}': {}", path, message));
}

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

std::string source_line(const toml::source_region& where) {
  return where.begin.line > 0 ? fmt::format("line {}: ", where.begin.line) : std::string();
}

// One scalar as the text an option parses ("64", "0.5", "true", "a.example").
std::string scalar_text(const std::string& path, const std::string& key, const toml::node& value) {
  if (const auto* s = value.as_string()) return s->get();
  if (const auto* i = value.as_integer()) return std::to_string(i->get());
  if (const auto* f = value.as_floating_point()) return fmt::format("{}", f->get());
  if (const auto* b = value.as_boolean()) return b->get() ? "true" : "false";
  throw bad_config(path, fmt::format("{}key '{}': a {} is not a value any option takes (a string, number or "
                                     "true/false; an array of them for a repeatable option)",
                                     source_line(value.source()), key,
                                     value.is_table() ? "table" : "date or time"));
}

struct Item {
  std::string key;
  std::vector<std::string> inputs;
  bool is_bool = false;
  toml::source_region where;
};

void collect(const std::string& path, const std::string& key, const toml::node& value, std::vector<Item>& items) {
  Item item{key, {}, value.is_boolean(), value.source()};
  if (const auto* array = value.as_array()) {
    for (const toml::node& element : *array) {
      if (element.is_array() || element.is_table()) {
        throw bad_config(path, fmt::format("{}key '{}': arrays hold strings or numbers, not arrays or tables",
                                           source_line(element.source()), key));
      }
      item.inputs.push_back(scalar_text(path, key, element));
    }
  } else {
    item.inputs.push_back(scalar_text(path, key, value));
  }
  items.push_back(std::move(item));
}

// The file's keys, top level and [<command>], in the order they were written. Strict TOML 1.0:
// anything the parser does not fully understand (an unclosed array, a bare word as a value) is an
// error with its line, never a line swallowed into the previous key.
std::vector<Item> parse_items(const std::string& path, const std::string& text, const std::string& command) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw bad_config(path, fmt::format("{}{} (the file must be TOML: key = value, strings in quotes)",
                                       source_line(e.source()), e.description()));
  }
  std::vector<Item> items;
  for (const auto& [key, value] : root) {
    const std::string name(key.str());
    if (const auto* table = value.as_table()) {
      if (name != command) {
        const std::string first = table->empty() ? name : fmt::format("{}.{}", name, table->cbegin()->first.str());
        throw bad_config(path, fmt::format("{}unknown section or dotted key '{}' (keys go at the top level or in [{}])",
                                           source_line(value.source()), first, command));
      }
      for (const auto& [inner_key, inner] : *table) {
        const std::string inner_name(inner_key.str());
        if (inner.is_table()) {
          throw bad_config(path, fmt::format("{}unknown section or dotted key '{}.{}' (keys go at the top level or in [{}])",
                                             source_line(inner.source()), name, inner_name, command));
        }
        collect(path, inner_name, inner, items);
      }
    } else {
      collect(path, name, value, items);
    }
  }
  // A table's keys come out sorted, not as written: errors name the first in the file.
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.where.begin.line < b.where.begin.line;
  });
  return items;
}

}  // namespace

std::vector<std::string> apply_config_file(CLI::App& command, const std::string& path) {
  const std::vector<Item> items = parse_items(path, read_config(path), command.get_name());
  std::vector<std::string> applied;
  for (const Item& item : items) {
    const std::string& key = item.key;
    CLI::Option* option = key == "config" || key == "help" ? nullptr : command.get_option_no_throw("--" + key);
    if (option == nullptr) {
      throw bad_config(path, fmt::format("{}unknown key '{}' (keys are the long options of `brisvox {} --help` "
                                         "without the dashes, e.g. max-streams = 64)",
                                         source_line(item.where), key, command.get_name()));
    }
    if (option->count() > 0) continue;  // the command line wins
    try {
      if (option->get_expected_min() == 0) {  // a flag: true or false
        if (!item.is_bool) {
          throw bad_config(path, fmt::format("{}key '{}' is a flag: true or false, got {}", source_line(item.where),
                                             key, fmt::join(item.inputs, ", ")));
        }
        option->add_result(option->get_flag_value(key, item.inputs.front()));
      } else {
        option->add_result(item.inputs);
      }
      option->run_callback();
    } catch (const CLI::Error& e) {
      throw bad_config(path, fmt::format("{}bad value for key '{}' ({}): {}", source_line(item.where), key,
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
