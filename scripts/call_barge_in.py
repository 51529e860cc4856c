#!/usr/bin/python3
"""How fast a barge-in stops a call's reply (docs/PERFORMANCE.md, "Calls"): runs of /v1/call in which
the caller talks over a long reply, timed at the client on loopback.

Each run opens a call, asks for a long reply, and once its audio flows (after a random 0.2-1.0 s)
plays the caller in real time: 0.3 s of the bundled recording's silence, then its second utterance
(from 8.83 s). The server confirms the caller's speech (barge_in_min_ms of voiced frames) and says
so with `interrupted`, whose `at` is where in the caller's audio that happened. Measured, from the
moment the client sent the audio chunk that completed the confirming frame:
  - to the `interrupted` message;
  - to the last audio byte of the reply received (0 when none came after it: the reply's audio is
    paced, at most playout_lead_ms ahead of playback, so often nothing is in flight);
and every run must have no audio of the reply after its `interrupted`.

  scripts/call_barge_in.py --brisvox build/release/brisvox \\
      --voice third_party/models/piper/en_US-joe-medium.onnx --sample third_party/audio/sample.wav \\
      [--runs 60] [--concurrent 4] [--min-ms 400]
Python's standard library and python3-websockets only.
"""
import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
import wave

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_process import Server  # noqa: E402

RATE = 16000
LONG = " ".join(f"This is sentence number {n} of a long reply that goes on for a while." for n in range(1, 13))


async def one_run(port, pcm, min_ms, rng):
    url = f"ws://127.0.0.1:{port}/v1/call?barge_in_min_ms={min_ms}"
    async with websockets.connect(url, max_size=None, open_timeout=10, close_timeout=5) as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        await ws.send(json.dumps({"type": "speak", "text": LONG, "id": "r"}))
        audio_at = []
        state = {"started": asyncio.Event(), "stop": None}

        async def receive():
            async for m in ws:
                now = time.monotonic()
                if isinstance(m, bytes):
                    audio_at.append(now)
                    continue
                j = json.loads(m)
                if j["type"] == "speak_started":
                    state["started"].set()
                elif j["type"] == "interrupted":
                    state["stop"] = (now, j)
                    return
                elif j["type"] in ("speak_done", "error"):
                    raise AssertionError(f"the reply ended without a barge-in: {j}")

        reader = asyncio.ensure_future(receive())
        await asyncio.wait_for(state["started"].wait(), 30)
        await asyncio.sleep(rng.uniform(0.2, 1.0))
        caller = pcm[int(7.4 * RATE) * 2:int(7.7 * RATE) * 2] + pcm[int(8.83 * RATE) * 2:int(11.4 * RATE) * 2]
        step = RATE * 2 // 50  # 20 ms
        sent = []
        t0 = time.monotonic()
        for i in range(0, len(caller), step):
            if reader.done():
                break
            await ws.send(caller[i:i + step])
            sent.append((min(i + step, len(caller)), time.monotonic()))
            await asyncio.sleep(max(0.0, t0 + (i + step) / (RATE * 2) - time.monotonic()))
        await asyncio.wait_for(reader, 10)
        stop_t, stop = state["stop"]
        # Listen a little longer: no audio may follow.
        late = []

        async def drain():
            async for m in ws:
                if isinstance(m, bytes):
                    late.append(m)
        try:
            await asyncio.wait_for(drain(), 0.3)
        except asyncio.TimeoutError:
            pass
        confirmed_bytes = int(round(stop["at"] * RATE)) * 2
        confirmed_t = next(t for b, t in sent if b >= confirmed_bytes)
        last_audio = max((t for t in audio_at if t <= stop_t), default=0.0)
        return {"interrupted_ms": 1000 * (stop_t - confirmed_t), "last_audio_ms": 1000 * max(0.0, last_audio - confirmed_t),
                "late_audio": len(late), "confirm_after_s": stop["at"] - stop["speech_start"], "sent_ms": stop["sent_ms"]}


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]


async def run_all(port, pcm, args):
    rng = random.Random(7)
    results, sem = [], asyncio.Semaphore(args.concurrent)

    async def guarded():
        async with sem:
            results.append(await one_run(port, pcm, args.min_ms, rng))
    await asyncio.gather(*(guarded() for _ in range(args.runs)))
    return results


def cpu_model():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Model name")), "?")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--voice", required=True)
    ap.add_argument("--sample", required=True)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--concurrent", type=int, default=4)
    ap.add_argument("--min-ms", type=int, default=400)
    args = ap.parse_args()
    with wave.open(args.sample, "rb") as w:
        pcm = w.readframes(w.getnframes())
    server = Server(args.brisvox, "--tts-voice", args.voice)
    try:
        t0 = time.monotonic()
        results = asyncio.run(run_all(server.port, pcm, args))
        wall = time.monotonic() - t0
    finally:
        server.kill()
    interrupted = [r["interrupted_ms"] for r in results]
    last = [r["last_audio_ms"] for r in results]
    late = sum(r["late_audio"] for r in results)
    print(f"CPU: {cpu_model()}, {os.cpu_count()} vCPUs; {len(results)} runs, {args.concurrent} at a time, "
          f"barge_in_min_ms {args.min_ms}, {wall:.0f} s")
    for name, v in (("confirming audio sent -> 'interrupted' received", interrupted),
                    ("confirming audio sent -> last reply audio received", last)):
        print(f"  {name}: p50 {percentile(v, 50):.1f} ms, p99 {percentile(v, 99):.1f} ms, max {max(v):.1f} ms")
    conf = [r["confirm_after_s"] for r in results]
    print(f"  confirmation after the speech started: p50 {percentile(conf, 50):.3f} s (voiced frames >= "
          f"{args.min_ms} ms); reply sent before it stopped: p50 {percentile([r['sent_ms'] for r in results], 50):.0f} ms")
    print(f"  audio messages after 'interrupted': {late}")
    return 1 if late else 0


if __name__ == "__main__":
    sys.exit(main())
