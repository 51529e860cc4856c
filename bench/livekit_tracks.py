"""N LiveKit audio tracks in one process: brisvox.livekit.VAD against livekit-plugins-silero's VAD,
each in a child process of its own, the tracks fed as fast as the VAD takes them (docs/PYTHON.md).

    PYTHONPATH=build/python/site:third_party/onnxruntime-python \\
        .venv/bin/python bench/livekit_tracks.py --tracks 100 --seconds 20 --realtime

Every track is third_party/audio/sample.wav (16 kHz) from another offset, pushed in 10 ms
rtc.AudioFrames (paced in real time with --realtime, as a track delivers them; else as fast as the
VAD takes them), all tracks on one asyncio loop, one VAD object for all of them (as a LiveKit
worker's prewarm shares it). Reported per VAD: CPU seconds of the process (every thread) per
second of track audio, wall time, and peak RSS growth over the run per track.
"""

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def rss_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(kind: str, tracks: int, seconds: float, realtime: bool, gather_us: "int | None") -> dict:
    from livekit import rtc

    with wave.open(str(ROOT / "third_party/audio/sample.wav"), "rb") as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    if kind == "brisvox":
        import brisvox
        import brisvox.livekit
        engine = None if gather_us is None else brisvox.Engine(vad_gather_wait_us=gather_us)
        vad = brisvox.livekit.VAD.load(engine=engine)
    else:
        from livekit.plugins import silero
        vad = silero.VAD.load()
    rate, step = 16000, 160
    n = int(seconds * rate) // step * step
    base_rss = rss_mib()

    async def track(k: int) -> int:
        start = (k * 7919 * step) % (len(audio) - n)
        clip = audio[start:start + n]
        stream = vad.stream()
        events = 0

        async def read():
            nonlocal events
            async for _ in stream:
                events += 1

        reader = asyncio.create_task(read())
        t_start = time.monotonic() + 0.01 * k / tracks  # the tracks' frames spread over one frame
        for f, i in enumerate(range(0, n, step)):
            if realtime:
                delay = t_start + f * step / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            stream.push_frame(rtc.AudioFrame(data=clip[i:i + step].tobytes(), sample_rate=rate, num_channels=1,
                                             samples_per_channel=step))
            if not realtime and i % (10 * step) == 0:
                await asyncio.sleep(0)
        stream.end_input()
        await reader
        await stream.aclose()
        return events

    async def run():
        return await asyncio.gather(*(track(k) for k in range(tracks)))

    cpu0, t0 = time.process_time(), time.monotonic()
    events = asyncio.run(run())
    wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"vad": kind, "tracks": tracks, "audio_s": tracks * n / rate, "wall_s": wall, "cpu_s": cpu,
            "cpu_s_per_audio_s": cpu / (tracks * n / rate), "events": sum(events),
            "rss_growth_mib_per_track": max(0.0, peak - base_rss) / tracks}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tracks", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--realtime", action="store_true", help="pace every track's frames in real time")
    ap.add_argument("--gather-us", type=int, help="brisvox: an engine of its own with this vad_gather_wait_us")
    ap.add_argument("--child", choices=["brisvox", "silero"])
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.tracks, a.seconds, a.realtime, a.gather_us)))
        return 0
    results = {}
    for kind in ("brisvox", "silero"):
        cmd = [sys.executable, __file__, "--child", kind, "--tracks", str(a.tracks), "--seconds", str(a.seconds)]
        cmd += ["--realtime"] if a.realtime else []
        cmd += [] if a.gather_us is None else ["--gather-us", str(a.gather_us)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        results[kind] = json.loads(out.stdout.strip().splitlines()[-1])
        print(json.dumps(results[kind]))
    b, s = results["brisvox"], results["silero"]
    print(f"CPU per second of audio: silero / brisvox = {s['cpu_s_per_audio_s'] / b['cpu_s_per_audio_s']:.2f}x; "
          f"wall: {s['wall_s'] / b['wall_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
