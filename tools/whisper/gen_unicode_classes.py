#!/usr/bin/python3
"""Writes src/models/stt/whisper/unicode_classes.cpp: the character classes of GPT-2's
pre-tokenisation pattern, which Whisper's tokenizer splits text with before byte-level BPE:

  's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

Run with Debian's python3 (only the standard library):

  /usr/bin/python3 tools/whisper/gen_unicode_classes.py src/models/stt/whisper/unicode_classes.cpp

Classes, from this Python's unicodedata (its Unicode version is written into the file):
  letter      general category L* (Lu, Ll, Lt, Lm, Lo), \\p{L}
  number      general category N* (Nd, Nl, No), \\p{N}
  whitespace  the White_Space property, which is what \\s means in the regex engines that run the
              pattern: Oniguruma (Hugging Face `tokenizers`, so faster-whisper), Rust's regex crate
              and tiktoken's fancy-regex. unicodedata has no White_Space, so it is taken from
              str.isspace(), which differs in exactly U+001C..U+001F (the information separators,
              bidi class B or S, so isspace() is true, but not White_Space): they are removed, and
              the result is checked against White_Space as PropList.txt lists it.
The three are disjoint (White_Space characters are Zs, Zl, Zp or Cc), so one table of sorted,
merged ranges gives every code point one class; anything else (unassigned code points included)
is "other".

faster-whisper 1.2.1's tokenizers 0.23.3 matches the pattern with Oniguruma (the onig crate 6.5.3),
whose tables are Unicode 16.0; Debian 12's Python 3.11 has Unicode 14.0. The letters and numbers
assigned since (15.0, 15.1, 16.0: CJK extensions H and I, Kawi, Nag Mundari, Todhri, Garay,
Kaktovik numerals, ...) are added from NEWER_LETTERS_AND_NUMBERS below, which tools/whisper/
make_token_goldens.py derived by classing every code point through tokenizers' own pre-tokenizer
and checks again on each run: with them, all 1,112,064 code points agree. Whitespace needs no
supplement (White_Space has not changed since Unicode 6.3).
"""

import sys
import unicodedata

OTHER, LETTER, NUMBER, SPACE = "kOther", "kLetter", "kNumber", "kSpace"

# PropList.txt, White_Space (unchanged since Unicode 6.3, when U+180E left it).
WHITE_SPACE = {
    *range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
    0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
}


# Letters (L*) and numbers (N*) of Unicode 15.0-16.0, unassigned in Unicode 14.0: (first, last,
# class), inclusive, as Oniguruma's Unicode 16.0 tables class them.
NEWER_LETTERS_AND_NUMBERS = [
    (0x1C89, 0x1C8A, LETTER), (0xA7CB, 0xA7CD, LETTER), (0xA7DA, 0xA7DC, LETTER),
    (0x105C0, 0x105F3, LETTER), (0x10D40, 0x10D49, NUMBER), (0x10D4A, 0x10D65, LETTER),
    (0x10D6F, 0x10D85, LETTER), (0x10EC2, 0x10EC4, LETTER), (0x1123F, 0x11240, LETTER),
    (0x11380, 0x11389, LETTER), (0x1138B, 0x1138B, LETTER), (0x1138E, 0x1138E, LETTER),
    (0x11390, 0x113B5, LETTER), (0x113B7, 0x113B7, LETTER), (0x113D1, 0x113D1, LETTER),
    (0x113D3, 0x113D3, LETTER), (0x116D0, 0x116E3, NUMBER), (0x11BC0, 0x11BE0, LETTER),
    (0x11BF0, 0x11BF9, NUMBER), (0x11F02, 0x11F02, LETTER), (0x11F04, 0x11F10, LETTER),
    (0x11F12, 0x11F33, LETTER), (0x11F50, 0x11F59, NUMBER), (0x1342F, 0x1342F, LETTER),
    (0x13441, 0x13446, LETTER), (0x13460, 0x143FA, LETTER), (0x16100, 0x1611D, LETTER),
    (0x16130, 0x16139, NUMBER), (0x16D40, 0x16D6C, LETTER), (0x16D70, 0x16D79, NUMBER),
    (0x18CFF, 0x18CFF, LETTER), (0x1B132, 0x1B132, LETTER), (0x1B155, 0x1B155, LETTER),
    (0x1CCF0, 0x1CCF9, NUMBER), (0x1D2C0, 0x1D2D3, NUMBER), (0x1DF25, 0x1DF2A, LETTER),
    (0x1E030, 0x1E06D, LETTER), (0x1E4D0, 0x1E4EB, LETTER), (0x1E4F0, 0x1E4F9, NUMBER),
    (0x1E5D0, 0x1E5ED, LETTER), (0x1E5F0, 0x1E5F0, LETTER), (0x1E5F1, 0x1E5FA, NUMBER),
    (0x2B739, 0x2B739, LETTER), (0x2EBF0, 0x2EE5D, LETTER), (0x31350, 0x323AF, LETTER),
]
NEWER = {cp: cls for first, last, cls in NEWER_LETTERS_AND_NUMBERS for cp in range(first, last + 1)}


