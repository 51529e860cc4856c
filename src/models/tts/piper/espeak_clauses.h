// Where espeak-ng ends its clauses, and how: a re-implementation of the clause reader of espeak-ng
// 1.51/1.52 (ReadClause in readclause.c, the path without SSML, spoken punctuation or embedded
// commands), run on the text before it is sent to the espeak-ng process.
//
// Why: Piper asks libespeak-ng for the phonemes of one clause at a time together with the
// clause's terminator (espeak_TextToPhonemesWithTerminator) and builds its sentences from the
// terminators. The espeak-ng program prints one line of phonemes per clause but not the
// terminator, so brisvox predicts the clauses here and checks the prediction against the number
// of lines espeak-ng prints (a wrong prediction is detected, logged and counted, never silent).
//
// Character classes are espeak-ng's (glibc C.UTF-8, unicode_text.h). The punctuation table covers
// ASCII, Latin-1, General Punctuation, CJK and full-width forms and the Arabic, Devanagari and
// Greek marks; rarer clause punctuation espeak-ng knows is treated as text here (the line-count
// check then catches the difference).
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace brisvox::tts {

// espeak-ng's clause values (readclause.h), kept bit-exact because Piper compares them exactly.
namespace clause {
inline constexpr std::uint32_t kIntonationComma = 0x1000;
inline constexpr std::uint32_t kIntonationQuestion = 0x2000;
inline constexpr std::uint32_t kIntonationExclamation = 0x3000;
inline constexpr std::uint32_t kIntonationNone = 0x4000;
inline constexpr std::uint32_t kIntonationMask = 0x7000;
inline constexpr std::uint32_t kOptionalSpaceAfter = 0x8000;
inline constexpr std::uint32_t kTypeEof = 0x10000;
inline constexpr std::uint32_t kTypeClause = 0x40000;
inline constexpr std::uint32_t kTypeSentence = 0x80000;
inline constexpr std::uint32_t kSpeakPunctuationName = 0x200000;
inline constexpr std::uint32_t kDotAfterLastWord = 0x400000;

inline constexpr std::uint32_t kNone = 0 | kIntonationNone;
inline constexpr std::uint32_t kParagraph = 70 | kTypeSentence;
inline constexpr std::uint32_t kEof = 40 | kTypeSentence | kTypeEof;
inline constexpr std::uint32_t kPeriod = 40 | kTypeSentence;
inline constexpr std::uint32_t kComma = 20 | kIntonationComma | kTypeClause;
inline constexpr std::uint32_t kQuestion = 40 | kIntonationQuestion | kTypeSentence;
inline constexpr std::uint32_t kExclamation = 45 | kIntonationExclamation | kTypeSentence;
inline constexpr std::uint32_t kColon = 30 | kTypeClause;
inline constexpr std::uint32_t kSemicolon = 30 | kIntonationComma | kTypeClause;
}  // namespace clause

struct EspeakClause {
  std::size_t begin = 0;  // code point offsets into the text: the clause's source, with the
  std::size_t end = 0;    // terminator and the blanks espeak-ng skipped after it
  std::uint32_t terminator = clause::kEof;  // as ReadClause returns it
  bool newline_after = false;  // a newline among the blanks after the terminator
};

// The clauses of `text`, in order, covering it without gaps; at least one (an empty text gives
// one empty clause, as espeak-ng does).
std::vector<EspeakClause> split_espeak_clauses(std::u32string_view text);

// Piper's view of a terminator (piper/espeakbridge.c): one of . ? ! , : ; when the value is
// exactly that punctuation's clause value (after masking the flags above bit 19), else 0.
char32_t piper_terminator(std::uint32_t terminator);
// Piper ends a sentence after a clause whose type is "sentence" (. ? ! paragraph, end of text).
bool piper_ends_sentence(std::uint32_t terminator);

}  // namespace brisvox::tts
