#!/usr/bin/env python3
"""N concurrent Pipecat pipelines transcribing in one process: BrisvoxSTTService against Pipecat's
WhisperSTTService (faster-whisper), the same Whisper tiny.en weights in int8.

    PYTHONPATH=<installed brisvox> .venv/bin/python bench/pipecat_stt.py [--calls 50] [--seconds 28]

Each call is a real Pipecat pipeline, VADProcessor(BrisvoxVADAnalyzer) -> the STT service ->
Collector, fed third_party/audio/sample.wav (28.4 s of read speech, 16 kHz) in 20 ms
InputAudioRawFrames paced in real time, every call rotated to start elsewhere in the recording,
all calls on one asyncio loop. The VAD is the same in both runs, so both services get the same
segments; what differs is the speech-to-text: brisvox's engine (one model, the segments of all the
calls batched onto its Whisper workers) against a faster-whisper model per pipeline (what
WhisperSTTService loads). One child process per service (memory is not shared between them):

- CPU per call: the child's CPU time (all threads) over the run, per call and per second of call
  audio, as a share of one core;
- memory per call: (peak RSS during the run - RSS after the imports) / calls: the models loaded
  by the services are in it (brisvox's one engine amortised, faster-whisper's one per pipeline);
- segment end -> transcript: from the VADUserStoppedSpeakingFrame reaching the end of the pipeline
  to the TranscriptionFrame of that segment (p50, p99);
- the transcripts: brisvox's word error rate against faster-whisper's, over all the calls.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests/python"))

from process_use import PeakRss, cpu_seconds, percentile  # noqa: E402 (bench/, the script's folder)

FRAME_MS = 20


def child(service: str, calls: int, seconds: float, stt_workers: int = 0, window: str = "full") -> dict:
    import numpy as np
    from loguru import logger
    from pipecat.frames.frames import (EndFrame, InputAudioRawFrame, TranscriptionFrame,
                                       VADUserStoppedSpeakingFrame)
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.runner import PipelineRunner
    from pipecat.pipeline.task import PipelineParams, PipelineTask
    from pipecat.processors.audio.vad_processor import VADProcessor
    from pipecat.processors.frame_processor import FrameProcessor

    from brisvox.pipecat import BrisvoxSTTService, BrisvoxVADAnalyzer
    from conftest import ROOT as TESTS_ROOT, SAMPLE_WAV, read_wav

    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    audio, rate = read_wav(SAMPLE_WAV)
    n = int(seconds * rate)
    clips = [np.roll(audio, -int(i * 0.283 * rate) % len(audio))[:n] for i in range(calls)]

    class Collector(FrameProcessor):
        def __init__(self):
            super().__init__()
            self.stops: list[float] = []
            self.transcripts: list[tuple[float, str]] = []

        async def process_frame(self, frame, direction):
            await super().process_frame(frame, direction)
            if isinstance(frame, VADUserStoppedSpeakingFrame):
                self.stops.append(time.monotonic())
            elif isinstance(frame, TranscriptionFrame):
                self.transcripts.append((time.monotonic(), frame.text))
            await self.push_frame(frame, direction)

    if service == "brisvox":
        model = str(TESTS_ROOT / "third_party/models/whisper-tiny.en-int8")
        # 0: the service's own (brisvox.shared_engine: one Whisper worker); else one engine with that
        # many, made by the first pipeline (inside the run's memory figure, as the shared one is).
        engine = []

        def make():
            if stt_workers > 0 and not engine:
                import brisvox
                engine.append(brisvox.Engine(stt_model=model, stt_workers=stt_workers, admission_control=False))
            return BrisvoxSTTService(model=model, window=window, engine=engine[0] if engine else None)
    else:
        from pipecat.services.whisper.stt import WhisperSTTService

        def make():
            return WhisperSTTService(settings=WhisperSTTService.Settings(
                model=str(TESTS_ROOT / "third_party/models/faster-whisper-tiny.en"), language="en"),
                device="cpu", compute_type="int8")

    rss = PeakRss()
    step = rate * FRAME_MS // 1000

    async def run_call(clip):
        collector = Collector()
        task = PipelineTask(Pipeline([VADProcessor(vad_analyzer=BrisvoxVADAnalyzer()), make(), collector]),
                            params=PipelineParams(audio_in_sample_rate=rate), enable_rtvi=False,
                            enable_turn_tracking=False, cancel_on_idle_timeout=False)

        async def feed():
            start = time.monotonic()
            for k, i in enumerate(range(0, len(clip) - step + 1, step)):
                delay = start + k * FRAME_MS / 1000 - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await task.queue_frame(InputAudioRawFrame(audio=clip[i:i + step].tobytes(), sample_rate=rate,
                                                          num_channels=1))
            await task.queue_frame(EndFrame())

        await asyncio.gather(PipelineRunner(handle_sigint=False).run(task), feed())
        # Each transcript after the stop it answers: the latest stop before it.
        latencies = []
        for t, _ in collector.transcripts:
            before = [s for s in collector.stops if s <= t]
            if before:
                latencies.append(t - before[-1])
        return {"latencies": latencies, "texts": [text for _, text in collector.transcripts]}

    async def run_all():
        return await asyncio.gather(*(run_call(c) for c in clips))

    cpu0, wall0 = cpu_seconds(), time.monotonic()
    results = asyncio.run(run_all())
    cpu, wall = cpu_seconds() - cpu0, time.monotonic() - wall0
    rss.stop()
    return {"service": service, "calls": calls, "audio_s": n / rate, "wall_s": wall, "cpu_s": cpu,
            "base_rss": rss.base, "peak_rss": rss.peak, "results": results}


RUNS = ("brisvox", "faster-whisper")


def word_edits(r: list[str], h: list[str]) -> int:
    """Levenshtein distance of two word lists."""
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
    return d[len(h)]


def whole_clip_reference(calls: int, seconds: float) -> tuple[list[str], list[int]]:
    """The reference words of the calls whose clip starts in the 1.5 s gap after the recording's
    first LibriVox clip and late enough that its cut end falls in that gap too (scripts/setup.sh
    builds sample.wav from five clips with 1.5 / 0.35 s gaps; tests/data/stt holds their texts),
    and those calls' numbers."""
    from conftest import ROOT as TESTS_ROOT, words
    goldens = json.loads((TESTS_ROOT / "tests/data/stt/faster_whisper_tiny_en.json").read_text())
    texts = {u["name"].rsplit("-", 1)[1]: u["reference"] for u in goldens["utterances"] if u["corpus"] == "librivox"}
    total = 28.43  # seconds of sample.wav
    first_end, second_start = 7.1, 8.6
    cut = total - seconds  # the recording's seconds a call leaves out, before its start
    chosen = [i for i in range(calls) if first_end + cut <= (i * 0.283) % total <= second_start]
    order = ["0880", "0890", "0920", "0930", "0870"]
    return words(" ".join(texts[o] for o in order)), chosen


