#!/usr/bin/python3
"""End-to-end tests of calls on `brisvox serve` (docs/PROTOCOL.md, "Calls"), on loopback only, with
the real models: Silero, Smart Turn v3.2, Whisper tiny.en, the Piper voice. The caller is the
bundled sample recording (speech at 0.32-6.91, 8.83-11.49, 12.19-17.12 s; silence between).

- a duplex call: the caller's turn ends and its transcript arrives, the reply spoken back is paced
  and transcribes to its own text (brisvox's Whisper, WER <= 5 %), and its mark comes after it;
- barge-in: the caller's next utterance, played in real time over a long reply, stops it: an
  `interrupted` with the reply's id, `reason` barge_in and what was sent; no audio of it after;
- a backchannel shorter than barge_in_min_ms does not interrupt; a cancel does;
- an 8 kHz mu-law call hears and speaks mu-law;
- bad input: malformed and unknown messages, bad speaks (empty, too long, control characters,
  1000 queued), a cancel storm, audio after close, an oversized message, bad upgrades; the
  server goes on, and calls, streams and speech sessions are back to 0 in /metrics.

  /usr/bin/python3 tests/server/test_call_server.py --brisvox build/release/brisvox \\
      --voice third_party/models/piper/en_US-joe-medium.onnx --sample third_party/audio/sample.wav
"""
import argparse
import asyncio
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import wave

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server, parse_metrics, run_tests  # noqa: E402

TOKEN = "call-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REPLY = ("Sure, I can help with that. Your appointment is confirmed for Monday afternoon, "
         "and we will send you a reminder the day before.")
LONG = " ".join(f"This is sentence number {n} of a long reply that goes on." for n in range(1, 13))
RATE = 16000


class Context:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        with wave.open(args.sample, "rb") as w:
            assert w.getframerate() == RATE and w.getsampwidth() == 2 and w.getnchannels() == 1
            self.pcm = w.readframes(w.getnframes())  # s16le, 2 bytes a sample
        self.server = None
        self.bare = None

    def clip(self, begin_s, end_s):
        return self.pcm[int(begin_s * RATE) * 2:int(end_s * RATE) * 2]


def metrics(server):
    return parse_metrics(urllib.request.urlopen(server.url("/metrics"), timeout=10).read().decode())


async def connect(server, query="", headers=None):
    """A call, and its ready message. A 503 (the engine's admission control, which a machine busy
    with other tests' servers can trip for a moment) is retried as its Retry-After says, for 20 s,
    as a client does."""
    url = f"ws://127.0.0.1:{server.port}/v1/call{'?' + query if query else ''}"
    deadline = time.monotonic() + 20
    while True:
        try:
            ws = await websockets.connect(url, extra_headers=AUTH if headers is None else headers, max_size=None,
                                          open_timeout=10, close_timeout=10)
            break
        except websockets.exceptions.InvalidStatusCode as e:
            if e.status_code != 503 or time.monotonic() > deadline:
                raise
            await asyncio.sleep(float(e.headers.get("Retry-After", "1")))
    ready = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert ready["type"] == "ready", ready
    return ws, ready


class Listener:
    """Reads a call's messages in the background: JSON ones in `messages` (with their arrival time),
    audio bytes per speak id (binary messages belong to the speak started last)."""

    def __init__(self, ws):
        self.ws = ws
        self.messages = []
        self.audio = {}
        self.audio_at = []  # (time, speak id) of each binary message
        self.current = None
        self.closed = asyncio.Event()
        self.task = asyncio.ensure_future(self._run())

    async def _run(self):
        try:
            async for m in self.ws:
                now = time.monotonic()
                if isinstance(m, bytes):
                    assert self.current is not None, "audio before any speak_started"
                    self.audio[self.current] = self.audio.get(self.current, b"") + m
                    self.audio_at.append((now, self.current))
                    continue
                j = json.loads(m)
                j["_t"] = now
                if j["type"] == "speak_started":
                    self.current = j["id"]
                self.messages.append(j)
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            self.closed.set()

    def find(self, kind, **fields):
        for m in self.messages:
            if m["type"] == kind and all(m.get(k) == v for k, v in fields.items()):
                return m
        return None

    async def wait_for(self, kind, timeout=30, **fields):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.find(kind, **fields)
            if m is not None:
                return m
            if self.closed.is_set():
                break
            await asyncio.sleep(0.01)
        raise AssertionError(f"no {kind} {fields} in {[x['type'] for x in self.messages]}")


