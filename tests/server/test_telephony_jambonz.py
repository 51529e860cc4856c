#!/usr/bin/python3
"""End-to-end tests of jambonz's listen verb on `brisvox serve` (docs/TELEPHONY.md, "jambonz"), on
loopback only, with the real models (Silero, Smart Turn v3.2, Whisper tiny.en, the Piper voice).

Two fakes stand in for what cannot be reached here:
  - a fake jambonz (FakeJambonz), written from jambonz's listen verb reference and its
    bidirectional-audio article: it connects asking for the subprotocol "audio.jambonz.org" (or
    "audio.drachtio.org", the name its FreeSWITCH module asks for by default), with the verb's
    wsAuth as HTTP Basic authentication when given; its first message is the preamble, one JSON
    text frame with sampleRate (a number), mixType and the call's attributes (callSid, direction,
    from, to, accountSid) with the verb's metadata beside them; then the caller's audio as binary
    frames of 20 ms of 16-bit little-endian PCM at real time; dtmf as {"event": "dtmf", "dtmf",
    "duration"} with string values; the call ends with a normal close of the socket. With
    bidirectionalAudio streaming it takes back binary frames of audio (any length) and the text
    messages mark {"type": "mark", "data": {"name"}} and killAudio, each with exactly the fields the
    docs give; it plays what it is sent at real time, echoes a mark as {"type": "mark", "data":
    {"name", "event": "playout"}} once the audio before it has played, and answers killAudio by
    dropping what it has not played and echoing each mark behind it with "event": "cleared";
  - the scripted application of test_telephony_twilio.py (telephony_common.App).

The caller is the bundled sample recording (speech at 0.32-6.91, 8.83-11.49, 12.19-17.12 s).

  /usr/bin/python3 tests/server/test_telephony_jambonz.py --brisvox build/release/brisvox \\
      --voice third_party/models/piper/en_US-joe-medium.onnx --sample third_party/audio/sample.wav
"""
import asyncio
import base64
import json
import os
import re
import sys
import time
import uuid

import websockets


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import parse_metrics, wait_line  # noqa: E402
import telephony_common  # noqa: E402
from telephony_common import REPLY, App, connect, goodbye_wer, main, play_frames, rms_dbfs, settled_metrics, transcribe, wer  # noqa: E402

TOKEN = "jambonz-token"
MAX_CALLS = 4  # --max-calls jambonz=4: more than any other test holds at once


class Context(telephony_common.Context):
    def clip(self, begin_s, end_s, rate=8000):
        return super().clip(begin_s, end_s, rate)


