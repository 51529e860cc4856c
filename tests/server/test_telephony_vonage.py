#!/usr/bin/python3
"""End-to-end tests of the Vonage Voice API's WebSocket connection on `brisvox serve`
(docs/TELEPHONY.md, "Vonage"), on loopback only, with the real models (Silero, Smart Turn v3.2,
Whisper tiny.en, the Piper voice).

Two fakes stand in for what cannot be reached here:
  - a fake Vonage (FakeVonage), written from Vonage's "WebSockets" guide of the Voice API and the
    NCCO reference's connect action (websocket endpoint): the first message is the text frame
    websocket:connected with the endpoint's content-type ("audio/l16;rate=16000" or 8000) and its
    headers at the top level; then the caller's audio as binary frames of 20 ms of 16-bit
    little-endian PCM at real time; websocket:dtmf {digit, duration}; the call ends with a normal
    close of the socket. It takes back binary frames of audio (exactly 20 ms each: 640 bytes at 16
    kHz, 320 at 8 kHz) and the text actions notify {payload} and clear, each with exactly the
    fields the docs give; plays what it is sent at real time, answers a notify with
    websocket:notify {payload} once the audio before it has played, and answers clear by dropping
    what it has not played (and the notifies behind it) and sending websocket:cleared;
  - the scripted application of test_telephony_twilio.py (telephony_common.App).

The caller is the bundled sample recording (speech at 0.32-6.91, 8.83-11.49, 12.19-17.12 s).

  /usr/bin/python3 tests/server/test_telephony_vonage.py --brisvox build/release/brisvox \\
      --voice third_party/models/piper/en_US-joe-medium.onnx --sample third_party/audio/sample.wav
"""
import asyncio
import json
import os
import re
import sys
import time
import uuid

import websockets


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import parse_metrics, wait_line  # noqa: E402
from telephony_common import REPLY, App, Context, connect, goodbye_wer, main, play_frames, rms_dbfs, settled_metrics, transcribe, wer  # noqa: E402

TOKEN = "vonage-token"


