// UTF-8 and character classes for the Piper text front end.
//
// Character classes follow what espeak-ng itself uses: glibc's wide-character functions in the
// C.UTF-8 locale (espeak-ng calls setlocale(LC_CTYPE, "C.UTF-8") at start-up). brisvox asks that
// locale through a locale_t of its own (newlocale + isw*_l), so the process's locale is untouched.
// All functions are thread-safe and allocate only where they return a string.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brisvox::tts {

// Decodes strictly (no overlongs, no surrogates, nothing above U+10FFFF). Throws
// Error(kInvalidArgument) naming the byte offset of the first invalid sequence.
std::u32string decode_utf8(std::string_view text);
std::string encode_utf8(std::u32string_view text);
void append_utf8(char32_t c, std::string& out);
// The bytes of c in UTF-8.
inline std::size_t utf8_length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

// Canonical decomposition (NFD) of the precomposed Latin letters (nfd_table.inc); every other
// code point is copied unchanged.
std::u32string nfd(std::u32string_view text);

bool is_space(char32_t c);
bool is_alpha(char32_t c);   // espeak-ng's IsAlpha: iswalpha plus some in-word marks
bool is_alnum(char32_t c);
bool is_digit(char32_t c);
bool is_upper(char32_t c);
bool is_lower(char32_t c);
bool is_bracket(char32_t c);  // espeak-ng's IsBracket

}  // namespace brisvox::tts
