#!/usr/bin/python3
"""Soak test of `brisvox serve`: loopback only, bounded in time, stops by itself.

Starts the server on a free loopback port, keeps S WebSocket streams busy for T minutes with
real-time-paced audio (third_party/audio/sample.wav in several encodings and rates), and mixes in
what real clients do wrong: clean closes, closes without "close", abrupt TCP resets, reconnects,
flushes and resets, malformed control messages, odd byte counts, oversized messages, NaN audio, and
a few POST /v1/vad requests (some corrupt). With --calls C, C duplex calls (/v1/call) run beside
them: each caller talks in real time (20 ms messages), is answered at each end of its speech, talks
over the answer (barge-in), sometimes marks or cancels, and either hangs up properly or vanishes
(a TCP reset in the middle of a reply or between replies, a close without "close", or it stops
reading while the reply comes and then resets). Every choice comes from --seed.

At the end it asserts that
  - the server stayed alive throughout (and exits with status 0 on SIGTERM),
  - its RSS at the end of the load is within --max-rss-growth of its RSS after the warm-up,
  - all accepted audio is accounted for, exactly, from GET /metrics once every stream is closed:
      brisvox_audio_samples_received_total
        == brisvox_audio_samples_processed_total + sum(brisvox_audio_samples_rejected_total{reason})
    and the server received no more whole samples than the clients sent;
  - each well-behaved call closed with 1000, every 32 ms frame of its audio analysed (its `vad`
    events, without a gap, cover what it sent) and each of its speaks ended exactly once;
  - once the last client is gone, the server holds no more open files than at its start and its
    CPU is back to idle within 20 s.
It prints a JSON summary on stdout and exits 1 if any assertion fails.

  /usr/bin/python3 scripts/soak.py build/release/brisvox --streams 40 --minutes 10 --seed 1
  /usr/bin/python3 scripts/soak.py build/release/brisvox --streams 16 --calls 12 --minutes 10 \
      --server-arg=--tts-voice=third_party/models/piper/en_US-joe-medium.onnx
"""
import argparse
import array
import asyncio
import collections
import io
import json
import os
import random
import shlex
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import wave

import websockets

from serve_process import Server  # scripts/serve_process.py, beside this file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The server's defaults (docs/PROTOCOL.md): a binary message over 1 MiB or a text message over
# 64 KiB ends the session with 1009.
MAX_MESSAGE_BYTES = 1 << 20
MAX_CONTROL_BYTES = 64 << 10

MALFORMED_TEXT = [
    "{not json",
    '{"type":"pause"}',
    '{"type":42}',
    '["flush"]',
    '"close"',
    "{}",
    "",
    '{"type":"flush"',
]

# Error codes the soak provokes on purpose; any other code an error event carries is reported.
EXPECTED_ERRORS = {"bad_control", "message_too_large", "bad_audio"}


# --- the server's HTTP side ----------------------------------------------------------------

def http_get(port, path, timeout=10):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read().decode()


