#include "server/access_policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include "server/base64.h"
#include "server/query_params.h"

namespace brisvox::server {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Optional whitespace around a header value (RFC 9110 5.5) and nothing else: a '/' belongs to the
// value (a token may end in one; "Bearer s3cret///" is not "Bearer s3cret").
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A configured origin as the user may write it: "https://app.example.com/" is that origin.
std::string_view trim_configured_origin(std::string_view s) {
  s = trim(s);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

}  // namespace

bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool token_equals(std::string_view configured, std::string_view token) {
  return configured.empty() || equal_constant_time(token, configured);
}

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

bool basic_password_ok(std::string_view configured, std::string_view authorization) {
  if (configured.empty()) return true;
  constexpr std::string_view kBasic = "Basic ";
  authorization = trim(authorization);
  if (authorization.size() <= kBasic.size() || !iequals(authorization.substr(0, kBasic.size()), kBasic)) return false;
  const auto decoded = base64_decode(trim(authorization.substr(kBasic.size())));
  if (!decoded) return false;
  const std::size_t colon = decoded->find(':');
  return colon != std::string::npos && equal_constant_time(std::string_view(*decoded).substr(colon + 1), configured);
}

bool origin_ok(const std::vector<std::string>& allowed, std::string_view origin, std::string_view host) {
  origin = trim(origin);
  if (origin.empty()) return true;
  for (const auto& a : allowed) {
    if (a == "*" || iequals(trim_configured_origin(a), origin)) return true;
  }
  const auto scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos) return false;  // "null" (a file:// page, a sandbox)
  const std::string_view scheme = origin.substr(0, scheme_end);
  if (!iequals(scheme, "http") && !iequals(scheme, "https")) return false;  // a page of this server is http(s)
  return !host.empty() && iequals(origin.substr(scheme_end + 3), trim(host));
}

std::string_view host_name(std::string_view host) {
  host = trim(host);
  if (host.starts_with('[')) {
    const auto end = host.find(']');
    return end == std::string_view::npos ? host : host.substr(1, end - 1);
  }
  if (const auto colon = host.rfind(':'); colon != std::string_view::npos && host.find(':') == colon) {
    host = host.substr(0, colon);  // one ':' is a port (an unbracketed IPv6 address has several)
  }
  if (host.ends_with('.')) host.remove_suffix(1);
  return host;
}

bool host_ok(const std::vector<std::string>& allowed, std::string_view host, std::string_view listen_host) {
  if (trim(host).empty()) return true;
  const std::string name(host_name(host));
  if (name.empty()) return false;
  unsigned char address[16];
  if (::inet_pton(AF_INET, name.c_str(), address) == 1 || ::inet_pton(AF_INET6, name.c_str(), address) == 1) {
    return true;
  }
  if (iequals(name, "localhost")) return true;
  if (name.size() > 10 && iequals(std::string_view(name).substr(name.size() - 10), ".localhost")) return true;
  if (iequals(name, host_name(listen_host))) return true;
  return std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& a) { return a == "*" || iequals(host_name(a), name); });
}

}  // namespace brisvox::server
