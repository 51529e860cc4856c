// Who may use the audio endpoints: a bearer token (when configured) and, for browsers, the page's
// Origin. Pure functions of the request's headers, so the listener decides before any upgrade.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brisvox::server {

// Whether two secrets (tokens, signatures) are equal; the time taken leaks their length, not
// where they differ.
bool equal_constant_time(std::string_view a, std::string_view b);

// True when no token is configured, or when `authorization` is "Bearer <token>" or the query
// holds token=<token>. Compared in constant time.
bool token_ok(std::string_view configured, std::string_view authorization, std::string_view query);
// True when no token is configured, or when `token` is it (a token a provider carries in its own
// messages). Compared in constant time.
bool token_equals(std::string_view configured, std::string_view token);
// Whether `authorization` is HTTP Basic authentication whose password is the configured token (any
// username): how Asterisk's websocket_client.conf authenticates (always true with no token).
bool basic_password_ok(std::string_view configured, std::string_view authorization);

// Origin rules (the header browsers send with every WebSocket upgrade and cross-site request):
//   no Origin header                 allowed (not a browser: curl, a telephony bridge)
//   "*" in `allowed`                 any origin
//   origin equal to an entry         allowed (scheme://host[:port], compared case-insensitively)
//   the same host                    allowed: the origin's host[:port] equals the Host header (the
//                                    demo page served by this server)
//   anything else                    refused (403)
//   the same host                    allowed only for the schemes http and https ("ftp://host:port"
//                                    is refused)
bool origin_ok(const std::vector<std::string>& allowed, std::string_view origin, std::string_view host);

// The Host header check against DNS rebinding (a page of evil.example whose name now resolves to
// 127.0.0.1 sends "Host: evil.example:P"): true for an empty Host (HTTP/1.0 may omit it), an IP
// literal (127.0.0.1, [::1], 10.0.0.7: a browser sends these only for pages of that address),
// "localhost" and names under ".localhost", `listen_host` (--host), and names in `allowed`
// (--allow-host; "*" allows any). Names are compared case-insensitively without the port.
bool host_ok(const std::vector<std::string>& allowed, std::string_view host, std::string_view listen_host);

// The name part of a Host header value: "[::1]:8700" -> "::1", "example.com:80" -> "example.com",
// "localhost." -> "localhost".
std::string_view host_name(std::string_view host);

}  // namespace brisvox::server
