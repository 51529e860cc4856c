#!/usr/bin/python3
"""End-to-end tests of FreeSWITCH's mod_audio_fork on `brisvox serve` (docs/TELEPHONY.md,
"FreeSWITCH"), on loopback only, with the real models (Silero, Smart Turn v3.2, Whisper tiny.en,
the Piper voice).

Two fakes stand in for what cannot be reached here:
  - a fake FreeSWITCH (FakeFreeswitch), written from mod_audio_fork's README
    (drachtio-freeswitch-modules) and the application side its events call for: `uuid_audio_fork
    <uuid> start <url> mono <8k|16k> <metadata>` connects asking for the subprotocol
    "audio.drachtio.org", sends the metadata as the first text frame when there is one, then the
    caller's audio as binary frames of 20 ms of 16-bit little-endian PCM at real time; send_text
    sends a text frame (here jambonz's DTMF event, and free text); stop sends its text and closes
    the socket with 1000; graceful-shutdown sends an empty binary frame and waits for the server's
    close. From the server it takes JSON text frames only: playAudio ({"type",
    "data": {"audioContentType": "raw", "sampleRate", "audioContent"}}), whose audio the module
    writes to a file and the FreeSWITCH application plays, one file after the other, at real time;
    killAudio, which breaks the playback (and the application drops the files it has queued, as
    docs/TELEPHONY.md tells it to); disconnect, on which the application hangs up (stop). A binary
    frame from the server is dropped by the module: here it is a violation, as is any other message;
  - the scripted application of test_telephony_twilio.py (telephony_common.App).

The caller is the bundled sample recording (speech at 0.32-6.91, 8.83-11.49, 12.19-17.12 s).

  /usr/bin/python3 tests/server/test_telephony_freeswitch.py --brisvox build/release/brisvox \\
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

TOKEN = "freeswitch-token"
CLIP_MS = 250  # brisvox's playAudio clips (freeswitch_front.h)


class Context(telephony_common.Context):
    def clip(self, begin_s, end_s, rate=8000):
        return super().clip(begin_s, end_s, rate)


class FakeFreeswitch:
    """One channel's uuid_audio_fork to brisvox. `auth`: how the token travels ("url": ?token=;
    "metadata": a "token" key of the metadata; None: not at all)."""

    def __init__(self, c, script="reply", path="/v1/telephony/freeswitch", rate=8000, auth="url", token=TOKEN,
                 subprotocol="audio.drachtio.org"):
        self.c = c
        self.script = script
        self.rate = rate
        self.frame = rate // 50 * 2  # 20 ms of 16-bit samples
        self.auth = auth
        self.token = token
        query = [] if "?" in path else [f"rate={rate}"]
        if auth == "url":
            query.append(f"token={token}")
        self.url = path + (("&" if "?" in path else "?") + "&".join(query) if query else "")
        self.subprotocol = subprotocol
        self.uuid = str(uuid.uuid4())
        self.received = []   # (time, message) of brisvox's text frames, parsed
        self.clips = []      # (time, bytes) of the playAudio audio, in order
        self.audio = b""     # all of it
        self.play_end = 0.0  # when the application's queued files have all played
        self.killed = []     # times of killAudio
        self.disconnects = []
        self.closed = asyncio.Event()
        self.violations = []  # what brisvox sent that mod_audio_fork does not take
        self.ws = None

    async def open(self, metadata=True):
        protocols = [self.subprotocol] if self.subprotocol else None
        self.ws = await connect(f"ws://127.0.0.1:{self.c.server.port}{self.url}", subprotocols=protocols)
        assert self.ws.subprotocol == self.subprotocol, (self.ws.subprotocol, self.subprotocol)
        self.reader = asyncio.ensure_future(self._read())
        if metadata:
            message = {"uuid": self.uuid, "caller": "+15551230000", "destination": "1000", "script": self.script}
            if self.auth == "metadata":
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
                    self.violations.append(f"a binary frame of {len(raw)} bytes (the module drops them)")
                    continue
                m = json.loads(raw)
                self.received.append((now, m))
                data = m.get("data")
                if (m.get("type") == "playAudio" and set(m) == {"type", "data"} and isinstance(data, dict)
                        and set(data) == {"audioContentType", "sampleRate", "audioContent"}
                        and data["audioContentType"] == "raw" and data["sampleRate"] == self.rate):
                    pcm = base64.b64decode(data["audioContent"], validate=True)
                    self.clips.append((now, pcm))
                    self.audio += pcm
                    self.play_end = max(now, self.play_end) + len(pcm) / (2 * self.rate)
                elif m == {"type": "killAudio"}:
                    # The module breaks the playback; the application drops its queued files.
                    self.killed.append(now)
                    self.play_end = now
                elif m == {"type": "disconnect"}:
                    # The application hangs up the channel: the fork stops, the socket closes.
                    self.disconnects.append(now)
                    await self.ws.close(1000)
                else:
                    self.violations.append(raw[:200])
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            self.closed.set()

    def messages(self, kind):
        return [(t, m) for t, m in self.received if m.get("type") == kind]

    async def hang_up(self, text=None):
        """The channel hangs up: uuid_audio_fork's stop sends its text, then closes with 1000."""
        if text is not None:
            await self.ws.send(text)
        await self.ws.close(1000)

    async def graceful_shutdown(self):
        """uuid_audio_fork's graceful-shutdown: the module stops its audio and sends an empty binary
        frame "to flush any final responses"; the server closes."""
        await self.ws.send(b"")

    def vanish(self):
        """FreeSWITCH drops without a close handshake."""
        self.ws.transport.abort()

    async def wait_closed(self, timeout=15):
        await asyncio.wait_for(self.closed.wait(), timeout)
        assert not self.violations, f"brisvox sent what mod_audio_fork does not take: {self.violations[:3]}"
        return self.ws.close_code