class FakeJambonz:
    """One call's listen verb connected to brisvox. `auth`: how the token travels ("metadata": a
    "token" key of the verb's metadata, in the preamble; "basic": the verb's wsAuth, HTTP Basic with
    the token as the password; None: not at all)."""

    def __init__(self, c, script="reply", path="/v1/telephony/jambonz", rate=8000, auth="metadata", token=TOKEN,
                 subprotocol="audio.jambonz.org", mix="mono", preamble_rate=None):
        self.c = c
        self.path = path
        self.script = script
        self.rate = rate
        self.frame = rate // 50 * 2  # 20 ms of 16-bit samples
        self.auth = auth
        self.token = token
        self.subprotocol = subprotocol
        self.mix = mix
        self.preamble_rate = preamble_rate or rate
        self.call_sid = str(uuid.uuid4())
        self.received = []  # (time, message) of brisvox's text frames, parsed
        self.frames = []    # (time, size) of its binary frames
        self.audio = b""    # the audio it sent, in order
        self.play_end = 0.0
        self.pending = []   # [due time, name] of marks
        self.echoed = []    # (time, name, event) of the marks echoed
        self.closed = asyncio.Event()
        self.violations = []  # what brisvox sent that jambonz does not take
        self.ws = None

    async def open(self, preamble=True):
        headers = {}
        if self.auth == "basic":
            headers["Authorization"] = "Basic " + base64.b64encode(f"jambonz:{self.token}".encode()).decode()
        protocols = [self.subprotocol] if self.subprotocol else None
        self.ws = await connect(f"ws://127.0.0.1:{self.c.server.port}{self.path}", headers, subprotocols=protocols)
        assert self.ws.subprotocol == self.subprotocol, (self.ws.subprotocol, self.subprotocol)
        self.reader = asyncio.ensure_future(self._read())
        self.marker = asyncio.ensure_future(self._echo_marks())
        if preamble:
            message = {"sampleRate": self.preamble_rate, "mixType": self.mix, "callSid": self.call_sid,
                       "direction": "inbound", "from": "+15551230000", "to": "+15557650000",
                       "accountSid": "9351f46a-678c-43f5-b8a6-d4eb58d131af", "callId": "c1@10.0.0.5",
                       "sipStatus": 200, "script": self.script}
            if self.auth == "metadata":
                message["token"] = self.token
            await self.ws.send(json.dumps(message))
        return self

    async def play(self, audio, pace=1.0):
        """The caller speaks: `audio` in 20 ms binary frames at real time. Returns [(bytes sent, time)]."""
        return await play_frames(self.ws, audio, self.frame, 2 * self.rate, pace)

    async def _send_mark(self, name, event):
        self.echoed.append((time.monotonic(), name, event))
        await self.ws.send(json.dumps({"type": "mark", "data": {"name": name, "event": event}}))

    async def _read(self):
        try:
            async for raw in self.ws:
                now = time.monotonic()
                if isinstance(raw, bytes):
                    self.frames.append((now, len(raw)))
                    self.audio += raw
                    self.play_end = max(now, self.play_end) + len(raw) / (2 * self.rate)
                    continue
                m = json.loads(raw)
                self.received.append((now, m))
                if (m.get("type") == "mark" and set(m) == {"type", "data"} and isinstance(m["data"], dict)
                        and set(m["data"]) == {"name"}):
                    self.pending.append([max(now, self.play_end), m["data"]["name"]])
                elif m == {"type": "killAudio"}:
                    # What was not played is dropped; the marks behind it come back "cleared".
                    self.play_end = now
                    pending, self.pending = self.pending, []
                    for _, name in pending:
                        await self._send_mark(name, "cleared")
                else:
                    self.violations.append(raw[:200])
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            self.closed.set()

    async def _echo_marks(self):
        while not self.closed.is_set():
            now = time.monotonic()
            for n in [n for n in self.pending if n[0] <= now]:
                self.pending.remove(n)
                try:
                    await self._send_mark(n[1], "playout")
                except websockets.exceptions.ConnectionClosed:
                    return
            await asyncio.sleep(0.005)

    def messages(self, kind):
        return [(t, m) for t, m in self.received if m.get("type") == kind]

    async def hang_up(self):
        """jambonz ends the verb by closing the socket (code 1000) when the caller hangs up."""
        await self.ws.close(1000)

    def vanish(self):
        """The provider's side drops without a close handshake."""
        self.ws.transport.abort()

    async def wait_closed(self, timeout=15):
        await asyncio.wait_for(self.closed.wait(), timeout)
        self.marker.cancel()
        assert not self.violations, f"brisvox sent what jambonz does not take: {self.violations[:3]}"
        return self.ws.close_code


# --- the tests ---------------------------------------------------------------------------------------

