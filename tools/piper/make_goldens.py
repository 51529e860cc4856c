#!/usr/bin/env python3
"""Writes tests/data/tts/piper_goldens.json: what piper-tts computes for the sentences in
tests/data/tts/piper_sentences.txt with the en_US-joe-medium voice.

    .venv/bin/python tools/piper/make_goldens.py            # writes the goldens
    .venv/bin/python tools/piper/make_goldens.py --check    # compares, writes nothing
    .venv/bin/python tools/piper/make_goldens.py --sentences my.txt --out /tmp/g.json --audio-texts 0
        (another corpus: BRISVOX_PIPER_GOLDENS=/tmp/g.json runs tests/tts's parity test on it)

piper-tts (GPL-3.0) runs here only, at test-data time, inside the project's venv; brisvox never
links or ships it. Per text: the phonemes and phoneme ids of every sentence (PiperVoice.phonemize
and phonemes_to_ids, what PiperVoice.synthesize feeds the model). For the texts marked "audio" in
AUDIO_TEXTS, each sentence's audio with noise_scale = noise_w_scale = 0 (deterministic), as
PiperVoice.synthesize returns it (normalised, clipped): its length, peak and RMS, and every
STRIDE-th sample, which the C++ test compares with brisvox's output.

Lines of piper_sentences.txt are texts; "\\n" in a line stands for a newline.
"""
import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime
import piper
from piper import PiperVoice, SynthesisConfig

ROOT = Path(__file__).resolve().parents[2]
VOICE = ROOT / "third_party/models/piper/en_US-joe-medium.onnx"
SENTENCES = ROOT / "tests/data/tts/piper_sentences.txt"
OUT = ROOT / "tests/data/tts/piper_goldens.json"
AUDIO_TEXTS = 8      # the first N texts get audio references
STRIDE = 97          # samples between two stored samples (prime, so it does not beat with hop 256)


def read_texts(path):
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            texts.append(line.replace("\\n", "\n"))
    return texts


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="compare with the stored goldens instead of writing")
    ap.add_argument("--sentences", type=Path, default=SENTENCES, help="texts, one per line")
    ap.add_argument("--out", type=Path, default=OUT, help="where to write the goldens")
    ap.add_argument("--audio-texts", type=int, default=AUDIO_TEXTS, help="texts with audio references")
    args = ap.parse_args()
    voice = PiperVoice.load(str(VOICE))
    texts = read_texts(args.sentences)
    out = {
        "generator": "tools/piper/make_goldens.py",
        "piper_tts": getattr(piper, "__version__", "1.8.0"),
        "onnxruntime": onnxruntime.__version__,
        "voice": VOICE.name,
        "voice_sha256": hashlib.sha256(VOICE.read_bytes()).hexdigest(),
        "stride": STRIDE,
        "texts": [],
    }
    syn = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0, length_scale=1.0, normalize_audio=True)
    for i, text in enumerate(texts):
        entry = {"text": text, "sentences": []}
        for phonemes in voice.phonemize(text):
            if not phonemes:
                continue
            entry["sentences"].append({"phonemes": "".join(phonemes), "ids": voice.phonemes_to_ids(phonemes)})
        if i < args.audio_texts:
            entry["audio"] = []
            for chunk in voice.synthesize(text, syn_config=syn):
                a = chunk.audio_float_array.astype(np.float64)
                entry["audio"].append({
                    "num_samples": int(a.size),
                    "peak": float(np.max(np.abs(a))),
                    "rms": round(float(np.sqrt(np.mean(a * a))), 7),
                    "samples": [round(float(x), 6) for x in a[::STRIDE]],
                })
        out["texts"].append(entry)
    if args.check:
        stored = json.loads(args.out.read_text(encoding="utf-8"))
        same = [a["sentences"] == b["sentences"] for a, b in zip(stored["texts"], out["texts"])]
        print(f"{sum(same)} of {len(same)} texts have the stored phoneme ids")
        return 0 if all(same) and len(stored["texts"]) == len(out["texts"]) else 1
    # One text per line keeps the file small and its diffs readable.
    head = {k: v for k, v in out.items() if k != "texts"}
    lines = [json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in out["texts"]]
    body = json.dumps(head, ensure_ascii=False)[:-1] + ', "texts": [\n' + ",\n".join(lines) + "\n]}\n"
    args.out.write_text(body, encoding="utf-8")
    n = sum(len(t["sentences"]) for t in out["texts"])
    print(f"wrote {args.out}: {len(texts)} texts, {n} sentences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
