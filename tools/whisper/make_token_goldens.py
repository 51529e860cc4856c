#!/usr/bin/env python3
"""Writes tests/data/stt/whisper_token_goldens.json: how faster-whisper's tokenizer encodes text,
for WhisperVocabulary::encode's tests (tests/stt/vocabulary_test.cpp). Runs in the project's venv
(faster-whisper 1.2.1, tokenizers), from the repository root:

  .venv/bin/python tools/whisper/make_token_goldens.py [--out tests/data/stt/whisper_token_goldens.json]
                                                        [--no-checks]

For Whisper tiny.en (GPT-2's vocabulary) and base (multilingual), from the tokenizer.json of
third_party/models/faster-whisper-*: every text's ids are tokenizers' encode(text,
add_special_tokens=False).ids, checked equal to faster_whisper.tokenizer.Tokenizer(...).encode(text).
The texts: English sentences, contractions, digits, punctuation, whitespace of every kind, emoji,
CJK, accented and other scripts, the " " + text form faster-whisper encodes prompts in, and the
Spanish, French, Italian and Russian reference transcripts of
tests/data/stt/faster_whisper_base_multilingual.json. None spells a special token: Hugging Face
would give the special's id, brisvox never produces one.

Unless --no-checks, it also checks what brisvox's encoder relies on (about 15 s):
  - merging without a merges file (tiktoken's rule, the lowest-id token first) gives what
    tokenizers' BPE with the merges gives: on every regular token's bytes, where it must give
    the token itself (so a piece that is a whole token can be returned as is), and on random
    concatenations of two and three tokens;
  - the brisvox model folders' vocabulary.txt (third_party/models/whisper-*) spells every regular
    token as tokenizer.json does;
  - the character classes of tools/whisper/gen_unicode_classes.py are those tokenizers'
    pre-tokenizer (Oniguruma) uses, for every code point.
"""

import argparse
import json
import os
import random
import sys

import faster_whisper
import tokenizers
from faster_whisper.tokenizer import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_unicode_classes  # noqa: E402

MODELS = [
    # (brisvox folder, faster-whisper folder, multilingual)
    ("whisper-tiny.en", "faster-whisper-tiny.en", False),
    ("whisper-base", "faster-whisper-base", True),
]

TEXTS = [
    # English
    "Hello, world.",
    "The quick brown fox jumps over the lazy dog.",
    "Please enter your conference number followed by the pound key.",
    "Thank you for calling. Your call is important to us, so please stay on the line and an agent "
    "will be with you shortly to help with your account.",
    "OpenAI's Whisper transcribes speech; brisvox runs it in C++20.",
    # contractions: lower-case ASCII only, anywhere a ' starts a piece
    "don't",
    "I'll",
    "'s",
    "It's John's car, isn't it? We're sure they've gone; I'm told you'd agree.",
    "DON'T SHOUT, IT'S LOUD",
    "'re 've 'm 'll 'd 't 'x",
    "rock'n'roll o'clock",
    "l\u2019homme qu\u2019il",  # a typographic apostrophe is punctuation
    # digits and numbers
    "press 1 2 3",
    "3.14",
    "abc123",
    "1234567890123456789012345678901234567890",
    "Call 555-0199 at 10:30am, room 42B.",
    "x\u00b2 + \u00bd = \u0663, \u2167 \u2460",  # superscript, fraction, Arabic-Indic, Roman, circled
    "\u6771\u4eac2024\u5e74",
    # punctuation runs
    "Wait... what?!",
    "!!!???...",
    "(a) [b] {c} <d>",
    "--==**##__",
    "e-mail: someone@example.com, https://example.org/path?q=1&r=2",
    "\"quoted\" and 'single' and \u00abguillemets\u00bb",
    "=====================================================",
    # whitespace
    "a  b   c    d",
    "two\nlines",
    "tab\tseparated\tvalues",
    "line\r\nbreak",
    "  leading",
    "trailing  ",
    "   ",
    " ",
    "\n\n\n",
    " \t \n x",
    "end \n",
    "a \n\n b",
    "non\u00a0breaking and ideographic\u3000space",
    "line\u2028separator, next\u0085line, thin\u2009space",
    "file\u001cgroup\u001frecord",  # isspace() but not White_Space: punctuation-like
    "zero\u200bwidth",
    # emoji
    "I \u2764\ufe0f tokenizers \U0001f389\U0001f389",
    "\U0001f44d\U0001f3fd thumbs up",
    "family: \U0001f468\u200d\U0001f469\u200d\U0001f467",
    # CJK
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
    "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc785\ub2c8\ub2e4.",
    # accented letters and other scripts
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00f1and\u00fa",
    "cafe\u0301",  # a combining accent is not a letter (Mn)
    "\u00c5ngstr\u00f6m \u00fcber Stra\u00dfe",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
    "\u05e2\u05d1\u05e8\u05d9\u05ea \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u092a\u093e\u0920",
    "abc\u0430\u0431\u0432123",
    # Unicode 15-16 (a CJK extension H ideograph, Kaktovik numerals): letters and numbers to
    # tokenizers' Oniguruma, unassigned in Debian 12's unicodedata
    "x\U00031350\U00031351 \U0001d2c0\U0001d2c1y",
    # how faster-whisper encodes a prompt or prefix: " " + text.strip()
    " hello",
    " Hello world",
    " Please enter your agent number.",
    "",
]


