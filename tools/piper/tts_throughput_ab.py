#!/usr/bin/env python3
"""Text-to-speech throughput, brisvox's engine against piper-tts, on the same texts and voice, in
one run (docs/PERFORMANCE.md, "Text-to-speech on the engine").

    .venv/bin/python tools/piper/tts_throughput_ab.py --brisvox build/release/brisvox
    .venv/bin/python tools/piper/tts_throughput_ab.py --brisvox build/release/brisvox --rounds 3 \
        --corpus tests/data/tts/piper_sentences.txt

Each round runs, one after another:
  brisvox    `brisvox bench --tts-voice VOICE --tts-corpus CORPUS --tts-fast-start 0` (its
             throughput phase, every chunk a whole sentence as in piper-tts: the texts
             spread over 8 speech sessions, the engine's TTS workers, one per core, one intra-op
             thread each);
  piper-tts  PiperVoice.synthesize() over every text, one after another (one voice, one request at
             a time, as piper-tts serves), at 1 and 2 intra-op threads and at ONNX Runtime's
             default; and two piper-tts processes at 1 thread each, half the texts each (what a
             user could script on a 2-core machine; piper-tts itself does not).
Throughput is seconds of audio per second of wall time (x real time). The noise scales are the
voice's for both. piper-tts (GPL-3.0) runs here only, inside the project's venv; brisvox never
links or ships it. The machine's load average is printed: on a shared machine, say it.
"""
import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VOICE = ROOT / "third_party/models/piper/en_US-joe-medium.onnx"
CORPUS = ROOT / "tests/data/tts/piper_sentences.txt"


def texts_of(path):
    return [line.rstrip("\n") for line in open(path, encoding="utf-8") if line.strip()]


def load_voice(threads):
    import onnxruntime
    from piper import PiperVoice
    voice = PiperVoice.load(str(VOICE))
    opts = onnxruntime.SessionOptions()
    if threads > 0:
        opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    voice.session = onnxruntime.InferenceSession(str(VOICE), sess_options=opts, providers=["CPUExecutionProvider"])
    return voice


def piper_audio_s(voice, texts):
    rate = voice.config.sample_rate
    return sum(c.audio_float_array.size for t in texts for c in voice.synthesize(t)) / rate


def piper_single(texts, threads):
    voice = load_voice(threads)
    piper_audio_s(voice, texts[:2])  # warm-up
    t0 = time.perf_counter()
    audio = piper_audio_s(voice, texts)
    return audio, time.perf_counter() - t0


def _worker(args):
    texts, start_at = args
    voice = load_voice(1)
    piper_audio_s(voice, texts[:2])
    while time.time() < start_at:  # both processes start together
        time.sleep(0.001)
    t0 = time.perf_counter()
    audio = piper_audio_s(voice, texts)
    return audio, t0, time.perf_counter()


def piper_two_processes(texts):
    start_at = time.time() + 8.0  # after both loaded the voice
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(_worker, [(texts[0::2], start_at), (texts[1::2], start_at)])
    audio = sum(r[0] for r in results)
    wall = max(r[2] for r in results) - min(r[1] for r in results)
    return audio, wall


def brisvox_run(brisvox, corpus):
    out = subprocess.run([brisvox, "bench", "--skip-load", "--skip-latency", "--skip-baseline", "--tts-voice", str(VOICE),
                          "--tts-corpus", str(corpus), "--tts-requests", "1", "--tts-fast-start", "0", "--json"],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    t = json.loads(out)["phases"]["tts"]
    return t["throughput"]["audio_s"], t["throughput"]["wall_s"], t["workers"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    texts = texts_of(args.corpus)
    import onnxruntime
    import piper  # noqa: F401
    print(f"{len(texts)} texts of {args.corpus}; voice {VOICE.name}; {os.cpu_count()} cores; "
          f"piper-tts with onnxruntime {onnxruntime.__version__}; load average {os.getloadavg()[0]:.2f} at start",
          flush=True)
    results = {}

    def record(name, audio, wall):
        results.setdefault(name, []).append(audio / wall)
        print(f"  {name:34s} {audio:7.1f} s of audio in {wall:6.2f} s: {audio / wall:5.1f}x real time   "
              f"(load {os.getloadavg()[0]:.2f})", flush=True)

    for r in range(args.rounds):
        print(f"round {r + 1}", flush=True)
        audio, wall, workers = brisvox_run(args.brisvox, args.corpus)
        record(f"brisvox engine, {workers} workers", audio, wall)
        for threads in (1, 2, 0):
            record(f"piper-tts, {threads or 'default'} thread{'s' if threads != 1 else ''}",
                   *piper_single(texts, threads))
        record("piper-tts, 2 processes x 1 thread", *piper_two_processes(texts))

    print("median over rounds (x real time):")
    med = {k: statistics.median(v) for k, v in results.items()}
    for k, v in med.items():
        print(f"  {k:34s} {v:5.1f}")
    engine = next(v for k, v in med.items() if k.startswith("brisvox"))
    best_single = max(v for k, v in med.items() if k.startswith("piper-tts,") and "processes" not in k)
    print(f"brisvox / piper-tts's best single-process setting: {engine / best_single:.2f}x; "
          f"/ two piper-tts processes: {engine / med['piper-tts, 2 processes x 1 thread']:.2f}x")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
