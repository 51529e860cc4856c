#!/usr/bin/env python3
"""100 concurrent Pipecat calls in one process, BrisvoxVADAnalyzer vs SileroVADAnalyzer.

    PYTHONPATH=<installed brisvox> .venv/bin/python bench/pipecat_calls.py [--calls 100] [--seconds 28] [--max-backlog-s 1]

Each call is a real Pipecat pipeline (tests/python/pipecat_harness.py: VADProcessor(analyzer) ->
Recorder) fed third_party/audio/sample.wav (28.4 s of read speech, 16 kHz) in 20 ms
InputAudioRawFrames paced in real time, every call rotated to start at another point of the
recording, all calls on one asyncio loop. The script runs one child process per analyzer (so that
memory is not shared between them), plus one with a null analyzer, and prints them side by side:

- CPU per call: the child's CPU time (all threads: Pipecat's executors, brisvox's workers) over
  the run, per call and per second of call audio, as a share of one core (so a machine that cannot
  keep up in real time still measures the same work); and the same minus a run with a null
  analyzer that answers a constant confidence in the event loop (no model, no thread), which is
  what the pipeline itself costs. Two more runs say where the difference comes from: the null
  analyzer through Pipecat's own analyze_audio (its per-analyzer executor thread, one hand-off per
  20 ms frame: what SileroVADAnalyzer pays besides its model), and BrisvoxVADAnalyzer through that
  same executor path (brisvox before its analyze_audio awaited the engine on the loop);
- memory per call: (peak RSS during the run - RSS after the imports) / calls, so brisvox's one
  engine is included, amortised. Where the machine cannot keep up in real time (100 calls on 2
  cores), each call's frames pile up in its pipeline's queues, so the figure grows with how far
  behind a run fell; --max-backlog-s (default 1 s) bounds that queue (the feeder waits), the same
  for every analyzer, so that memory measures the analyzers (docs/PYTHON.md);
- transitions: the share of SileroVADAnalyzer's speaking/quiet transitions that
  BrisvoxVADAnalyzer makes within 64 ms (same call, same kind).
"""

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests/python"))


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(analyzer_name: str, calls: int, seconds: float, gather_us: int = -1, max_backlog_s: float | None = None) -> dict:
    import numpy as np
    from loguru import logger
    from pipecat.audio.vad.vad_analyzer import VADAnalyzer

    from conftest import SAMPLE_WAV, read_wav
    from pipecat_harness import run_call

    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    audio, rate = read_wav(SAMPLE_WAV)

    class NullExecutorAnalyzer(VADAnalyzer):  # Pipecat's analyze_audio (its executor), no model
        def num_frames_required(self):
            return 512

        def voice_confidence(self, buffer):
            return 0.0

    class NullAnalyzer(NullExecutorAnalyzer):  # the pipeline alone: no model, no thread
        async def analyze_audio(self, buffer):
            return self._run_analyzer(buffer)

    if analyzer_name in ("brisvox", "brisvox-executor"):
        import brisvox
        from brisvox.pipecat import BrisvoxVADAnalyzer

        engine = brisvox.shared_engine("v6", vad_gather_wait_us=gather_us)

        class BrisvoxExecutorAnalyzer(BrisvoxVADAnalyzer):  # each window waited for in Pipecat's executor
            analyze_audio = VADAnalyzer.analyze_audio

        cls = BrisvoxVADAnalyzer if analyzer_name == "brisvox" else BrisvoxExecutorAnalyzer

        def make():
            return cls(engine=engine)
    elif analyzer_name == "silero":
        from pipecat.audio.vad.silero import SileroVADAnalyzer as make
    elif analyzer_name == "null-executor":
        make = NullExecutorAnalyzer
    else:
        make = NullAnalyzer
    n = int(seconds * rate)
    clips = [np.roll(audio, -int(i * 0.283 * rate) % len(audio))[:n] for i in range(calls)]

    base_rss = rss_bytes()
    peak = [base_rss]
    done = threading.Event()

    def sample_rss():
        while not done.wait(0.2):
            peak[0] = max(peak[0], rss_bytes())

    sampler = threading.Thread(target=sample_rss, daemon=True)
    sampler.start()

    async def run_all():
        analyzers = [make() for _ in range(calls)]
        return await asyncio.gather(*(run_call(a, c, rate, realtime=True, max_backlog_s=max_backlog_s)
                                      for a, c in zip(analyzers, clips)))

    cpu0, wall0 = cpu_seconds(), time.monotonic()
    recorders = asyncio.run(run_all())
    cpu, wall = cpu_seconds() - cpu0, time.monotonic() - wall0
    done.set()
    sampler.join()
    return {
        "analyzer": analyzer_name, "calls": calls, "audio_s": n / rate, "wall_s": wall, "cpu_s": cpu,
        "base_rss": base_rss, "peak_rss": peak[0],
        "transitions": [r.transitions for r in recorders],
    }


