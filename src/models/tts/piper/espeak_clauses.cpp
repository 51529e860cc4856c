#include "models/tts/piper/espeak_clauses.h"

#include <algorithm>

#include "models/tts/piper/unicode_text.h"

namespace brisvox::tts {
namespace {

using namespace clause;

// clause_type_from_codepoint() of espeak-ng for the punctuation brisvox knows (see the header).
std::uint32_t clause_type(char32_t c) {
  switch (c) {
    case '.': case 0x06D4: case 0x0701: case 0x1362: case 0x2E3C: case 0xFE12: case 0xFE52: case 0xFF61:
      return kPeriod;
    case 0x3002: case 0xFF0E: case 0x0589: case 0x0964:
      return kPeriod | kOptionalSpaceAfter;
    case '?': case 0x037E: case 0x061F: case 0x1367: case 0x2047: case 0xFE16: case 0xFE56:
      return kQuestion;
    case 0xFF1F:
      return kQuestion | kOptionalSpaceAfter;
    case '!': case 0x203C: case 0xFE15: case 0xFE57:
      return kExclamation;
    case 0xFF01:
      return kExclamation | kOptionalSpaceAfter;
    case ',': case 0x060C: case 0x1363: case 0xFE10: case 0xFE11: case 0xFE50: case 0xFE51: case 0xFF64:
      return kComma;
    case 0x3001: case 0xFF0C:
      return kComma | kOptionalSpaceAfter;
    case ':': case 0x1365: case 0x1366: case 0xFE13: case 0xFE55:
      return kColon;
    case 0xFF1A:
      return kColon | kOptionalSpaceAfter;
    case ';': case 0x0387: case 0x061B: case 0x1364: case 0x204F: case 0xFE14: case 0xFE54:
    case 0x2013: case 0x2014:  // en and em dash: "extended dash", a semicolon-like break
      return kSemicolon;
    case 0xFF1B: case 0x00A1: case 0x00BF:  // inverted ! and ?: semicolon, optional space
      return kSemicolon | kOptionalSpaceAfter;
    case 0x2026: case 0x22EE: case 0x22EF: case 0x22F0: case 0x22F1: case 0xFE19:
      return kSemicolon | kSpeakPunctuationName | kOptionalSpaceAfter;
    case 0x0965: case 0x2029:
      return kParagraph;
    default:
      return kNone;
  }
}

// espeak-ng's input: one character of look-back ("ungot"), as GetC/UngetC/Eof in readclause.c.
// espeak-ng decodes strlen(text) + 1 bytes, so its input ends with a NUL character that GetC
// returns like any other; only after it is the decoder at its end.
class Reader {
 public:
  explicit Reader(std::u32string_view text) : text_(text) {}
  bool eof() const { return ungot_ == 0 && decoder_eof(); }
  bool decoder_eof() const { return pos_ > text_.size(); }
  char32_t get() {
    if (ungot_ != 0) {
      const char32_t c = ungot_;
      ungot_ = 0;
      return c;
    }
    if (pos_ > text_.size()) return 0;
    const std::size_t at = pos_++;
    return at < text_.size() ? text_[at] : 0;
  }
  char32_t peek() const { return pos_ < text_.size() ? text_[pos_] : 0; }
  void unget(char32_t c) { ungot_ = c; }
  // Where the next clause starts: the unread text, plus the character handed back.
  std::size_t position() const {
    const std::size_t p = ungot_ != 0 && pos_ > 0 ? pos_ - 1 : pos_;
    return std::min(p, text_.size());
  }

