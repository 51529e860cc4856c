#!/usr/bin/python3
"""End-to-end tests of Asterisk's WebSocket channel driver (chan_websocket) on `brisvox serve`
(docs/TELEPHONY.md, "Asterisk"), on loopback only, with the real models (Silero, Smart Turn v3.2,
Whisper tiny.en, the Piper voice).

Two fakes stand in for what cannot be reached here:
  - a fake Asterisk (FakeAsterisk), written from Asterisk's "WebSocket" channel driver page, the
    websocket_client.conf reference and the driver's source (channels/chan_websocket.c): it dials
    out to brisvox as a websocket_client connection does (the subprotocol "media", HTTP Basic
    authentication from username and password, the dial string's v(...) as query parameters),
    sends MEDIA_START in the configured control_message_format (plain-text or json), then the
    caller's audio as binary frames of 20 ms in the channel's format at real time, and DTMF_END;
    the call ends with a normal close. It takes back binary media (at most 65500 bytes a message)
    and the commands START_MEDIA_BUFFERING, STOP_MEDIA_BUFFERING [id] and FLUSH_MEDIA, in the
    format MEDIA_START came in, at most 128 bytes each; plays its queue at real time, sends
    MEDIA_BUFFERING_COMPLETED [id] when the frames queued before a STOP_MEDIA_BUFFERING have been
    played, and on FLUSH_MEDIA drops the queue, those pending notifications with it;
  - the scripted application of test_telephony_twilio.py (telephony_common.App).

The caller is the bundled sample recording (speech at 0.32-6.91, 8.83-11.49, 12.19-17.12 s).

  /usr/bin/python3 tests/server/test_telephony_asterisk.py --brisvox build/release/brisvox \\
      --voice third_party/models/piper/en_US-joe-medium.onnx --sample third_party/audio/sample.wav
"""
import asyncio
import base64
import json
import os
import re
import sys
import time
import urllib.parse
import uuid
import warnings
import wave

import websockets

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop  # Python 3.11's G.711 and resampling (Debian's python3)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import parse_metrics, wait_line  # noqa: E402
from telephony_common import REPLY, App, connect, goodbye_wer, main, rms_dbfs, settled_metrics, transcribe, wer  # noqa: E402

TOKEN = "asterisk-token"
# Asterisk's format names: (rate, bytes a sample, encode from 16-bit, decode to 16-bit).
FORMATS = {"ulaw": (8000, 1, lambda p: audioop.lin2ulaw(p, 2), lambda b: audioop.ulaw2lin(b, 2)),
           "alaw": (8000, 1, lambda p: audioop.lin2alaw(p, 2), lambda b: audioop.alaw2lin(b, 2)),
           "slin": (8000, 2, lambda p: p, lambda b: b),
           "slin16": (16000, 2, lambda p: p, lambda b: b)}
COMMANDS = {"START_MEDIA_BUFFERING", "STOP_MEDIA_BUFFERING", "FLUSH_MEDIA"}


class Context:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        with wave.open(args.sample, "rb") as w:
            assert w.getframerate() == 16000 and w.getsampwidth() == 2 and w.getnchannels() == 1
            self.pcm16k = w.readframes(w.getnframes())
        self.pcm8k, _ = audioop.ratecv(self.pcm16k, 2, 1, 16000, 8000, None)
        self.app = None
        self.server = None

    def clip(self, begin_s, end_s, fmt="ulaw"):
        rate, _, encode, _ = FORMATS[fmt]
        pcm = self.pcm16k if rate == 16000 else self.pcm8k
        return encode(pcm[int(begin_s * rate) * 2:int(end_s * rate) * 2])