async def test_an_8khz_call_is_heard_answered_and_understood(c):
    jb = await FakeJambonz(c, "reply").open()
    app = c.app
    start = await app.wait_for(jb.call_sid, "call_start", timeout=10)
    assert start["provider"] == "jambonz" and start["stream_id"] == "", start
    assert start["parameters"]["script"] == "reply" and start["parameters"]["from"] == "+15551230000", start
    assert "token" not in start["parameters"] and start["listen_only"] is False, start
    await jb.play(c.clip(0.0, 7.6))
    turn = await app.wait_for(jb.call_sid, "turn_end")
    assert 6.5 < turn["end"] < 7.4, turn
    transcript = await app.wait_for(jb.call_sid, "transcript")
    assert "dashwood" in transcript["text"].lower(), transcript
    await jb.ws.send(json.dumps({"event": "dtmf", "dtmf": "5", "duration": "1600"}))
    await app.wait_for(jb.call_sid, "dtmf", digit="5", timeout=5)
    started = await app.wait_for(jb.call_sid, "speak_started", id="r1")
    done = await app.wait_for(jb.call_sid, "speak_done", id="r1", timeout=40)
    mark = await app.wait_for(jb.call_sid, "mark", name="after-r1", timeout=5)
    # speak_done when jambonz says the reply has played (its mark came back "playout"), not before.
    played = [t for t, _, event in jb.echoed if event == "playout"]
    assert played and done["_t"] >= played[0], (done, jb.echoed)
    assert done["_t"] - started["_t"] > done["duration_ms"] / 1000 - 0.3, (done["_t"] - started["_t"], done)
    assert mark["_t"] >= done["_t"], "the app's mark comes after the reply"
    sent_ms = len(jb.audio) / 16
    assert done["duration_ms"] - 1.0 < sent_ms < done["duration_ms"] + 20.0, (len(jb.audio), done)
    await jb.hang_up()
    assert await jb.wait_closed() == 1000
    end = await app.wait_for(jb.call_sid, "call_end", timeout=5)
    assert end["reason"] == "caller_hangup", end
    level = rms_dbfs(jb.audio)
    heard = transcribe(c.server, jb.audio, TOKEN, rate=8000)
    error = wer(REPLY, heard)
    print(f"    reply {done['duration_ms'] / 1000:.2f} s of L16 at {level:.1f} dBFS in {len(jb.frames)} frames; "
          f"Whisper heard: {heard!r} (WER {error * 100:.1f} %)", flush=True)
    assert level > -40 and error <= 0.10, (level, heard)


async def test_a_16khz_call_says_goodbye_and_the_app_hangs_up(c):
    # 16 kHz, wsAuth (HTTP Basic), and the subprotocol jambonz's FreeSWITCH module asks for by default.
    jb = await FakeJambonz(c, "hangup", path="/v1/telephony/jambonz?rate=16000", rate=16000, auth="basic",
                           subprotocol="audio.drachtio.org").open()
    code = await jb.wait_closed(timeout=30)
    assert code == 1000, code
    assert any(event == "playout" for _, _, event in jb.echoed), "the socket closed before jambonz played the goodbye"
    done = await c.app.wait_for(jb.call_sid, "speak_done", id="bye", timeout=5)
    assert done["duration_ms"] - 1.0 < len(jb.audio) / 32 < done["duration_ms"] + 20.0, (len(jb.audio), done)
    end = await c.app.wait_for(jb.call_sid, "call_end", timeout=5)
    assert end["reason"] == "app_hangup", end
    heard = transcribe(c.server, jb.audio, TOKEN, rate=16000)
    print(f"    goodbye at 16 kHz: Whisper heard {heard!r}", flush=True)
    assert goodbye_wer(heard) <= 0.25, heard


