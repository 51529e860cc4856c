#include "models/tts/piper/espeak_output.h"

#include <vector>

namespace brisvox::tts {
namespace {

constexpr std::string_view kPrimary = "\u02c8";    // ˈ
constexpr std::string_view kSecondary = "\u02cc";  // ˌ
constexpr std::string_view kLinkingJ = "\u02b2";   // ʲ

std::vector<std::string_view> split(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    if (at == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, at - start));
    start = at + sep.size();
  }
}

// A stress mark at the front of `s` (either kind), or empty.
std::string_view stress_at(std::string_view s) {
  if (s.substr(0, kPrimary.size()) == kPrimary) return kPrimary;
  if (s.substr(0, kSecondary.size()) == kSecondary) return kSecondary;
  return {};
}

}  // namespace

std::string strip_separators(std::string_view ipa) {
  std::string out;
  out.reserve(ipa.size());
  for (const auto part : split(ipa, kPhonemeSeparator)) out += part;
  return out;
}

std::string merge_linking_phonemes(std::string_view ipa, std::string_view mnemonics, bool& aligned, int& linking) {
  linking = 0;
  aligned = true;
  const auto ipa_words = split(ipa, " ");
  const auto mn_words = split(mnemonics, " ");
  if (ipa_words.size() != mn_words.size()) {
    aligned = false;
    return strip_separators(ipa);
  }
  std::string out;
  out.reserve(ipa.size());
  for (std::size_t w = 0; w < ipa_words.size(); ++w) {
    if (w > 0) out += ' ';
    const auto ipa_units = split(ipa_words[w], kPhonemeSeparator);
    const auto mn_units = split(mn_words[w], kPhonemeSeparator);
    if (ipa_units.size() != mn_units.size()) {
      aligned = false;
      return strip_separators(ipa);
    }
    for (std::size_t u = 0; u < ipa_units.size(); ++u) {
      if (ipa_units[u].empty() && mn_units[u] == ";") {
        out += kLinkingJ;
        ++linking;
      } else {
        out += ipa_units[u];
      }
    }
  }
  return out;
}

int count_primary_stress(std::string_view ipa) {
  int n = 0;
  for (std::size_t at = ipa.find(kPrimary); at != std::string_view::npos; at = ipa.find(kPrimary, at + 1)) ++n;
  return n;
}

bool unpromoted_stress(std::string_view clause, std::string_view unpromoted, std::string& mark) {
  // Walk both strings with their stress marks skipped; they must spell the same phonemes and carry
  // the same marks except at `clause`'s primary stress.
  std::size_t i = 0;
  std::size_t j = 0;
  bool seen = false;
  while (i < clause.size() || j < unpromoted.size()) {
    const std::string_view mark_a = stress_at(clause.substr(i));
    const std::string_view mark_b = stress_at(unpromoted.substr(j));
    if (!mark_a.empty() || !mark_b.empty()) {
      if (mark_a == kPrimary) {
        if (seen) return false;
        seen = true;
        mark.assign(mark_b);
      } else if (mark_a != mark_b) {
        return false;
      }
      i += mark_a.size();
      j += mark_b.size();
      continue;
    }
    if (i >= clause.size() || j >= unpromoted.size() || clause[i] != unpromoted[j]) return false;
    ++i;
    ++j;
  }
  return seen;
}

void replace_primary_stress(std::string& clause, std::string_view mark) {
  const std::size_t at = clause.find(kPrimary);
  if (at != std::string::npos) clause.replace(at, kPrimary.size(), mark);
}

}  // namespace brisvox::tts