class FakeVonage:
    """One Vonage call connected to brisvox. `auth`: how the token travels ("header": a "token" key of
    the NCCO endpoint's headers, in websocket:connected; "authorization": the endpoint's
    authorization, an Authorization header on the upgrade; None: not at all)."""

    def __init__(self, c, script="reply", path="/v1/telephony/vonage", rate=16000, auth="header", token=TOKEN,
                 content_type=None):
        self.c = c
        self.path = path
        self.script = script
        self.rate = rate
        self.frame = rate // 50 * 2  # 20 ms of 16-bit samples
        self.auth = auth
        self.token = token
        self.content_type = content_type or f"audio/l16;rate={rate}"
        self.call_id = str(uuid.uuid4())
        self.received = []  # (time, message) of brisvox's text frames, parsed
        self.frames = []    # (time, size) of its binary frames
        self.audio = b""    # the audio it sent, in order
        self.play_end = 0.0
        self.pending = []   # [due time, payload] of notifies
        self.notified = []  # (time, payload)
        self.closed = asyncio.Event()
        self.violations = []  # what brisvox sent that Vonage does not take
        self.ws = None

    async def open(self, connected=True):
        headers = {"Authorization": f"Bearer {self.token}"} if self.auth == "authorization" else {}
        self.ws = await connect(f"ws://127.0.0.1:{self.c.server.port}{self.path}", headers)
        self.reader = asyncio.ensure_future(self._read())
        self.notifier = asyncio.ensure_future(self._notify())
        if connected:
            message = {"event": "websocket:connected", "content-type": self.content_type, "uuid": self.call_id,
                       "script": self.script, "FirstName": "Jane"}
            if self.auth == "header":
                message["token"] = self.token
            await self.ws.send(json.dumps(message))
        return self

    async def play(self, audio, pace=1.0):
        """The caller speaks: `audio` in 20 ms binary frames at real time. Returns [(bytes sent, time)]."""
        return await play_frames(self.ws, audio, self.frame, 2 * self.rate, pace)

    async def _read(self):
        try:
            async for raw in self.ws:
                now = time.monotonic()
                if isinstance(raw, bytes):
                    self.frames.append((now, len(raw)))
                    if len(raw) != self.frame:
                        self.violations.append(f"an audio frame of {len(raw)} bytes (takes {self.frame})")
                    self.audio += raw
                    self.play_end = max(now, self.play_end) + len(raw) / (2 * self.rate)
                    continue
                m = json.loads(raw)
                self.received.append((now, m))
                if m.get("action") == "notify" and set(m) == {"action", "payload"} and isinstance(m["payload"], dict):
                    self.pending.append([max(now, self.play_end), m["payload"]])
                elif m == {"action": "clear"}:
                    # What was not played is dropped, and the notifies behind it with it.
                    self.play_end = now
                    self.pending.clear()
                    await self.ws.send(json.dumps({"event": "websocket:cleared"}))
                else:
                    self.violations.append(raw[:200])
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            self.closed.set()

    async def _notify(self):
        while not self.closed.is_set():
            now = time.monotonic()
            for n in [n for n in self.pending if n[0] <= now]:
                self.pending.remove(n)
                self.notified.append((now, n[1]))
                try:
                    await self.ws.send(json.dumps({"event": "websocket:notify", "payload": n[1]}))
                except websockets.exceptions.ConnectionClosed:
                    return
            await asyncio.sleep(0.005)

    def actions(self, kind):
        return [(t, m) for t, m in self.received if m.get("action") == kind]

    async def hang_up(self):
        """Vonage ends the call by closing the socket."""
        await self.ws.close(1000)

    def vanish(self):
        """The provider's side drops without a close handshake."""
        self.ws.transport.abort()

    async def wait_closed(self, timeout=15):
        await asyncio.wait_for(self.closed.wait(), timeout)
        self.notifier.cancel()
        assert not self.violations, f"brisvox sent what Vonage does not take: {self.violations[:3]}"
        return self.ws.close_code


# --- the tests ---------------------------------------------------------------------------------------

async def test_a_16khz_call_is_heard_answered_and_understood(c):
    vg = await FakeVonage(c, "reply").open()
    app = c.app
    start = await app.wait_for(vg.call_id, "call_start", timeout=10)
    assert start["provider"] == "vonage" and start["stream_id"] == "", start
    assert start["parameters"] == {"script": "reply", "FirstName": "Jane", "uuid": vg.call_id}, start
    assert start["listen_only"] is False, start
    await vg.play(c.clip(0.0, 7.6))
    turn = await app.wait_for(vg.call_id, "turn_end")
    assert 6.5 < turn["end"] < 7.4, turn
    transcript = await app.wait_for(vg.call_id, "transcript")
    assert "dashwood" in transcript["text"].lower(), transcript
    await vg.ws.send(json.dumps({"event": "websocket:dtmf", "digit": "5", "duration": 260}))
    await app.wait_for(vg.call_id, "dtmf", digit="5", timeout=5)
    started = await app.wait_for(vg.call_id, "speak_started", id="r1")
    done = await app.wait_for(vg.call_id, "speak_done", id="r1", timeout=40)
    mark = await app.wait_for(vg.call_id, "mark", name="after-r1", timeout=5)
    # speak_done when Vonage says the reply has played (its notify came back), not before.
    notified = [t for t, _ in vg.notified]
    assert notified and done["_t"] >= notified[0], (done, vg.notified)
    assert done["_t"] - started["_t"] > done["duration_ms"] / 1000 - 0.3, (done["_t"] - started["_t"], done)
    assert mark["_t"] >= done["_t"], "the app's mark comes after the reply"
    # The reply, all of it, in 20 ms frames (the last padded with silence).
    sent_ms = len(vg.audio) / 32
    assert done["duration_ms"] - 1.0 < sent_ms < done["duration_ms"] + 20.0, (len(vg.audio), done)
    await vg.hang_up()
    assert await vg.wait_closed() == 1000
    end = await app.wait_for(vg.call_id, "call_end", timeout=5)
    assert end["reason"] == "caller_hangup", end
    level = rms_dbfs(vg.audio)
    heard = transcribe(c.server, vg.audio, TOKEN, rate=16000)
    error = wer(REPLY, heard)
    print(f"    reply {done['duration_ms'] / 1000:.2f} s of L16 at {level:.1f} dBFS in {len(vg.frames)} frames; "
          f"Whisper heard: {heard!r} (WER {error * 100:.1f} %)", flush=True)
    assert level > -40 and error <= 0.10, (level, heard)