async def send_audio(ws, pcm, pace=1.0, chunk_ms=20):
    """Sends s16 16 kHz `pcm` in chunks, `pace` x real time. Returns the send time of each chunk's end
    as [(audio bytes sent so far, time)]."""
    step = RATE * 2 * chunk_ms // 1000
    t0 = time.monotonic()
    sent = []
    for i in range(0, len(pcm), step):
        await ws.send(pcm[i:i + step])
        sent.append((min(i + step, len(pcm)), time.monotonic()))
        await asyncio.sleep(max(0.0, t0 + (i + step) / (RATE * 2) / pace - time.monotonic()))
    return sent


def words(text):
    text = text.lower().replace("-", " ")
    return re.sub(r"[^a-z0-9' ]", " ", text).split()


def wer(ref, hyp):
    r, h = words(ref), words(hyp)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(h)] / max(1, len(r))


def transcribe(c, pcm, rate, name):
    path = os.path.join(c.tmp, name)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    out = subprocess.run([c.args.brisvox, "transcribe", "--model", "tiny.en", "--format", "json", path], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return " ".join(s["text"] for s in json.loads(out.splitlines()[0])["segments"])


# --- the tests ---------------------------------------------------------------------------------------

async def test_duplex_turn_transcript_and_a_reply_that_is_understood(c):
    ws, ready = await connect(c.server, "events=turn,transcript&tag=duplex-1")
    cfg = ready["config"]
    assert cfg["speech"]["sample_rate"] == RATE and cfg["speech"]["encoding"] == "pcm_s16le", cfg
    assert cfg["barge_in"] == {"enabled": True, "min_ms": 400, "on": "speech"} and cfg["playout_lead_ms"] == 500, cfg
    assert ready["tag"] == "duplex-1" and ready["limits"]["max_text_bytes"] == 20000, ready
    ls = Listener(ws)
    # The caller's first utterance (and the silence after it), faster than real time.
    await send_audio(ws, c.clip(0.0, 7.6), pace=4.0)
    turn = await ls.wait_for("turn_end")
    assert turn["reason"] == "model" and 6.5 < turn["end"] < 7.2, turn
    await ws.send(json.dumps({"type": "speak", "text": REPLY, "id": "r1"}))
    await ws.send(json.dumps({"type": "mark", "name": "after r1"}))
    transcript = await ls.wait_for("transcript")
    assert "dashwood" in transcript["text"].lower(), transcript
    started = await ls.wait_for("speak_started", id="r1")
    done = await ls.wait_for("speak_done", id="r1", timeout=30)
    mark = await ls.wait_for("mark", name="after r1")
    pcm = ls.audio["r1"]
    assert abs(len(pcm) / 2 / RATE * 1000 - done["duration_ms"]) < 1.0, (len(pcm), done)
    # Paced: sent at most the lead ahead of real time, so all of it took its length less the lead;
    # the mark comes when the clock reaches its end.
    took = done["_t"] - started["_t"]
    assert took > done["duration_ms"] / 1000 - 0.5 - 0.3, (took, done)
    assert mark["_t"] - started["_t"] > done["duration_ms"] / 1000 - 0.3, (mark["_t"] - started["_t"], done)
    # Closed before the reply is transcribed: a call left silent for longer than the idle timeout
    # while a loaded machine runs Whisper would be closed for it (1008).
    await ws.send(json.dumps({"type": "close"}))
    await asyncio.wait_for(ls.closed.wait(), 20)
    assert ws.close_code == 1000, ws.close_code
    heard = transcribe(c, pcm, RATE, "reply.wav")
    error = wer(REPLY, heard)
    print(f"    reply {done['duration_ms'] / 1000:.2f} s, sent in {took:.2f} s; Whisper heard: {heard!r} "
          f"(WER {error * 100:.1f} %)", flush=True)
    assert error <= 0.05, heard


async def test_the_callers_next_utterance_interrupts_the_reply(c):
    ws, _ = await connect(c.server, "events=turn")
    ls = Listener(ws)
    await ws.send(json.dumps({"type": "speak", "text": LONG, "id": 7}))
    await ws.send(json.dumps({"type": "mark", "name": "end"}))
    await ls.wait_for("speak_started", id=7)
    # Silence, then the caller's second utterance (from 8.83 s), in real time over the reply.
    sent = await send_audio(ws, c.clip(7.4, 10.4), pace=1.0)
    stop = await ls.wait_for("interrupted", id=7, timeout=10)
    assert stop["reason"] == "barge_in", stop
    # Confirmed 400 ms of voiced speech after it started (8.83 s of the recording, 1.43 s into
    # the clip, which the call's timeline starts at).
    assert 1.3 < stop["speech_start"] < 1.6 and stop["at"] >= stop["speech_start"] + 0.4 - 1e-6, stop
    mark = await ls.wait_for("mark", name="end", timeout=5)
    assert mark["_t"] >= stop["_t"], "held marks come with the barge-in"
    await asyncio.sleep(1.0)
    after = [t for t, sid in ls.audio_at if sid == 7 and t > stop["_t"]]
    assert not after, f"{len(after)} audio messages after interrupted"
    assert abs(len(ls.audio[7]) / 2 / RATE * 1000 - stop["sent_ms"]) < 1.0, (len(ls.audio[7]), stop)
    # The time from the confirmation (when the chunk that completed its frame was sent) to the last
    # audio byte received.
    confirmed_bytes = int(stop["at"] * RATE) * 2
    confirmed_t = next(t for b, t in sent if b >= confirmed_bytes)
    last_audio = max(t for t, sid in ls.audio_at if sid == 7)
    print(f"    interrupted at {stop['at']:.3f} s (speech from {stop['speech_start']:.3f} s): "
          f"'interrupted' {1000 * (stop['_t'] - confirmed_t):.1f} ms after the confirming audio was sent, "
          f"last audio {1000 * max(0.0, last_audio - confirmed_t):.1f} ms after it; {stop['sent_ms'] / 1000:.2f} s "
          f"of the reply sent", flush=True)
    assert stop["_t"] - confirmed_t < 0.5, "the barge-in took long"
    assert not ls.find("speak_done", id=7)
    await ws.close()


async def test_a_backchannel_does_not_interrupt_and_cancel_does(c):
    ws, _ = await connect(c.server, "barge_in_min_ms=600")
    ls = Listener(ws)
    await ws.send(json.dumps({"type": "speak", "text": LONG, "id": "long"}))
    await ls.wait_for("speak_started", id="long")
    await send_audio(ws, c.clip(7.0, 7.4) + c.clip(12.2, 12.55) + c.clip(7.0, 8.2), pace=1.0)
    await ls.wait_for("speech_start")
    assert ls.find("interrupted") is None, "a 0.35 s backchannel interrupted the reply"
    await ws.send(json.dumps({"type": "cancel"}))
    stop = await ls.wait_for("interrupted", id="long")
    assert stop["reason"] == "cancel" and "at" not in stop, stop
    await ws.send(json.dumps({"type": "speak", "text": "Fine."}))
    await ls.wait_for("speak_done", id=2)  # no id given: the speak's number
    await ws.close()


async def test_an_8khz_mulaw_call_speaks_mulaw(c):
    # Barge-in off: the caller's 3 s of speech may still be in the VAD when the reply starts (a
    # slow build), and then it interrupts the reply, rightly; this test is about the codec.
    ws, ready = await connect(c.server, "sample_rate=8000&encoding=mulaw&barge_in=false")
    assert ready["config"]["speech"] == {"voice": "en_US-joe-medium", "sample_rate": 8000, "encoding": "mulaw",
                                         "volume": 1.0, "fast_start": True}, ready
    ls = Listener(ws)
    # The caller: the recording decimated to 8 kHz and mu-law encoded (audioop-free: a table).
    samples = [int.from_bytes(c.pcm[i:i + 2], "little", signed=True) for i in range(0, 2 * RATE * 3, 4)]
    await ws.send(bytes(mulaw(x) for x in samples))
    await ws.send(json.dumps({"type": "speak", "text": "Hello there.", "id": "h"}))
    done = await ls.wait_for("speak_done", id="h")
    assert abs(len(ls.audio["h"]) / 8000 * 1000 - done["duration_ms"]) < 1.0, (len(ls.audio["h"]), done)
    assert len(set(ls.audio["h"])) > 40, "mu-law speech uses many codes"
    await ls.wait_for("speech_start")
    await ws.close()


def mulaw(x):
    """G.711 mu-law of a 16-bit sample (the segment search of the reference g711.c)."""
    mask = 0xFF
    x >>= 2
    if x < 0:
        x, mask = -x, 0x7F
    x = min(x, 8159) + 33
    seg = 0
    while seg < 8 and x > (0x40 << seg) - 1:
        seg += 1
    return (0x7F ^ mask) if seg >= 8 else (((seg << 4) | ((x >> (seg + 1)) & 0x0F)) ^ mask)


async def test_bad_messages_are_answered_and_the_call_goes_on(c):
    ws, _ = await connect(c.server)
    ls = Listener(ws)
    bad = ["not json", "[]", json.dumps({"type": "shout"}), json.dumps({"type": "speak"}),
           json.dumps({"type": "mark"}), json.dumps({"type": "speak", "text": "x", "id": {"a": 1}}),
           '{"type":"speak","text":"\\udc80"}']
    for m in bad:
        await ws.send(m)
    for text, code in [("", "invalid_argument"), ("   ", "invalid_argument"), ("a\u0001b", "invalid_argument"),
                       ("x" * 25000, "invalid_argument")]:
        await ws.send(json.dumps({"type": "speak", "text": text, "id": f"bad-{len(text)}"}))
    await asyncio.sleep(0.5)
    errors = [m for m in ls.messages if m["type"] == "error"]
    assert len(errors) == len(bad) + 4, errors
    assert [e["code"] for e in errors[:len(bad)]] == ["bad_message"] * len(bad), errors
    assert [e.get("id") for e in errors[len(bad):]] == ["bad-0", "bad-3", "bad-3", "bad-25000"], errors
    # 1000 speaks: 16 wait behind the one in progress, the rest are refused; a cancel storm stops
    # them all; the call goes on.
    for n in range(1000):
        await ws.send(json.dumps({"type": "speak", "text": f"Number {n}.", "id": n}))
    for _ in range(300):
        await ws.send(json.dumps({"type": "cancel"}))
    await asyncio.sleep(1.0)
    refused = [m for m in ls.messages if m["type"] == "error" and m.get("code") == "overloaded"]
    ended = [m for m in ls.messages if m["type"] in ("speak_done", "interrupted") and isinstance(m.get("id"), int)]
    assert len(refused) >= 1000 - 17 - 5, len(refused)
    assert len(refused) + len(ended) >= 990, (len(refused), len(ended))
    await ws.send(json.dumps({"type": "speak", "text": "Still here.", "id": "still"}))
    await ls.wait_for("speak_done", id="still")
    # Audio after close is ignored; the close completes.
    await ws.send(json.dumps({"type": "close"}))
    await ws.send(c.clip(0, 1))
    await asyncio.wait_for(ls.closed.wait(), 20)
    assert ws.close_code == 1000, ws.close_code
    # A message over --max-message-bytes closes the call with 1009; the server goes on.
    ws, _ = await connect(c.server)
    await ws.send(b"\x00" * (1 << 20 | 1))
    try:
        while True:
            await asyncio.wait_for(ws.recv(), 10)
    except websockets.exceptions.ConnectionClosed:
        pass
    assert ws.close_code == 1009, ws.close_code


async def test_bad_upgrades_are_refused_before_the_upgrade(c):
    cases = [(c.server, "barge_in_on=turn_end", 400, "events=turn"),
             (c.server, "barge_in_min_ms=5", 400, "barge_in_min_ms"),
             (c.server, "colour=blue", 400, "playout_lead_ms"),  # the message lists the call's keys too
             (c.server, "sample_rate=44100", 400, "44100"),
             (c.server, "voice=someone-else", 404, "unknown_voice"),
             (c.bare, "", 404, "tts_unavailable")]
    for server, query, status, text in cases:
        try:
            await connect(server, query)
            raise AssertionError(f"{query!r} was accepted")
        except websockets.exceptions.InvalidStatusCode as e:
            assert e.status_code == status, (query, e.status_code)
        # The refusal's body says why (urllib cannot send an upgrade: http.client can).
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", f"/v1/call?{query}", headers={
            **AUTH, "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
        r = conn.getresponse()
        body = r.read().decode()
        conn.close()
        assert r.status == status and text in body, (query, r.status, body)
    try:
        await connect(c.server, headers={})
        raise AssertionError("no token was accepted")
    except websockets.exceptions.InvalidStatusCode as e:
        assert e.status_code == 401, e.status_code
    try:
        urllib.request.urlopen(urllib.request.Request(c.server.url("/v1/call"), headers=AUTH), timeout=10)
        raise AssertionError("a plain GET was answered 200")
    except urllib.error.HTTPError as e:
        assert e.code == 426, e.code


async def test_the_idle_timeout_runs_from_the_end_of_a_reply(c):
    """--idle-timeout-s counts the time a client sends nothing while the server waits for it, not
    the time the call spent speaking. The server used to look at its busy state only when the idle
    timer fired, so a call whose client was silent while its reply played was closed 0-2 s (here)
    after the reply ended; each round fails that way with a chance of about one half."""
    s = Server(c.args.brisvox, "--workers", "1", "--tts-voice", c.args.voice, "--tts-workers", "1", "--token", TOKEN,
               "--idle-timeout-s", "2")
    try:
        for _ in range(4):
            ws, _ = await connect(s)
            ls = Listener(ws)
            await ws.send(json.dumps({"type": "speak", "text": "One moment please, I am looking that up.", "id": "r"}))
            done = await ls.wait_for("speak_done", id="r", timeout=30)
            await asyncio.sleep(1.0)
            assert not ls.closed.is_set(), (ws.close_code, [m["type"] for m in ls.messages][-3:])
            await ws.send('{"type":"close"}')
            await asyncio.wait_for(ls.closed.wait(), 10)
            assert ws.close_code == 1000, ws.close_code
            assert done["duration_ms"] > 2000, done  # the reply outlasts the timeout
    finally:
        s.kill()


def test_nothing_is_left_open(c):
    deadline = time.monotonic() + 10
    while True:
        m = metrics(c.server)
        left = {k: m[k] for k in ("brisvox_call_sessions", "brisvox_active_streams", 'brisvox_speech_sessions{model="tts"}',
                                  "brisvox_websocket_sessions_active")}
        if all(v == 0 for v in left.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert all(v == 0 for v in left.values()), left
    assert m["brisvox_call_sessions_total"] >= 6, m["brisvox_call_sessions_total"]
    assert m["brisvox_call_barge_ins_total"] >= 1
    assert m['brisvox_call_speaks_total{outcome="done"}'] >= 4
    assert m['brisvox_call_speaks_total{outcome="interrupted"}'] >= 1
    assert m['brisvox_call_speaks_total{outcome="cancelled"}'] >= 1
    assert m["brisvox_call_first_audio_seconds_count"] >= 4
    assert c.server.alive()


TESTS = [test_duplex_turn_transcript_and_a_reply_that_is_understood,
         test_the_callers_next_utterance_interrupts_the_reply, test_a_backchannel_does_not_interrupt_and_cancel_does,
         test_an_8khz_mulaw_call_speaks_mulaw, test_bad_messages_are_answered_and_the_call_goes_on,
         test_bad_upgrades_are_refused_before_the_upgrade, test_the_idle_timeout_runs_from_the_end_of_a_reply,
         test_nothing_is_left_open]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--voice", required=True, help="the Piper VOICE.onnx")
    ap.add_argument("--sample", required=True, help="third_party/audio/sample.wav")
    ap.add_argument("--only", action="append", help="run only tests whose name contains this")
    ap.add_argument("--test-timeout", type=float, default=60)
    ap.add_argument("--budget", type=float, default=200)
    args = ap.parse_args()
    tests = [t for t in TESTS if not args.only or any(o in t.__name__ for o in args.only)]
    started = time.monotonic()
    servers = []
    with tempfile.TemporaryDirectory(prefix="brisvox-call-test-") as tmp:
        c = Context(args, tmp)
        try:
            c.server = Server(args.brisvox, "--workers", "1", "--tts-voice", args.voice, "--tts-workers", "1",
                              "--stt-model", "tiny.en", "--turn-model", "v3.2", "--token", TOKEN,
                              "--idle-timeout-s", "20")
            servers.append(c.server)
            c.bare = Server(args.brisvox, "--workers", "1", "--token", TOKEN)
            servers.append(c.bare)
        except BaseException:
            for s in servers:
                s.kill()
            raise
        failures = run_tests([(t.__name__, lambda t=t: t(c)) for t in tests], servers, args.budget,
                             args.test_timeout, started)
    print(f"{len(tests) - len(failures)} of {len(tests)} passed in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