def http_post(port, path, body, timeout=60):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def parse_metrics(text):
    """{"name{labels}": int}; the accounting counters are integers."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        key, _, value = line.rpartition(" ")
        try:
            out[key] = int(value)
        except ValueError:
            out[key] = float(value)
    return out


def accounting(metrics):
    rejected = {k[k.index('"') + 1:-2]: v for k, v in metrics.items()
                if k.startswith("brisvox_audio_samples_rejected_total{")}
    received = metrics.get("brisvox_audio_samples_received_total")
    processed = metrics.get("brisvox_audio_samples_processed_total")
    return {"received": received, "processed": processed, "rejected": sum(rejected.values()),
            "rejected_by_reason": rejected,
            "balanced": received is not None and processed is not None and received == processed + sum(rejected.values()),
            "sessions_active": metrics.get("brisvox_websocket_sessions_active"),
            "calls_active": metrics.get("brisvox_call_sessions"),
            "engine_streams_active": metrics.get("brisvox_active_streams")}


# --- audio -----------------------------------------------------------------------------------

class Variant:
    """One way of sending the sample: its query, bytes per sample, rate and the whole PCM."""

    def __init__(self, name, query, bytes_per_sample, rate, pcm):
        self.name, self.query, self.bytes_per_sample, self.rate, self.pcm = name, query, bytes_per_sample, rate, pcm


def load_variants(path):
    with wave.open(path) as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise SystemExit(f"{path}: expected mono 16-bit PCM")
        rate = w.getframerate()
        s16 = array.array("h", w.readframes(w.getnframes()))
    if sys.byteorder != "little":
        s16.byteswap()
    f32 = array.array("f", (x / 32768.0 for x in s16))
    half = array.array("h", s16[::2])                           # 8 kHz: runs natively at 8 kHz
    triple = array.array("h", (x for x in s16 for _ in range(3)))  # 48 kHz: resampled by the engine
    return [
        Variant("s16_16k", f"sample_rate={rate}&encoding=pcm_s16le", 2, rate, s16.tobytes()),
        Variant("f32_16k", f"sample_rate={rate}&encoding=pcm_f32le", 4, rate, f32.tobytes()),
        Variant("s16_8k", f"sample_rate={rate // 2}&encoding=pcm_s16le", 2, rate // 2, half.tobytes()),
        Variant("s16_48k", f"sample_rate={rate * 3}&encoding=pcm_s16le", 2, rate * 3, triple.tobytes()),
    ]


def wav_bytes(pcm, rate):
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return buf.getvalue()


# --- load --------------------------------------------------------------------------------------

class Tally:
    def __init__(self):
        self.c = collections.Counter()
        self.errors = collections.Counter()
        self.max_sent_samples = 0  # whole samples the server could have decoded: an upper bound on received

    def add(self, key, n=1):
        self.c[key] += n


async def read_all(ws, tally):
    try:
        async for message in ws:
            if isinstance(message, str):
                m = json.loads(message)
                tally.add("events_received")
                if m.get("type") == "error":
                    tally.errors[m.get("code")] += 1
    except websockets.ConnectionClosed:
        pass


def abort_tcp(ws):
    """An abrupt end: SO_LINGER 0 makes the close send a TCP RST, as a crashed client would."""
    sock = ws.transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass  # the connection has just ended (EBADF: its socket is closed): nothing to abort
    ws.transport.abort()


async def open_session(url, tally, what):
    """A WebSocket session past its `ready`, or None after a refusal (counted as `what`, e.g.
    "connect": connect_failed and the error "connect: InvalidStatusCode 503") and a pause."""
    try:
        ws = await websockets.connect(url, max_size=None, open_timeout=15, close_timeout=10, ping_interval=None,
                                      compression=None)
    except (websockets.InvalidStatusCode, OSError, asyncio.TimeoutError) as e:
        tally.add(what.replace(" ", "_") + "_failed")
        tally.errors[f"{what}: {type(e).__name__} {getattr(e, 'status_code', '')}".strip()] += 1
        await asyncio.sleep(1)
        return None
    ready = json.loads(await ws.recv())
    assert ready["type"] == "ready", ready
    return ws


async def one_session(port, variants, rng, tally, deadline):
    v = rng.choice(variants)
    query = v.query + ("&events=vad" if rng.random() < 0.3 else "")
    ws = await open_session(f"ws://127.0.0.1:{port}/v1/stream?{query}", tally, "connect")
    if ws is None:
        return
    tally.add("sessions_opened")
    reader = asyncio.create_task(read_all(ws, tally))
    bps = v.bytes_per_sample
    end = rng.choices(["close", "client_close", "tcp_abort", "oversized", "bad_audio"], [50, 20, 20, 6, 4])[0]
    session_s = rng.uniform(2, 40)
    pos = rng.randrange(len(v.pcm) // bps) * bps
    sent_bytes = 0  # audio bytes since the last reset: whole samples the server may decode
    sent_s = 0.0
    next_send = time.monotonic()
    try:
        while sent_s < session_s and time.monotonic() < deadline:
            chunk_ms = rng.choice([20, 40, 60, 100])
            n = v.rate * chunk_ms // 1000 * bps
            chunk = v.pcm[pos:pos + n]
            if len(chunk) < n:
                chunk += v.pcm[:n - len(chunk)]
            pos = (pos + n) % len(v.pcm)
            r = rng.random()
            if r < 0.03:
                # An odd byte count: the chunk in two messages split inside a sample, which the
                # server must reassemble (the audio stays aligned).
                cut = rng.randrange(1, n // bps) * bps - rng.randrange(1, bps)
                await ws.send(chunk[:cut])
                await ws.send(chunk[cut:])
                tally.add("odd_byte_messages", 2)
                tally.add("messages_sent")
            else:
                await ws.send(chunk)
            sent_bytes += n
            sent_s += chunk_ms / 1000
            tally.add("messages_sent")
            tally.add("audio_ms_sent", chunk_ms)
            r = rng.random()
            if r < 0.012:
                await ws.send(rng.choice(MALFORMED_TEXT))
                tally.add("malformed_text")
            elif r < 0.017:
                await ws.send('{"type":"flush"}')
                tally.add("flushes")
            elif r < 0.021:
                await ws.send('{"type":"reset"}')
                tally.max_sent_samples += sent_bytes // bps  # a reset drops a partial sample
                sent_bytes = 0
                tally.add("resets")
            next_send += chunk_ms / 1000
            await asyncio.sleep(max(0.0, next_send - time.monotonic()))
        tally.max_sent_samples += sent_bytes // bps
        sent_bytes = 0
        if end == "bad_audio" and bps != 4:
            end = "oversized"
        tally.add(f"end_{end}")
        if end == "close":
            await ws.send('{"type":"close"}')
            await asyncio.wait_for(reader, 60)
            tally.add("clean_close_code_1000" if ws.close_code == 1000 else "clean_close_other_code")
        elif end == "client_close":
            await ws.close()
        elif end == "tcp_abort":
            abort_tcp(ws)
        elif end == "oversized":
            if rng.random() < 0.5:
                await ws.send(bytes(MAX_MESSAGE_BYTES + 2))
                tally.max_sent_samples += (MAX_MESSAGE_BYTES + 2) // bps  # the server decodes what it read so far
            else:
                await ws.send("{" + " " * MAX_CONTROL_BYTES + "}")
            await asyncio.wait_for(reader, 60)
            tally.add("oversized_closed_1009" if ws.close_code == 1009 else "oversized_other_code")
        elif end == "bad_audio":
            await ws.send(struct.pack("<4f", 0.0, float("nan"), 0.0, 0.0))
            tally.max_sent_samples += 4
            await asyncio.wait_for(reader, 60)
            tally.add("bad_audio_closed_1007" if ws.close_code == 1007 else "bad_audio_other_code")
    except (websockets.ConnectionClosed, asyncio.TimeoutError, OSError) as e:
        tally.max_sent_samples += sent_bytes // bps
        tally.add("session_broken")
        tally.errors[f"client: {type(e).__name__}"] += 1
    finally:
        if not reader.done():
            abort_tcp(ws)
            reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


# --- duplex calls (/v1/call) --------------------------------------------------------------

REPLIES = [
    "Thank you, I heard that.",
    "Let me read that back to you. Your order number is four two seven, and it ships on Monday morning.",
    "I see. Could you tell me a little more about what happened, and when it started?",
    " ".join(f"This is sentence number {n} of a longer answer that takes a while to say." for n in range(1, 7)),
]

# Ways a call ends. `good` is the well-behaved caller, checked call by call: close 1000, every frame
# of its audio analysed (its `vad` events cover the audio sent, without a gap), every speak ended
# exactly once. The others vanish at random points, mostly while a reply is being spoken.
CALL_ENDS = ["good", "abort_in_reply", "abort", "close_without_close", "stops_reading"]
CALL_END_WEIGHTS = [40, 25, 10, 10, 15]


class CallCheck:
    """What one call's messages say: the `vad` frames' times, the speaks' outcomes, the errors."""

    def __init__(self, frame_s):
        self.frame_s = frame_s
        self.vad_frames = 0
        self.gaps = 0
        self.sent = set()
        self.started = set()
        self.ended = collections.Counter()  # id -> terminal messages (speak_done, interrupted, error)
        self.interrupted_after_done = 0
        self.interrupted = 0
        self.done = set()
        self.errors = collections.Counter()
        self.audio_bytes = 0
        self.in_reply = asyncio.Event()
        self.speech_ends = asyncio.Queue()

    def take(self, message):
        if isinstance(message, bytes):
            self.audio_bytes += len(message)
            return
        m = json.loads(message)
        kind = m.get("type")
        if kind == "vad":
            if abs(m["t"] - self.vad_frames * self.frame_s) > 1e-3:
                self.gaps += 1
            self.vad_frames += 1
        elif kind == "speech_end":
            self.speech_ends.put_nowait(m)
        elif kind == "speak_started":
            self.started.add(m["id"])
            self.in_reply.set()
        elif kind == "speak_done":
            self.done.add(m["id"])
            self.ended[m["id"]] += 1
            self.in_reply.clear()
        elif kind == "interrupted":
            self.interrupted += 1
            if m["id"] in self.done:
                self.interrupted_after_done += 1  # a barge-in names the speak being heard
            else:
                self.ended[m["id"]] += 1
            self.in_reply.clear()
        elif kind == "error":
            self.errors[m.get("code")] += 1
            if "id" in m:
                self.ended[m["id"]] += 1


