#include "cli/config_entries.h"

#include <fmt/format.h>

#include <algorithm>

// toml++ 3.3 asserts preconditions that some invalid input breaks (`[$serve]` reaches
// parse_key()'s "bare key or string delimiter" assertion, a fuzz finding) and then reports that
// input as the syntax error it is, as release builds, where the assertion is compiled out, show.
// Its asserts are off here so that a debug or fuzz build checks what the parser answers, not the
// parser's own assumptions. (No other file includes toml++.)
#define TOML_ASSERT(expr) static_assert(true)
#include <toml++/toml.h>

#include "brisvox/error.h"

namespace brisvox::cli {
namespace {

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

void collect(const std::string& path, const std::string& key, const toml::node& value, std::vector<ConfigEntry>& items) {
  ConfigEntry item{key, {}, value.is_boolean(), static_cast<int>(value.source().begin.line)};
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

// Refused before the parser sees them: a control character other than tab, LF and CR (TOML allows
// none, comments and strings included), and any byte outside ASCII. The second is a guard:
// toml++ 3.3 reaches __builtin_unreachable() classifying some non-ASCII characters as whitespace
// (U+FEFD; fuzz findings, in a key, after a value, and where a bad token is skipped): undefined
// behaviour in a release build. Every option's value is ASCII in practice; other text can still be
// written as a \uXXXX escape in a "..." string.
void check_characters(const std::string& text, const std::string& path) {
  int line = 1;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u == '\n') ++line;
    if ((u < 0x20 && u != '\t' && u != '\n' && u != '\r') || u == 0x7f) {
      throw bad_config(path, fmt::format("line {}: control character U+{:04X} (TOML allows only tab, line feed and "
                                         "carriage return)",
                                         line, u));
    }
    if (u >= 0x80) {
      throw bad_config(path, fmt::format("line {}: a byte outside ASCII (0x{:02X}; comments too): write other characters as "
                                         "\\uXXXX escapes in a \"...\" string",
                                         line, u));
    }
  }
}

}  // namespace

Error bad_config(const std::string& path, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("config file '{}': {}", path, message));
}

std::vector<ConfigEntry> parse_config_entries(const std::string& text, const std::string& path,
                                              const std::string& command) {
  check_characters(text, path);
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw bad_config(path, fmt::format("{}{} (the file must be TOML: key = value, strings in quotes)",
                                       source_line(e.source()), e.description()));
  }
  std::vector<ConfigEntry> items;
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
  std::stable_sort(items.begin(), items.end(), [](const ConfigEntry& a, const ConfigEntry& b) { return a.line < b.line; });
  return items;
}

}  // namespace brisvox::cli
