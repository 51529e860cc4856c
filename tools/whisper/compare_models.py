#!/usr/bin/env python3
"""Which Whisper model should `brisvox transcribe` use by default? Runs `brisvox transcribe` with
each model on the same recordings, one after another, and prints per model the wall and CPU time
and the corpus WER against published transcripts, with the normaliser of the parity tests
(tests/stt/stt_test_util.h: lower case, "-" and "/" as spaces, other punctuation dropped, numbers
0-999999 spelled out, mr/mrs/dr expanded).

  tools/whisper/compare_models.py --brisvox build/release/brisvox \
      --goldens tests/data/stt/faster_whisper_base_multilingual.json --language en \
      --models tiny.en tiny.en-int8 base base-int8

The recordings and their reference transcripts are the goldens' utterances (--language keeps one
corpus: asterisk-en in the multilingual file; without it, every utterance with a reference).
Models are loaded once per run (the time includes loading: what a user of the CLI waits for).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import time

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def spell(n: int) -> str:
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + (" " + ONES[n % 10] if n % 10 else "")
    if n < 1000:
        return ONES[n // 100] + " hundred" + (" " + spell(n % 100) if n % 100 else "")
    return spell(n // 1000) + " thousand" + (" " + spell(n % 1000) if n % 1000 else "")


def words(text: str) -> list[str]:
    cleaned = "".join(" " if c in "-/" else c.lower() if (c.isascii() and (c.isalnum() or c in "' ")) or not c.isascii()
                      else "" for c in text)
    out = []
    for w in cleaned.split():
        w = w.strip("'")
        if not w:
            continue
        if w.isdigit() and len(w) <= 6:
            out += spell(int(w)).split()
        else:
            out.append({"mr": "mister", "mrs": "missus", "dr": "doctor"}.get(w, w))
    return out


def edits(ref: list[str], hyp: list[str]) -> int:
    prev = list(range(len(hyp) + 1))
    for i in range(1, len(ref) + 1):
        cur = [i] + [0] * len(hyp)
        for j in range(1, len(hyp) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ref[i - 1] != hyp[j - 1]))
        prev = cur
    return prev[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--goldens", required=True)
    ap.add_argument("--language", help="only this corpus's utterances (asterisk-LANG)")
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--extra", default="", help="more options for brisvox transcribe (split on spaces)")
    args = ap.parse_args()
    doc = json.load(open(args.goldens, encoding="utf-8"))
    items = [u for u in doc["utterances"] if u.get("reference")
             and (not args.language or u["corpus"] == f"asterisk-{args.language}")]
    files = [f"{doc['file_root']}/{u['file']}" for u in items]
    print(f"{len(files)} recordings")
    for model in args.models:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        out = subprocess.run([args.brisvox, "transcribe", "--model", model, "--no-progress", *args.extra.split(),
                              *files], check=True, capture_output=True, text=True).stdout
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        texts = {d["file"]: d["text"] for d in map(json.loads, out.splitlines())}
        total = errors = 0
        languages = {}
        for u, f in zip(items, files):
            ref = words(u["reference"])
            total += len(ref)
            errors += edits(ref, words(texts.get(f, "")))
        for d in map(json.loads, out.splitlines()):
            languages[d.get("language", "")] = languages.get(d.get("language", ""), 0) + 1
        print(f"{model:14s} wall {wall:6.1f} s  cpu {cpu:6.1f} s  WER {100.0 * errors / total:5.2f} % "
              f"({errors}/{total} words)  languages {languages}")


if __name__ == "__main__":
    main()
