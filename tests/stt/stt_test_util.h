// Shared by the Whisper tests: where the models and goldens are, and the text normaliser and word
// error rate the parity figures use.
#pragma once

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace brisvox::test {

// Whisper tiny.en converted by scripts/setup.sh (tools/whisper/convert_ct2.py), and the same
// weights in brisvox's renditions of the sherpa-onnx and Optimum contracts.
inline std::string whisper_tiny_en() { return bundled_model("whisper-tiny.en"); }
inline std::string whisper_tiny_en_sherpa() { return bundled_model("whisper-tiny.en-sherpa"); }
inline std::string whisper_tiny_en_optimum() { return bundled_model("whisper-tiny.en-optimum"); }
inline std::string whisper_tiny_en_int8() { return bundled_model("whisper-tiny.en-int8"); }
// Folders written by tools/whisper/make_whisper_test_models.py at build time.
inline std::string whisper_test_model(const std::string& name) { return generated_model(name); }

inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// The normaliser of the WER figures (docs/MODELS.md): lower case; "-" and "/" become spaces;
// every other character that is not a letter, a digit, an apostrophe or a space is dropped;
// numbers 0-999999 are spelled out ("1" -> "one", "25" -> "twenty five"); "mr"/"mrs"/"dr" are
// expanded; whitespace is collapsed. Published prompts write "press 1" and Whisper "press one"
// (or the other way round): both then read "press one".
inline std::string spell_number(long n) {
  static const char* kOnes[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                                "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                                "seventeen", "eighteen", "nineteen"};
  static const char* kTens[] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};
  if (n < 20) return kOnes[n];
  if (n < 100) return std::string(kTens[n / 10]) + (n % 10 ? std::string(" ") + kOnes[n % 10] : "");
  if (n < 1000) return std::string(kOnes[n / 100]) + " hundred" + (n % 100 ? " " + spell_number(n % 100) : "");
  return spell_number(n / 1000) + " thousand" + (n % 1000 ? " " + spell_number(n % 1000) : "");
}

inline std::vector<std::string> normalized_words(const std::string& text) {
  std::string cleaned;
  for (unsigned char c : text) {
    if (c == '-' || c == '/') cleaned += ' ';
    else if (std::isalnum(c) || c == '\'' || c == ' ') cleaned += static_cast<char>(std::tolower(c));
    else if (c >= 0x80) cleaned += static_cast<char>(c);  // keep non-ASCII letters as they are
  }
  std::vector<std::string> words;
  std::istringstream in(cleaned);
  for (std::string w; in >> w;) {
    while (!w.empty() && w.front() == '\'') w.erase(w.begin());
    while (!w.empty() && w.back() == '\'') w.pop_back();
    if (w.empty()) continue;
    if (std::all_of(w.begin(), w.end(), [](unsigned char c) { return std::isdigit(c); }) && w.size() <= 6) {
      std::istringstream spelled(spell_number(std::stol(w)));
      for (std::string s; spelled >> s;) words.push_back(s);
      continue;
    }
    if (w == "mr") w = "mister";
    else if (w == "mrs") w = "missus";
    else if (w == "dr") w = "doctor";
    words.push_back(w);
  }
  return words;
}

// Word-level edit distance (substitutions + deletions + insertions).
inline std::size_t word_edits(const std::vector<std::string>& ref, const std::vector<std::string>& hyp) {
  std::vector<std::size_t> prev(hyp.size() + 1), cur(hyp.size() + 1);
  for (std::size_t j = 0; j <= hyp.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= ref.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= hyp.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ref[i - 1] == hyp[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[hyp.size()];
}

// Corpus WER accumulator: total edits over total reference words.
struct WordErrorRate {
  std::size_t edits = 0;
  std::size_t words = 0;
  void add(const std::string& reference, const std::string& hypothesis) {
    const auto r = normalized_words(reference);
    edits += word_edits(r, normalized_words(hypothesis));
    words += r.size();
  }
  double percent() const { return words == 0 ? 0.0 : 100.0 * static_cast<double>(edits) / static_cast<double>(words); }
};

}  // namespace brisvox::test
