#!/usr/bin/env python3
"""N concurrent Pipecat pipelines speaking replies in one process: BrisvoxTTSService against Pipecat's
PiperTTSService (piper-tts), the same Piper voice (en_US-joe-medium).

    PYTHONPATH=<installed brisvox> .venv/bin/python bench/pipecat_tts.py [--calls 20] [--replies 3]

Each call is a real Pipecat pipeline, the TTS service -> Collector, at 16 kHz out. Each speaks
--replies replies one after the other (a TTSSpeakFrame, then the next once the TTSStoppedFrame of
the last has come), the calls starting spread over one second, all on one asyncio loop; then one
long reply, interrupted (InterruptionFrame) once its first audio has come. One child process per
service (memory is not shared between them; piper-tts, GPL, runs only as this test reference):

- first audio: from the TTSSpeakFrame queued to its first TTSAudioRawFrame at the end of the
  pipeline (p50, p99 over every reply of every call);
- CPU per second of speech: the child's CPU time (all threads) over the run, divided by the
  seconds of audio that came out;
- memory per call: (peak RSS during the run - RSS after the imports) / calls (the voices loaded by
  the services are in it: brisvox's one engine amortised, piper-tts's one per pipeline);
- after the interruption: the audio that still came out more than 50 ms after the
  InterruptionFrame, per call (max, ms of audio).
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

REPLIES = [
    "Thanks, I have that. Let me check the calendar for you.",
    "Your table is booked for Monday at seven. We will send a reminder the day before.",
    "Is there anything else I can help you with today?",
]
LONG = "".join(f"This is sentence number {n} of a long reply. " for n in range(1, 13))


def child(service: str, calls: int, replies: int) -> dict:
    from loguru import logger
    from pipecat.frames.frames import (EndFrame, InterruptionFrame, TTSAudioRawFrame, TTSSpeakFrame,
                                       TTSStoppedFrame)
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.runner import PipelineRunner
    from pipecat.pipeline.task import PipelineParams, PipelineTask
    from pipecat.processors.frame_processor import FrameProcessor

    from conftest import PIPER_VOICE

    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    rate = 16000

    class Collector(FrameProcessor):
        def __init__(self):
            super().__init__()
            self.audio: list[tuple[float, int]] = []  # (time, bytes)
            self.stopped = 0

        async def process_frame(self, frame, direction):
            await super().process_frame(frame, direction)
            if isinstance(frame, TTSAudioRawFrame):
                self.audio.append((time.monotonic(), len(frame.audio)))
            elif isinstance(frame, TTSStoppedFrame):
                self.stopped += 1
            await self.push_frame(frame, direction)

    if service == "brisvox":
        from brisvox.pipecat import BrisvoxTTSService

        def make():
            return BrisvoxTTSService(voice=str(PIPER_VOICE))
    else:
        from pipecat.services.piper.tts import PiperTTSService

        def make():
            return PiperTTSService(voice_id=PIPER_VOICE.stem, download_dir=PIPER_VOICE.parent)

    rss = PeakRss()

    async def run_call(i):
        await asyncio.sleep(i / calls)
        collector = Collector()
        task = PipelineTask(Pipeline([make(), collector]), params=PipelineParams(audio_out_sample_rate=rate),
                            enable_rtvi=False, enable_turn_tracking=False, cancel_on_idle_timeout=False)
        first = []
        late_bytes = [0]

        async def drive():
            for k in range(replies):
                heard = len(collector.audio)
                sent = time.monotonic()
                await task.queue_frame(TTSSpeakFrame(REPLIES[k % len(REPLIES)]))
                while len(collector.audio) == heard:
                    await asyncio.sleep(0.002)
                first.append(collector.audio[heard][0] - sent)
                while collector.stopped <= k:
                    await asyncio.sleep(0.01)
            heard = len(collector.audio)
            await task.queue_frame(TTSSpeakFrame(LONG))
            while len(collector.audio) == heard:
                await asyncio.sleep(0.002)
            at = time.monotonic()
            await task.queue_frame(InterruptionFrame())
            await asyncio.sleep(1.5)
            late_bytes[0] = sum(n for t, n in collector.audio[heard:] if t > at + 0.05)
            await task.queue_frame(EndFrame())

        await asyncio.gather(PipelineRunner(handle_sigint=False).run(task), drive())
        return {"first_audio": first, "audio_s": sum(n for _, n in collector.audio) / 2 / rate,
                "late_ms": 1000 * late_bytes[0] / 2 / rate}

    async def run_all():
        return await asyncio.gather(*(run_call(i) for i in range(calls)))

    cpu0, wall0 = cpu_seconds(), time.monotonic()
    results = asyncio.run(run_all())
    cpu, wall = cpu_seconds() - cpu0, time.monotonic() - wall0
    rss.stop()
    return {"service": service, "calls": calls, "wall_s": wall, "cpu_s": cpu, "base_rss": rss.base,
            "peak_rss": rss.peak, "results": results}


RUNS = ("brisvox", "piper-tts")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--replies", type=int, default=3, help="replies per call before the interrupted one")
    p.add_argument("--save", help="write both runs' raw results (JSON) here")
    p.add_argument("--child", choices=RUNS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.calls, args.replies)))
        return
    runs = {}
    for name in RUNS:
        cmd = [sys.executable, __file__, "--child", name, "--calls", str(args.calls), "--replies", str(args.replies)]
        runs[name] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    if args.save:
        Path(args.save).write_text(json.dumps(runs))
    print(f"{args.calls} concurrent Pipecat pipelines, {args.replies} replies each and one interrupted, one process "
          f"per service, {os.cpu_count()} cores\n")
    print(f"{'':40}{'BrisvoxTTSService':>20}{'PiperTTSService':>20}{'ratio':>8}")
    for label, f in [
        ("wall time of the run (s)", lambda r: r["wall_s"]),
        ("first audio p50 (ms)", lambda r: 1000 * percentile([x for c in r["results"] for x in c["first_audio"]], 50)),
        ("first audio p99 (ms)", lambda r: 1000 * percentile([x for c in r["results"] for x in c["first_audio"]], 99)),
        ("CPU per second of speech (s)", lambda r: r["cpu_s"] / sum(c["audio_s"] for c in r["results"])),
        ("memory per call (MiB)", lambda r: (r["peak_rss"] - r["base_rss"]) / r["calls"] / 2**20),
        ("audio after the interruption, max (ms)", lambda r: max(c["late_ms"] for c in r["results"])),
    ]:
        b, w = f(runs["brisvox"]), f(runs["piper-tts"])
        ratio = w / b if b > 0 else float("inf")
        print(f"{label:40}{b:20.3f}{w:20.3f}{ratio:7.1f}x")


if __name__ == "__main__":
    main()