def check_clips(fs, rate):
    """Every playAudio clip but none is exactly CLIP_MS long (a file for the application to play)."""
    sizes = {len(pcm) for _, pcm in fs.clips}
    assert sizes <= {rate // 1000 * CLIP_MS * 2}, sizes


# --- the tests ---------------------------------------------------------------------------------------

async def test_an_8khz_call_is_heard_answered_and_understood(c):
    fs = await FakeFreeswitch(c, "reply").open()
    app = c.app
    start = await app.wait_for(fs.uuid, "call_start", timeout=10)
    assert start["provider"] == "freeswitch" and start["stream_id"] == "", start
    assert start["parameters"]["script"] == "reply" and start["parameters"]["caller"] == "+15551230000", start
    assert start["parameters"]["uuid"] == fs.uuid and start["listen_only"] is False, start
    await fs.play(c.clip(0.0, 7.6))
    turn = await app.wait_for(fs.uuid, "turn_end")
    assert 6.5 < turn["end"] < 7.4, turn
    transcript = await app.wait_for(fs.uuid, "transcript")
    assert "dashwood" in transcript["text"].lower(), transcript
    # send_text with jambonz's DTMF event is the caller's key; any other text is not the call's.
    await fs.ws.send(json.dumps({"event": "dtmf", "dtmf": "5", "duration": "1600"}))
    await fs.ws.send("transfer requested by the dialplan")
    await app.wait_for(fs.uuid, "dtmf", digit="5", timeout=5)
    started = await app.wait_for(fs.uuid, "speak_started", id="r1")
    done = await app.wait_for(fs.uuid, "speak_done", id="r1", timeout=40)
    mark = await app.wait_for(fs.uuid, "mark", name="after-r1", timeout=5)
    # The module echoes nothing: speak_done comes when the last clip is sent, paced at real time
    # (at most the playout lead, 0.5 s, ahead of it).
    last_clip = fs.clips[-1][0]
    assert done["_t"] >= last_clip - 0.1, (done["_t"], last_clip)
    assert done["_t"] - started["_t"] > done["duration_ms"] / 1000 - 0.8, (done["_t"] - started["_t"], done)
    assert mark["_t"] >= done["_t"], "the app's mark comes after the reply"
    check_clips(fs, 8000)
    sent_ms = len(fs.audio) / 16
    assert done["duration_ms"] - 1.0 < sent_ms < done["duration_ms"] + CLIP_MS, (len(fs.audio), done)
    await fs.hang_up(json.dumps({"reason": "caller hung up"}))
    assert await fs.wait_closed() == 1000
    end = await app.wait_for(fs.uuid, "call_end", timeout=5)
    assert end["reason"] == "caller_hangup", end
    level = rms_dbfs(fs.audio)
    heard = transcribe(c.server, fs.audio, TOKEN, rate=8000)
    error = wer(REPLY, heard)
    print(f"    reply {done['duration_ms'] / 1000:.2f} s of L16 at {level:.1f} dBFS in {len(fs.clips)} playAudio "
          f"clips; Whisper heard: {heard!r} (WER {error * 100:.1f} %)", flush=True)
    assert level > -40 and error <= 0.10, (level, heard)


async def test_a_16khz_call_says_goodbye_and_the_app_hangs_up_with_disconnect(c):
    # 16 kHz, the token in the metadata.
    fs = await FakeFreeswitch(c, "hangup", rate=16000, auth="metadata").open()
    code = await fs.wait_closed(timeout=30)
    assert code == 1000, code
    assert len(fs.disconnects) == 1, fs.received[-3:]
    assert fs.clips and fs.disconnects[0] >= fs.clips[-1][0], "disconnect came before the goodbye's audio"
    done = await c.app.wait_for(fs.uuid, "speak_done", id="bye", timeout=5)
    check_clips(fs, 16000)
    assert done["duration_ms"] - 1.0 < len(fs.audio) / 32 < done["duration_ms"] + CLIP_MS, (len(fs.audio), done)
    end = await c.app.wait_for(fs.uuid, "call_end", timeout=5)
    assert end["reason"] == "app_hangup", end
    heard = transcribe(c.server, fs.audio, TOKEN, rate=16000)
    print(f"    goodbye at 16 kHz in {len(fs.clips)} clips: Whisper heard {heard!r}", flush=True)
    assert goodbye_wer(heard) <= 0.25, heard


async def test_talking_over_the_reply_sends_kill_audio(c):
    fs = await FakeFreeswitch(c, "long").open()
    app = c.app
    await app.wait_for(fs.uuid, "speak_started", id="long", timeout=20)
    sent = await fs.play(c.clip(7.4, 10.4))
    stop = await app.wait_for(fs.uuid, "interrupted", id="long", timeout=10)
    assert stop["reason"] == "barge_in", stop
    assert len(fs.killed) == 1, fs.killed
    kill_t = fs.killed[0]
    confirmed_t = next(t for b, t in sent if b >= int(stop["at"] * 8000) * 2)
    await asyncio.sleep(1.0)
    after = [t for t, _ in fs.clips if t > kill_t]
    assert not after, f"{len(after)} playAudio clips after killAudio"
    assert not app.find(fs.uuid, "speak_done", id="long")
    print(f"    killAudio {1000 * (kill_t - confirmed_t):.1f} ms after the confirming audio was sent", flush=True)
    assert kill_t - confirmed_t < 0.5, "the barge-in took long"
    await fs.graceful_shutdown()
    assert await fs.wait_closed() == 1000
    end = await app.wait_for(fs.uuid, "call_end", timeout=5)
    assert end["reason"] == "caller_hangup", end
    wait_line(c.server, re.escape("FreeSWITCH's graceful shutdown (an empty binary frame)"), timeout=5)


async def test_audio_before_any_metadata_starts_the_call(c):
    # uuid_audio_fork's metadata is optional: the token then comes in the url.
    fs = await FakeFreeswitch(c, "quiet").open(metadata=False)
    await fs.play(c.clip(0.0, 0.4))
    # No metadata, no uuid: the call's id is empty, its session_id the server's.
    start = await c.app.wait_for("", "call_start", timeout=10)
    assert start["parameters"] == {} and start["provider"] == "freeswitch" and start["session_id"], start
    await fs.hang_up()
    assert await fs.wait_closed() == 1000
    # Without a token anywhere, the first audio ends the call.
    fs = await FakeFreeswitch(c, "quiet", auth=None).open(metadata=False)
    await fs.ws.send(bytes(320))
    assert await fs.wait_closed(timeout=10) == 1008
    wait_line(c.server, re.escape("no token: add ?token= to uuid_audio_fork's url"), timeout=5)


async def test_the_provider_vanishing_mid_reply_ends_the_call(c):
    fs = await FakeFreeswitch(c, "long").open()
    await c.app.wait_for(fs.uuid, "speak_started", id="long", timeout=20)
    while len(fs.audio) < 8000:
        await asyncio.sleep(0.02)
    fs.vanish()
    end = await c.app.wait_for(fs.uuid, "call_end", timeout=10)
    assert end["reason"] == "provider_gone", end
    await c.app.wait_for(fs.uuid, "_closed", timeout=5)


async def test_listen_only_connections_never_send_audio(c):
    fs = await FakeFreeswitch(c, "listen", path="/v1/telephony/freeswitch/listen", subprotocol=None).open()
    start = await c.app.wait_for(fs.uuid, "call_start", timeout=10)
    assert start["listen_only"] is True, start
    await fs.play(c.clip(0.0, 7.6), pace=2.0)
    await c.app.wait_for(fs.uuid, "turn_end")
    refused = await c.app.wait_for(fs.uuid, "error", timeout=10)
    assert refused["code"] == "listen_only" and refused["id"] == "r1", refused
    await asyncio.sleep(0.5)
    assert not fs.received, f"a listen-only connection got {fs.received[:3]}"
    await fs.hang_up()
    assert await fs.wait_closed() == 1000


async def test_malformed_messages_close_only_that_call(c):
    good = await FakeFreeswitch(c, "quiet").open()
    await c.app.wait_for(good.uuid, "call_start", timeout=10)
    cases = [
        ("metadata that is not JSON", False, "caller=5551230000", "must be one JSON object"),
        ("metadata whose uuid is not a string", False, json.dumps({"uuid": 5}), "uuid must be a string"),
        ("a bad digit", True, json.dumps({"event": "dtmf", "dtmf": "55"}), "0-9"),
        ("oversize", True, json.dumps({"note": "x" * (200 << 10)}), "larger than"),
    ]
    for name, metadata, message, why in cases:
        fs = await FakeFreeswitch(c, "quiet").open(metadata=metadata)
        await fs.ws.send(message)
        code = await fs.wait_closed(timeout=10)
        assert code in (1008, 1009), (name, code)
        wait_line(c.server, re.escape(why), timeout=5)
    fs = await FakeFreeswitch(c, "quiet", auth="metadata", token="wrong").open()
    assert await fs.wait_closed(timeout=10) == 1008
    wait_line(c.server, "not this server's", timeout=5)
    # Refused before the upgrade: a rate brisvox cannot take, a subprotocol that is not a name.
    for path, protocol in (("/v1/telephony/freeswitch?rate=48000", "audio.drachtio.org"),
                           ("/v1/telephony/freeswitch?rate=8000&mix=stereo", "audio.drachtio.org")):
        try:
            await FakeFreeswitch(c, "quiet", path=path, subprotocol=protocol).open()
            raise AssertionError(f"{path} was taken")
        except websockets.exceptions.InvalidStatusCode as e:
            assert e.status_code == 400, e
    # A module configured with another subprotocol name is answered with it.
    other = await FakeFreeswitch(c, "quiet", subprotocol="audio.example.org").open()
    await c.app.wait_for(other.uuid, "call_start", timeout=10)
    await other.hang_up()
    assert await other.wait_closed() == 1000
    # The application's own texts are not the call's; the call goes on.
    await good.ws.send("{not json")
    await good.ws.send(json.dumps({"event": "dtmf", "dtmf": "#", "duration": "800"}))
    await c.app.wait_for(good.uuid, "dtmf", digit="#", timeout=5)
    assert not good.closed.is_set()
    await good.hang_up()
    assert await good.wait_closed() == 1000


def test_nothing_is_left_open(c):
    m, left = settled_metrics(c.server, parse_metrics, "freeswitch")
    assert not left, left
    fs = lambda name: m[f'brisvox_telephony_{name}{{provider="freeswitch"}}']  # noqa: E731
    assert fs("calls_total") >= 8 and fs("clears_total") >= 1 and fs("dtmf_total") >= 2, m
    errors = lambda reason: m[f'brisvox_telephony_errors_total{{provider="freeswitch",reason="{reason}"}}']  # noqa: E731
    assert errors("bad_message") == 3 and errors("unauthorized") == 2, m
    assert m['brisvox_telephony_calls_total{provider="jambonz"}'] == 0, "a FreeSWITCH call counted as jambonz's"
    assert c.server.alive()


TESTS = [test_an_8khz_call_is_heard_answered_and_understood,
         test_a_16khz_call_says_goodbye_and_the_app_hangs_up_with_disconnect,
         test_talking_over_the_reply_sends_kill_audio, test_audio_before_any_metadata_starts_the_call,
         test_the_provider_vanishing_mid_reply_ends_the_call, test_listen_only_connections_never_send_audio,
         test_malformed_messages_close_only_that_call, test_nothing_is_left_open]


if __name__ == "__main__":
    sys.exit(main(__doc__, TESTS, Context, TOKEN, "freeswitch"))