async def test_an_8khz_call_says_goodbye_and_the_app_hangs_up(c):
    # 8 kHz, the token as the endpoint's authorization (an Authorization header).
    vg = await FakeVonage(c, "hangup", path="/v1/telephony/vonage?rate=8000", rate=8000, auth="authorization").open()
    code = await vg.wait_closed(timeout=30)
    assert code == 1000, code
    assert vg.notified, "the socket closed before Vonage played the goodbye"
    assert {size for _, size in vg.frames} == {320}, set(size for _, size in vg.frames)
    done = await c.app.wait_for(vg.call_id, "speak_done", id="bye", timeout=5)
    assert done["duration_ms"] - 1.0 < len(vg.audio) / 16 < done["duration_ms"] + 20.0, (len(vg.audio), done)
    end = await c.app.wait_for(vg.call_id, "call_end", timeout=5)
    assert end["reason"] == "app_hangup", end
    heard = transcribe(c.server, vg.audio, TOKEN, rate=8000)
    print(f"    goodbye at 8 kHz: Whisper heard {heard!r}", flush=True)
    assert goodbye_wer(heard) <= 0.25, heard


async def test_talking_over_the_reply_sends_clear(c):
    vg = await FakeVonage(c, "long").open()
    app = c.app
    await app.wait_for(vg.call_id, "speak_started", id="long", timeout=20)
    sent = await vg.play(c.clip(7.4, 10.4))
    stop = await app.wait_for(vg.call_id, "interrupted", id="long", timeout=10)
    assert stop["reason"] == "barge_in", stop
    clears = vg.actions("clear")
    assert len(clears) == 1, clears
    clear_t = clears[0][0]
    confirmed_t = next(t for b, t in sent if b >= int(stop["at"] * 16000) * 2)
    await asyncio.sleep(1.0)
    after = [t for t, _ in vg.frames if t > clear_t]
    assert not after, f"{len(after)} audio frames after clear"
    assert not app.find(vg.call_id, "speak_done", id="long")
    print(f"    clear {1000 * (clear_t - confirmed_t):.1f} ms after the confirming audio was sent", flush=True)
    assert clear_t - confirmed_t < 0.5, "the barge-in took long"
    await vg.hang_up()
    assert await vg.wait_closed() == 1000


async def test_the_provider_vanishing_mid_reply_ends_the_call(c):
    vg = await FakeVonage(c, "long").open()
    await c.app.wait_for(vg.call_id, "speak_started", id="long", timeout=20)
    while len(vg.audio) < 16000:
        await asyncio.sleep(0.02)
    vg.vanish()
    end = await c.app.wait_for(vg.call_id, "call_end", timeout=10)
    assert end["reason"] == "provider_gone", end
    await c.app.wait_for(vg.call_id, "_closed", timeout=5)


async def test_listen_only_connections_never_send_audio(c):
    vg = await FakeVonage(c, "listen", path="/v1/telephony/vonage/listen").open()
    start = await c.app.wait_for(vg.call_id, "call_start", timeout=10)
    assert start["listen_only"] is True, start
    await vg.play(c.clip(0.0, 7.6), pace=2.0)
    await c.app.wait_for(vg.call_id, "turn_end")
    refused = await c.app.wait_for(vg.call_id, "error", timeout=10)
    assert refused["code"] == "listen_only" and refused["id"] == "r1", refused
    await asyncio.sleep(0.5)
    assert not vg.received and not vg.frames, f"a listen-only connection got {vg.received[:3]}"
    await vg.hang_up()
    assert await vg.wait_closed() == 1000