 private:
  std::u32string_view text_;
  std::size_t pos_ = 0;
  char32_t ungot_ = 0;
};

constexpr int kBufferBytes = 800;  // N_TR_SOURCE: espeak-ng breaks longer clauses

struct ClauseEnd {
  std::uint32_t terminator;
  bool newline_after;
};

// One ReadClause(): reads up to and including the clause's end, returns its terminator.
ClauseEnd read_clause(Reader& in) {
  char32_t c1 = ' ';
  char32_t c2 = in.eof() ? 0 : in.get();
  char32_t cprev = ' ';
  char32_t cprev2 = ' ';
  bool any_alnum = false;
  std::size_t ix = 0;
  while (!in.eof()) {
    cprev2 = cprev;
    cprev = c1;
    c1 = c2;
    c2 = in.eof() ? ' ' : in.get();
    if (c1 == 0xAD || c1 == 0x200C) continue;  // soft hyphen, ZWNJ: espeak-ng's ignored characters
    if (is_alnum(c1)) any_alnum = true;
    if (c1 == 0xF0B) c1 = ' ';
    if (c1 == '\n') {
      int parag = 0;
      while (!in.eof() && is_space(c2)) {
        if (c2 == '\n') ++parag;
        c2 = in.get();
      }
      if (parag > 0) {
        in.unget(c2);
        if (parag > 3) parag = 3;
        return {(kParagraph - 30) + 30 * static_cast<std::uint32_t>(parag), true};
      }
    }
    bool is_end_clause = false;
    if (c1 == '.' && c2 == '.') {
      char32_t c_next = 0;
      while ((c_next = in.get()) == '.') {
        c1 = 0x2026;
        c2 = ' ';
      }
      if (c1 == 0x2026) {
        c2 = c_next;
      } else {
        in.unget(c_next);
      }
    }
    std::uint32_t punct = clause_type(c1);
    if (punct != kNone) {
      // A run of clause punctuation ("?!", "!!!", ".,") counts as its first character.
      while ((clause_type(c2) & (kQuestion | kExclamation)) != 0) c2 = in.get();
      if (is_space(c2) || (punct & kOptionalSpaceAfter) != 0 || is_bracket(c2) || c2 == '?' || in.eof()) {
        is_end_clause = true;
      }
    }
    if (is_end_clause) {
      int nl_count = 0;
      char32_t c_next = c2;
      if (is_space(c_next)) {
        while (!in.eof() && is_space(c_next)) {
          if (c_next == '\n') ++nl_count;
          c_next = in.get();
        }
      }
      if (c1 == '.' && nl_count < 2) punct |= kDotAfterLastWord;
      if (nl_count == 0) {
        if (c1 == '.' && c_next == '\'' && in.peek() == 's') is_end_clause = false;  // "u.s.a.'s"
        if (c1 == '.') {
          if (is_lower(c_next)) is_end_clause = false;  // probably an abbreviation
          if (!any_alnum) {
            c1 = ' ';
            is_end_clause = false;
          }
        } else if (!any_alnum) {
          is_end_clause = false;
        }
      }
      if (is_end_clause) {
        in.unget(c_next);
        if (is_digit(cprev) && !is_alpha(c_next)) punct &= ~kDotAfterLastWord;
        if (nl_count > 1) {
          if (punct == kQuestion || punct == kExclamation) return {punct + 35, true};
          return {kParagraph, true};
        }
        return {punct, nl_count > 0};
      }
      if (!in.eof() && is_space(c2)) in.unget(c_next);
    }
    ix += utf8_length(c1);
    if ((ix > kBufferBytes - 75 && !is_alpha(c1) && !is_digit(c1)) || ix >= kBufferBytes - 4) {
      in.unget(c2);  // clause too long: espeak-ng breaks it here
      return {kNone, false};
    }
  }
  (void)cprev2;  // used by espeak-ng only for Hungarian ordinals
  return {kEof, false};
}

}  // namespace

std::vector<EspeakClause> split_espeak_clauses(std::u32string_view text) {
  std::vector<EspeakClause> clauses;
  Reader in(text);
  std::size_t begin = 0;
  do {
    const ClauseEnd end = read_clause(in);
    EspeakClause c;
    c.begin = begin;
    c.end = in.decoder_eof() ? text.size() : in.position();
    c.terminator = end.terminator;
    c.newline_after = end.newline_after;
    clauses.push_back(c);
    begin = c.end;
  } while (!in.decoder_eof());
  return clauses;
}

char32_t piper_terminator(std::uint32_t terminator) {
  switch (terminator & 0x000FFFFF) {
    case kPeriod: return '.';
    case kQuestion: return '?';
    case kExclamation: return '!';
    case kComma: return ',';
    case kColon: return ':';
    case kSemicolon: return ';';
    default: return 0;
  }
}

bool piper_ends_sentence(std::uint32_t terminator) { return (terminator & kTypeSentence) == kTypeSentence; }

}  // namespace brisvox::tts
