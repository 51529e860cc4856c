#!/usr/bin/env python3
"""piper-tts's own speed on the sentences bench/piper_bench.cpp uses, for comparison with brisvox.

    taskset -c 0 .venv/bin/python tools/piper/piper_speed.py --threads 1    # one core, as brisvox
    .venv/bin/python tools/piper/piper_speed.py --threads 0                 # ONNX Runtime's default

Prints, per case, the median wall time of --runs runs (after one warm-up) and the CPU time of the
process: phonemizing (libespeak-ng in-process, Piper's path), one VITS run per sentence (short and
long), the time to the first audio of a two-sentence reply (synthesize() until its first chunk),
and the whole reply; x_realtime is seconds of audio per second of wall time. noise scales are the
voice's (as brisvox's benchmark).
"""
import argparse
import statistics
import time
from pathlib import Path

import onnxruntime
from piper import PiperVoice

ROOT = Path(__file__).resolve().parents[2]
VOICE = ROOT / "third_party/models/piper/en_US-joe-medium.onnx"
SHORT = "How can I help you today?"
LONG = ("The committee, after months of deliberation and several heated debates about budget priorities, "
        "finally agreed to fund the new library, the community pool, and a modest expansion of the public "
        "transit system.")
REPLY = "Sure, I can help with that. Your appointment is confirmed for Monday at two in the afternoon."


def measure(name, fn, runs, audio_s=None):
    fn()  # warm-up
    walls, cpus = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    wall = statistics.median(walls)
    line = f"{name:32s} wall {wall * 1000:8.1f} ms   cpu {statistics.median(cpus) * 1000:8.1f} ms"
    a = audio_s(out) if audio_s else None
    if a:
        line += f"   audio {a:6.2f} s   x_realtime {a / wall:5.2f}"
    print(line, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1, help="ONNX Runtime intra-op threads (0: its default)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    voice = PiperVoice.load(str(VOICE))
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    voice.session = onnxruntime.InferenceSession(str(VOICE), sess_options=opts, providers=["CPUExecutionProvider"])
    rate = voice.config.sample_rate
    print(f"piper-tts, onnxruntime {onnxruntime.__version__}, intra-op threads {args.threads or 'default'}")

    measure("phonemize short", lambda: voice.phonemize(SHORT), args.runs)
    measure("phonemize long", lambda: voice.phonemize(LONG), args.runs)
    for name, text in (("vits short", SHORT), ("vits long", LONG)):
        ids = voice.phonemes_to_ids(voice.phonemize(text)[0])
        measure(name, lambda ids=ids: voice.phoneme_ids_to_audio(ids), args.runs, lambda a: a.size / rate)
    measure("time to first audio (2 sent.)", lambda: next(iter(voice.synthesize(REPLY))), args.runs)
    measure("whole reply (2 sentences)", lambda: list(voice.synthesize(REPLY)), args.runs,
            lambda chunks: sum(c.audio_float_array.size for c in chunks) / rate)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