def reference_texts():
    path = "tests/data/stt/faster_whisper_base_multilingual.json"
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return [u["reference"] for u in data["utterances"] if u["corpus"] != "asterisk-en"]


def regular_tokens(tokenizer_json):
    """{id: raw bytes} of the regular tokens (ids below <|endoftext|>)."""
    with open(tokenizer_json, encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    byte_of = {ch: b for b, ch in gpt2_bytes_to_unicode().items()}
    out = {}
    for spelling, i in vocab.items():
        if spelling != "<|endoftext|>":
            out[i] = bytes(byte_of[c] for c in spelling)
    return out


def gpt2_bytes_to_unicode():
    printable = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, n = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


def rank_bpe(piece, rank_of):
    """tiktoken's _byte_pair_merge: join the adjacent pair whose concatenation has the lowest rank
    (id), the leftmost of equals, until none joins."""
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, at = None, -1
        for i in range(len(parts) - 1):
            r = rank_of.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best):
                best, at = r, i
        if best is None:
            break
        parts[at:at + 2] = [parts[at] + parts[at + 1]]
    return [rank_of[p] for p in parts]


def check_rank_bpe(name, hf, tokens):
    rank_of = {b: i for i, b in sorted(tokens.items(), reverse=True) if b}
    to_char = gpt2_bytes_to_unicode()

    def hf_bpe(b):
        return [t.id for t in hf.model.tokenize("".join(to_char[x] for x in b))]

    bad = [i for i, b in tokens.items() if b and rank_bpe(b, rank_of) != [i]]
    assert not bad, f"{name}: tokens that do not merge back to themselves: {bad[:20]}"
    bad = [i for i, b in tokens.items() if b and hf_bpe(b) != [i]]
    assert not bad, f"{name}: tokens tokenizers' BPE does not give back: {bad[:20]}"
    rng = random.Random(1)
    ids = [i for i, b in tokens.items() if b]
    trials = 0
    for k in (2, 3):
        for _ in range(100000 if k == 2 else 50000):
            piece = b"".join(tokens[rng.choice(ids)] for _ in range(k))
            ours, theirs = rank_bpe(piece, rank_of), hf_bpe(piece)
            assert ours == theirs, f"{name}: {piece!r}: rank BPE {ours}, tokenizers {theirs}"
            trials += 1
    print(f"{name}: {len(ids)} tokens merge back to themselves; {trials} random concatenations agree",
          file=sys.stderr)


def check_vocabulary_txt(folder, tokens):
    path = f"third_party/models/{folder}/vocabulary.txt"
    to_char = gpt2_bytes_to_unicode()
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, b in tokens.items():
        assert lines[i] == "".join(to_char[x] for x in b), f"{path} line {i + 1}"


