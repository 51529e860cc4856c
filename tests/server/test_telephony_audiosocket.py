#!/usr/bin/python3
"""End-to-end tests of Asterisk's AudioSocket on `brisvox serve --audiosocket-port` (docs/TELEPHONY.md,
"Asterisk (AudioSocket)"), on loopback only, with the real models (Silero, Smart Turn v3.2, Whisper
tiny.en, the Piper voice).

Two fakes stand in for what cannot be reached here:
  - a fake Asterisk (FakeAsterisk), written from the AudioSocket protocol page of Asterisk's
    documentation and what app_audiosocket.c and res_audiosocket.c do: it connects over TCP, sends
    the call's UUID (kind 0x01, 16 bytes), then the caller's audio as frames of kind 0x10 (16-bit
    little-endian PCM at 8 kHz, 320 bytes, one every 20 ms), DTMF (0x03, one ASCII digit); it hangs
    up by closing the socket. From the server it takes audio frames (0x10), which it plays the
    moment they arrive (Asterisk writes each to the channel at once: so it checks that brisvox
    paces them at real time), and hangup (0x00); any other kind ends Asterisk's side of the call,
    here a violation;
  - the scripted application of test_telephony_twilio.py (telephony_common.App).

The caller is the bundled sample recording (speech at 0.32-6.91, 8.83-11.49, 12.19-17.12 s).

  /usr/bin/python3 tests/server/test_telephony_audiosocket.py --brisvox build/release/brisvox \\
      --voice third_party/models/piper/en_US-joe-medium.onnx --sample third_party/audio/sample.wav
"""
import asyncio
import os
import re
import struct
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import parse_metrics, wait_line  # noqa: E402
import telephony_common  # noqa: E402
from telephony_common import REPLY, goodbye_wer, main, rms_dbfs, settled_metrics, transcribe, wer  # noqa: E402

TOKEN = "audiosocket-token"
FRAME = 320  # 20 ms of 16-bit PCM at 8 kHz
RATE_BYTES = 16000  # bytes a second


class Context(telephony_common.Context):
    def clip(self, begin_s, end_s, rate=8000):
        return super().clip(begin_s, end_s, rate)

    @property
    def port(self):
        line = wait_line(self.server, r"AudioSocket on tcp://127\.0\.0\.1:\d+", timeout=10)
        return int(line.rsplit(":", 1)[1])


def frame(kind, payload=b""):
    return struct.pack(">BH", kind, len(payload)) + payload


class FakeAsterisk:
    """One channel's AudioSocket(uuid, host:port) to brisvox."""

    def __init__(self, c, script="reply"):
        self.c = c
        self.script = script
        self.uuid = str(uuid.uuid4())
        self.frames = []      # (time, bytes) of the audio frames brisvox sent
        self.audio = b""
        self.ahead = 0.0      # the most the audio received ran ahead of real time (s)
        self.hangups = []     # times of hangup frames
        self.violations = []  # what Asterisk does not take from a server
        self.closed = asyncio.Event()
        self.reader = self.writer = None

    async def open(self, send_uuid=True):
        self.c.app.scripts[self.uuid] = self.script  # AudioSocket carries no parameters
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.c.port)
        self.task = asyncio.ensure_future(self._read())
        if send_uuid:
            self.writer.write(frame(0x01, uuid.UUID(self.uuid).bytes))
            await self.writer.drain()
        return self

    async def send(self, data):
        self.writer.write(data)
        await self.writer.drain()

    async def play(self, audio, pace=1.0):
        """The caller speaks: `audio` in 20 ms frames at real time. Returns [(bytes sent, time)]."""
        t0 = time.monotonic()
        sent = []
        for i in range(0, len(audio), FRAME):
            await self.send(frame(0x10, audio[i:i + FRAME]))
            sent.append((min(i + FRAME, len(audio)), time.monotonic()))
            await asyncio.sleep(max(0.0, t0 + (i + FRAME) / RATE_BYTES / pace - time.monotonic()))
        return sent

    async def _read(self):
        start = None
        try:
            while True:
                header = await self.reader.readexactly(3)
                kind, length = struct.unpack(">BH", header)
                payload = await self.reader.readexactly(length) if length else b""
                now = time.monotonic()
                if kind == 0x10 and length == FRAME:
                    # Asterisk plays it at once: it must come at real time, not ahead of it.
                    if start is None or now - start > len(self.audio) / RATE_BYTES + 0.5:
                        start, self.audio_at_start = now, len(self.audio)  # a new reply
                    self.frames.append((now, payload))
                    self.audio += payload
                    self.ahead = max(self.ahead, (len(self.audio) - self.audio_at_start) / RATE_BYTES - (now - start))
                elif kind == 0x00 and length == 0:
                    self.hangups.append(now)
                else:
                    self.violations.append(f"a frame of kind 0x{kind:02x} and {length} bytes")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.closed.set()

    async def hang_up(self):
        """The channel hangs up: Asterisk closes the socket."""
        self.writer.close()

    def vanish(self):
        self.writer.transport.abort()

    async def wait_closed(self, timeout=15):
        await asyncio.wait_for(self.closed.wait(), timeout)
        assert not self.violations, f"brisvox sent what Asterisk does not take: {self.violations[:3]}"


