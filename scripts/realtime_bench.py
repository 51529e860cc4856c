#!/usr/bin/env python3
"""Concurrent OpenAI Realtime transcription sessions against `brisvox serve` (docs/OPENAI.md), with
the official `openai` client (AsyncOpenAI().realtime.connect(extra_query={"intent": "transcription"})).

Each session names its transcription model (--model: whisper-1, one delta per item; another name,
deltas while the speech goes on) and streams the same recording as 24 kHz PCM in 20 ms
input_audio_buffer.append events at real time (the sessions' starts spread evenly over the
recording's length, as callers' are, rather than all speaking at once), then --silence-s of silence
(a caller listening to the agent's reply: 1.5 s by default), and waits for a completed transcript
per speech_stopped. Reported over every item of every session:
  stop     end of speech (audio_end_ms, on the session's clock) -> input_audio_buffer.speech_stopped
           (the VAD's decision: it waits silence_duration_ms of silence)
  complete end of speech -> conversation.item.input_audio_transcription.completed
  stt      speech_stopped -> completed (the transcription alone)
  delta    (deltas only) start of speech -> the item's first delta
as p50/p99/max in ms; every transcript is checked against the first session's (the same audio must
give the same words under load), the server's /metrics against the audio sent (0 samples lost), and
the server's CPU (from /proc) is reported per session.

  .venv/bin/python scripts/realtime_bench.py --sessions 50 [--brisvox build/release/brisvox]
      [--stt-model tiny.en] [--model whisper-1] [--silence-s 1.5]
      [--audio third_party/audio/sample.wav] [--url http://HOST:PORT (a running server)]
      [--server-args '--stt-threads 2 --stt-window fit']
"""
import argparse
import asyncio
import base64
import os
import re
import sys
import time
import urllib.request
import wave

import numpy as np
import openai
import soxr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_process import Server  # noqa: E402

CHUNK_S = 0.02
TAIL_S = 1.5
REASONS = ["reset", "disconnected", "error", "shutdown", "request_failed", "stream_closed", "model_error"]


def read_audio(path, silence_s):
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            sys.exit(f"{path}: expected 16-bit mono PCM")
        rate = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
    y = soxr.resample(x, rate, 24000) if rate != 24000 else x
    y = np.concatenate([y, np.zeros(int(silence_s * 24000), dtype=np.float32)])
    return np.clip(np.round(y * 32768.0), -32768, 32767).astype("<i2").tobytes()


async def session(client, audio, start_delay, model, out):
    """One session: its items as (audio_end_ms, t_end_of_speech, t_stopped, t_completed, transcript,
    deltas, t_first_delta - t_start_of_speech or None)."""
    await asyncio.sleep(start_delay)
    items, errors, sent = [], [], [0]
    try:
        await run_session(client, audio, model, items, errors, sent)
    except Exception as e:  # a refusal or a close: the session's error
        body = getattr(getattr(e, "response", None), "body", b"") or b""
        errors.append(f"{type(e).__name__}: {e} {body.decode(errors='replace')[:200]}")
    out.append((items, errors, sent[0]))


async def run_session(client, audio, model, items, errors, sent):
    chunk = int(24000 * CHUNK_S) * 2
    stopped, started, deltas, first_delta = {}, {}, {}, {}
    async with client.realtime.connect(extra_query={"intent": "transcription"}) as conn:
        first = await conn.recv()
        assert first.type == "session.created", first
        await conn.session.update(session={"type": "transcription", "audio": {"input": {"transcription": {"model": model}}}})
        t0 = None
        done = asyncio.Event()
        sent_all = False

        async def reader():
            async for event in conn:
                now = time.monotonic()
                if event.type == "input_audio_buffer.speech_started":
                    started[event.item_id] = event.audio_start_ms
                elif event.type == "input_audio_buffer.speech_stopped":
                    stopped[event.item_id] = (event.audio_end_ms, now)
                elif event.type == "conversation.item.input_audio_transcription.delta":
                    deltas.setdefault(event.item_id, []).append(event.delta)
                    if event.item_id not in first_delta and event.item_id in started:
                        first_delta[event.item_id] = now - (t0 + started[event.item_id] / 1000.0)
                elif event.type == "conversation.item.input_audio_transcription.completed":
                    end_ms, t_stop = stopped[event.item_id]
                    items.append((end_ms, t0 + end_ms / 1000.0, t_stop, now, event.transcript,
                                  deltas.get(event.item_id, []), first_delta.get(event.item_id)))
                elif event.type == "error":
                    errors.append(event.error.message)
                if sent_all and len(items) == len(stopped):
                    done.set()

        task = asyncio.create_task(reader())
        t0 = time.monotonic()
        for k, i in enumerate(range(0, len(audio), chunk)):
            delay = t0 + k * CHUNK_S - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await conn.input_audio_buffer.append(audio=base64.b64encode(audio[i:i + chunk]).decode())
            sent[0] += len(audio[i:i + chunk]) // 2
        sent_all = True
        if len(items) == len(stopped):
            done.set()
        try:
            await asyncio.wait_for(done.wait(), 60)
        except asyncio.TimeoutError:
            errors.append(f"timed out: {len(items)} of {len(stopped)} items completed")
        task.cancel()