async def one_call(port, variants, rng, tally, deadline):
    v = rng.choice(variants[:1] + variants[2:3])  # 16 kHz and 8 kHz s16: the call speaks at either rate
    end = rng.choices(CALL_ENDS, CALL_END_WEIGHTS)[0]
    url = f"ws://127.0.0.1:{port}/v1/call?{v.query}&events=vad&barge_in_min_ms={rng.choice([200, 400])}"
    ws = await open_session(url, tally, "call connect")
    if ws is None:
        return
    tally.add("calls_opened")
    check = CallCheck(512 / 16000)  # the VAD's 32 ms frame, at 8 kHz too
    stop_reading = asyncio.Event()

    async def receive():
        try:
            async for message in ws:
                check.take(message)
                if stop_reading.is_set():
                    ws.transport.pause_reading()  # the socket fills; the server must not wait on it
                    await asyncio.sleep(3600)
        except websockets.ConnectionClosed:
            pass

    async def replier():
        n = 0
        while True:
            await check.speech_ends.get()
            n += 1
            check.sent.add(f"r{n}")
            await ws.send(json.dumps({"type": "speak", "text": rng.choice(REPLIES), "id": f"r{n}"}))
            tally.add("call_speaks_sent")
            r = rng.random()
            if r < 0.2:
                await ws.send(json.dumps({"type": "mark", "name": f"after-r{n}"}))
            elif r < 0.3:
                await asyncio.sleep(rng.uniform(0.2, 1.5))
                await ws.send('{"type":"cancel"}')
                tally.add("call_cancels")

    reader = asyncio.create_task(receive())
    speaker = asyncio.create_task(replier())
    samples = 0
    call_s = rng.uniform(8, 45)
    pos = rng.randrange(len(v.pcm) // 2) * 2
    sent_s = 0.0
    next_send = time.monotonic()
    vanish_at = rng.uniform(1, call_s)
    vanished = False
    counted = False
    try:
        while sent_s < call_s and time.monotonic() < deadline:
            n = v.rate // 50 * 2  # 20 ms, as a telephony peer sends
            chunk = v.pcm[pos:pos + n]
            if len(chunk) < n:
                chunk += v.pcm[:n - len(chunk)]
            pos = (pos + n) % len(v.pcm)
            await ws.send(chunk)
            samples += n // 2
            sent_s += 0.02
            tally.add("call_audio_ms_sent", 20)
            if end != "good" and sent_s >= vanish_at and (end != "abort_in_reply" or check.in_reply.is_set()
                                                           or sent_s >= call_s - 0.1):
                vanished = True
                break
            next_send += 0.02
            await asyncio.sleep(max(0.0, next_send - time.monotonic()))
        tally.max_sent_samples += samples
        counted = True
        if not vanished and end != "good":
            vanished = True  # the deadline came first: vanish now
        tally.add(f"call_end_{end}")
        if end == "good":
            speaker.cancel()  # nothing is said after the hang-up
            await asyncio.gather(speaker, return_exceptions=True)
            await ws.send('{"type":"close"}')
            await asyncio.wait_for(reader, 90)
            expected = samples / (v.rate * check.frame_s)  # frames of the audio sent, the last one padded
            problems = []
            if ws.close_code != 1000:
                problems.append(f"close code {ws.close_code}")
            if check.gaps or not (int(expected) <= check.vad_frames <= int(expected) + 1):
                problems.append(f"{check.vad_frames} vad frames for {expected:.1f} sent, {check.gaps} gaps")
            if any(n != 1 for n in check.ended.values()) or set(check.ended) != check.sent:
                problems.append(f"speaks ended {dict(check.ended)}, sent {sorted(check.sent)}")
            if check.errors:
                problems.append(f"errors {dict(check.errors)}")
            if problems:
                tally.add("good_calls_failed")
                tally.errors["good call: " + "; ".join(problems)[:300]] += 1
            else:
                tally.add("good_calls_passed")
            tally.add("good_call_frames", check.vad_frames)
        elif end in ("abort_in_reply", "abort"):
            tally.add("call_vanished_in_reply" if check.in_reply.is_set() else "call_vanished_between_replies")
            abort_tcp(ws)
        elif end == "close_without_close":
            await ws.close()
        elif end == "stops_reading":
            stop_reading.set()
            # Keep talking without reading for a few seconds, then vanish.
            for _ in range(rng.randrange(50, 250)):
                await ws.send(v.pcm[:v.rate // 50 * 2])
                tally.max_sent_samples += v.rate // 50
                await asyncio.sleep(0.02)
            abort_tcp(ws)
        tally.add("call_speaks_started", len(check.started))
        tally.add("call_speaks_interrupted", check.interrupted)
    except (websockets.ConnectionClosed, asyncio.TimeoutError, OSError) as e:
        if not counted:
            tally.max_sent_samples += samples
        tally.add("call_broken")
        tally.errors[f"call client ({end}): {type(e).__name__}"] += 1
    finally:
        speaker.cancel()
        if not reader.done():
            abort_tcp(ws)
            reader.cancel()
        await asyncio.gather(reader, speaker, return_exceptions=True)


async def call_slot(port, variants, rng, tally, deadline):
    while time.monotonic() < deadline:
        await one_call(port, variants, rng, tally, deadline)
        await asyncio.sleep(rng.uniform(0, 1.0))


async def stream_slot(port, variants, rng, tally, deadline):
    while time.monotonic() < deadline:
        await one_session(port, variants, rng, tally, deadline)
        await asyncio.sleep(rng.uniform(0, 1.0))  # reconnect after a moment
        tally.add("reconnects")


async def poster(port, variants, rng, tally, deadline):
    """A POST /v1/vad every few seconds: 1 to 4 s of WAV, or a corrupt body."""
    v = variants[0]
    while time.monotonic() < deadline:
        await asyncio.sleep(rng.uniform(3, 8))
        n = rng.randrange(v.rate, 4 * v.rate)
        start = rng.randrange(len(v.pcm) // 2 - n) * 2
        pcm = v.pcm[start:start + 2 * n]
        corrupt = rng.random() < 0.25
        body = b"RIFF\x00\x00garbage" + pcm[:100] if corrupt else wav_bytes(pcm, v.rate)
        status = await asyncio.to_thread(http_post, port, "/v1/vad", body)
        tally.add(f"post_{'corrupt' if corrupt else 'wav'}_{status}")
        if not corrupt:
            tally.max_sent_samples += n


async def watch(server, tally, rss, start, deadline, interval):
    """RSS every `interval` seconds; the server must stay alive."""
    while time.monotonic() < deadline:
        if not server.alive():
            tally.add("server_died")
            return
        rss.append((time.monotonic() - start, server.rss_bytes()))
        await asyncio.sleep(interval)


async def warm_speech(port, calls):
    """Before the load: `calls` calls say every reply at once, as fast as it is made (at both of the
    soak's rates), so that the voice's ONNX Runtime arenas reach the size the largest batch of the
    longest sentences needs. They keep it (docs/PERFORMANCE.md, "ONNX Runtime's CPU arena"), so the
    RSS baseline is taken once they are there, and growth after it is the server's own."""
    async def one(rate):
        url = f"ws://127.0.0.1:{port}/v1/call?sample_rate={rate}&encoding=pcm_s16le&playout_lead_ms=0"
        async with websockets.connect(url, max_size=None, open_timeout=30, ping_interval=None) as ws:
            await ws.recv()  # ready
            for n, text in enumerate(REPLIES):
                await ws.send(json.dumps({"type": "speak", "text": text, "id": n}))
            ended = 0
            async for m in ws:
                if isinstance(m, str) and json.loads(m)["type"] in ("speak_done", "error", "interrupted"):
                    ended += 1
                    if ended == len(REPLIES):
                        break
            await ws.send('{"type":"close"}')
            async for _ in ws:
                pass

    await asyncio.wait_for(asyncio.gather(*(one(16000 if k % 2 == 0 else 8000) for k in range(calls))), 300)


async def run_load(server, variants, args):
    rng = random.Random(args.seed)
    tally = Tally()
    rss = []
    if args.calls:
        await warm_speech(server.port, args.calls)
    start = time.monotonic()
    deadline = start + args.minutes * 60
    tasks = [asyncio.create_task(stream_slot(server.port, variants, random.Random(rng.random()), tally, deadline))
             for _ in range(args.streams)]
    tasks += [asyncio.create_task(call_slot(server.port, variants, random.Random(rng.random()), tally, deadline))
              for _ in range(args.calls)]
    tasks.append(asyncio.create_task(poster(server.port, variants, random.Random(rng.random()), tally, deadline)))
    watcher = asyncio.create_task(watch(server, tally, rss, start, deadline, args.rss_interval_s))
    await watcher
    # Sessions still running end now (each in its own way); none may hang.
    done, pending = await asyncio.wait(tasks, timeout=90)
    for t in pending:
        t.cancel()
        tally.add("hung_sessions")
    for t in done:
        if t.exception() is not None:
            tally.add("client_exceptions")
            tally.errors[f"client exception: {t.exception()!r}"[:200]] += 1
    return tally, rss, time.monotonic() - start


def settled_accounting(port, timeout_s=20):
    """The counters once every stream is closed and retired by its worker."""
    deadline = time.monotonic() + timeout_s
    while True:
        a = accounting(parse_metrics(http_get(port, "/metrics")))
        quiet = a["sessions_active"] == 0 and a["engine_streams_active"] == 0 and not a["calls_active"]
        if (quiet and a["balanced"]) or time.monotonic() > deadline:
            a["settled"] = quiet
            return a
        time.sleep(0.2)


def open_fds(pid):
    """{fd: what it is} of the server process."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass  # closed meanwhile
    return out


def cpu_ticks(pid):
    """utime + stime of the whole process, in clock ticks (proc(5))."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def seconds_to_idle(pid, limit_s=20, window_s=1.0, idle_share=0.02):
    """Seconds from now until a `window_s` window in which the server used under `idle_share` of a
    core; None if that did not happen within `limit_s`."""
    hz = os.sysconf("SC_CLK_TCK")
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        t0, c0 = time.monotonic(), cpu_ticks(pid)
        time.sleep(window_s)
        if (cpu_ticks(pid) - c0) / hz / (time.monotonic() - t0) < idle_share:
            return round(t0 - start, 1)
    return None


def rss_window(rss, lo, hi):
    """The median RSS of the samples in [lo, hi] of the *sampled* span (fractions). The span is that
    of the samples, not the run's duration: the run also waits (up to 90 s) for the last sessions
    to end after the sampling stopped, and fractions of that longer time could leave the end
    window with no sample at all ("too few RSS samples" on a slow first run). A window that holds
    no sample takes the one nearest its middle, so any two or more samples give both values."""
    if len(rss) < 2:
        return None
    t0, t1 = rss[0][0], rss[-1][0]
    span = max(t1 - t0, 1e-9)
    values = [b for t, b in rss if lo <= (t - t0) / span <= hi]
    if not values:
        mid = t0 + (lo + hi) / 2 * span
        values = [min(rss, key=lambda s: abs(s[0] - mid))[1]]
    return int(statistics.median(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("brisvox", nargs="?", default=os.path.join(ROOT, "build/release/brisvox"))
    ap.add_argument("--sample", default=os.path.join(ROOT, "third_party/audio/sample.wav"))
    ap.add_argument("--streams", type=int, default=40, help="concurrent WebSocket streams (default 40)")
    ap.add_argument("--minutes", type=float, default=5, help="length of the load (fractions allowed)")
    ap.add_argument("--calls", type=int, default=0,
                    help="concurrent duplex calls (/v1/call; needs --server-arg=--tts-voice=VOICE): callers who "
                         "are answered at each speech end, talk over the reply, and often vanish in it")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rss-interval-s", type=float, default=2.0)
    ap.add_argument("--warmup", type=float, default=0.2, help="fraction of the run before the RSS baseline")
    ap.add_argument("--max-rss-growth", type=float, default=0.05)
    ap.add_argument("--server-arg", action="append", default=[], help="extra `brisvox serve` argument (repeatable)")
    ap.add_argument("--server-prefix", default="",
                    help="command the server runs under, e.g. 'heaptrack -o /tmp/soak' (shell-quoted; RSS and "
                         "SIGTERM go to the brisvox process itself)")
    ap.add_argument("--stop-signal", default="TERM", choices=["TERM", "KILL"],
                    help="how the server is stopped after the load; KILL leaves a heap profiler with what was "
                         "still allocated once every stream had closed (the exit status is then not checked)")
    args = ap.parse_args()

    variants = load_variants(args.sample)
    server = Server(args.brisvox, *args.server_arg, prefix=shlex.split(args.server_prefix), keep_lines=200)
    failures = []
    summary = {"streams": args.streams, "calls": args.calls, "minutes": args.minutes, "seed": args.seed}
    try:
        fds_at_start = open_fds(server.pid())
        tally, rss, duration = asyncio.run(run_load(server, variants, args))
        summary["duration_s"] = round(duration, 1)
        summary["streams_opened"] = tally.c["sessions_opened"]
        summary["messages_sent"] = tally.c["messages_sent"]
        summary["counts"] = dict(sorted(tally.c.items()))
        summary["audio_s_sent"] = round(tally.c["audio_ms_sent"] / 1000, 1)
        summary["malformed_sent"] = (tally.c["malformed_text"] + tally.c["odd_byte_messages"] + tally.c["end_oversized"]
                                     + tally.c["end_bad_audio"])
        summary["disconnects"] = {k: tally.c[f"end_{k}"] for k in ("close", "client_close", "tcp_abort", "oversized",
                                                                  "bad_audio")}
        summary["error_events"] = dict(tally.errors)
        if not server.alive() or tally.c["server_died"]:
            failures.append(f"the server died (status {server.proc.poll()})")
        else:
            # The baseline once warmed up: the median over the window after the warm-up; the end:
            # the median over the last 10 % of the load.
            base = rss_window(rss, args.warmup, args.warmup + 0.1)
            end = rss_window(rss, 0.9, 1.0)
            growth = (end / base - 1) if base and end else None
            summary["rss"] = {"samples": len(rss), "after_warmup_bytes": base, "end_bytes": end,
                              "max_bytes": max(b for _, b in rss), "growth": None if growth is None else round(growth, 4),
                              "series": " ".join(f"{t:.0f}s:{b / 2**20:.1f}MiB"
                                                 for t, b in rss[:: max(1, len(rss) // 30)])}
            if growth is None:
                failures.append("too few RSS samples for a baseline (run longer or sample more often)")
            elif growth >= args.max_rss_growth:
                failures.append(f"RSS grew {growth:.1%} after the warm-up (limit {args.max_rss_growth:.0%})")
            a = settled_accounting(server.port)
            a["max_received_possible"] = tally.max_sent_samples
            summary["accounting"] = a
            if not a["settled"]:
                failures.append(f"streams still open after the load: {a['sessions_active']} sessions, "
                                f"{a['engine_streams_active']} engine streams")
            if not a["balanced"]:
                failures.append(f"accounting: received {a['received']} != processed {a['processed']} + rejected "
                                f"{a['rejected']} (difference {a['received'] - a['processed'] - a['rejected']})")
            if a["received"] > tally.max_sent_samples:
                failures.append(f"the server received {a['received']} samples, more than the {tally.max_sent_samples} sent")
            if a["received"] == 0 or a["processed"] == 0:
                failures.append("no audio was processed")
            if args.calls:
                c = tally.c
                summary["calls_summary"] = {
                    "opened": c["calls_opened"], "good_passed": c["good_calls_passed"],
                    "good_failed": c["good_calls_failed"], "good_frames_checked": c["good_call_frames"],
                    "vanished_in_reply": c["call_vanished_in_reply"],
                    "vanished_between_replies": c["call_vanished_between_replies"],
                    "closed_without_close": c["call_end_close_without_close"],
                    "stopped_reading": c["call_end_stops_reading"], "speaks_sent": c["call_speaks_sent"],
                    "speaks_started": c["call_speaks_started"], "interrupted": c["call_speaks_interrupted"],
                    "broken": c["call_broken"]}
                if c["good_calls_failed"]:
                    failures.append(f"{c['good_calls_failed']} well-behaved calls lost audio or messages")
                if not c["good_calls_passed"]:
                    failures.append("no well-behaved call completed")
            idle_after = seconds_to_idle(server.pid())
            fds_end = open_fds(server.pid())
            summary["fds"] = {"at_start": len(fds_at_start), "after_load": len(fds_end)}
            summary["seconds_to_idle_cpu"] = idle_after
            if len(fds_end) > len(fds_at_start):
                extra = sorted(v for v in fds_end.values() if v not in fds_at_start.values())
                failures.append(f"{len(fds_end) - len(fds_at_start)} more open files after the load than at the "
                                f"start: {extra[:10]}")
            if idle_after is None:
                failures.append("the server's CPU did not go back to idle within 20 s of the last client")
            for key in ("hung_sessions", "client_exceptions"):
                if tally.c[key]:
                    failures.append(f"{tally.c[key]} {key.replace('_', ' ')}")
            unexpected = {k: n for k, n in tally.errors.items() if k not in EXPECTED_ERRORS}
            if "internal" in unexpected:
                failures.append(f"internal errors: {unexpected['internal']}")
            server.terminate(signal.SIGKILL if args.stop_signal == "KILL" else signal.SIGTERM)
            try:
                code = server.proc.wait(120 if server.wrapped else 30)
            except subprocess.TimeoutExpired:
                code = "timeout"
            summary["exit_status"] = code
            if code != 0 and args.stop_signal == "TERM":
                failures.append(f"the server exited with {code} on SIGTERM")
    finally:
        server.kill()
    summary["failures"] = failures
    summary["result"] = "pass" if not failures else "FAIL"
    if failures:
        summary["server_log_tail"] = list(server.lines)[-30:]
    print(json.dumps(summary, indent=2))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
