#!/usr/bin/python3
"""End-to-end tests of Twilio Media Streams on `brisvox serve` (docs/TELEPHONY.md), on loopback
only, with the real models (Silero, Smart Turn v3.2, Whisper tiny.en, the Piper voice).

Two fakes stand in for what cannot be reached here, each written from its published protocol:
  - a fake Twilio (FakeTwilio), from Twilio's "Media Streams - WebSocket Messages": connected,
    start (mediaFormat audio/x-mulaw, 8000 Hz, mono; the token as a <Parameter>, since Twilio drops
    a <Stream> url's query), the caller's audio as base64 mu-law media messages of 20 ms (160
    bytes) at real time, dtmf, stop. It plays what brisvox sends back at real time, echoes each
    mark when the audio before it has played, and on clear drops what it has not played and echoes
    the marks left at once, as Twilio does;
  - a scripted application (App) behind serve --call-app: it records what brisvox tells it and
    answers as the call's "script" parameter says (reply at each turn end, speak a long reply at
    once, say goodbye and hang up).

The caller is the bundled sample recording, downsampled to 8 kHz and mu-law encoded (speech at
0.32-6.91, 8.83-11.49, 12.19-17.12 s; silence between).

  /usr/bin/python3 tests/server/test_telephony_twilio.py --brisvox build/release/brisvox \\
      --voice third_party/models/piper/en_US-joe-medium.onnx --sample third_party/audio/sample.wav
"""
import argparse
import asyncio
import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
import warnings
import wave

import websockets

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop  # Python 3.11's G.711 and resampling (Debian's python3)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server, parse_metrics, run_tests, wait_line  # noqa: E402
from telephony_common import REPLY, App, rms_dbfs, transcribe, wer  # noqa: E402

TOKEN = "twilio-token"
RATE = 8000
CHUNK = 160  # 20 ms of mu-law at 8 kHz, as Twilio sends it


class Context:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        with wave.open(args.sample, "rb") as w:
            assert w.getframerate() == 16000 and w.getsampwidth() == 2 and w.getnchannels() == 1
            pcm16k = w.readframes(w.getnframes())
        pcm8k, _ = audioop.ratecv(pcm16k, 2, 1, 16000, RATE, None)
        self.mulaw = audioop.lin2ulaw(pcm8k, 2)  # one byte a sample
        self.app = None
        self.server = None

    def clip(self, begin_s, end_s):
        return self.mulaw[int(begin_s * RATE):int(end_s * RATE)]


def metrics(server):
    return parse_metrics(urllib.request.urlopen(server.url("/metrics"), timeout=10).read().decode())


def pcm_of(mulaw):
    return audioop.ulaw2lin(mulaw, 2)


# --- the fake Twilio ---------------------------------------------------------------------------------

