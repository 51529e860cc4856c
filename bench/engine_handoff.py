#!/usr/bin/env python3
"""CPU per VAD window of the engine hand-off the Pipecat and LiveKit adapters make: N threads, each
with a stream of one engine, push one 32 ms window every 32 ms and wait for its probability
(brisvox._window.window_probability, as BrisvoxVADAnalyzer.voice_confidence does), without Pipecat
around it. The process's CPU time over the run, per window and per stream (docs/PYTHON.md).

    PYTHONPATH=<installed brisvox> .venv/bin/python bench/engine_handoff.py [--streams 100] [--seconds 10]
"""

import argparse
import resource
import threading
import time

import numpy as np

import brisvox
from brisvox._window import window_probability

WINDOW = 512  # 32 ms at 16 kHz


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def engine_thread_seconds() -> float:
    """CPU time of the process's threads other than the main one: after the callers' threads are
    joined, those are the engine's workers (and any library's idle threads)."""
    import os
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == os.getpid():
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--vad-workers", type=int, default=0, help="Engine's (0: one per core)")
    ap.add_argument("--vad-gather-us", type=int, default=-1, help="Engine's vad_gather_wait_us (-1: its default)")
    args = ap.parse_args()
    engine = brisvox.Engine(vad_model="v6", vad_workers=args.vad_workers, vad_gather_wait_us=args.vad_gather_us)
    audio = (np.random.default_rng(0).standard_normal(16000 * 4) * 3000).astype(np.int16)
    windows = [0] * args.streams
    start = time.monotonic()

    def call(i: int):
        stream = engine.open_stream(sample_rate=16000, emit_probabilities=True)
        first = start + (i % 32) / 1000.0  # the calls' windows spread over the 32 ms
        k = 0
        while first + k * 0.032 - start < args.seconds:
            delay = first + k * 0.032 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            offset = (k * WINDOW) % (len(audio) - WINDOW)
            window_probability(stream, audio[offset:offset + WINDOW], 2.0)
            k += 1
        windows[i] = k
        stream.close()

    cpu0 = cpu_seconds()
    engine0 = engine_thread_seconds()
    threads = [threading.Thread(target=call, args=(i,)) for i in range(args.streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu = cpu_seconds() - cpu0
    engine_cpu = engine_thread_seconds() - engine0
    total = sum(windows)
    print(f"{args.streams} streams, {total} windows in {args.seconds:g} s: {1e6 * cpu / total:.1f} us of CPU per window "
          f"(engine threads {1e6 * engine_cpu / total:.1f}, callers {1e6 * (cpu - engine_cpu) / total:.1f}), "
          f"{100 * cpu / args.seconds / args.streams:.3f} % of a core per stream")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
