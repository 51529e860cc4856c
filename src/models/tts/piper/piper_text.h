// Piper's own text steps around espeak-ng (piper-tts 1.8, voice.py and phonemize_espeak.py),
// and how brisvox cuts text into the lines it sends to the espeak-ng program.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "models/tts/piper/espeak_clauses.h"

namespace brisvox::tts {

// Throws Error(kInvalidArgument) at the first control character other than tab, LF and CR
// (C0, DEL, C1), naming its code point and character offset: espeak-ng would read U+0001 as the
// start of an embedded command, and none of them is speech.
void check_no_control_characters(std::u32string_view text);

struct TextPart {
  std::u32string text;        // for a raw block: what is between [[ and ]]
  bool raw_phonemes = false;
};
// re.split(r"(\[\[.*?\]\])", text): text and [[ raw phoneme ]] blocks, in order (a block does not
// span a newline); empty text parts are kept, as Python keeps them.
std::vector<TextPart> split_raw_phoneme_blocks(std::u32string_view text);

// Python's str.strip(): leading and trailing whitespace removed.
std::u32string python_strip(std::u32string_view text);

// re.sub(r"\([^)]+\)", "", phonemes): espeak-ng's "(en)" language-switch flags removed.
std::u32string remove_language_flags(std::u32string_view phonemes);

// Piper's _merge_known_vowel_clusters; `clusters` as in the voice config (UTF-8 phonemes).
std::vector<std::u32string> merge_vowel_clusters(std::vector<std::u32string> phonemes,
                                                 const std::vector<std::vector<std::string>>& clusters);

// The text brisvox gives espeak-ng for one text part: "[[" and "]]" pulled apart ("[ [") so the
// program does not read phoneme input (Piper's library call has that option off), and every run
// of two or more blanks shortened to what espeak-ng reads the same way (" ", "\n" or "\n\n"), so
// that no clause can outgrow a line.
std::u32string espeak_input(std::u32string_view part);

// A run of clauses sent to espeak-ng as one line of text: clauses [first, last].
struct EspeakLine {
  std::size_t first = 0;
  std::size_t last = 0;
};
// Whole clauses per line, each line at most max_bytes of UTF-8: a line ends after a clause
// followed by a newline (espeak-ng's clause rules treat a newline apart), else at the last
// sentence end that fits, else at the last clause that fits. Usually a whole paragraph is one line,
// as Piper gives espeak-ng the whole text.
std::vector<EspeakLine> pack_espeak_lines(std::u32string_view text, const std::vector<EspeakClause>& clauses,
                                          std::size_t max_bytes);
// A line's UTF-8 text with its newlines made spaces.
std::string espeak_line_text(std::u32string_view text, const std::vector<EspeakClause>& clauses,
                             const EspeakLine& line);
// One clause's UTF-8 text, blanks trimmed, newlines made spaces.
std::string espeak_clause_text(std::u32string_view text, const EspeakClause& clause);

}  // namespace brisvox::tts
