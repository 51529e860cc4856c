// Who may use the audio endpoints: a bearer token (when configured) and, for browsers, the page's
// Origin. Pure functions of the request's headers, so the listener decides before any upgrade.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brisvox::server {

// True when no token is configured, or when `authorization` is "Bearer <token>" or the query
// holds token=<token>. Compared in constant time.
bool token_ok(std::string_view configured, std::string_view authorization, std::string_view query);

// Origin rules (the header browsers send with every WebSocket upgrade and cross-site request):
//   no Origin header                 allowed (not a browser: curl, a telephony bridge)
//   "*" in `allowed`                 any origin
//   origin equal to an entry         allowed (scheme://host[:port], compared case-insensitively)
//   the same host                    allowed: the origin's host[:port] equals the Host header (the
//                                    demo page served by this server)
//   anything else                    refused (403)
bool origin_ok(const std::vector<std::string>& allowed, std::string_view origin, std::string_view host);

}  // namespace brisvox::server