class FakeAsterisk:
    """One chan_websocket channel dialled out to brisvox. `params`: the dial string's v(...);
    `auth`: "basic" (websocket_client.conf's username and password), "query" (v(token=...)) or None."""

    def __init__(self, c, script="reply", fmt="ulaw", control="plain-text", path="/v1/telephony/asterisk",
                 auth="basic", password=TOKEN, protocols=("media",), start_format=None):
        self.c = c
        self.fmt = fmt
        self.rate, self.width, _, self.decode = FORMATS[fmt]
        self.frame = self.rate // 50 * self.width
        self.control = control
        self.script = script
        params = {"format": fmt}
        if control == "plain-text":  # the parameters travel in the uri (JSON carries channel variables)
            params.update({"script": script, "FirstName": "Jane"})
        if auth == "query":
            params["token"] = password
        self.url = f"ws://127.0.0.1:{c.server.port}{path}?{urllib.parse.urlencode(params)}"
        self.auth = auth
        self.password = password
        self.protocols = list(protocols)
        self.start_format = start_format or fmt
        self.channel_id = f"{time.time():.0f}.{uuid.uuid4().int % 1000}"
        self.connection_id = str(uuid.uuid4())
        self.commands = []  # (time, command, id)
        self.frames = []    # (time, size)
        self.audio = b""    # the media it was sent, in order (its queue, before any flush)
        self.played = b""   # what the caller heard
        self.queue = []     # [bytes | ("done", id)] waiting to be played
        self.completed = []  # (time, id) of MEDIA_BUFFERING_COMPLETED sent
        self.closed = asyncio.Event()
        self.violations = []
        self.ws = None

    async def open(self, start=True):
        headers = {}
        if self.auth == "basic":
            headers["Authorization"] = "Basic " + base64.b64encode(f"asterisk:{self.password}".encode()).decode()
        self.ws = await connect(self.url, headers, subprotocols=self.protocols or None)
        if self.protocols and self.ws.subprotocol != "media":
            self.violations.append(f"the upgrade was answered with subprotocol {self.ws.subprotocol!r}")
        self.reader = asyncio.ensure_future(self._read())
        self.player = asyncio.ensure_future(self._play())
        if start:
            await self.send_start()
        return self

    async def send_start(self):
        if self.control == "json":
            await self.ws.send(json.dumps({
                "event": "MEDIA_START", "connection_id": self.connection_id,
                "channel": f"WebSocket/brisvox-{self.channel_id}", "channel_id": self.channel_id,
                "format": self.start_format, "optimal_frame_size": self.frame, "ptime": 20,
                "channel_variables": {"script": self.script, "FirstName": "Jane"}}, separators=(",", ":")))
        else:
            await self.ws.send(f"MEDIA_START connection_id:{self.connection_id} channel:WebSocket/brisvox-0001 "
                               f"channel_id:{self.channel_id} format:{self.start_format} "
                               f"optimal_frame_size:{self.frame} ptime:20")

    async def event(self, name, **fields):
        if self.control == "json":
            await self.ws.send(json.dumps({"event": name, "channel_id": self.channel_id, **fields}))
        else:
            await self.ws.send(" ".join([name] + [f"{k}:{v}" for k, v in fields.items()] +
                                        [f"channel_id:{self.channel_id}"]))

    async def speak(self, audio, pace=1.0):
        """The caller speaks: `audio` in 20 ms binary frames at real time. Returns [(bytes sent, time)]."""
        t0 = time.monotonic()
        sent = []
        for i in range(0, len(audio), self.frame):
            await self.ws.send(audio[i:i + self.frame])
            sent.append((min(i + self.frame, len(audio)), time.monotonic()))
            await asyncio.sleep(max(0.0, t0 + (i + self.frame) / (self.rate * self.width) / pace - time.monotonic()))
        return sent

    def _command(self, raw):
        if len(raw.encode()) > 128:
            self.violations.append(f"a command of {len(raw)} bytes: {raw[:80]}")
        if self.control == "json":
            m = json.loads(raw)
            name, cid = m.get("command"), m.get("correlation_id")
            if set(m) - {"command", "correlation_id"}:
                self.violations.append(raw)
        else:
            name, _, cid = raw.partition(" ")
            cid = cid or None
        if name not in COMMANDS:
            self.violations.append(f"not a chan_websocket command of brisvox's: {raw[:80]}")
        return name, cid

    async def _read(self):
        try:
            async for raw in self.ws:
                now = time.monotonic()
                if isinstance(raw, bytes):
                    self.frames.append((now, len(raw)))
                    if len(raw) > 65500 or len(raw) % self.frame:
                        self.violations.append(f"a media message of {len(raw)} bytes")
                    self.audio += raw
                    self.queue += [raw[i:i + self.frame] for i in range(0, len(raw), self.frame)]
                    continue
                name, cid = self._command(raw)
                self.commands.append((now, name, cid))
                if name == "STOP_MEDIA_BUFFERING":
                    self.queue.append(("done", cid))
                elif name == "FLUSH_MEDIA":
                    self.queue.clear()  # and the MEDIA_BUFFERING_COMPLETED waiting in it
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            self.closed.set()

    async def _play(self):
        """The driver's timer: one frame every 20 ms; a notification in the queue goes out when reached."""
        tick = time.monotonic()
        while not self.closed.is_set():
            while self.queue and isinstance(self.queue[0], tuple):
                _, cid = self.queue.pop(0)
                self.completed.append((time.monotonic(), cid))
                try:
                    if self.control == "json":
                        await self.ws.send(json.dumps({"event": "MEDIA_BUFFERING_COMPLETED", "channel_id": self.channel_id,
                                                       "correlation_id": cid or ""}))
                    else:
                        await self.ws.send("MEDIA_BUFFERING_COMPLETED" + (f" {cid}" if cid else ""))
                except websockets.exceptions.ConnectionClosed:
                    return
            if self.queue:
                self.played += self.queue.pop(0)
            tick += 0.02
            await asyncio.sleep(max(0.0, tick - time.monotonic()))

    def pcm(self):
        return self.decode(self.played)

    async def hang_up(self):
        await self.ws.close(1000)

    def vanish(self):
        self.ws.transport.abort()

    async def wait_closed(self, timeout=15):
        await asyncio.wait_for(self.closed.wait(), timeout)
        self.player.cancel()
        assert not self.violations, f"brisvox sent what chan_websocket does not take: {self.violations[:3]}"
        return self.ws.close_code