async def test_a_call_is_heard_answered_and_understood(c):
    ast = await FakeAsterisk(c, "reply").open()
    app = c.app
    start = await app.wait_for(ast.uuid, "call_start", timeout=10)
    assert start["provider"] == "audiosocket" and start["listen_only"] is False, start
    await ast.play(c.clip(0.0, 7.6))
    turn = await app.wait_for(ast.uuid, "turn_end")
    assert 6.5 < turn["end"] < 7.4, turn
    transcript = await app.wait_for(ast.uuid, "transcript")
    assert "dashwood" in transcript["text"].lower(), transcript
    await ast.send(frame(0x03, b"5"))
    await app.wait_for(ast.uuid, "dtmf", digit="5", timeout=5)
    done = await app.wait_for(ast.uuid, "speak_done", id="r1", timeout=40)
    await app.wait_for(ast.uuid, "mark", name="after-r1", timeout=5)
    sent_ms = len(ast.audio) / 16
    assert done["duration_ms"] - 1.0 < sent_ms < done["duration_ms"] + 20.0, (len(ast.audio), done)
    print(f"    the reply's audio ran at most {1000 * ast.ahead:.0f} ms ahead of real time", flush=True)
    assert ast.ahead < 0.25, "brisvox sent the reply faster than real time"
    await ast.hang_up()
    await ast.wait_closed()
    end = await app.wait_for(ast.uuid, "call_end", timeout=5)
    assert end["reason"] == "caller_hangup", end
    level = rms_dbfs(ast.audio)
    heard = transcribe(c.server, ast.audio, TOKEN, rate=8000)
    error = wer(REPLY, heard)
    print(f"    reply {done['duration_ms'] / 1000:.2f} s of slin in {len(ast.frames)} frames at {level:.1f} dBFS; "
          f"Whisper heard: {heard!r} (WER {error * 100:.1f} %)", flush=True)
    assert level > -40 and error <= 0.10, (level, heard)


async def test_the_app_hangs_up_after_its_goodbye(c):
    ast = await FakeAsterisk(c, "hangup").open()
    await ast.wait_closed(timeout=30)
    assert len(ast.hangups) == 1 and ast.frames and ast.hangups[0] >= ast.frames[-1][0], ast.hangups
    done = await c.app.wait_for(ast.uuid, "speak_done", id="bye", timeout=5)
    assert done["duration_ms"] - 1.0 < len(ast.audio) / 16 < done["duration_ms"] + 20.0, (len(ast.audio), done)
    end = await c.app.wait_for(ast.uuid, "call_end", timeout=5)
    assert end["reason"] == "app_hangup", end
    heard = transcribe(c.server, ast.audio, TOKEN, rate=8000)
    print(f"    goodbye: Whisper heard {heard!r}", flush=True)
    assert goodbye_wer(heard) <= 0.25, heard