def metric(url, name, label=None):
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    total = 0
    for line in text.splitlines():
        m = re.match(rf"{name}(\{{[^}}]*\}})? (\S+)$", line)
        if m and (label is None or (m.group(1) and label in m.group(1))):
            total += float(m.group(2))
    return total


def cpu_seconds(pid):
    """utime + stime of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values, q):
    return float(np.percentile(np.array(values) * 1000.0, q)) if values else float("nan")


async def main_async(args):
    audio = read_audio(args.audio, args.silence_s)
    server = None
    url = args.url
    if url is None:
        server = Server(args.brisvox, "--stt-model", args.stt_model, *args.server_args.split())
        url = server.url("")
    try:
        received_before = metric(url, "brisvox_audio_samples_received_total")
        revised_before = metric(url, "brisvox_realtime_deltas_revised_total")
        server_cpu0 = cpu_seconds(server.pid()) if server else None
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=args.key, max_retries=0)
        out = []
        cpu0 = os.times()
        wall0 = time.monotonic()
        spread = len(audio) / 2 / 24000 - TAIL_S if args.spread else 1.0
        await asyncio.gather(*(session(client, audio, i * spread / args.sessions, args.model, out)
                               for i in range(args.sessions)))
        wall = time.monotonic() - wall0
        cpu1 = os.times()
        server_cpu = cpu_seconds(server.pid()) - server_cpu0 if server else None
        await asyncio.sleep(0.5)
        received = metric(url, "brisvox_audio_samples_received_total") - received_before
        rejected = {r: metric(url, "brisvox_audio_samples_rejected_total", f'reason="{r}"') for r in REASONS}
        revised = metric(url, "brisvox_realtime_deltas_revised_total") - revised_before
    finally:
        if server is not None:
            server.kill()
    sent = sum(n for _, _, n in out)
    errors = [e for _, errs, _ in out for e in errs]
    reference = max(([item[4] for item in items] for items, _, _ in out), key=len)
    stop, complete, stt, first_delta = [], [], [], []
    mismatched = n_deltas = concatenating = 0
    for items, _, _ in out:
        if [item[4] for item in items] != reference:
            mismatched += 1
        for end_ms, t_end, t_stop, t_done, transcript, deltas, t_first in items:
            stop.append(t_stop - t_end)
            complete.append(t_done - t_end)
            stt.append(t_done - t_stop)
            n_deltas += len(deltas)
            concatenating += "".join(deltas) == transcript
            if t_first is not None:
                first_delta.append(t_first)
    n_items = sum(len(items) for items, _, _ in out)
    print(f"{args.sessions} sessions ({args.model}) x {len(audio) / 2 / 24000:.1f} s of audio, {n_items} items "
          f"({len(reference)} per session), {wall:.1f} s wall; client CPU "
          f"{(cpu1.user + cpu1.system - cpu0.user - cpu0.system) / wall * 100:.0f} % of a core"
          + (f"; server CPU {server_cpu / wall * 100:.0f} % of a core, "
             f"{server_cpu / wall / args.sessions:.3f} of a core per session" if server_cpu is not None else ""))
    print(f"  deltas: {n_deltas} ({n_deltas / max(n_items, 1):.1f} per item); items whose deltas concatenate to the "
          f"transcript: {concatenating} of {n_items}; revised (metric): {revised:.0f}")
    for name, v in (("stop", stop), ("complete", complete), ("stt", stt), ("delta", first_delta)):
        print(f"  {name:9s} p50 {pct(v, 50):7.0f} ms   p99 {pct(v, 99):7.0f} ms   max {pct(v, 100):7.0f} ms")
    # A session closed after its last transcript leaves its trailing silence unanalysed
    # (stream_closed, disconnected): not a loss. Anything else is.
    lost = sum(v for r, v in rejected.items() if r not in ("stream_closed", "disconnected"))
    print(f"  audio: {sent} samples sent, {received:.0f} received, {lost:.0f} lost; rejected by reason: "
          + ", ".join(f"{r} {v:.0f}" for r, v in rejected.items() if v))
    print(f"  sessions whose transcripts differ from the others': {mismatched}; errors: {len(errors)}")
    for e in sorted(set(errors))[:8]:
        print(f"    {errors.count(e)} x {e}")
    print("  transcripts:", " | ".join(reference))
    ok = not errors and mismatched == 0 and lost == 0 and received == sent and n_items > 0
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--brisvox", default="build/release/brisvox")
    p.add_argument("--audio", default="third_party/audio/sample.wav")
    p.add_argument("--url", help="a running server (default: start one with --stt-model STT_MODEL)")
    p.add_argument("--stt-model", default="tiny.en", help="the started server's --stt-model")
    p.add_argument("--model", default="whisper-1",
                   help="the sessions' transcription model: whisper-1 (one delta per item) or another name (deltas)")
    p.add_argument("--silence-s", type=float, default=TAIL_S,
                   help="silence after the recording (a caller listening): 1.5 s; 20 s makes it 40 %% speech")
    p.add_argument("--key", default="none", help="the server's --token")
    p.add_argument("--server-args", default="", help="more options for the server it starts, e.g. '--stt-threads 2'")
    p.add_argument("--no-spread", dest="spread", action="store_false",
                   help="start every session within the first second (their speech ends at the same moments)")
    args = p.parse_args()
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