# --- the tests ---------------------------------------------------------------------------------------

async def test_a_ulaw_call_is_heard_answered_and_understood(c):
    ast = await FakeAsterisk(c, "reply").open()
    app = c.app
    start = await app.wait_for(ast.channel_id, "call_start", timeout=10)
    assert start["provider"] == "asterisk" and start["stream_id"] == ast.connection_id, start
    assert start["parameters"] == {"script": "reply", "FirstName": "Jane"}, start
    await ast.speak(c.clip(0.0, 7.6))
    turn = await app.wait_for(ast.channel_id, "turn_end")
    assert 6.5 < turn["end"] < 7.4, turn
    transcript = await app.wait_for(ast.channel_id, "transcript")
    assert "dashwood" in transcript["text"].lower(), transcript
    await ast.event("DTMF_END", digit="5")
    await app.wait_for(ast.channel_id, "dtmf", digit="5", timeout=5)
    started = await app.wait_for(ast.channel_id, "speak_started", id="r1")
    done = await app.wait_for(ast.channel_id, "speak_done", id="r1", timeout=40)
    mark = await app.wait_for(ast.channel_id, "mark", name="after-r1", timeout=5)
    # speak_done when the driver says the reply's bulk transfer has played, not before.
    completed = [t for t, _ in ast.completed]
    assert completed and done["_t"] >= completed[0], (done, ast.completed)
    assert done["_t"] - started["_t"] > done["duration_ms"] / 1000 - 0.3, (done["_t"] - started["_t"], done)
    assert mark["_t"] >= done["_t"], "the app's mark comes after the reply"
    # Each reply's audio is one bulk transfer: START_MEDIA_BUFFERING before it, its mark's STOP after.
    names = [n for _, n, _ in ast.commands]
    assert names[:2] == ["START_MEDIA_BUFFERING", "STOP_MEDIA_BUFFERING"], names
    assert ast.frames and ast.frames[0][0] > ast.commands[0][0], "audio before START_MEDIA_BUFFERING"
    assert done["duration_ms"] - 1.0 < len(ast.audio) / 8 < done["duration_ms"] + 20.0, (len(ast.audio), done)
    await ast.hang_up()
    assert await ast.wait_closed() == 1000
    end = await app.wait_for(ast.channel_id, "call_end", timeout=5)
    assert end["reason"] == "caller_hangup", end
    pcm = ast.pcm()
    level = rms_dbfs(pcm)
    heard = transcribe(c.server, pcm, TOKEN)
    error = wer(REPLY, heard)
    print(f"    reply {done['duration_ms'] / 1000:.2f} s of ulaw at {level:.1f} dBFS in {len(ast.frames)} frames; "
          f"Whisper heard: {heard!r} (WER {error * 100:.1f} %)", flush=True)
    assert level > -40 and error <= 0.10, (level, heard)