def check_char_classes():
    """Each code point's class as tokenizers' ByteLevel pre-tokenizer sees it: put between two
    characters of a known class (a, 1, !), a character of that class joins their piece. One that
    joins none is whitespace."""
    pre = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    known = {"a": gen_unicode_classes.LETTER, "1": gen_unicode_classes.NUMBER, "!": gen_unicode_classes.OTHER}
    code_points = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    seen = {}
    for sep, cls in known.items():
        for start in range(0, len(code_points), 4096):
            chunk = code_points[start:start + 4096]
            text = sep + sep.join(chr(cp) for cp in chunk) + sep
            piece_of = [0] * len(text)
            for n, (_, (begin, end)) in enumerate(pre.pre_tokenize_str(text)):
                for k in range(begin, end):
                    piece_of[k] = n
            for k, cp in enumerate(chunk):
                at = 2 * k + 1  # chunk[k] sits between separators at 2k and 2k + 2
                if piece_of[at] == piece_of[at - 1]:
                    assert cp not in seen, hex(cp)
                    seen[cp] = cls
    diff = []
    for cp in code_points:
        theirs = seen.get(cp, gen_unicode_classes.SPACE)
        ours = gen_unicode_classes.char_class(cp)
        if ours != theirs:
            diff.append((hex(cp), ours, theirs))
    assert not diff, f"{len(diff)} code points differ (ours, tokenizers'): {diff[:40]}"
    print(f"character classes: all {len(code_points)} code points agree with tokenizers", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="tests/data/stt/whisper_token_goldens.json")
    parser.add_argument("--no-checks", action="store_true")
    args = parser.parse_args()
    texts = TEXTS + reference_texts()
    assert len(set(texts)) == len(texts)
    out = {
        "about": "Whisper token ids of texts as faster-whisper encodes them, no special tokens "
                 "(tools/whisper/make_token_goldens.py)",
        "faster_whisper": faster_whisper.__version__,
        "tokenizers": tokenizers.__version__,
        "models": {},
    }
    if not args.no_checks:
        check_char_classes()
    for folder, fw_folder, multilingual in MODELS:
        path = f"third_party/models/{fw_folder}/tokenizer.json"
        hf = tokenizers.Tokenizer.from_file(path)
        fw = Tokenizer(hf, multilingual, task="transcribe", language="en")
        eot = hf.token_to_id("<|endoftext|>")
        goldens = []
        for text in texts:
            ids = hf.encode(text, add_special_tokens=False).ids
            assert ids == fw.encode(text), text
            assert all(i < eot for i in ids), text
            assert hf.decode(ids) == text, text
            goldens.append({"text": text, "ids": ids})
        if not args.no_checks:
            tokens = regular_tokens(path)
            check_vocabulary_txt(folder, tokens)
            check_rank_bpe(folder, hf, tokens)
        out["models"][folder] = {"tokenizer": path, "multilingual": multilingual, "end_of_text": eot,
                                 "goldens": goldens}
        print(f"{folder}: {len(goldens)} texts, {sum(len(g['ids']) for g in goldens)} ids", file=sys.stderr)
    # One golden a line: reviewable diffs, a moderate file.
    lines = ["{"]
    for key in ("about", "faster_whisper", "tokenizers"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(out[key], ensure_ascii=False)},")
    lines.append('  "models": {')
    for m, (folder, model) in enumerate(out["models"].items()):
        lines.append(f"    {json.dumps(folder)}: {{")
        for key in ("tokenizer", "multilingual", "end_of_text"):
            lines.append(f"      {json.dumps(key)}: {json.dumps(model[key])},")
        lines.append('      "goldens": [')
        for g, golden in enumerate(model["goldens"]):
            comma = "," if g + 1 < len(model["goldens"]) else ""
            lines.append(f"        {json.dumps(golden, ensure_ascii=False)}{comma}")
        lines.append("      ]")
        lines.append("    }" + ("," if m + 1 < len(out["models"]) else ""))
    lines.append("  }")
    lines.append("}")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    json.loads("\n".join(lines))


if __name__ == "__main__":
    main()