RUNS = ("null", "null-executor", "brisvox", "brisvox-executor", "silero")


def run_child(name: str, args) -> dict:
    cmd = [sys.executable, __file__, "--child", name, "--calls", str(args.calls), "--seconds", str(args.seconds),
           "--vad-gather-us", str(args.vad_gather_us), "--max-backlog-s", str(args.max_backlog_s)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--seconds", type=float, default=28.0, help="audio per call (real time)")
    p.add_argument("--save", help="write the three runs' raw results (JSON) here")
    p.add_argument("--vad-gather-us", type=int, default=-1,
                   help="the brisvox engine's vad_gather_wait_us (-1: its default, 2000)")
    p.add_argument("--max-backlog-s", type=float, default=1.0,
                   help="each call's feeder waits while more than this much of its audio is queued in the pipeline "
                        "(default 1; negative: never waits, and where the machine cannot keep up, memory then "
                        "measures the backlog)")
    p.add_argument("--child", choices=RUNS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        backlog = args.max_backlog_s if args.max_backlog_s >= 0 else None
        print(json.dumps(child(args.child, args.calls, args.seconds, args.vad_gather_us, backlog)))
        return

    from pipecat_harness import match_transitions

    runs = {name: run_child(name, args) for name in RUNS}
    null = runs["null"]
    if args.save:
        Path(args.save).write_text(json.dumps(runs))
    print(f"{args.calls} concurrent Pipecat calls, {args.seconds:g} s of real audio each, paced in real time, "
          f"one process per analyzer, {os.cpu_count()} cores\n")
    print(f"{'':34}{'BrisvoxVADAnalyzer':>20}{'SileroVADAnalyzer':>20}{'ratio':>8}")
    rows = []
    for label, f in [
        ("wall time of the run (s)", lambda r: r["wall_s"]),
        ("CPU per call (% of a core)", lambda r: 100 * r["cpu_s"] / r["calls"] / r["audio_s"]),
        ("  minus the pipeline (null)", lambda r: 100 * (r["cpu_s"] - null["cpu_s"]) / r["calls"] / r["audio_s"]),
        ("memory per call (MiB)", lambda r: (r["peak_rss"] - r["base_rss"]) / r["calls"] / 2**20),
        ("  minus the pipeline (null)", lambda r: (r["peak_rss"] - r["base_rss"] - null["peak_rss"] + null["base_rss"])
         / r["calls"] / 2**20),
    ]:
        b, s = f(runs["brisvox"]), f(runs["silero"])
        ratio = s / b if b > 0 else float("inf")
        rows.append((label, b, s))
        print(f"{label:34}{b:20.3f}{s:20.3f}{ratio:7.1f}x")
    print()
    def cpu_per_call(r):
        return 100 * r["cpu_s"] / r["calls"] / r["audio_s"]

    for name, what in [("null", "the pipeline alone (null analyzer in the loop)"),
                       ("null-executor", "null analyzer through Pipecat's executor"),
                       ("brisvox-executor", "BrisvoxVADAnalyzer through Pipecat's executor")]:
        cpu = cpu_per_call(runs[name])
        extra = "" if name == "null" else f"   minus the pipeline {cpu - cpu_per_call(null):7.3f}"
        print(f"{what + ': CPU per call (%)':68}{cpu:8.3f}{extra}")
    total = matched = ours = 0
    worst = 0.0
    for theirs_t, ours_t in zip(runs["silero"]["transitions"], runs["brisvox"]["transitions"]):
        m, w = match_transitions(theirs_t, ours_t, 0.064)
        total, matched, ours, worst = total + len(theirs_t), matched + m, ours + len(ours_t), max(worst, w)
    print(f"\nspeaking/quiet transitions: SileroVADAnalyzer {total}, BrisvoxVADAnalyzer {ours}; "
          f"{matched} of Silero's ({100 * matched / max(total, 1):.1f} %) matched within 64 ms "
          f"(largest distance among those {1000 * worst:.0f} ms)")


if __name__ == "__main__":
    main()