def run_child(name: str, args) -> dict:
    cmd = [sys.executable, __file__, "--child", name, "--calls", str(args.calls), "--seconds", str(args.seconds),
           "--stt-workers", str(args.stt_workers), "--window", args.window]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--seconds", type=float, default=28.0, help="audio per call (real time)")
    p.add_argument("--save", help="write both runs' raw results (JSON) here")
    p.add_argument("--stt-workers", type=int, default=0,
                   help="brisvox's Whisper workers (0: BrisvoxSTTService's shared engine, one worker)")
    p.add_argument("--window", choices=("full", "fit"), default="full",
                   help="BrisvoxSTTService's encoder window (faster-whisper always encodes 30 s)")
    p.add_argument("--only", choices=RUNS, help="run one service and print its raw figures (JSON)")
    p.add_argument("--child", choices=RUNS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.calls, args.seconds, args.stt_workers, args.window)))
        return

    from conftest import words

    if args.only:
        run = run_child(args.only, args)
        lat = [x for c in run["results"] for x in c["latencies"]]
        print(json.dumps({k: v for k, v in run.items() if k != "results"} |
                         {"p50_ms": 1000 * percentile(lat, 50), "p99_ms": 1000 * percentile(lat, 99),
                          "transcripts": sum(len(c["texts"]) for c in run["results"])}))
        return
    runs = {name: run_child(name, args) for name in RUNS}
    if args.save:
        Path(args.save).write_text(json.dumps(runs))
    print(f"{args.calls} concurrent Pipecat pipelines, {args.seconds:g} s of real audio each, paced in real time, "
          f"one process per service, {os.cpu_count()} cores, brisvox Whisper workers "
          f"{args.stt_workers or '1 (shared engine)'}, window {args.window}\n")
    print(f"{'':38}{'BrisvoxSTTService':>20}{'WhisperSTTService':>20}{'ratio':>8}")
    for label, f in [
        ("wall time of the run (s)", lambda r: r["wall_s"]),
        ("CPU per call (% of a core)", lambda r: 100 * r["cpu_s"] / r["calls"] / r["audio_s"]),
        ("memory per call (MiB)", lambda r: (r["peak_rss"] - r["base_rss"]) / r["calls"] / 2**20),
        ("segment end -> transcript p50 (ms)",
         lambda r: 1000 * percentile([x for c in r["results"] for x in c["latencies"]], 50)),
        ("segment end -> transcript p99 (ms)",
         lambda r: 1000 * percentile([x for c in r["results"] for x in c["latencies"]], 99)),
        ("transcripts", lambda r: sum(len(c["texts"]) for c in r["results"])),
    ]:
        b, w = f(runs["brisvox"]), f(runs["faster-whisper"])
        ratio = w / b if b > 0 else float("inf")
        print(f"{label:38}{b:20.1f}{w:20.1f}{ratio:7.1f}x")
    # Word errors of brisvox's transcripts against faster-whisper's, call by call.
    edits = total = 0
    for ours, theirs in zip(runs["brisvox"]["results"], runs["faster-whisper"]["results"]):
        r = words(" ".join(theirs["texts"]))
        edits, total = edits + word_edits(r, words(" ".join(ours["texts"]))), total + len(r)
    print(f"\nbrisvox's transcripts against faster-whisper's: {edits} word errors in {total} words "
          f"(WER {100 * edits / max(total, 1):.2f} %)")
    # Each against the recording's own text, on the calls whose 28 s hold every clip whole.
    reference, calls = whole_clip_reference(args.calls, args.seconds)
    for name, run in runs.items():
        e = sum(word_edits(reference, words(" ".join(run["results"][i]["texts"]))) for i in calls)
        n = len(reference) * len(calls)
        print(f"{name} against the recording's reference text (calls {calls}): {e} word errors in {n} words "
              f"(WER {100 * e / max(n, 1):.2f} %)")


if __name__ == "__main__":
    main()
