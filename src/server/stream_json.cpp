#include "server/stream_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace brisvox::server {

using Json = nlohmann::json;

std::string json_quoted(std::string_view s) {
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string printable(const std::string& s) {
  const std::string quoted = json_quoted(s);
  return quoted.substr(1, quoted.size() - 2);
}

std::string read_string(const Json& obj, const char* key, std::string& out, std::size_t max, bool required,
                        std::string_view where) {
  const auto it = obj.find(key);
  if (it == obj.end()) return required ? fmt::format("{} has no \"{}\"", where, key) : std::string();
  if (!it->is_string()) return fmt::format("{}.{} must be a string", where, key);
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > max) return fmt::format("{}.{} is longer than {} bytes", where, key, max);
  out = s;
  return {};
}

const Json* object_field(const Json& j, const char* key, std::string& error) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_object()) {
    error = fmt::format("a {} message needs a \"{}\" object", key, key);
    return nullptr;
  }
  return &*it;
}

std::string check_counter(const Json& obj, const char* key, std::string_view where) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_number_unsigned()) return {};
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    if (!s.empty() && s.size() <= 20 && s.find_first_not_of("0123456789") == std::string::npos) return {};
  }
  return fmt::format("{}.{} must be a string of digits", where, key);
}

std::string read_parameters(const Json& obj, const char* key, std::size_t max_entries, std::size_t max_bytes,
                            std::vector<std::pair<std::string, std::string>>& out, std::string_view where) {
  const auto params = obj.find(key);
  if (params == obj.end() || params->is_null()) return {};
  if (!params->is_object()) return fmt::format("{}.{} must be an object", where, key);
  if (params->size() > max_entries) return fmt::format("{}.{} has more than {} entries", where, key, max_entries);
  for (const auto& [name, value] : params->items()) {
    if (!value.is_string()) return fmt::format("{}.{}.{} must be a string", where, key, json_quoted(name));
    if (name.size() > max_bytes || value.get_ref<const std::string&>().size() > max_bytes) {
      return fmt::format("a {}.{} name or value is longer than {} bytes", where, key, max_bytes);
    }
    out.emplace_back(name, value.get<std::string>());
  }
  return {};
}

std::string read_flat_parameters(const Json& obj, std::initializer_list<std::string_view> skip,
                                 std::size_t max_entries, std::size_t max_bytes,
                                 std::vector<std::pair<std::string, std::string>>& out, std::string_view where) {
  for (const auto& [name, value] : obj.items()) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    if (out.size() == max_entries) return fmt::format("{} has more than {} keys", where, max_entries);
    std::string text = value.is_string() ? value.get<std::string>()
                                         : value.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (name.size() > max_bytes || text.size() > max_bytes) {
      return fmt::format("a key's name or value in {} is longer than {} bytes", where, max_bytes);
    }
    out.emplace_back(name, std::move(text));
  }
  return {};
}

std::string read_dtmf_event(const Json& obj, std::string& digit) {
  constexpr std::size_t kMaxDigitBytes = 16;  // one key; read bounded before it is checked
  if (std::string e = read_string(obj, "dtmf", digit, kMaxDigitBytes, true, "dtmf"); !e.empty()) return e;
  if (digit.size() != 1 || std::string_view("0123456789*#ABCD").find(digit[0]) == std::string_view::npos) {
    return "dtmf's digit must be one of 0-9, *, #, A-D";
  }
  if (const auto d = obj.find("duration"); d != obj.end() && !d->is_string() && !d->is_number()) {
    return "dtmf's duration must be a string or a number";
  }
  return {};
}

std::string read_count(const Json& obj, const char* key, int& out, std::string_view where) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0 ||
      it->get<std::int64_t>() > 1'000'000) {
    return fmt::format("{}.{} must be a positive integer", where, key);
  }
  out = static_cast<int>(it->get<std::int64_t>());
  return {};
}

}  // namespace brisvox::server
