#!/usr/bin/env python3
"""faster-whisper's throughput on the recordings of the Whisper parity set (tests/data/stt), for the
side-by-side comparison with `brisvox transcribe` (docs/PERFORMANCE.md). Runs in the project's venv.

  throughput_faster_whisper.py [--compute-type int8] [--threads 2] [--model DIR]
      [--goldens tests/data/stt/faster_whisper_base_multilingual.json] [--decoding faster-whisper]
      [--list FILE]   (also write the files' paths, one per line, for `brisvox transcribe`)

Transcribes every file of the goldens one after another (greedy, temperature 0, without
timestamps, no VAD filter: the goldens' options; --decoding faster-whisper: its own defaults, beam 5
with the temperature fallback), the language given for English-only goldens and detected for the
multilingual ones, decoding the files itself as a user would, and
prints one JSON line: files, audio seconds, wall seconds (model loading excluded), audio seconds
per wall second.
"""

from __future__ import annotations

import argparse
import json
import os
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OPTIONS = dict(beam_size=1, temperature=0.0, without_timestamps=True,
               condition_on_previous_text=False, vad_filter=False, language="en")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "third_party/models/faster-whisper-tiny.en"))
    ap.add_argument("--compute-type", default="int8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--goldens", default=os.path.join(ROOT, "tests/data/stt/faster_whisper_tiny_en.json"))
    ap.add_argument("--decoding", choices=["greedy", "faster-whisper"], default="greedy")
    ap.add_argument("--list", help="write the files' paths here, one per line")
    args = ap.parse_args()
    from faster_whisper import WhisperModel, decode_audio
    goldens = json.load(open(args.goldens))
    files = [os.path.join(goldens["file_root"], u["file"]) for u in goldens["utterances"]]
    if args.list:
        with open(args.list, "w", encoding="utf-8") as f:
            f.write("".join(p + "\n" for p in files))
    options = dict(OPTIONS, language=goldens["options"].get("language"))
    if args.decoding == "faster-whisper":
        options.update(beam_size=5, best_of=5, temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    model = WhisperModel(args.model, device="cpu", compute_type=args.compute_type, cpu_threads=args.threads)
    audio_s = 0.0
    t0 = time.perf_counter()
    words = 0
    for f in files:
        audio = decode_audio(f)
        audio_s += len(audio) / 16000.0
        segments, _ = model.transcribe(audio, **options)
        words += sum(len(s.text.split()) for s in segments)
    wall = time.perf_counter() - t0
    print(json.dumps({"engine": "faster-whisper", "compute_type": args.compute_type, "threads": args.threads,
                      "decoding": args.decoding,
                      "files": len(files), "audio_s": round(audio_s, 2), "wall_s": round(wall, 2),
                      "audio_s_per_s": round(audio_s / wall, 2), "words": words}))


if __name__ == "__main__":
    main()
