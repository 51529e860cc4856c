#include "server/app_url.h"

#include <fmt/format.h>

#include <charconv>

#include "base/plain_name.h"
#include "brisvox/error.h"

namespace brisvox::server {

AppUrl parse_app_url(std::string_view url) {
  const auto bad = [&](std::string_view why) {
    return Error(ErrorCode::kInvalidArgument,
                 fmt::format("--call-app '{}' {}: give a WebSocket URL such as ws://127.0.0.1:9000/calls", url, why));
  };
  constexpr std::string_view kScheme = "ws://";
  if (url.substr(0, kScheme.size()) != kScheme) throw bad("is not a ws:// URL (wss:// and others are not taken)");
  AppUrl u;
  u.text = std::string(url);
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  u.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos) throw bad("has user information");
  std::string_view port = "80";
  if (!authority.empty() && authority.front() == '[') {  // [::1]:9000
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw bad("has an unclosed '['");
    u.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') throw bad("has something after the ']'");
      port = authority.substr(close + 2);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) throw bad("has no host");
  int p = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535) throw bad("has no valid port");
  u.port = std::string(port);
  if (u.target.find_first_of(" \r\n#") != std::string::npos) throw bad("has a space, a line break or a '#'");
  return u;
}

namespace {

std::string names_of(const CallApps& apps) {
  std::string names;
  for (const auto& [name, url] : apps.named) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

const AppUrl* CallApps::pick(std::string_view name, std::string& why) const {
  // One application alone takes every call: an "app" parameter a call carried for its own ends
  // (before names existed) goes on to it.
  if (named.empty() && unnamed) return &*unnamed;
  if (name.empty()) {
    if (unnamed) return &*unnamed;
    why = fmt::format("the call names no application (its \"{}\" parameter) and every --call-app has a name: "
                      "give the call one of {}, or add an unnamed --call-app URL for such calls",
                      kAppParameter, names_of(*this));
    return nullptr;
  }
  for (const auto& [n, url] : named) {
    if (n == name) return &url;
  }
  why = fmt::format("the call names application \"{}\" (its \"{}\" parameter), which no --call-app NAME=URL names{}",
                    name, kAppParameter, named.empty() ? "" : fmt::format(" (named: {})", names_of(*this)));
  return nullptr;
}

CallApps parse_call_apps(const std::vector<std::string>& entries) {
  CallApps apps;
  for (const std::string& entry : entries) {
    // A URL begins with its scheme: an entry whose '=' comes before "://" is NAME=URL.
    const std::size_t eq = entry.find('=');
    const std::size_t scheme = entry.find("://");
    if (eq == std::string::npos || (scheme != std::string::npos && scheme < eq)) {
      if (apps.unnamed) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("--call-app gives two URLs without a name ('{}' and '{}'): name all but one, "
                                "NAME=ws://HOST:PORT/PATH, and calls choose by their \"{}\" parameter",
                                apps.unnamed->text, entry, kAppParameter));
      }
      apps.unnamed = parse_app_url(entry);
      continue;
    }
    const std::string name = entry.substr(0, eq);
    if (!is_plain_name(name)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--call-app '{}': an application's name is 1 to 64 letters, digits, '_', '-' or '.' "
                              "(NAME=ws://HOST:PORT/PATH)", entry));
    }
    for (const auto& [n, url] : apps.named) {
      if (n == name) {
        throw Error(ErrorCode::kInvalidArgument, fmt::format("--call-app names application \"{}\" twice", name));
      }
    }
    apps.named.emplace_back(name, parse_app_url(std::string_view(entry).substr(eq + 1)));
  }
  return apps;
}

}  // namespace brisvox::server