class FakeTwilio:
    """One Twilio Media Stream to brisvox, as Twilio's WebSocket messages page describes it."""

    def __init__(self, c, script="reply", path="/v1/telephony/twilio", token=TOKEN, media_format=None,
                 signed_with=None, parameters=None):
        self.c = c
        self.parameters = parameters or {}  # more <Parameter>s of the <Stream>
        # Twilio's Auth Token: the handshake then carries X-Twilio-Signature, the base64 of
        # HMAC-SHA1 keyed with it over the URL Twilio requested (Twilio's "Webhooks security").
        self.signed_with = signed_with
        self.path = path
        self.script = script
        self.token = token
        self.media_format = media_format or {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
        self.stream_sid = "MZ" + uuid.uuid4().hex
        self.call_sid = "CA" + uuid.uuid4().hex
        self.seq = 0
        self.chunk = 0
        self.received = []  # (time, message) of what brisvox sent
        self.audio = b""    # the media payloads, decoded, in order
        self.play_end = 0.0  # when what was received has played (real time, from its arrival)
        self.pending_marks = []  # [due time, name]
        self.echoed = []  # (time, name)
        self.closed = asyncio.Event()
        self.violations = []  # what brisvox sent that Twilio does not take
        self.ws = None

    async def open(self, start=True):
        # A 503 with Retry-After is the engine's admission control (this test's own Whisper run on
        # the reply, on a busy machine, can put it over its latency budget for a moment): retried
        # as the answer says, for a while.
        deadline = time.monotonic() + 20
        while True:
            try:
                headers = {}
                if self.signed_with is not None:
                    url = f"wss://127.0.0.1:{self.c.server.port}{self.path}"
                    digest = hmac.new(self.signed_with.encode(), url.encode(), hashlib.sha1).digest()
                    headers["X-Twilio-Signature"] = base64.b64encode(digest).decode()
                self.ws = await websockets.connect(f"ws://127.0.0.1:{self.c.server.port}{self.path}",
                                                   max_size=None, open_timeout=10, close_timeout=5,
                                                   extra_headers=headers)
                break
            except websockets.exceptions.InvalidStatusCode as e:
                if e.status_code != 503 or time.monotonic() > deadline:
                    raise
                print(f"    503 from the server: retrying in {e.headers.get('Retry-After', '1')} s", flush=True)
                await asyncio.sleep(float(e.headers.get("Retry-After", "1")))
        self.reader = asyncio.ensure_future(self._read())
        self.marker = asyncio.ensure_future(self._echo_marks())
        await self.send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        if start:
            await self.send_start()
        return self

    async def send(self, message):
        self.seq += 1
        if message["event"] != "connected":
            message = {**message, "sequenceNumber": str(self.seq)}
        await self.ws.send(json.dumps(message))

    async def send_start(self):
        params = {"script": self.script, "FirstName": "Jane", **self.parameters}
        if self.token is not None:
            params["token"] = self.token
        await self.send({"event": "start", "streamSid": self.stream_sid,
                         "start": {"accountSid": "AC" + "0" * 32, "streamSid": self.stream_sid,
                                   "callSid": self.call_sid, "tracks": ["inbound"], "customParameters": params,
                                   "mediaFormat": self.media_format}})

    async def play(self, mulaw, pace=1.0):
        """The caller speaks: `mulaw` in 20 ms media messages at real time. Returns the send time of
        each chunk's end as [(bytes sent so far, time)]."""
        t0 = time.monotonic()
        sent = []
        for i in range(0, len(mulaw), CHUNK):
            self.chunk += 1
            await self.send({"event": "media", "streamSid": self.stream_sid,
                             "media": {"track": "inbound", "chunk": str(self.chunk),
                                       "timestamp": str(self.chunk * 20),
                                       "payload": base64.b64encode(mulaw[i:i + CHUNK]).decode()}})
            sent.append((min(i + CHUNK, len(mulaw)), time.monotonic()))
            await asyncio.sleep(max(0.0, t0 + (i + CHUNK) / RATE / pace - time.monotonic()))
        return sent

    async def _read(self):
        try:
            async for raw in self.ws:
                now = time.monotonic()
                if not isinstance(raw, str):
                    self.violations.append(f"a binary message of {len(raw)} bytes")
                    continue
                m = json.loads(raw)
                self.received.append((now, m))
                if m.get("event") not in ("media", "mark", "clear") or m.get("streamSid") != self.stream_sid:
                    self.violations.append(raw[:200])
                    continue
                if m["event"] == "media":
                    if set(m) != {"event", "streamSid", "media"} or set(m["media"]) != {"payload"}:
                        self.violations.append(raw[:200])
                    payload = base64.b64decode(m["media"]["payload"], validate=True)
                    self.audio += payload
                    self.play_end = max(now, self.play_end) + len(payload) / RATE
                elif m["event"] == "mark":
                    self.pending_marks.append([max(now, self.play_end), m["mark"]["name"]])
                else:  # clear: what was not played is dropped, the marks left come back at once
                    self.play_end = now
                    for mark in self.pending_marks:
                        mark[0] = now
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            self.closed.set()

    async def _echo_marks(self):
        while not self.closed.is_set():
            now = time.monotonic()
            due = [m for m in self.pending_marks if m[0] <= now]
            for m in due:
                self.pending_marks.remove(m)
                self.echoed.append((now, m[1]))
                try:
                    await self.send({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": m[1]}})
                except websockets.exceptions.ConnectionClosed:
                    return
            await asyncio.sleep(0.005)

    def events(self, kind):
        return [(t, m) for t, m in self.received if m["event"] == kind]

    async def stop(self):
        await self.send({"event": "stop", "streamSid": self.stream_sid,
                         "stop": {"accountSid": "AC" + "0" * 32, "callSid": self.call_sid}})

    def vanish(self):
        """The provider's side drops without a close handshake."""
        self.ws.transport.abort()

    async def wait_closed(self, timeout=15):
        await asyncio.wait_for(self.closed.wait(), timeout)
        self.marker.cancel()
        assert not self.violations, f"brisvox sent what Twilio does not take: {self.violations[:3]}"
        return self.ws.close_code


# --- the tests ---------------------------------------------------------------------------------------

async def test_a_call_is_heard_answered_and_understood(c):
    tw = await FakeTwilio(c, "reply").open()
    app = c.app
    start = await app.wait_for(tw.call_sid, "call_start", timeout=10)
    assert start["provider"] == "twilio" and start["stream_id"] == tw.stream_sid, start
    assert start["parameters"] == {"script": "reply", "FirstName": "Jane"}, "the token must not reach the app"
    assert start["listen_only"] is False, start
    # The caller's first utterance and the silence after it, at real time.
    await tw.play(c.clip(0.0, 7.6))
    await app.wait_for(tw.call_sid, "speech_start")
    turn = await app.wait_for(tw.call_sid, "turn_end")
    assert 6.5 < turn["end"] < 7.4, turn
    transcript = await app.wait_for(tw.call_sid, "transcript")
    assert "dashwood" in transcript["text"].lower(), transcript
    await tw.send({"event": "dtmf", "streamSid": tw.stream_sid, "dtmf": {"track": "inbound_track", "digit": "5"}})
    await app.wait_for(tw.call_sid, "dtmf", digit="5", timeout=5)
    started = await app.wait_for(tw.call_sid, "speak_started", id="r1")
    done = await app.wait_for(tw.call_sid, "speak_done", id="r1", timeout=40)
    mark = await app.wait_for(tw.call_sid, "mark", name="after-r1", timeout=5)
    # speak_done reaches the app when Twilio says the reply has played (its mark echoed), not when
    # brisvox handed out its last byte.
    echoes = [t for t, _ in tw.echoed]
    assert echoes and done["_t"] >= echoes[0], (done, tw.echoed)
    assert done["_t"] - started["_t"] > done["duration_ms"] / 1000 - 0.3, (done["_t"] - started["_t"], done)
    assert mark["_t"] >= done["_t"], "the app's mark comes after the reply"
    reply = tw.audio
    first_media = next(t for t, m in tw.received if m["event"] == "media")
    assert abs(len(reply) / RATE * 1000 - done["duration_ms"]) < 1.0, (len(reply), done)
    pcm = pcm_of(reply)
    level = rms_dbfs(pcm)
    assert level > -40, f"the reply is silent ({level:.1f} dBFS)"
    # The caller hangs up; then the reply is transcribed (a call left silent for longer than the
    # idle timeout while a loaded machine runs Whisper would be closed for it).
    await tw.stop()
    code = await tw.wait_closed()
    end = await app.wait_for(tw.call_sid, "call_end", timeout=5)
    assert end["reason"] == "caller_hangup" and code == 1000, (end, code)
    await app.wait_for(tw.call_sid, "_closed", timeout=5)
    # The app answered the turn_end at once: its round trip is counted, a few ms on loopback.
    m = metrics(c.server)
    trips = m['brisvox_telephony_app_round_trip_seconds_count{provider="twilio"}']
    assert trips >= 1 and m['brisvox_telephony_app_round_trip_seconds_sum{provider="twilio"}'] < trips * 1.0, m
    heard = transcribe(c.server, pcm, TOKEN)
    error = wer(REPLY, heard)
    print(f"    turn_end at the app -> first reply audio at Twilio {1000 * (first_media - turn['_t']):.0f} ms "
          f"(the app's round trip and the first sentence's synthesis)", flush=True)
    print(f"    reply {done['duration_ms'] / 1000:.2f} s of mu-law at {level:.1f} dBFS; speak_done "
          f"{1000 * (done['_t'] - echoes[0]):.0f} ms after Twilio's echo; Whisper heard: {heard!r} "
          f"(WER {error * 100:.1f} %)", flush=True)
    assert error <= 0.10, heard


async def test_talking_over_the_reply_sends_clear(c):
    tw = await FakeTwilio(c, "long").open()
    app = c.app
    await app.wait_for(tw.call_sid, "speak_started", id="long", timeout=20)
    # Silence, then the caller's second utterance (from 8.83 s), at real time over the reply.
    sent = await tw.play(c.clip(7.4, 10.4))
    stop = await app.wait_for(tw.call_sid, "interrupted", id="long", timeout=10)
    assert stop["reason"] == "barge_in", stop
    clears = tw.events("clear")
    assert len(clears) == 1, clears
    clear_t = clears[0][0]
    confirmed_bytes = int(stop["at"] * RATE)
    confirmed_t = next(t for b, t in sent if b >= confirmed_bytes)
    await asyncio.sleep(1.0)
    after = [t for t, m in tw.received if m["event"] == "media" and t > clear_t]
    assert not after, f"{len(after)} media messages after clear"
    assert not app.find(tw.call_sid, "speak_done", id="long")
    print(f"    clear {1000 * (clear_t - confirmed_t):.1f} ms after the confirming audio was sent; "
          f"{len(tw.audio) / RATE:.2f} s of the reply had been sent", flush=True)
    assert clear_t - confirmed_t < 0.5, "the barge-in took long"
    await tw.stop()
    assert await tw.wait_closed() == 1000


async def test_the_app_hangs_up_after_its_goodbye(c):
    tw = await FakeTwilio(c, "hangup").open()
    code = await tw.wait_closed(timeout=30)
    assert code == 1000, code
    # The goodbye was sent whole and played (its mark echoed) before the stream closed.
    assert tw.echoed, "the stream closed before Twilio played the goodbye"
    done = await c.app.wait_for(tw.call_sid, "speak_done", id="bye", timeout=5)
    assert abs(len(tw.audio) / RATE * 1000 - done["duration_ms"]) < 1.0, (len(tw.audio), done)
    end = await c.app.wait_for(tw.call_sid, "call_end", timeout=5)
    assert end["reason"] == "app_hangup", end


async def test_the_provider_vanishing_mid_reply_ends_the_call(c):
    tw = await FakeTwilio(c, "long").open()
    await c.app.wait_for(tw.call_sid, "speak_started", id="long", timeout=20)
    while len(tw.audio) < RATE // 2:
        await asyncio.sleep(0.02)
    tw.vanish()
    end = await c.app.wait_for(tw.call_sid, "call_end", timeout=10)
    assert end["reason"] == "provider_gone", end
    await c.app.wait_for(tw.call_sid, "_closed", timeout=5)


async def test_listen_only_streams_never_send_audio(c):
    tw = await FakeTwilio(c, "listen", path="/v1/telephony/twilio/listen").open()
    start = await c.app.wait_for(tw.call_sid, "call_start", timeout=10)
    assert start["listen_only"] is True, start
    await tw.play(c.clip(0.0, 7.6), pace=2.0)
    await c.app.wait_for(tw.call_sid, "turn_end")
    refused = await c.app.wait_for(tw.call_sid, "error", timeout=10)
    assert refused["code"] == "listen_only" and refused["id"] == "r1", refused
    await asyncio.sleep(0.5)
    assert not tw.received, f"a listen-only stream got {tw.received[:3]}"
    await tw.stop()
    assert await tw.wait_closed() == 1000


async def test_malformed_messages_close_only_that_call(c):
    good = await FakeTwilio(c, "quiet").open()
    await c.app.wait_for(good.call_sid, "call_start", timeout=10)
    media = {"event": "media", "media": {"track": "inbound", "chunk": "1", "timestamp": "20", "payload": "AAAA"}}
    cases = [
        ("bad base64", True, {**media, "media": {**media["media"], "payload": "not base64!"}}, "base64"),
        ("media before start", False, media, "media before start"),
        ("a second start", True, None, "a second start"),
        ("not JSON", True, "{", "not JSON"),
        ("oversize", True, json.dumps({"event": "media", "pad": "x" * (200 << 10)}), "larger than"),
        ("binary", True, b"\x00\x01", "binary"),
    ]
    for name, start, message, why in cases:
        tw = await FakeTwilio(c, "quiet").open(start=start)
        if message is None:
            await tw.send_start()
        elif isinstance(message, dict):
            await tw.send({**message, "streamSid": tw.stream_sid})
        else:
            await tw.ws.send(message)
        code = await tw.wait_closed(timeout=10)
        assert code in (1008, 1009), (name, code)
        wait_line(c.server, re.escape(why), timeout=5)
    for fmt, why in ((({"encoding": "audio/x-alaw", "sampleRate": 8000, "channels": 1}), "audio/x-alaw"),
                     (({"encoding": "audio/x-mulaw", "sampleRate": 16000, "channels": 1}), "16000 Hz")):
        tw = await FakeTwilio(c, "quiet", media_format=fmt).open()
        assert await tw.wait_closed(timeout=10) == 1008
        wait_line(c.server, re.escape(why), timeout=5)
    for token, why in ((None, "no token"), ("wrong", "not this server's")):
        tw = await FakeTwilio(c, "quiet", token=token).open()
        assert await tw.wait_closed(timeout=10) == 1008
        wait_line(c.server, why, timeout=5)
    # The good call goes on through all of it.
    await good.send({"event": "dtmf", "streamSid": good.stream_sid, "dtmf": {"track": "inbound_track", "digit": "#"}})
    await c.app.wait_for(good.call_sid, "dtmf", digit="#", timeout=5)
    assert not good.closed.is_set()
    await good.stop()
    assert await good.wait_closed() == 1000


async def test_a_bad_app_message_is_answered_and_the_call_goes_on(c):
    tw = await FakeTwilio(c, "bad").open()
    first = await c.app.wait_for(tw.call_sid, "error", timeout=10)
    assert first["code"] == "bad_message", first
    await asyncio.sleep(0.3)
    errors = [m for m in c.app.messages(tw.call_sid) if m["type"] == "error"]
    assert len(errors) == 2 and "hangup" in errors[1]["message"], errors  # "close" is not the app's word
    assert not tw.closed.is_set()
    await tw.stop()
    assert await tw.wait_closed() == 1000


async def ended_for_its_app(server, tw, why):
    """The call's first app_unavailable on `server`: closed 1011, the log line `why`, counted."""
    assert await tw.wait_closed(timeout=10) == 1011
    wait_line(server, why, timeout=5)
    m = metrics(server)
    assert m['brisvox_telephony_errors_total{provider="twilio",reason="app_unavailable"}'] == 1, m


async def test_an_unreachable_app_ends_the_call_and_says_why(c):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lone = Server(c.args.brisvox, "--workers", "1", "--tts-voice", c.args.voice, "--tts-workers", "1",
                  "--token", TOKEN, "--call-app", f"ws://127.0.0.1:{port}/calls")
    try:
        saved, c.server = c.server, lone
        tw = await FakeTwilio(c, "reply").open()
        await ended_for_its_app(lone, tw, r"the application at ws://127\.0\.0\.1:\d+/calls is unreachable")
    finally:
        c.server = saved
        lone.kill()


async def test_a_calls_app_parameter_picks_one_of_several_apps(c):
    """--call-app NAME=URL beside the unnamed URL: a call whose <Parameter name="app"> is NAME goes
    to that application, one that names none to the unnamed one, one that names another is ended."""
    # With one unnamed URL alone, a call's "app" parameter is its own business: it reaches that app.
    own = await FakeTwilio(c, "listen", parameters={"app": "crm"}).open()
    await c.app.wait_for(own.call_sid, "call_start", timeout=10)
    await own.stop()
    assert await own.wait_closed(timeout=10) == 1000
    sales = App()
    several = Server(c.args.brisvox, "--workers", "1", "--tts-voice", c.args.voice, "--tts-workers", "1",
                     "--token", TOKEN, "--call-app", f"ws://127.0.0.1:{c.app.port}/calls",
                     "--call-app", f"sales=ws://127.0.0.1:{sales.port}/sales")
    try:
        saved, c.server = c.server, several
        to_sales = await FakeTwilio(c, "listen", parameters={"app": "sales"}).open()
        start = await sales.wait_for(to_sales.call_sid, "call_start", timeout=10)
        assert start["parameters"] == {"script": "listen", "FirstName": "Jane", "app": "sales"}, start
        assert c.app.find(to_sales.call_sid, "call_start") is None
        unnamed = await FakeTwilio(c, "listen").open()
        await c.app.wait_for(unnamed.call_sid, "call_start", timeout=10)
        assert sales.find(unnamed.call_sid, "call_start") is None
        for tw in (to_sales, unnamed):
            await tw.stop()
            assert await tw.wait_closed(timeout=10) == 1000
        lost = await FakeTwilio(c, "listen", parameters={"app": "billing"}).open()
        await ended_for_its_app(several, lost, r'names application "billing" .*named: sales')
    finally:
        c.server = saved
        several.kill()
    bad = subprocess.run([c.args.brisvox, "serve", "--call-app", "ws://127.0.0.1:1/", "--call-app", "ws://127.0.0.1:2/"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "two URLs without a name" in bad.stderr, bad.stderr


async def test_the_vad_rate_of_phone_calls_is_the_servers_choice(c):
    # The default: 8 kHz phone audio reaches the 16 kHz VAD model (docs/TELEPHONY.md); an earlier
    # test's call logged it. --phone-model-rate 8000 runs the 8 kHz model instead.
    wait_line(c.server, r"twilio call \d+ open: .*, 8000 Hz mulaw, model 16000 Hz,", timeout=5)
    native = Server(c.args.brisvox, "--workers", "1", "--tts-voice", c.args.voice, "--tts-workers", "1",
                    "--token", TOKEN, "--call-app", f"ws://127.0.0.1:{c.app.port}/calls", "--phone-model-rate", "8000")
    try:
        saved, c.server = c.server, native
        tw = await FakeTwilio(c, "reply").open()
        wait_line(native, r"twilio call \d+ open: .*, 8000 Hz mulaw, model 8000 Hz,", timeout=10)
        await tw.stop()
        assert await tw.wait_closed(timeout=10) == 1000
    finally:
        c.server = saved
        native.kill()
    bad = subprocess.run([c.args.brisvox, "serve", "--phone-model-rate", "22050"], capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode == 2 and "phone-model-rate" in bad.stderr, bad.stderr


async def test_without_call_app_twilio_is_refused(c):
    bare = Server(c.args.brisvox, "--workers", "1")
    try:
        conn = http.client.HTTPConnection("127.0.0.1", bare.port, timeout=10)
        conn.request("GET", "/v1/telephony/twilio", headers={
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode()})
        res = conn.getresponse()
        error = json.loads(res.read())["error"]
        assert res.status == 503 and error["code"] == "no_call_app" and "--call-app" in error["message"], error
    finally:
        bare.kill()


async def test_x_twilio_signature(c):
    """With --twilio-auth-token only a handshake Twilio signed is taken (403 otherwise), and the
    signature stands for the server's token."""
    signed = Server(c.args.brisvox, "--workers", "1", "--tts-voice", c.args.voice, "--tts-workers", "1",
                    "--token", TOKEN, "--call-app", f"ws://127.0.0.1:{c.app.port}/calls",
                    "--twilio-auth-token", "tw-auth-token")
    try:
        saved, c.server = c.server, signed
        tw = await FakeTwilio(c, "reply", token=None, signed_with="tw-auth-token").open()
        wait_line(signed, r"twilio call \d+ open:", timeout=10)
        await tw.stop()
        assert await tw.wait_closed(timeout=10) == 1000
        for signed_with in (None, "another-token"):
            try:
                await FakeTwilio(c, "reply", signed_with=signed_with).open()
                raise AssertionError(f"signed with {signed_with}: accepted")
            except websockets.exceptions.InvalidStatusCode as e:
                assert e.status_code == 403, e
        for header, why in (({}, "no X-Twilio-Signature"), ({"X-Twilio-Signature": "AAAA"}, "does not sign")):
            conn = http.client.HTTPConnection("127.0.0.1", signed.port, timeout=10)
            conn.request("GET", "/v1/telephony/twilio", headers={
                "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(), **header})
            res = conn.getresponse()
            error = json.loads(res.read())["error"]
            assert res.status == 403 and error["code"] == "twilio_signature" and why in error["message"], error
    finally:
        c.server = saved
        signed.kill()


async def test_the_docs_example_app_answers_a_call(c):
    """docs/TELEPHONY.md's example application, as a new user runs it, against the fake Twilio."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "examples",
                           "telephony_app.py")
    app = subprocess.Popen([sys.executable, example, str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    out = []
    threading.Thread(target=lambda: out.extend(app.stdout), daemon=True).start()
    server = None
    try:
        server = Server(c.args.brisvox, "--workers", "1", "--tts-voice", c.args.voice, "--tts-workers", "1",
                        "--stt-model", "tiny.en", "--token", TOKEN, "--call-app", f"ws://127.0.0.1:{port}/")
        saved, c.server = c.server, server
        try:
            tw = await FakeTwilio(c, "example").open()
            deadline = time.monotonic() + 20
            while not tw.echoed and time.monotonic() < deadline:  # the greeting, played to its end
                await asyncio.sleep(0.05)
            greeting = len(tw.audio)
            assert greeting > RATE, f"no greeting ({greeting} bytes)"
            await tw.play(c.clip(0.0, 7.6))
            deadline = time.monotonic() + 20
            while len(tw.audio) < greeting + 2 * RATE and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert len(tw.audio) >= greeting + 2 * RATE, "the example did not answer"
            await tw.send({"event": "dtmf", "streamSid": tw.stream_sid, "dtmf": {"track": "inbound_track",
                                                                                   "digit": "#"}})
            assert await tw.wait_closed(timeout=30) == 1000
            await asyncio.sleep(0.5)
        finally:
            c.server = saved
        text = "".join(out)
        assert "caller: " in text and "dashwood" in text.lower() and "call ended: app_hangup" in text, text
    finally:
        app.kill()
        if server is not None:
            server.kill()


def test_nothing_is_left_open(c):
    deadline = time.monotonic() + 10
    while True:
        m = metrics(c.server)
        left = {k: m[k] for k in ('brisvox_telephony_calls{provider="twilio"}', "brisvox_call_sessions",
                                  "brisvox_active_streams", 'brisvox_speech_sessions{model="tts"}',
                                  "brisvox_websocket_sessions_active")}
        if all(v == 0 for v in left.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert all(v == 0 for v in left.values()), left
    twilio = lambda name: m[f'brisvox_telephony_{name}{{provider="twilio"}}']  # noqa: E731
    assert twilio("calls_total") >= 6 and twilio("clears_total") >= 1 and twilio("dtmf_total") >= 2, m
    errors = lambda reason: m[f'brisvox_telephony_errors_total{{provider="twilio",reason="{reason}"}}']  # noqa: E731
    assert errors("bad_message") >= 3 and errors("out_of_order") >= 2 and errors("bad_media_format") == 2, m
    assert errors("unauthorized") == 2 and errors("app_bad_message") == 2, m
    assert c.server.alive()


TESTS = [test_a_call_is_heard_answered_and_understood, test_talking_over_the_reply_sends_clear,
         test_the_app_hangs_up_after_its_goodbye, test_the_provider_vanishing_mid_reply_ends_the_call,
         test_listen_only_streams_never_send_audio, test_malformed_messages_close_only_that_call,
         test_a_bad_app_message_is_answered_and_the_call_goes_on, test_an_unreachable_app_ends_the_call_and_says_why,
         test_a_calls_app_parameter_picks_one_of_several_apps,
         test_the_vad_rate_of_phone_calls_is_the_servers_choice, test_without_call_app_twilio_is_refused,
         test_x_twilio_signature, test_the_docs_example_app_answers_a_call,
         test_nothing_is_left_open]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--voice", required=True, help="the Piper VOICE.onnx")
    ap.add_argument("--sample", required=True, help="third_party/audio/sample.wav")
    ap.add_argument("--only", action="append", help="run only tests whose name contains this")
    ap.add_argument("--test-timeout", type=float, default=90)
    ap.add_argument("--budget", type=float, default=280)
    args = ap.parse_args()
    tests = [t for t in TESTS if not args.only or any(o in t.__name__ for o in args.only)]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="brisvox-twilio-test-") as tmp:
        c = Context(args, tmp)
        c.app = App()
        c.server = Server(args.brisvox, "--workers", "1", "--tts-voice", args.voice, "--tts-workers", "1",
                          "--stt-model", "tiny.en", "--turn-model", "v3.2", "--token", TOKEN,
                          "--call-app", f"ws://127.0.0.1:{c.app.port}/calls", "--idle-timeout-s", "20")
        failures = run_tests([(t.__name__, lambda t=t: t(c)) for t in tests], [c.server], args.budget,
                             args.test_timeout, started)
    print(f"{len(tests) - len(failures)} of {len(tests)} passed in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