async def test_a_slin16_json_call_says_goodbye_and_the_app_hangs_up(c):
    ast = await FakeAsterisk(c, "hangup", fmt="slin16", control="json", auth="query").open()
    code = await ast.wait_closed(timeout=30)
    assert code == 1000, code
    assert ast.completed, "the channel closed before the driver played the goodbye"
    assert {size for _, size in ast.frames} == {640}, {size for _, size in ast.frames}
    assert all(n in COMMANDS for _, n, _ in ast.commands), ast.commands
    done = await c.app.wait_for(ast.channel_id, "speak_done", id="bye", timeout=5)
    assert done["duration_ms"] - 1.0 < len(ast.audio) / 32 < done["duration_ms"] + 20.0, (len(ast.audio), done)
    start = c.app.find(ast.channel_id, "call_start")
    assert start["parameters"] == {"script": "hangup", "FirstName": "Jane"}, start  # the channel variables
    end = await c.app.wait_for(ast.channel_id, "call_end", timeout=5)
    assert end["reason"] == "app_hangup", end
    heard = transcribe(c.server, ast.pcm(), TOKEN, rate=16000)
    print(f"    goodbye in slin16: Whisper heard {heard!r}", flush=True)
    assert goodbye_wer(heard) <= 0.25, heard


async def test_talking_over_the_reply_flushes_the_media(c):
    ast = await FakeAsterisk(c, "long", fmt="alaw").open()
    app = c.app
    await app.wait_for(ast.channel_id, "speak_started", id="long", timeout=20)
    sent = await ast.speak(c.clip(7.4, 10.4, "alaw"))
    stop = await app.wait_for(ast.channel_id, "interrupted", id="long", timeout=10)
    assert stop["reason"] == "barge_in", stop
    flushes = [t for t, n, _ in ast.commands if n == "FLUSH_MEDIA"]
    assert len(flushes) == 1, ast.commands
    confirmed_t = next(t for b, t in sent if b >= int(stop["at"] * 8000))
    await asyncio.sleep(1.0)
    after = [t for t, _ in ast.frames if t > flushes[0]]
    assert not after, f"{len(after)} media messages after FLUSH_MEDIA"
    assert not app.find(ast.channel_id, "speak_done", id="long")
    print(f"    FLUSH_MEDIA {1000 * (flushes[0] - confirmed_t):.1f} ms after the confirming audio was sent", flush=True)
    assert flushes[0] - confirmed_t < 0.5, "the barge-in took long"
    await ast.hang_up()
    assert await ast.wait_closed() == 1000


async def test_the_channel_vanishing_mid_reply_ends_the_call(c):
    ast = await FakeAsterisk(c, "long").open()
    await c.app.wait_for(ast.channel_id, "speak_started", id="long", timeout=20)
    while len(ast.audio) < 4000:
        await asyncio.sleep(0.02)
    ast.vanish()
    end = await c.app.wait_for(ast.channel_id, "call_end", timeout=10)
    assert end["reason"] == "provider_gone", end
    await c.app.wait_for(ast.channel_id, "_closed", timeout=5)


async def test_listen_only_connections_never_send_media(c):
    ast = await FakeAsterisk(c, "listen", path="/v1/telephony/asterisk/listen").open()
    start = await c.app.wait_for(ast.channel_id, "call_start", timeout=10)
    assert start["listen_only"] is True, start
    await ast.speak(c.clip(0.0, 7.6), pace=2.0)
    await c.app.wait_for(ast.channel_id, "turn_end")
    refused = await c.app.wait_for(ast.channel_id, "error", timeout=10)
    assert refused["code"] == "listen_only" and refused["id"] == "r1", refused
    await asyncio.sleep(0.5)
    assert not ast.commands and not ast.frames, f"a listen-only connection got {ast.commands[:3]}"
    await ast.hang_up()
    assert await ast.wait_closed() == 1000


