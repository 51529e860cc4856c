// A client's call id, `?tag=call-42` on /v1/stream, /v1/vad, /v1/transcribe and /v1/tts: carried
// into the server's log lines of that stream or request and into the events it sends (the ready
// message of a stream, the result of a POST; docs/PROTOCOL.md), so that a client's own records
// and the server's can be joined.
//
// 1..64 characters of A-Z a-z 0-9 . _ : - (no spaces, quotes or control characters: it goes into
// log lines and JSON as it is).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brisvox::server {

inline constexpr std::size_t kMaxTagLength = 64;
// The HTTP answer header that echoes a request's tag.
inline constexpr std::string_view kTagHeader = "Brisvox-Tag";

// The value of query key 'tag' (already percent-decoded); Error(kInvalidArgument) naming the key,
// the rule and the offending character otherwise (answered 400 bad_request).
std::string parse_tag(std::string_view value);

// The tag of a request target's query for its log lines; "" when there is none or it is not valid
// (such a request is refused with 400, and its line shows no tag).
std::string tag_of_target(std::string_view target) noexcept;

}  // namespace brisvox::server
