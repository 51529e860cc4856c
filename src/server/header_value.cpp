#include "server/header_value.h"

#include <algorithm>
#include <cctype>

namespace brisvox::server {

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string media_type(std::string_view value) { return ascii_lower(trim_ows(value.substr(0, value.find(';')))); }

std::optional<std::string> header_param(std::string_view value, std::string_view name) {
  std::size_t i = value.find(';');  // past the type
  if (i == std::string_view::npos) return std::nullopt;
  ++i;
  while (i < value.size()) {
    while (i < value.size() && (value[i] == ' ' || value[i] == '\t' || value[i] == ';')) ++i;
    const std::size_t eq = value.find('=', i);
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string key = ascii_lower(trim_ows(value.substr(i, eq - i)));
    i = eq + 1;
    while (i < value.size() && (value[i] == ' ' || value[i] == '\t')) ++i;
    std::string v;
    const bool quoted = i < value.size() && value[i] == '"';
    if (quoted) {
      for (++i; i < value.size() && value[i] != '"'; ++i) {
        if (value[i] == '\\' && i + 1 < value.size()) ++i;
        v += value[i];
      }
    }
    const std::size_t semi = value.find(';', i);
    const std::size_t end = semi == std::string_view::npos ? value.size() : semi;
    if (!quoted) v = std::string(trim_ows(value.substr(i, end - i)));
    if (key == name) return v;
    i = end;
  }
  return std::nullopt;
}

bool list_has(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    if (trim_ows(value.substr(0, comma)) == token) return true;
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
  }
  return false;
}

}  // namespace brisvox::server
