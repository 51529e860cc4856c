// The applications of serve --call-app (docs/TELEPHONY.md): one URL, or several by name, chosen
// per call by its "app" parameter. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// The call parameter that names a call's application (Twilio's <Parameter name="app">, Telnyx's
// custom_parameters, Vonage's headers, Asterisk's v(app=...), jambonz's and FreeSWITCH's metadata).
inline constexpr std::string_view kAppParameter = "app";

// Every --call-app entry: "URL" (the calls that name no application) and "NAME=URL" (those whose
// "app" parameter is NAME).
struct CallApps {
  std::optional<AppUrl> unnamed;
  std::vector<std::pair<std::string, AppUrl>> named;

  bool empty() const { return !unnamed && named.empty(); }
  // The application of a call whose "app" parameter is `name` (empty: it names none), or nullptr;
  // `why` then says what the operator is to fix. With one unnamed URL alone, that one, whatever
  // the name.
  const AppUrl* pick(std::string_view name, std::string& why) const;
};
// The entries of --call-app, or Error(kInvalidArgument) naming the one that is wrong: a bad URL, a
// name that is not 1-64 of [A-Za-z0-9_.-], a name given twice, two unnamed URLs.
CallApps parse_call_apps(const std::vector<std::string>& entries);

}  // namespace brisvox::server