async def test_talking_over_the_reply_sends_kill_audio(c):
    jb = await FakeJambonz(c, "long").open()
    app = c.app
    await app.wait_for(jb.call_sid, "speak_started", id="long", timeout=20)
    sent = await jb.play(c.clip(7.4, 10.4))
    stop = await app.wait_for(jb.call_sid, "interrupted", id="long", timeout=10)
    assert stop["reason"] == "barge_in", stop
    kills = jb.messages("killAudio")
    assert len(kills) == 1, kills
    kill_t = kills[0][0]
    confirmed_t = next(t for b, t in sent if b >= int(stop["at"] * 8000) * 2)
    await asyncio.sleep(1.0)
    after = [t for t, _ in jb.frames if t > kill_t]
    assert not after, f"{len(after)} audio frames after killAudio"
    # A mark queued behind the dropped audio comes back "cleared", never "playout" (here the reply's
    # mark was not yet sent: brisvox sends audio at most the playout lead ahead).
    assert all(event == "cleared" for t, _, event in jb.echoed if t > kill_t), jb.echoed
    assert not app.find(jb.call_sid, "speak_done", id="long")
    print(f"    killAudio {1000 * (kill_t - confirmed_t):.1f} ms after the confirming audio was sent", flush=True)
    assert kill_t - confirmed_t < 0.5, "the barge-in took long"
    await jb.hang_up()
    assert await jb.wait_closed() == 1000


async def test_the_provider_vanishing_mid_reply_ends_the_call(c):
    jb = await FakeJambonz(c, "long").open()
    await c.app.wait_for(jb.call_sid, "speak_started", id="long", timeout=20)
    while len(jb.audio) < 8000:
        await asyncio.sleep(0.02)
    jb.vanish()
    end = await c.app.wait_for(jb.call_sid, "call_end", timeout=10)
    assert end["reason"] == "provider_gone", end
    await c.app.wait_for(jb.call_sid, "_closed", timeout=5)


async def test_listen_only_connections_never_send_audio(c):
    jb = await FakeJambonz(c, "listen", path="/v1/telephony/jambonz/listen", subprotocol=None).open()
    start = await c.app.wait_for(jb.call_sid, "call_start", timeout=10)
    assert start["listen_only"] is True, start
    await jb.play(c.clip(0.0, 7.6), pace=2.0)
    await c.app.wait_for(jb.call_sid, "turn_end")
    refused = await c.app.wait_for(jb.call_sid, "error", timeout=10)
    assert refused["code"] == "listen_only" and refused["id"] == "r1", refused
    await asyncio.sleep(0.5)
    assert not jb.received and not jb.frames, f"a listen-only connection got {jb.received[:3]}"
    await jb.hang_up()
    assert await jb.wait_closed() == 1000


async def test_malformed_messages_close_only_that_call(c):
    good = await FakeJambonz(c, "quiet").open()
    await c.app.wait_for(good.call_sid, "call_start", timeout=10)
    cases = [
        ("audio before the preamble", False, bytes(320), "audio before the stream's first text message"),
        ("a preamble that is not JSON", False, "{", "not JSON"),
        ("a preamble without sampleRate", False, json.dumps({"callSid": "x", "mixType": "mono"}), "sampleRate"),
        ("a second preamble", True, json.dumps({"sampleRate": 8000, "callSid": "y"}), "preamble"),
        ("a bad digit", True, json.dumps({"event": "dtmf", "dtmf": "55", "duration": "1600"}), "0-9"),
        ("oversize", True, json.dumps({"type": "x", "pad": "x" * (200 << 10)}), "larger than"),
    ]
    for name, preamble, message, why in cases:
        jb = await FakeJambonz(c, "quiet").open(preamble=preamble)
        await jb.ws.send(message)
        code = await jb.wait_closed(timeout=10)
        assert code in (1008, 1009), (name, code)
        wait_line(c.server, re.escape(why), timeout=5)
    # A mix that carries more than the caller, and a rate other than the url's.
    for kwargs, why in (({"mix": "mixed"}, 'mixType is "mixed"'), ({"preamble_rate": 16000}, "sampleRate is 16000")):
        jb = await FakeJambonz(c, "quiet", **kwargs).open()
        assert await jb.wait_closed(timeout=10) == 1008
        wait_line(c.server, re.escape(why), timeout=5)
    for auth, token, why in ((None, TOKEN, "no token"), ("metadata", "wrong", "not this server's")):
        jb = await FakeJambonz(c, "quiet", auth=auth, token=token).open()
        assert await jb.wait_closed(timeout=10) == 1008
        wait_line(c.server, why, timeout=5)
    # Refused before the upgrade: a rate brisvox cannot take, a subprotocol that is not jambonz's.
    for path, protocol in (("/v1/telephony/jambonz?rate=48000", "audio.jambonz.org"),
                           ("/v1/telephony/jambonz", "audio.example.org")):
        try:
            await FakeJambonz(c, "quiet", path=path, subprotocol=protocol).open()
            raise AssertionError(f"{path} with {protocol} was taken")
        except websockets.exceptions.InvalidStatusCode as e:
            assert e.status_code == 400, e
    # What jambonz sends that brisvox never asked for (playDone answers a playAudio) is not the
    # call's; the call goes on.
    await good.ws.send(json.dumps({"type": "playDone", "data": {"id": "x", "playbackSeconds": 1}}))
    await good.ws.send(json.dumps({"event": "dtmf", "dtmf": "#", "duration": "800"}))
    await c.app.wait_for(good.call_sid, "dtmf", digit="#", timeout=5)
    assert not good.closed.is_set()
    await good.hang_up()
    assert await good.wait_closed() == 1000


