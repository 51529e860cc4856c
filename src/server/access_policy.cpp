#include "server/access_policy.h"

#include <algorithm>
#include <cctype>

#include "server/query_params.h"

namespace brisvox::server {
namespace {

bool equal_constant_time(std::string_view a, std::string_view b) {
  // The length leaks; the contents do not.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '/')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool token_ok(std::string_view configured, std::string_view authorization, std::string_view query) {
  if (configured.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  authorization = trim(authorization);
  if (authorization.size() > kBearer.size() && iequals(authorization.substr(0, kBearer.size()), kBearer) &&
      equal_constant_time(trim(authorization.substr(kBearer.size())), configured)) {
    return true;
  }
  try {
    const auto params = parse_query_string(query);
    const auto it = params.find("token");
    return it != params.end() && equal_constant_time(it->second, configured);
  } catch (...) {
    return false;  // a malformed query holds no usable token
  }
}

bool origin_ok(const std::vector<std::string>& allowed, std::string_view origin, std::string_view host) {
  origin = trim(origin);
  if (origin.empty()) return true;
  for (const auto& a : allowed) {
    if (a == "*" || iequals(trim(a), origin)) return true;
  }
  const auto scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos) return false;  // "null" (a file:// page, a sandbox)
  return !host.empty() && iequals(origin.substr(scheme_end + 3), trim(host));
}

}  // namespace brisvox::server