async def test_malformed_messages_close_only_that_call(c):
    good = await FakeVonage(c, "quiet").open()
    await c.app.wait_for(good.call_id, "call_start", timeout=10)
    cases = [
        ("audio before connected", False, bytes(640), "audio before the stream's first text message"),
        ("not JSON", True, "{", "not JSON"),
        ("a second connected", True, json.dumps({"event": "websocket:connected", "content-type": "audio/l16;rate=16000"}),
         "a second start"),
        ("a bad digit", True, json.dumps({"event": "websocket:dtmf", "digit": "55"}), "0-9"),
        ("oversize", True, json.dumps({"event": "x", "pad": "x" * (200 << 10)}), "larger than"),
    ]
    for name, connected, message, why in cases:
        vg = await FakeVonage(c, "quiet").open(connected=connected)
        await vg.ws.send(message)
        code = await vg.wait_closed(timeout=10)
        assert code in (1008, 1009), (name, code)
        wait_line(c.server, re.escape(why), timeout=5)
    # A content-type brisvox does not take here, and a rate other than the uri's.
    for content_type, why in (("audio/pcmu;rate=16000", "audio/pcmu"), ("audio/l16;rate=8000", "rate=8000")):
        vg = await FakeVonage(c, "quiet", content_type=content_type).open()
        assert await vg.wait_closed(timeout=10) == 1008
        wait_line(c.server, re.escape(why), timeout=5)
    for auth, token, why in ((None, TOKEN, "no token"), ("header", "wrong", "not this server's")):
        vg = await FakeVonage(c, "quiet", auth=auth, token=token).open()
        assert await vg.wait_closed(timeout=10) == 1008
        wait_line(c.server, why, timeout=5)
    # A rate brisvox cannot take in the uri: refused before the upgrade.
    try:
        await FakeVonage(c, "quiet", path="/v1/telephony/vonage?rate=44100").open()
        raise AssertionError("rate=44100 was taken")
    except websockets.exceptions.InvalidStatusCode as e:
        assert e.status_code == 400, e
    # An event Vonage may add later is not the call's; the call goes on.
    await good.ws.send(json.dumps({"event": "websocket:media:update", "x": 1}))
    await good.ws.send(json.dumps({"event": "websocket:dtmf", "digit": "#", "duration": 100}))
    await c.app.wait_for(good.call_id, "dtmf", digit="#", timeout=5)
    assert not good.closed.is_set()
    await good.hang_up()
    assert await good.wait_closed() == 1000


def test_nothing_is_left_open(c):
    m, left = settled_metrics(c.server, parse_metrics, "vonage")
    assert not left, left
    vonage = lambda name: m[f'brisvox_telephony_{name}{{provider="vonage"}}']  # noqa: E731
    assert vonage("calls_total") >= 6 and vonage("clears_total") >= 1 and vonage("dtmf_total") >= 2, m
    errors = lambda reason: m[f'brisvox_telephony_errors_total{{provider="vonage",reason="{reason}"}}']  # noqa: E731
    assert errors("bad_message") == 2 and errors("out_of_order") >= 2 and errors("bad_media_format") == 2, m
    assert errors("unauthorized") == 2, m
    assert m['brisvox_telephony_calls_total{provider="telnyx"}'] == 0, "a Vonage call counted as Telnyx's"
    assert c.server.alive()


TESTS = [test_a_16khz_call_is_heard_answered_and_understood, test_an_8khz_call_says_goodbye_and_the_app_hangs_up,
         test_talking_over_the_reply_sends_clear, test_the_provider_vanishing_mid_reply_ends_the_call,
         test_listen_only_connections_never_send_audio, test_malformed_messages_close_only_that_call,
         test_nothing_is_left_open]



if __name__ == "__main__":
    sys.exit(main(__doc__, TESTS, Context, TOKEN, "vonage"))
