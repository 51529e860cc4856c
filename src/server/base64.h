// Base64 (RFC 4648 section 4, the standard alphabet with '=' padding), as telephony providers
// carry audio inside JSON (Twilio's media.payload). Decoding is strict: a character outside the
// alphabet, whitespace, a length that is not a multiple of four, padding anywhere but at the end,
// or non-zero bits in the padded tail are refused, so that two different texts never decode to the
// same audio and a peer's mistake is reported rather than guessed at. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace brisvox::server {

std::string base64_encode(std::string_view bytes);
// The bytes `text` encodes, or nullopt when it is not strict base64.
std::optional<std::string> base64_decode(std::string_view text);
// The number of bytes base64_decode() yields for a valid `text` of this length and padding.
std::size_t base64_decoded_size(std::string_view text) noexcept;

}  // namespace brisvox::server
