// The text front end's pieces on inputs whose answer is known from espeak-ng's and Piper's rules.
#include <gtest/gtest.h>

#include "brisvox/error.h"
#include "models/tts/piper/espeak_clauses.h"
#include "models/tts/piper/espeak_output.h"
#include "models/tts/piper/piper_text.h"
#include "models/tts/piper/unicode_text.h"

namespace brisvox::tts {
namespace {

struct Split {
  std::string text;
  char32_t terminator;
  bool sentence;
};

std::vector<Split> split(const std::u32string& text) {
  std::vector<Split> out;
  for (const auto& c : split_espeak_clauses(text)) {
    out.push_back({encode_utf8(text.substr(c.begin, c.end - c.begin)), piper_terminator(c.terminator),
                   piper_ends_sentence(c.terminator)});
  }
  return out;
}

TEST(EspeakClauses, PunctuationEndsClausesAndSentencesAsEspeakDoes) {
  const auto s = split(U"Hello, world. How are you? I'm fine; thanks: really!");
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].text, "Hello, ");
  EXPECT_EQ(s[0].terminator, U',');
  EXPECT_FALSE(s[0].sentence);
  EXPECT_EQ(s[1].terminator, U'.');
  EXPECT_TRUE(s[1].sentence);
  EXPECT_EQ(s[2].terminator, U'?');
  EXPECT_EQ(s[3].terminator, U';');
  EXPECT_EQ(s[4].terminator, U':');
  EXPECT_EQ(s[5].terminator, U'!');
  EXPECT_TRUE(s[5].sentence);
}

TEST(EspeakClauses, DotBeforeLowercaseDecimalsAndEllipsis) {
  // "p.m. on": a dot before a lower-case word is an abbreviation; "3.5" has no space after the dot.
  auto s = split(U"It is 3.5 p.m. on Monday.");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].terminator, U'.');
  // Three dots are an ellipsis: a clause break that is neither a sentence end nor a Piper terminator.
  s = split(U"Wait... what?!");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].terminator, 0);
  EXPECT_FALSE(s[0].sentence);
  EXPECT_EQ(s[1].terminator, U'?');  // "?!" counts as its first mark
  // No final punctuation: the end of the text ends the sentence without a terminator.
  s = split(U"No punctuation");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].terminator, 0);
  EXPECT_TRUE(s[0].sentence);
}

TEST(EspeakClauses, NewlinesAndParagraphs) {
  auto s = split(U"one\ntwo");  // a single newline is a space
  ASSERT_EQ(s.size(), 1u);
  s = split(U"one\n\ntwo");  // a blank line ends a sentence
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].sentence);
  EXPECT_EQ(s[0].terminator, 0);
  s = split(U"Dr.\nsmith");  // after a newline a dot ends the clause even before lower case
  ASSERT_EQ(s.size(), 2u);
}

TEST(EspeakClauses, LongClauseIsBrokenNearEightHundredBytes) {
  std::u32string text;
  for (int i = 0; i < 300; ++i) text += U"word ";
  const auto clauses = split_espeak_clauses(text);
  ASSERT_GE(clauses.size(), 2u);
  EXPECT_EQ(piper_terminator(clauses[0].terminator), 0);
  EXPECT_FALSE(piper_ends_sentence(clauses[0].terminator));
  EXPECT_GT(clauses[0].end, 700u);
  EXPECT_LT(clauses[0].end, 800u);
}

TEST(EspeakOutput, HiddenLinkingPhonemeBecomesSuperscriptJ) {
  const std::string z(kPhonemeSeparator);
  // "the oven": ð‌ɪ‌ + ˈʌ‌v‌ə‌n, with the linking ";" printed as an empty IPA unit.
  const std::string ipa = "ð" + z + "ɪ" + z + " ˈʌ" + z + "v" + z + "ə" + z + "n";
  const std::string mn = "D" + z + "I2" + z + "; 'V" + z + "v" + z + "@" + z + "n";
  bool aligned = false;
  int linking = 0;
  EXPECT_EQ(merge_linking_phonemes(ipa, mn, aligned, linking), "ðɪʲ ˈʌvən");
  EXPECT_TRUE(aligned);
  EXPECT_EQ(linking, 1);
  // A pause is also empty in IPA, but its mnemonic is not ";": nothing is written for it.
  const std::string ipa2 = "t" + z + "ˈiː" + z + z + " ɔːɹ";
  const std::string mn2 = "t" + z + "'i:" + z + "_:" + z + "_: O@";
  EXPECT_EQ(merge_linking_phonemes(ipa2, mn2, aligned, linking), "tˈiː ɔːɹ");
  EXPECT_EQ(linking, 0);
  // Different shapes: the mnemonics are not trusted.
  EXPECT_EQ(merge_linking_phonemes(ipa, "D", aligned, linking), "ðɪ ˈʌvən");
  EXPECT_FALSE(aligned);
}