async def test_malformed_messages_close_only_that_call(c):
    good = await FakeAsterisk(c, "quiet").open()
    await c.app.wait_for(good.channel_id, "call_start", timeout=10)
    cases = [
        ("media before MEDIA_START", False, bytes(160), "audio before the stream's first text message"),
        ("not JSON", True, "{", "not JSON"),
        ("a second MEDIA_START", True, "MEDIA_START connection_id:x format:ulaw", "a second start"),
        ("a bad digit", True, "DTMF_END digit:55", "0-9"),
        ("oversize", True, "ERROR " + "x" * (200 << 10), "larger than"),
    ]
    for name, start, message, why in cases:
        ast = await FakeAsterisk(c, "quiet").open(start=start)
        await ast.ws.send(message)
        code = await ast.wait_closed(timeout=10)
        assert code in (1008, 1009), (name, code)
        wait_line(c.server, re.escape(why), timeout=5)
    ast = await FakeAsterisk(c, "quiet", start_format="alaw").open()
    assert await ast.wait_closed(timeout=10) == 1008
    wait_line(c.server, re.escape('format is "alaw"'), timeout=5)
    # Refused on the upgrade: no or a wrong password, a format brisvox does not take, another subprotocol.
    for kwargs, status in (({"auth": None}, 401), ({"password": "wrong"}, 401), ({"fmt": "ulaw", "path":
                           "/v1/telephony/asterisk?format=opus"}, 400), ({"protocols": ("ari",)}, 400)):
        try:
            ast = FakeAsterisk(c, "quiet", **kwargs)
            if "path" in kwargs:
                ast.url = f"ws://127.0.0.1:{c.server.port}{kwargs['path']}"
            await ast.open()
            raise AssertionError(f"{kwargs} was taken")
        except websockets.exceptions.InvalidStatusCode as e:
            assert e.status_code == status, (kwargs, e)
    # Asterisk's ERROR and its flow control are logged or ignored; the call goes on.
    await good.ws.send("ERROR channel_id:x error_text:Unable to parse JSON command")
    wait_line(c.server, "Asterisk reports an error", timeout=5)
    await good.ws.send("MEDIA_XON")
    await good.event("DTMF_END", digit="#")
    await c.app.wait_for(good.channel_id, "dtmf", digit="#", timeout=5)
    assert not good.closed.is_set()
    await good.hang_up()
    assert await good.wait_closed() == 1000


def test_nothing_is_left_open(c):
    m, left = settled_metrics(c.server, parse_metrics, "asterisk")
    assert not left, left
    asterisk = lambda name: m[f'brisvox_telephony_{name}{{provider="asterisk"}}']  # noqa: E731
    assert asterisk("calls_total") >= 6 and asterisk("clears_total") >= 1 and asterisk("dtmf_total") >= 2, m
    errors = lambda reason: m[f'brisvox_telephony_errors_total{{provider="asterisk",reason="{reason}"}}']  # noqa: E731
    assert errors("bad_message") == 2 and errors("out_of_order") == 2 and errors("bad_media_format") == 1, m
    assert m['brisvox_telephony_calls_total{provider="vonage"}'] == 0, "an Asterisk call counted as Vonage's"
    assert c.server.alive()


TESTS = [test_a_ulaw_call_is_heard_answered_and_understood, test_a_slin16_json_call_says_goodbye_and_the_app_hangs_up,
         test_talking_over_the_reply_flushes_the_media, test_the_channel_vanishing_mid_reply_ends_the_call,
         test_listen_only_connections_never_send_media, test_malformed_messages_close_only_that_call,
         test_nothing_is_left_open]



if __name__ == "__main__":
    sys.exit(main(__doc__, TESTS, Context, TOKEN, "asterisk"))