async def test_talking_over_the_reply_stops_its_audio(c):
    ast = await FakeAsterisk(c, "long").open()
    app = c.app
    await app.wait_for(ast.uuid, "speak_started", id="long", timeout=20)
    await ast.play(c.clip(7.4, 10.4))
    stop = await app.wait_for(ast.uuid, "interrupted", id="long", timeout=10)
    assert stop["reason"] == "barge_in", stop
    stopped_at = stop["_t"]
    await asyncio.sleep(1.0)
    # Asterisk has no queue to clear: what follows the barge-in is at most the playout lead.
    late = sum(len(p) for t, p in ast.frames if t > stopped_at)
    print(f"    {late / 16:.0f} ms of audio after the barge-in reached the application", flush=True)
    assert late <= 0.1 * RATE_BYTES, f"{late} bytes of audio after the barge-in"
    await ast.hang_up()
    await ast.wait_closed()


async def test_the_provider_vanishing_mid_reply_ends_the_call(c):
    ast = await FakeAsterisk(c, "long").open()
    await c.app.wait_for(ast.uuid, "speak_started", id="long", timeout=20)
    while len(ast.audio) < 8000:
        await asyncio.sleep(0.02)
    ast.vanish()
    end = await c.app.wait_for(ast.uuid, "call_end", timeout=10)
    assert end["reason"] in ("caller_hangup", "provider_gone"), end
    await c.app.wait_for(ast.uuid, "_closed", timeout=5)


async def test_malformed_frames_close_only_that_call(c):
    good = await FakeAsterisk(c, "quiet").open()
    await c.app.wait_for(good.uuid, "call_start", timeout=10)
    cases = [
        ("audio before the uuid", False, frame(0x10, bytes(FRAME)), "media before start"),
        ("a short uuid", False, frame(0x01, b"12345678"), "a UUID is 16"),
        ("a second uuid", True, frame(0x01, uuid.uuid4().bytes), "a second start"),
        ("an odd audio frame", True, frame(0x10, b"\x00\x01\x02"), "pairs of bytes"),
        ("a bad digit", True, frame(0x03, b"x"), "0-9"),
        ("slin16", True, frame(0x11, bytes(640)), "another rate"),
        ("an unknown kind", True, frame(0x42), "not AudioSocket's"),
    ]
    for name, send_uuid, data, why in cases:
        ast = await FakeAsterisk(c, "quiet").open(send_uuid=send_uuid)
        await ast.send(data)
        await ast.wait_closed(timeout=10)
        wait_line(c.server, re.escape(why), timeout=5)
    # Asterisk's error frame is logged; the call goes on.
    await good.send(frame(0xff, b"\x02"))
    wait_line(c.server, re.escape("AudioSocket reports an error: error code 0x02: a frame could not be forwarded"),
              timeout=5)
    await good.send(frame(0x03, b"#"))
    await c.app.wait_for(good.uuid, "dtmf", digit="#", timeout=5)
    assert not good.closed.is_set()
    await good.hang_up()
    await good.wait_closed()


def test_nothing_is_left_open(c):
    m, left = settled_metrics(c.server, parse_metrics, "audiosocket")
    assert not left, left
    a = lambda name: m[f'brisvox_telephony_{name}{{provider="audiosocket"}}']  # noqa: E731
    assert a("calls_total") >= 6 and a("clears_total") >= 1 and a("dtmf_total") >= 2, m
    errors = lambda reason: m[f'brisvox_telephony_errors_total{{provider="audiosocket",reason="{reason}"}}']  # noqa: E731
    assert errors("bad_message") >= 5 and errors("out_of_order") >= 2, m
    assert m['brisvox_telephony_calls_total{provider="asterisk"}'] == 0, "an AudioSocket call counted as chan_websocket's"
    assert c.server.alive()


TESTS = [test_a_call_is_heard_answered_and_understood, test_the_app_hangs_up_after_its_goodbye,
         test_talking_over_the_reply_stops_its_audio, test_the_provider_vanishing_mid_reply_ends_the_call,
         test_malformed_frames_close_only_that_call, test_nothing_is_left_open]


if __name__ == "__main__":
    sys.exit(main(__doc__, TESTS, Context, TOKEN, "audiosocket", ("--audiosocket-port", "0")))
