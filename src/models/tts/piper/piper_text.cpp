#include "models/tts/piper/piper_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "brisvox/error.h"
#include "models/tts/piper/unicode_text.h"

namespace brisvox::tts {
namespace {

std::string utf8_spaced(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char32_t c : s) append_utf8(c == '\n' ? U' ' : c, out);
  return out;
}

}  // namespace

void check_no_control_characters(std::u32string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    const bool control = (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || (c >= 0x7F && c <= 0x9F);
    if (control) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("text holds the control character U+{:04X} at character {}; remove it (tab, LF and "
                              "CR are the only control characters allowed)",
                              static_cast<unsigned>(c), i));
    }
  }
}

std::vector<TextPart> split_raw_phoneme_blocks(std::u32string_view text) {
  std::vector<TextPart> parts;
  std::size_t start = 0;
  std::size_t i = 0;
  while (i + 1 < text.size()) {
    if (text[i] == '[' && text[i + 1] == '[') {
      std::size_t k = i + 2;
      while (k + 1 < text.size() && text[k] != '\n' && !(text[k] == ']' && text[k + 1] == ']')) ++k;
      if (k + 1 < text.size() && text[k] == ']' && text[k + 1] == ']') {
        parts.push_back({std::u32string(text.substr(start, i - start)), false});
        parts.push_back({std::u32string(text.substr(i + 2, k - i - 2)), true});
        i = k + 2;
        start = i;
        continue;
      }
    }
    ++i;
  }
  parts.push_back({std::u32string(text.substr(start)), false});
  return parts;
}

std::u32string python_strip(std::u32string_view text) {
  std::size_t a = 0;
  std::size_t b = text.size();
  while (a < b && is_space(text[a])) ++a;
  while (b > a && is_space(text[b - 1])) --b;
  return std::u32string(text.substr(a, b - a));
}

std::u32string remove_language_flags(std::u32string_view phonemes) {
  std::u32string out;
  out.reserve(phonemes.size());
  std::size_t i = 0;
  while (i < phonemes.size()) {
    if (phonemes[i] == '(') {
      const std::size_t close = phonemes.find(U')', i + 1);
      if (close != std::u32string_view::npos && close > i + 1) {
        i = close + 1;
        continue;
      }
    }
    out.push_back(phonemes[i]);
    ++i;
  }
  return out;
}

std::vector<std::u32string> merge_vowel_clusters(std::vector<std::u32string> phonemes,
                                                 const std::vector<std::vector<std::string>>& clusters) {
  if (clusters.empty()) return phonemes;
  std::vector<std::vector<std::u32string>> wanted;
  std::size_t max_len = 0;
  for (const auto& c : clusters) {
    std::vector<std::u32string> w;
    for (const auto& p : c) w.push_back(decode_utf8(p));
    max_len = std::max(max_len, w.size());
    wanted.push_back(std::move(w));
  }
  std::vector<std::u32string> out;
  std::size_t i = 0;
  while (i < phonemes.size()) {
    std::size_t matched = 0;
    for (std::size_t n = std::min(max_len, phonemes.size() - i); n > 1 && matched == 0; --n) {
      for (const auto& w : wanted) {
        if (w.size() == n && std::equal(w.begin(), w.end(), phonemes.begin() + static_cast<std::ptrdiff_t>(i))) {
          matched = n;
          break;
        }
      }
    }
    if (matched > 0) {
      std::u32string joined;
      for (std::size_t k = 0; k < matched; ++k) joined += phonemes[i + k];
      out.push_back(std::move(joined));
      i += matched;
    } else {
      out.push_back(std::move(phonemes[i]));
      ++i;
    }
  }
  return out;
}

std::u32string espeak_input(std::u32string_view part) {
  std::u32string out;
  out.reserve(part.size());
  std::size_t i = 0;
  while (i < part.size()) {
    const char32_t c = part[i];
    if (is_space(c)) {
      std::size_t j = i;
      int newlines = 0;
      while (j < part.size() && is_space(part[j])) newlines += part[j++] == '\n' ? 1 : 0;
      if (j - i == 1) {
        out.push_back(c);
      } else {
        out += newlines >= 2 ? U"\n\n" : newlines == 1 ? U"\n" : U" ";
      }
      i = j;
      continue;
    }
    if ((c == '[' || c == ']') && !out.empty() && out.back() == c) out.push_back(' ');
    out.push_back(c);
    ++i;
  }
  return out;
}

std::vector<EspeakLine> pack_espeak_lines(std::u32string_view text, const std::vector<EspeakClause>& clauses,
                                          std::size_t max_bytes) {
  std::vector<std::size_t> offset(text.size() + 1, 0);  // UTF-8 byte offset of each code point
  for (std::size_t i = 0; i < text.size(); ++i) offset[i + 1] = offset[i] + utf8_length(text[i]);
  std::vector<EspeakLine> lines;
  std::size_t i = 0;
  const std::size_t n = clauses.size();
  while (i < n) {
    std::size_t j = i;
    std::size_t end = i;
    bool have_sentence = false;
    std::size_t sentence_end = i;
    bool cut = false;
    for (; j < n; ++j) {
      const std::size_t bytes = offset[clauses[j].end] - offset[clauses[i].begin];
      if (bytes > max_bytes && j > i) break;
      end = j;
      if (piper_ends_sentence(clauses[j].terminator)) {
        have_sentence = true;
        sentence_end = j;
      }
      if (clauses[j].newline_after) {
        cut = true;
        break;
      }
    }
    if (!cut && j < n && have_sentence) end = sentence_end;
    lines.push_back({i, end});
    i = end + 1;
  }
  return lines;
}

std::string espeak_line_text(std::u32string_view text, const std::vector<EspeakClause>& clauses,
                             const EspeakLine& line) {
  const std::size_t begin = clauses[line.first].begin;
  return utf8_spaced(text.substr(begin, clauses[line.last].end - begin));
}

std::string espeak_clause_text(std::u32string_view text, const EspeakClause& clause) {
  return utf8_spaced(python_strip(text.substr(clause.begin, clause.end - clause.begin)));
}

}  // namespace brisvox::tts
