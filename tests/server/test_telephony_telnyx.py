#!/usr/bin/python3
"""End-to-end tests of Telnyx media streaming on `brisvox serve` (docs/TELEPHONY.md, "Telnyx"), on
loopback only, with the real models (Silero, Smart Turn v3.2, Whisper tiny.en, the Piper voice).

Two fakes stand in for what cannot be reached here:
  - a fake Telnyx (FakeTelnyx), written from Telnyx's "Media Streaming over Websockets" guide and
    its AsyncAPI page "Stream call media over WebSocket": connected, start (stream_id at the top,
    start.call_control_id, start.media_format {encoding, sample_rate, channels}, a TeXML <Stream>'s
    custom_parameters), the caller's audio as base64 RTP payloads (no header) in media frames of
    20 ms at real time, dtmf, stop; snake_case, sequence_number as a string. It takes back only
    what RTP bidirectional mode takes (media with 20 ms to 30 s of audio, mark, clear: each with
    exactly the fields the docs give), plays what brisvox sends at real time, echoes a mark when
    the audio before it has played, and on clear drops what it has not played and returns the
    marks left at once;
  - the scripted application of test_telephony_twilio.py (telephony_common.App).

The caller is the bundled sample recording (speech at 0.32-6.91, 8.83-11.49, 12.19-17.12 s), PCMU
or PCMA at 8 kHz, or L16 (16-bit big-endian, RTP's network byte order: RFC 3551, as Pipecat's
Telnyx serializer writes it) at 16 kHz, as the stream's codec says.

  /usr/bin/python3 tests/server/test_telephony_telnyx.py --brisvox build/release/brisvox \\
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
import warnings
import wave

import websockets

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop  # Python 3.11's G.711 and resampling (Debian's python3)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import parse_metrics, wait_line  # noqa: E402
from telephony_common import REPLY, App, connect, goodbye_wer, main, rms_dbfs, settled_metrics, transcribe, wer  # noqa: E402

TOKEN = "telnyx-token"
RATE = 8000
# Each codec's encoder and decoder from and to 16-bit little-endian PCM, and its bytes a sample.
CODECS = {"PCMU": (audioop.lin2ulaw, audioop.ulaw2lin, 1), "PCMA": (audioop.lin2alaw, audioop.alaw2lin, 1),
          "L16": (audioop.byteswap, audioop.byteswap, 2)}


class Context:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        with wave.open(args.sample, "rb") as w:
            assert w.getframerate() == 16000 and w.getsampwidth() == 2 and w.getnchannels() == 1
            self.pcm16k = w.readframes(w.getnframes())
        self.pcm, _ = audioop.ratecv(self.pcm16k, 2, 1, 16000, RATE, None)
        self.app = None
        self.server = None

    def clip(self, begin_s, end_s, codec="PCMU", rate=RATE):
        pcm = self.pcm16k if rate == 16000 else self.pcm
        return CODECS[codec][0](pcm[int(begin_s * rate) * 2:int(end_s * rate) * 2], 2)


class FakeTelnyx:
    """One Telnyx media stream to brisvox. `auth`: how the streaming auth token travels ("header":
    the x-telnyx-streaming-auth-token header, "connected": in the connected frame, "parameter": a
    <Parameter name="token"> of a TeXML <Stream>, None: not at all)."""

    def __init__(self, c, script="reply", path="/v1/telephony/telnyx", codec="PCMU", auth="header", token=TOKEN,
                 media_format=None, rate=RATE):
        self.c = c
        self.path = path
        self.script = script
        self.codec = codec
        self.rate = rate
        self.bytes_per_s = rate * CODECS[codec][2]
        self.chunk_bytes = self.bytes_per_s // 50  # 20 ms
        self.auth = auth
        self.token = token
        self.media_format = media_format or {"encoding": codec, "sample_rate": rate, "channels": 1}
        self.stream_id = str(uuid.uuid4())
        self.call_id = "v3:" + uuid.uuid4().hex
        self.seq = 0
        self.chunk = 0
        self.received = []  # (time, message) of what brisvox sent
        self.audio = b""    # the media payloads, decoded, in order
        self.play_end = 0.0
        self.pending_marks = []  # [due time, name]
        self.echoed = []  # (time, name)
        self.closed = asyncio.Event()
        self.violations = []  # what brisvox sent that Telnyx does not take
        self.ws = None

    async def open(self, start=True):
        headers = {"x-telnyx-streaming-auth-token": self.token} if self.auth == "header" else {}
        self.ws = await connect(f"ws://127.0.0.1:{self.c.server.port}{self.path}", headers)
        self.reader = asyncio.ensure_future(self._read())
        self.marker = asyncio.ensure_future(self._echo_marks())
        connected = {"event": "connected", "version": "1.0.0"}
        if self.auth == "connected":
            connected["x-telnyx-streaming-auth-token"] = self.token
        await self.ws.send(json.dumps(connected))
        if start:
            await self.send_start()
        return self

    async def send(self, message):
        self.seq += 1
        await self.ws.send(json.dumps({**message, "sequence_number": str(self.seq), "stream_id": self.stream_id}))

    async def send_start(self):
        params = {"script": self.script, "FirstName": "Jane"}
        if self.auth == "parameter":
            params["token"] = self.token
        await self.send({"event": "start",
                         "start": {"user_id": str(uuid.uuid4()), "call_control_id": self.call_id,
                                   "client_state": "aGF2ZSBhIG5pY2UgZGF5ID1d", "from": "+13122010094",
                                   "to": "+13122123456", "custom_parameters": params,
                                   "media_format": self.media_format}})

    async def play(self, audio, pace=1.0):
        """The caller speaks: `audio` (the codec's bytes) in 20 ms media frames at real time.
        Returns [(bytes sent so far, time)]."""
        t0 = time.monotonic()
        sent = []
        for i in range(0, len(audio), self.chunk_bytes):
            self.chunk += 1
            await self.send({"event": "media",
                             "media": {"track": "inbound", "chunk": str(self.chunk),
                                       "timestamp": str(self.chunk * 20),
                                       "payload": base64.b64encode(audio[i:i + self.chunk_bytes]).decode()}})
            sent.append((min(i + self.chunk_bytes, len(audio)), time.monotonic()))
            await asyncio.sleep(max(0.0, t0 + (i + self.chunk_bytes) / self.bytes_per_s / pace - time.monotonic()))
        return sent

    async def _read(self):
        shapes = {"media": {"event", "media"}, "mark": {"event", "mark"}, "clear": {"event"}}
        try:
            async for raw in self.ws:
                now = time.monotonic()
                if not isinstance(raw, str):
                    self.violations.append(f"a binary message of {len(raw)} bytes")
                    continue
                m = json.loads(raw)
                self.received.append((now, m))
                if set(m) != shapes.get(m.get("event"), {None}):
                    self.violations.append(raw[:200])
                    continue
                if m["event"] == "media":
                    payload = base64.b64decode(m["media"]["payload"], validate=True)
                    if (set(m["media"]) != {"payload"} or not self.chunk_bytes <= len(payload) <= 30 * self.bytes_per_s
                            or len(payload) % CODECS[self.codec][2]):
                        self.violations.append(f"media of {len(payload)} bytes: {raw[:100]}")
                    self.audio += payload
                    self.play_end = max(now, self.play_end) + len(payload) / self.bytes_per_s
                elif m["event"] == "mark":
                    if set(m["mark"]) != {"name"}:
                        self.violations.append(raw[:200])
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
            for m in [m for m in self.pending_marks if m[0] <= now]:
                self.pending_marks.remove(m)
                self.echoed.append((now, m[1]))
                try:
                    await self.send({"event": "mark", "mark": {"name": m[1]}})
                except websockets.exceptions.ConnectionClosed:
                    return
            await asyncio.sleep(0.005)

    def events(self, kind):
        return [(t, m) for t, m in self.received if m["event"] == kind]

    def pcm(self):
        return CODECS[self.codec][1](self.audio, 2)

    async def stop(self):
        await self.send({"event": "stop", "stop": {"user_id": "u", "call_control_id": self.call_id}})

    def vanish(self):
        """The provider's side drops without a close handshake."""
        self.ws.transport.abort()

    async def wait_closed(self, timeout=15):
        await asyncio.wait_for(self.closed.wait(), timeout)
        self.marker.cancel()
        assert not self.violations, f"brisvox sent what Telnyx does not take: {self.violations[:3]}"
        return self.ws.close_code


# --- the tests ---------------------------------------------------------------------------------------

async def test_a_pcmu_call_is_heard_answered_and_understood(c):
    tx = await FakeTelnyx(c, "reply").open()
    app = c.app
    start = await app.wait_for(tx.call_id, "call_start", timeout=10)
    assert start["provider"] == "telnyx" and start["stream_id"] == tx.stream_id, start
    assert start["parameters"] == {"script": "reply", "FirstName": "Jane"}, start
    assert start["listen_only"] is False, start
    await tx.play(c.clip(0.0, 7.6))
    turn = await app.wait_for(tx.call_id, "turn_end")
    assert 6.5 < turn["end"] < 7.4, turn
    transcript = await app.wait_for(tx.call_id, "transcript")
    assert "dashwood" in transcript["text"].lower(), transcript
    await tx.send({"event": "dtmf", "occurred_at": "2026-12-04T23:00:00Z", "dtmf": {"digit": "5"}})
    await app.wait_for(tx.call_id, "dtmf", digit="5", timeout=5)
    started = await app.wait_for(tx.call_id, "speak_started", id="r1")
    done = await app.wait_for(tx.call_id, "speak_done", id="r1", timeout=40)
    mark = await app.wait_for(tx.call_id, "mark", name="after-r1", timeout=5)
    # speak_done when Telnyx says the reply has played (its mark came back), not before.
    echoes = [t for t, _ in tx.echoed]
    assert echoes and done["_t"] >= echoes[0], (done, tx.echoed)
    assert done["_t"] - started["_t"] > done["duration_ms"] / 1000 - 0.3, (done["_t"] - started["_t"], done)
    assert mark["_t"] >= done["_t"], "the app's mark comes after the reply"
    # The reply, all of it (its last frame padded to Telnyx's 20 ms at most), in PCMU.
    sent_ms = len(tx.audio) / RATE * 1000
    assert done["duration_ms"] - 1.0 < sent_ms < done["duration_ms"] + 20.0, (len(tx.audio), done)
    # The caller hangs up; then Whisper hears the reply (its request blocks this loop: not while the
    # stream is open, or the server's idle timeout could end it first on a slow machine).
    await tx.stop()
    code = await tx.wait_closed()
    end = await app.wait_for(tx.call_id, "call_end", timeout=5)
    assert end["reason"] == "caller_hangup" and code == 1000, (end, code)
    pcm = tx.pcm()
    level = rms_dbfs(pcm)
    heard = transcribe(c.server, pcm, TOKEN)
    error = wer(REPLY, heard)
    print(f"    reply {done['duration_ms'] / 1000:.2f} s of PCMU at {level:.1f} dBFS in "
          f"{len(tx.events('media'))} media frames; Whisper heard: {heard!r} (WER {error * 100:.1f} %)", flush=True)
    assert level > -40 and error <= 0.10, (level, heard)
    await app.wait_for(tx.call_id, "_closed", timeout=5)


async def test_a_pcma_call_says_goodbye_and_the_app_hangs_up(c):
    # PCMA, the streaming auth token in the connected frame.
    tx = await FakeTelnyx(c, "hangup", path="/v1/telephony/telnyx?codec=PCMA&rate=8000", codec="PCMA",
                          auth="connected").open()
    code = await tx.wait_closed(timeout=30)
    assert code == 1000, code
    assert tx.echoed, "the stream closed before Telnyx played the goodbye"
    done = await c.app.wait_for(tx.call_id, "speak_done", id="bye", timeout=5)
    assert done["duration_ms"] - 1.0 < len(tx.audio) / RATE * 1000 < done["duration_ms"] + 20.0, (len(tx.audio), done)
    end = await c.app.wait_for(tx.call_id, "call_end", timeout=5)
    assert end["reason"] == "app_hangup", end
    heard = transcribe(c.server, tx.pcm(), TOKEN)
    print(f"    goodbye in PCMA: Whisper heard {heard!r}", flush=True)
    assert goodbye_wer(heard) <= 0.25, heard


async def test_an_l16_16khz_call_is_heard_answered_and_understood(c):
    # L16 at 16 kHz, big-endian both ways: the caller's audio swapped into the call, the reply out.
    tx = await FakeTelnyx(c, "reply", path="/v1/telephony/telnyx?codec=L16&rate=16000", codec="L16",
                          rate=16000).open()
    app = c.app
    await app.wait_for(tx.call_id, "call_start", timeout=10)
    await tx.play(c.clip(0.0, 7.6, "L16", rate=16000))
    transcript = await app.wait_for(tx.call_id, "transcript")
    assert "dashwood" in transcript["text"].lower(), transcript
    done = await app.wait_for(tx.call_id, "speak_done", id="r1", timeout=40)
    sent_ms = len(tx.audio) / tx.bytes_per_s * 1000
    assert done["duration_ms"] - 1.0 < sent_ms < done["duration_ms"] + 20.0, (len(tx.audio), done)
    await tx.stop()
    assert await tx.wait_closed() == 1000
    pcm = tx.pcm()
    level = rms_dbfs(pcm)
    heard = transcribe(c.server, pcm, TOKEN, rate=16000)
    error = wer(REPLY, heard)
    print(f"    reply {done['duration_ms'] / 1000:.2f} s of big-endian L16 at 16 kHz, {level:.1f} dBFS; Whisper heard: "
          f"{heard!r} (WER {error * 100:.1f} %)", flush=True)
    # Audio in the wrong byte order would be loud noise, heard as nothing.
    assert level > -40 and error <= 0.10, (level, heard)


async def test_talking_over_the_reply_sends_clear(c):
    tx = await FakeTelnyx(c, "long", auth="parameter").open()
    app = c.app
    await app.wait_for(tx.call_id, "speak_started", id="long", timeout=20)
    sent = await tx.play(c.clip(7.4, 10.4))
    stop = await app.wait_for(tx.call_id, "interrupted", id="long", timeout=10)
    assert stop["reason"] == "barge_in", stop
    clears = tx.events("clear")
    assert len(clears) == 1, clears
    clear_t = clears[0][0]
    confirmed_t = next(t for b, t in sent if b >= int(stop["at"] * RATE))
    await asyncio.sleep(1.0)
    after = [t for t, m in tx.received if m["event"] == "media" and t > clear_t]
    assert not after, f"{len(after)} media messages after clear"
    assert not app.find(tx.call_id, "speak_done", id="long")
    print(f"    clear {1000 * (clear_t - confirmed_t):.1f} ms after the confirming audio was sent", flush=True)
    assert clear_t - confirmed_t < 0.5, "the barge-in took long"
    await tx.stop()
    assert await tx.wait_closed() == 1000


async def test_the_provider_vanishing_mid_reply_ends_the_call(c):
    tx = await FakeTelnyx(c, "long").open()
    await c.app.wait_for(tx.call_id, "speak_started", id="long", timeout=20)
    while len(tx.audio) < RATE // 2:
        await asyncio.sleep(0.02)
    tx.vanish()
    end = await c.app.wait_for(tx.call_id, "call_end", timeout=10)
    assert end["reason"] == "provider_gone", end
    await c.app.wait_for(tx.call_id, "_closed", timeout=5)


async def test_listen_only_streams_never_send_audio(c):
    tx = await FakeTelnyx(c, "listen", path="/v1/telephony/telnyx/listen").open()
    start = await c.app.wait_for(tx.call_id, "call_start", timeout=10)
    assert start["listen_only"] is True, start
    await tx.play(c.clip(0.0, 7.6), pace=2.0)
    await c.app.wait_for(tx.call_id, "turn_end")
    refused = await c.app.wait_for(tx.call_id, "error", timeout=10)
    assert refused["code"] == "listen_only" and refused["id"] == "r1", refused
    await asyncio.sleep(0.5)
    assert not tx.received, f"a listen-only stream got {tx.received[:3]}"
    await tx.stop()
    assert await tx.wait_closed() == 1000


async def test_malformed_messages_close_only_that_call(c):
    good = await FakeTelnyx(c, "quiet").open()
    await c.app.wait_for(good.call_id, "call_start", timeout=10)
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
        tx = await FakeTelnyx(c, "quiet").open(start=start)
        if message is None:
            await tx.send_start()
        elif isinstance(message, dict):
            await tx.send(message)
        else:
            await tx.ws.send(message)
        code = await tx.wait_closed(timeout=10)
        assert code in (1008, 1009), (name, code)
        wait_line(c.server, re.escape(why), timeout=5)
    # An L16 payload of an odd number of bytes: not whole samples.
    tx = await FakeTelnyx(c, "quiet", path="/v1/telephony/telnyx?codec=L16&rate=16000", codec="L16", rate=16000).open()
    await tx.send({**media, "media": {**media["media"], "payload": base64.b64encode(b"\x00\x01\x02").decode()}})
    assert await tx.wait_closed(timeout=10) == 1008
    wait_line(c.server, re.escape("an L16 media payload of 3 bytes"), timeout=5)
    # A codec other than the stream_url's (L16 on a PCMU stream), and a rate other than the stream_url's.
    for fmt, why in (({"encoding": "L16", "sample_rate": 8000, "channels": 1}, '"L16"'),
                     ({"encoding": "PCMU", "sample_rate": 16000, "channels": 1}, "16000 Hz")):
        tx = await FakeTelnyx(c, "quiet", media_format=fmt).open()
        assert await tx.wait_closed(timeout=10) == 1008
        wait_line(c.server, re.escape(why), timeout=5)
    for auth, token, why in ((None, TOKEN, "no token"), ("header", "wrong", "not this server's"),
                             ("connected", "wrong", "not this server's")):
        tx = await FakeTelnyx(c, "quiet", auth=auth, token=token).open()
        assert await tx.wait_closed(timeout=10) == 1008
        wait_line(c.server, why, timeout=5)
    # A codec brisvox cannot take in the stream_url: refused before the upgrade.
    try:
        await FakeTelnyx(c, "quiet", path="/v1/telephony/telnyx?codec=G722").open()
        raise AssertionError("codec=G722 was taken")
    except websockets.exceptions.InvalidStatusCode as e:
        assert e.status_code == 400, e
    # Telnyx's own error frame is logged; the call goes on.
    await good.send({"event": "error", "payload": {"code": 100002, "title": "Unknown Error",
                                                   "detail": "a frame was refused"}})
    wait_line(c.server, "Telnyx reports an error", timeout=5)
    await good.send({"event": "dtmf", "dtmf": {"digit": "#"}})
    await c.app.wait_for(good.call_id, "dtmf", digit="#", timeout=5)
    assert not good.closed.is_set()
    await good.stop()
    assert await good.wait_closed() == 1000


def test_nothing_is_left_open(c):
    m, left = settled_metrics(c.server, parse_metrics, "telnyx")
    assert not left, left
    telnyx = lambda name: m[f'brisvox_telephony_{name}{{provider="telnyx"}}']  # noqa: E731
    assert telnyx("calls_total") >= 6 and telnyx("clears_total") >= 1 and telnyx("dtmf_total") >= 2, m
    errors = lambda reason: m[f'brisvox_telephony_errors_total{{provider="telnyx",reason="{reason}"}}']  # noqa: E731
    assert errors("bad_message") >= 4 and errors("out_of_order") >= 2 and errors("bad_media_format") == 2, m
    assert errors("unauthorized") == 3, m
    assert m['brisvox_telephony_calls_total{provider="twilio"}'] == 0, "a Telnyx call counted as Twilio's"
    assert c.server.alive()


TESTS = [test_a_pcmu_call_is_heard_answered_and_understood, test_a_pcma_call_says_goodbye_and_the_app_hangs_up,
         test_an_l16_16khz_call_is_heard_answered_and_understood, test_talking_over_the_reply_sends_clear, test_the_provider_vanishing_mid_reply_ends_the_call,
         test_listen_only_streams_never_send_audio, test_malformed_messages_close_only_that_call,
         test_nothing_is_left_open]



if __name__ == "__main__":
    sys.exit(main(__doc__, TESTS, Context, TOKEN, "telnyx"))