async def test_the_providers_call_limit_refuses_one_more(c):
    # The server runs with --max-calls jambonz=4 (and no limit for others).
    calls = [await FakeJambonz(c, "quiet").open() for _ in range(MAX_CALLS)]
    for jb in calls:
        await c.app.wait_for(jb.call_sid, "call_start", timeout=10)
    # Refused on the upgrade (a plain connect: telephony_common.connect would retry the 503).
    try:
        await websockets.connect(f"ws://127.0.0.1:{c.server.port}/v1/telephony/jambonz?token={TOKEN}",
                                 subprotocols=["audio.jambonz.org"], open_timeout=10)
        raise AssertionError(f"call {MAX_CALLS + 1} was taken")
    except websockets.exceptions.InvalidStatusCode as e:
        assert e.status_code == 503 and e.headers.get("Retry-After") == "1", e
    # A call that ends gives its place back.
    await calls[0].hang_up()
    assert await calls[0].wait_closed() == 1000
    await c.app.wait_for(calls[0].call_sid, "_closed", timeout=5)
    again = await FakeJambonz(c, "quiet").open()
    await c.app.wait_for(again.call_sid, "call_start", timeout=10)
    for jb in calls[1:] + [again]:
        await jb.hang_up()
        assert await jb.wait_closed() == 1000


def test_nothing_is_left_open(c):
    m, left = settled_metrics(c.server, parse_metrics, "jambonz")
    assert not left, left
    jambonz = lambda name: m[f'brisvox_telephony_{name}{{provider="jambonz"}}']  # noqa: E731
    assert jambonz("calls_total") >= 6 and jambonz("clears_total") >= 1 and jambonz("dtmf_total") >= 2, m
    errors = lambda reason: m[f'brisvox_telephony_errors_total{{provider="jambonz",reason="{reason}"}}']  # noqa: E731
    assert errors("bad_message") == 4 and errors("out_of_order") >= 1 and errors("bad_media_format") == 2, m
    assert errors("unauthorized") == 2 and errors("call_limit") == 1, m
    assert m['brisvox_telephony_calls_total{provider="vonage"}'] == 0, "a jambonz call counted as Vonage's"
    assert c.server.alive()


TESTS = [test_an_8khz_call_is_heard_answered_and_understood, test_a_16khz_call_says_goodbye_and_the_app_hangs_up,
         test_talking_over_the_reply_sends_kill_audio, test_the_provider_vanishing_mid_reply_ends_the_call,
         test_listen_only_connections_never_send_audio, test_malformed_messages_close_only_that_call,
         test_the_providers_call_limit_refuses_one_more, test_nothing_is_left_open]


if __name__ == "__main__":
    sys.exit(main(__doc__, TESTS, Context, TOKEN, "jambonz", ("--max-calls", f"jambonz={MAX_CALLS}")))
