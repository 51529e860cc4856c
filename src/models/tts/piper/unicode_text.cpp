#include "models/tts/piper/unicode_text.h"

#include <fmt/format.h>
#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "brisvox/error.h"

namespace brisvox::tts {
namespace {

struct Decomposition {
  char32_t code;
  std::array<char32_t, 3> parts;
};

constexpr Decomposition kNfdTable[] = {
#include "models/tts/piper/nfd_table.inc"
};

// One C.UTF-8 locale for the process, made on first use (thread-safe static), never freed.
locale_t utf8_locale() {
  static const locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    if (l == static_cast<locale_t>(nullptr)) l = newlocale(LC_CTYPE_MASK, "C", static_cast<locale_t>(nullptr));
    return l;
  }();
  return loc;
}

wint_t w(char32_t c) { return static_cast<wint_t>(c); }

}  // namespace

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char b = p[i];
    int len = 0;
    char32_t c = 0;
    char32_t min = 0;
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      len = 2, c = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, c = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, c = b & 0x07, min = 0x10000;
    }
    bool ok = len > 0 && i + static_cast<std::size_t>(len) <= n;
    for (int k = 1; ok && k < len; ++k) {
      const unsigned char cb = p[i + static_cast<std::size_t>(k)];
      if ((cb & 0xC0) != 0x80) ok = false;
      c = (c << 6) | (cb & 0x3F);
    }
    if (!ok || c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("text is not valid UTF-8: bad byte sequence at byte offset {} (0x{:02x})", i, b));
    }
    out.push_back(c);
    i += static_cast<std::size_t>(len);
  }
  return out;
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) append_utf8(c, out);
  return out;
}

std::u32string nfd(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size() + 4);
  for (const char32_t c : text) {
    const auto* end = std::end(kNfdTable);
    const auto* it = std::lower_bound(std::begin(kNfdTable), end, c,
                                      [](const Decomposition& d, char32_t v) { return d.code < v; });
    if (it == end || it->code != c) {
      out.push_back(c);
      continue;
    }
    for (const char32_t part : it->parts) {
      if (part != 0) out.push_back(part);
    }
  }
  return out;
}

bool is_space(char32_t c) { return iswspace_l(w(c), utf8_locale()) != 0; }
bool is_alnum(char32_t c) { return iswalnum_l(w(c), utf8_locale()) != 0; }
bool is_digit(char32_t c) { return iswdigit_l(w(c), utf8_locale()) != 0; }
bool is_upper(char32_t c) { return iswupper_l(w(c), utf8_locale()) != 0; }
bool is_lower(char32_t c) { return iswlower_l(w(c), utf8_locale()) != 0; }

bool is_alpha(char32_t c) {
  if (iswalpha_l(w(c), utf8_locale()) != 0) return true;
  if (c < 0x300) return false;
  if (c >= 0x901 && c <= 0xdf7) {  // Indic scripts
    if ((c & 0x7f) < 0x64) return true;
    if (c == 0xa70 || c == 0xa71) return true;
    return c >= 0xd7a && c <= 0xd7f;
  }
  if (c >= 0x5b0 && c <= 0x5c2) return true;                   // Hebrew vowel marks
  if (c == 0x605 || c == 0x670 || (c >= 0x64b && c <= 0x65e)) return true;  // Arabic marks
  if (c >= 0x300 && c <= 0x36f) return true;                   // combining accents
  if (c >= 0xf40 && c <= 0xfbc) return true;                   // Tibetan
  if (c >= 0x1100 && c <= 0x11ff) return true;                 // Korean jamo
  if (c >= 0x2800 && c <= 0x28ff) return true;                 // braille
  return c > 0x3040 && c <= 0xa700;                            // CJK
}

bool is_bracket(char32_t c) {
  if (c >= 0x2014 && c <= 0x201f) return true;
  switch (c) {
    case '(': case ')': case '[': case ']': case '{': case '}': case '<': case '>':
    case '"': case '\'': case '`': case 0xab: case 0xbb: case 0x300a: case 0x300b: case 0xe000 + '<':
      return true;
    default:
      return false;
  }
}

}  // namespace brisvox::tts
