// Twilio's request signature (docs/TELEPHONY.md, "Twilio"; Twilio's "Webhooks security"): each
// request, the Media Stream's WebSocket handshake included, carries X-Twilio-Signature, the base64
// of HMAC-SHA1 keyed with the account's Auth Token over the full URL Twilio requested (scheme, host,
// path, query) followed by each POST parameter's name and value, sorted by name (none for the
// handshake's GET). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brisvox::server {

// The signature of a request to `url` with POST `params` (name, value), as Twilio computes it.
std::string twilio_signature(std::string_view auth_token, std::string_view url,
                             std::vector<std::pair<std::string, std::string>> params = {});

// The URL Twilio requested for an upgrade whose request target is `target` and Host `host`: the
// server's public base URL (`public_url`, "wss://voice.example.com": what the <Stream url> names,
// which a TLS-terminating proxy hides from brisvox) or else "wss://" + host, then the target.
std::string twilio_request_url(std::string_view public_url, std::string_view host, std::string_view target);

// Whether `signature` (the header's value) signs `url`, or `url` with its default port added or
// removed (":443" for wss/https, ":80" for ws/http), as Twilio's helper libraries accept it.
// Compared in constant time.
bool twilio_signature_valid(std::string_view auth_token, std::string_view url, std::string_view signature);

}  // namespace brisvox::server