def char_class(cp):
    c = chr(cp)
    if cp in NEWER:
        # Unassigned in this unicodedata, or (a newer Python) already the same class.
        category = unicodedata.category(c)
        assert category == "Cn" or category[0] == {LETTER: "L", NUMBER: "N"}[NEWER[cp]], hex(cp)
        return NEWER[cp]
    category = unicodedata.category(c)
    if category.startswith("L"):
        return LETTER
    if category.startswith("N"):
        return NUMBER
    if c.isspace() and not 0x1C <= cp <= 0x1F:
        return SPACE
    return OTHER


def ranges():
    """(first, last, class) for every maximal run of code points of one class other than OTHER."""
    out = []
    for cp in range(0x110000):
        cls = char_class(cp)
        if cls == OTHER:
            continue
        if out and out[-1][1] == cp - 1 and out[-1][2] == cls:
            out[-1][1] = cp
        else:
            out.append([cp, cp, cls])
    return out


def check(table):
    spaces = {cp for first, last, cls in table if cls == SPACE for cp in range(first, last + 1)}
    assert spaces == WHITE_SPACE, sorted(spaces ^ WHITE_SPACE)
    isspace = {cp for cp in range(0x110000) if chr(cp).isspace()}
    assert isspace - spaces == set(range(0x1C, 0x20)), sorted(isspace - spaces)
    assert not spaces - isspace


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUTPUT.cpp")
    table = ranges()
    check(table)
    latin1 = [char_class(cp) for cp in range(256)]
    wide = [r for r in table if r[1] >= 0x100]
    wide = [[max(first, 0x100), last, cls] for first, last, cls in wide]
    lines = [
        "// GENERATED by tools/whisper/gen_unicode_classes.py; do not edit. Regenerate with Debian's python3:",
        "//   /usr/bin/python3 tools/whisper/gen_unicode_classes.py src/models/stt/whisper/unicode_classes.cpp",
        f"// From Python {sys.version.split()[0]}'s unicodedata, Unicode {unicodedata.unidata_version}:"
        " letters are categories L*, numbers N*,",
        "// whitespace the White_Space property (str.isspace() less U+001C..U+001F); plus the letters and",
        "// numbers of Unicode 15.0-16.0 (NEWER_LETTERS_AND_NUMBERS) that faster-whisper's Oniguruma knows.",
        '#include "models/stt/whisper/unicode_classes.h"',
        "",
        "#include <algorithm>",
        "#include <array>",
        "",
        "namespace brisvox::whisper_detail {",
        "namespace {",
        "",
        "constexpr CharClass L = CharClass::kLetter;",
        "constexpr CharClass N = CharClass::kNumber;",
        "constexpr CharClass S = CharClass::kSpace;",
        "constexpr CharClass O = CharClass::kOther;",
        "",
        "// U+0000..U+00FF, most text: a direct look-up.",
        "constexpr std::array<CharClass, 256> kLatin1 = {",
    ]
    letter = {LETTER: "L", NUMBER: "N", SPACE: "S", OTHER: "O"}
    for row in range(0, 256, 32):
        lines.append("    " + ", ".join(letter[c] for c in latin1[row:row + 32]) + ",")
    lines += [
        "};",
        "",
        "struct Range {",
        "  char32_t first;",
        "  char32_t last;  // inclusive",
        "  CharClass cls;",
        "};",
        "",
        "// From U+0100 up: the maximal runs of letters, numbers and whitespace, sorted; gaps are other.",
        f"constexpr std::array<Range, {len(wide)}> kRanges = {{{{",
    ]
    for first, last, cls in wide:
        lines.append(f"    {{0x{first:04X}, 0x{last:04X}, {letter[cls]}}},")
    lines += [
        "}};",
        "",
        "}  // namespace",
        "",
        "CharClass char_class(char32_t cp) {",
        "  if (cp < kLatin1.size()) return kLatin1[cp];",
        "  const auto after = std::upper_bound(kRanges.begin(), kRanges.end(), cp,",
        "                                      [](char32_t c, const Range& r) { return c < r.first; });",
        "  if (after == kRanges.begin()) return CharClass::kOther;",
        "  const Range& r = *(after - 1);",
        "  return cp <= r.last ? r.cls : CharClass::kOther;",
        "}",
        "",
        "}  // namespace brisvox::whisper_detail",
        "",
    ]
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