TEST(EspeakOutput, UnpromotedStress) {
  std::string mark;
  EXPECT_TRUE(unpromoted_stress("wˈʌn", "wˌʌn", mark));
  EXPECT_EQ(mark, "ˌ");
  EXPECT_TRUE(unpromoted_stress("jˈuː", "juː", mark));
  EXPECT_EQ(mark, "");
  EXPECT_TRUE(unpromoted_stress("tˈuː", "tˈuː", mark));
  EXPECT_EQ(mark, "ˈ");
  EXPECT_FALSE(unpromoted_stress("wˈʌn", "wˌʌnz", mark));     // other phonemes
  EXPECT_FALSE(unpromoted_stress("ˌaɪ wˈʌn", "aɪ wˌʌn", mark));  // another mark differs
  std::string clause = "hˈəm";
  replace_primary_stress(clause, "");
  EXPECT_EQ(clause, "həm");
  EXPECT_EQ(count_primary_stress("ˌɛfbˌiːˈaɪ ˈɑːɹ"), 2);
}

TEST(PiperText, RawPhonemeBlocksAsPythonSplitsThem) {
  auto parts = split_raw_phoneme_blocks(U"Say [[ hɛloʊ ]] to [[x]]");
  ASSERT_EQ(parts.size(), 5u);
  EXPECT_EQ(parts[0].text, U"Say ");
  EXPECT_TRUE(parts[1].raw_phonemes);
  EXPECT_EQ(parts[1].text, U" hɛloʊ ");
  EXPECT_EQ(parts[3].text, U"x");
  EXPECT_EQ(parts[4].text, U"");  // Python keeps the empty tail
  parts = split_raw_phoneme_blocks(U"[[ no\nend ]]");  // a block does not span a newline
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_FALSE(parts[0].raw_phonemes);
}

TEST(PiperText, LanguageFlagsNfdAndVowelClusters) {
  EXPECT_EQ(remove_language_flags(U"(fr)bɔ̃ʒuʁ(en) ok ()"), U"bɔ̃ʒuʁ ok ()");
  EXPECT_EQ(nfd(U"ç"), U"c\u0327");
  EXPECT_EQ(nfd(U"ẽ"), U"e\u0303");
  EXPECT_EQ(nfd(U"ɔ̃ʒ"), U"ɔ̃ʒ");  // IPA letters have no decomposition
  const auto merged = merge_vowel_clusters({U"a", U"ɪ", U"t", U"a"}, {{"a", "ɪ"}});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0], U"aɪ");
}

TEST(PiperText, EspeakInputSeparatesBracketsAndShortensBlanks) {
  EXPECT_EQ(espeak_input(U"a [[b]] c"), U"a [ [b] ] c");
  EXPECT_EQ(espeak_input(U"a  \t b\r\n c\n \n d"), U"a b\nc\n\nd");
}

TEST(PiperText, LinesFitEspeakNgsBufferAndBreakAfterNewlines) {
  std::u32string text;
  for (int i = 0; i < 60; ++i) text += U"This is sentence number " + decode_utf8(std::to_string(i)) + U". ";
  text += U"Last,\nline";
  text = espeak_input(text);
  const auto clauses = split_espeak_clauses(text);
  const auto lines = pack_espeak_lines(text, clauses, 990);
  ASSERT_GE(lines.size(), 3u);
  std::size_t covered = 0;
  for (const auto& l : lines) {
    EXPECT_EQ(l.first, covered);
    EXPECT_LE(espeak_line_text(text, clauses, l).size(), 990u);
    EXPECT_EQ(espeak_line_text(text, clauses, l).find('\n'), std::string::npos);
    covered = l.last + 1;
  }
  EXPECT_EQ(covered, clauses.size());
  EXPECT_EQ(espeak_line_text(text, clauses, lines.back()), "line");  // the newline cut "Last," off
}

TEST(UnicodeText, StrictUtf8) {
  EXPECT_EQ(decode_utf8("a\xc3\xa9"), U"aé");
  for (const char* bad : {"\xff", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ok\x80"}) {
    try {
      decode_utf8(bad);
      ADD_FAILURE() << "accepted invalid UTF-8";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("byte offset"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace brisvox::tts
