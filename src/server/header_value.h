// An HTTP-style header value with parameters, `type/subtype; name=value; name="quoted"` (RFC 9110
// 5.6.6): Content-Type of a multipart form (multipart.h), Vonage's "audio/l16;rate=16000"
// (vonage_messages.h); and a comma-separated list such as Sec-WebSocket-Protocol. Pure functions;
// thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace brisvox::server {

// `s` without the optional whitespace (spaces and tabs) around a header value.
std::string_view trim_ows(std::string_view s);
// `s` with ASCII letters lower-cased (header names, media types and parameter names are
// case-insensitive).
std::string ascii_lower(std::string_view s);
// The media type before the parameters, lower-cased, surrounding whitespace removed.
std::string media_type(std::string_view value);
// The value of parameter `name` (lower-case) in `value` (quotes removed, backslash escapes undone);
// nullopt if absent.
std::optional<std::string> header_param(std::string_view value, std::string_view name);

// Whether the comma-separated list `value` (RFC 9110 5.6.1, e.g. the subprotocols an upgrade asks
// for) has the element `token`, exactly.
bool list_has(std::string_view value, std::string_view token);

}  // namespace brisvox::server
