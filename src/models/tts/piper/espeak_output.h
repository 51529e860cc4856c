// From what the espeak-ng program prints to what libespeak-ng's espeak_TextToPhonemes returns.
//
// Piper phonemizes with the library call, which translates a clause and prints its phonemes.
// The program (the only way brisvox may run espeak-ng) also computes intonation and segment
// lengths before it prints, and two of those steps change the printed IPA:
//  1. Linking [j]: English appends the phoneme ";" after an i-type vowel before a vowel
//     ("the oven", "priorities"). Its IPA is "ʲ", but after intonation its rule "IF prevPh(#i)
//     THEN ipa NULL" hides it; the library call prints it. brisvox runs a second espeak-ng that
//     prints phoneme mnemonics (-x) beside the IPA one (--ipa), both with a phoneme separator, and
//     writes "ʲ" where the IPA of a phoneme is empty and its mnemonic is ";".
//  2. Tonic promotion: intonation gives a tone group without any primary stress one, on its last
//     most-stressed syllable ("One." prints wˈʌn, the library wˌʌn). A clause printed with exactly
//     one primary stress may therefore have none; brisvox asks espeak-ng again with a stressed
//     word in front ("Bob one."), which keeps the group from being promoted, and takes that
//     syllable's stress from the answer (unpromoted_stress).
// Pure functions over UTF-8 strings; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace brisvox::tts {

// The separator espeak-ng is told to put between phonemes (--sep=z): U+200C, which espeak-ng
// never prints otherwise (it drops it from its input).
inline constexpr std::string_view kPhonemeSeparator = "\u200c";

// Merges one clause as printed by the IPA and the mnemonic espeak-ng (same text, same options but
// the alphabet). Returns the IPA without separators, with "ʲ" for every hidden ";". Sets
// `aligned` to false (and ignores the mnemonics) when the two do not have the same words and
// phonemes; `linking` counts the "ʲ" written.
std::string merge_linking_phonemes(std::string_view ipa, std::string_view mnemonics, bool& aligned, int& linking);

// Removes the phoneme separators.
std::string strip_separators(std::string_view ipa);

// Number of primary stress marks (ˈ) in an IPA string.
int count_primary_stress(std::string_view ipa);

// `clause` holds exactly one primary stress that may be espeak-ng's promotion; `unpromoted` is the
// same clause from a run that cannot have promoted it (separators removed, the leading stressed
// word cut off). When the two spell the same phonemes with the same stress marks everywhere else,
// sets `mark` to the stress `unpromoted` has at that syllable ("ˈ" after all, "ˌ", or empty) and
// returns true; otherwise returns false.
bool unpromoted_stress(std::string_view clause, std::string_view unpromoted, std::string& mark);

// Replaces the one primary stress mark of `clause` by `mark` (which may be empty).
void replace_primary_stress(std::string& clause, std::string_view mark);

}  // namespace brisvox::tts
