#include "server/app_url.h"

#include <fmt/format.h>

#include <charconv>

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

}  // namespace brisvox::server
