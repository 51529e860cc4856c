// The application URL of serve --call-app (docs/TELEPHONY.md). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace brisvox::server {

// A ws:// URL of --call-app: host, port (default 80) and the request target (default "/").
struct AppUrl {
  std::string host;
  std::string port;
  std::string target;
  std::string text;  // as given, for log lines
};
// The URL, or Error(kInvalidArgument) saying what is wrong with it (only ws:// is taken).
AppUrl parse_app_url(std::string_view url);

}  // namespace brisvox::server
