"""What the end-to-end tests of the telephony fronts share (test_telephony_twilio.py,
test_telephony_telnyx.py, test_telephony_vonage.py, test_telephony_asterisk.py,
test_telephony_jambonz.py, test_telephony_freeswitch.py): the recording the callers speak, the
binary frames they send it in, the scripted application behind serve --call-app, the replies it speaks, the checks of what the caller heard
(level, Whisper's transcript, word error rate), the fake provider's connection, the wait for
nothing left open, and the server and runner every test file starts the same way.
Debian's python3 (audioop, websockets); serve_process (scripts/) on the path."""
import asyncio
import json
import math
import re
import struct
import argparse
import tempfile
import threading
import time
import urllib.error
import urllib.request
import warnings
import wave

import websockets

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop  # Python 3.11's G.711 and resampling (Debian's python3)

REPLY = ("Sure, I can help with that. Your appointment is confirmed for Monday afternoon, "
         "and we will send you a reminder the day before.")
LONG = " ".join(f"This is sentence number {n} of a long reply that goes on." for n in range(1, 13))
GOODBYE = "Thank you for calling. Goodbye."


class Context:
    """What every test of a provider gets: the arguments, a temporary folder, the bundled recording
    as 16-bit PCM at 16 and 8 kHz, the scripted application and the server (set by main())."""

    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        with wave.open(args.sample, "rb") as w:
            assert w.getframerate() == 16000 and w.getsampwidth() == 2 and w.getnchannels() == 1
            self.pcm16k = w.readframes(w.getnframes())
        self.pcm8k, _ = audioop.ratecv(self.pcm16k, 2, 1, 16000, 8000, None)
        self.app = None
        self.server = None

    def clip(self, begin_s, end_s, rate=16000):
        """The recording from begin_s to end_s at `rate` (8000 or 16000)."""
        pcm = self.pcm16k if rate == 16000 else self.pcm8k
        return pcm[int(begin_s * rate) * 2:int(end_s * rate) * 2]


async def play_frames(ws, audio, frame_bytes, bytes_per_s, pace=1.0):
    """The caller speaks: `audio` in binary frames of `frame_bytes` (20 ms) at real time (`pace`
    times it). Returns [(bytes sent so far, time)] for each frame."""
    t0 = time.monotonic()
    sent = []
    for i in range(0, len(audio), frame_bytes):
        await ws.send(audio[i:i + frame_bytes])
        sent.append((min(i + frame_bytes, len(audio)), time.monotonic()))
        await asyncio.sleep(max(0.0, t0 + (i + frame_bytes) / bytes_per_s / pace - time.monotonic()))
    return sent


def metrics(server, parse_metrics):
    return parse_metrics(urllib.request.urlopen(server.url("/metrics"), timeout=10).read().decode())


# --- the scripted application ------------------------------------------------------------------------

class App:
    """A WebSocket server in a thread of its own (brisvox connects to it for each call). `calls`
    maps a call_id to the list of messages received on it (each with its arrival time "_t")."""

    def __init__(self):
        self.calls = {}
        self.scripts = {}  # call_id -> script, for providers whose calls carry no parameters (AudioSocket)
        self.lock = threading.Lock()
        self.port = None
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)

            async def main():
                server = await websockets.serve(self.handle, "127.0.0.1", 0)
                self.port = server.sockets[0].getsockname()[1]
                started.set()
                await asyncio.Future()

            self.loop.run_until_complete(main())

        threading.Thread(target=run, daemon=True).start()
        assert started.wait(10)

    async def handle(self, ws, path="/"):
        call = None
        replies = 0
        try:
            async for raw in ws:
                m = json.loads(raw)
                m["_t"] = time.monotonic()
                if m["type"] == "call_start":
                    call = m["call_id"]
                    script = m["parameters"].get("script") or self.scripts.get(call, "reply")
                with self.lock:
                    self.calls.setdefault(call, []).append(m)
                if m["type"] == "call_start":
                    if script == "long":
                        await ws.send(json.dumps({"type": "speak", "text": LONG, "id": "long"}))
                    elif script == "hangup":
                        await ws.send(json.dumps({"type": "speak", "text": GOODBYE, "id": "bye"}))
                        await ws.send(json.dumps({"type": "hangup"}))
                    elif script == "bad":
                        await ws.send("{not json")
                        await ws.send(json.dumps({"type": "close"}))
                elif m["type"] == "turn_end" and script in ("reply", "listen"):
                    replies += 1
                    await ws.send(json.dumps({"type": "speak", "text": REPLY, "id": f"r{replies}"}))
                    await ws.send(json.dumps({"type": "mark", "name": f"after-r{replies}"}))
        except websockets.exceptions.ConnectionClosed:
            pass
        with self.lock:
            self.calls.setdefault(call, []).append({"type": "_closed", "_t": time.monotonic()})

    def messages(self, call):
        with self.lock:
            return list(self.calls.get(call, []))

    def find(self, call, kind, **fields):
        for m in self.messages(call):
            if m["type"] == kind and all(m.get(k) == v for k, v in fields.items()):
                return m
        return None

    async def wait_for(self, call, kind, timeout=30, **fields):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.find(call, kind, **fields)
            if m is not None:
                return m
            await asyncio.sleep(0.01)
        raise AssertionError(f"the app got no {kind} {fields}: {[x['type'] for x in self.messages(call)]}")


def rms_dbfs(pcm):
    r = audioop.rms(pcm, 2)
    return 20 * math.log10(max(r, 1) / 32768)


def words(text):
    return re.sub(r"[^a-z0-9' ]", " ", text.lower().replace("-", " ")).split()


def goodbye_wer(heard):
    """The word error of `heard` against GOODBYE, with Whisper's spellings of the farewell itself
    ("Goodbye", "Good bye", "Bye bye", "Bye-bye") taken as one word: Piper samples its noise afresh
    on every synthesis, and at 8 kHz Whisper tiny hears the one word either way from run to run."""
    text = re.sub(r"\b(good|bye)[ -]?bye\b", "goodbye", " ".join(words(heard)))
    return wer(GOODBYE, text)


def wer(ref, hyp):
    r, h = words(ref), words(hyp)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(h)] / max(1, len(r))


def transcribe(server, pcm, token, rate=8000):
    """The server's own Whisper (POST /v1/transcribe) on 16-bit `pcm` at `rate`."""
    body = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + len(pcm), b"WAVE", b"fmt ", 16, 1, 1, rate, rate * 2, 2,
                       16, b"data", len(pcm)) + pcm
    # A 503 with Retry-After is the engine's admission control (a machine busy with other jobs can
    # put it over its latency budget for a while): retried as the answer says, for a while.
    deadline = time.monotonic() + 30
    while True:
        req = urllib.request.Request(server.url("/v1/transcribe"), data=body, method="POST",
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "audio/wav"})
        try:
            doc = json.loads(urllib.request.urlopen(req, timeout=120).read())
            return " ".join(s["text"] for s in doc["segments"])
        except urllib.error.HTTPError as e:
            if e.code != 503 or time.monotonic() > deadline:
                raise
            time.sleep(float(e.headers.get("Retry-After", "1")))


# --- the fake provider's side ------------------------------------------------------------------------

async def connect(url, headers=None, **kwargs):
    """The provider's WebSocket to brisvox. A 503 with Retry-After is the engine's admission control:
    retried as it says, for 20 s."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return await websockets.connect(url, extra_headers=headers or {}, max_size=None, open_timeout=10,
                                            close_timeout=5, **kwargs)
        except websockets.exceptions.InvalidStatusCode as e:
            if e.status_code != 503 or time.monotonic() > deadline:
                raise
            await asyncio.sleep(float(e.headers.get("Retry-After", "1")))


def settled_metrics(server, parse_metrics, provider):
    """/metrics once the provider's calls, calls, streams, speech sessions and WebSocket sessions are
    back to 0 (or after 10 s), and those of them not at 0."""
    deadline = time.monotonic() + 10
    while True:
        m = metrics(server, parse_metrics)
        left = {k: m[k] for k in (f'brisvox_telephony_calls{{provider="{provider}"}}', "brisvox_call_sessions",
                                  "brisvox_active_streams", 'brisvox_speech_sessions{model="tts"}',
                                  "brisvox_websocket_sessions_active") if m[k] != 0}
        if not left or time.monotonic() > deadline:
            return m, left
        time.sleep(0.1)


def main(doc, tests, make_context, token, name, server_args=()):
    """A provider test file's command line: the server (real models, --call-app the scripted App,
    and `server_args`) and its tests in order."""
    from serve_process import Server, run_tests
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--voice", required=True, help="the Piper VOICE.onnx")
    ap.add_argument("--sample", required=True, help="third_party/audio/sample.wav")
    ap.add_argument("--only", action="append", help="run only tests whose name contains this")
    ap.add_argument("--test-timeout", type=float, default=90)
    ap.add_argument("--budget", type=float, default=200)
    args = ap.parse_args()
    tests = [t for t in tests if not args.only or any(o in t.__name__ for o in args.only)]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"brisvox-{name}-test-") as tmp:
        c = make_context(args, tmp)
        c.app = App()
        c.server = Server(args.brisvox, "--workers", "1", "--tts-voice", args.voice, "--tts-workers", "1",
                          "--stt-model", "tiny.en", "--turn-model", "v3.2", "--token", token,
                          "--call-app", f"ws://127.0.0.1:{c.app.port}/calls", "--idle-timeout-s", "20",
                          *server_args)
        failures = run_tests([(t.__name__, lambda t=t: t(c)) for t in tests], [c.server], args.budget,
                             args.test_timeout, started)
    print(f"{len(tests) - len(failures)} of {len(tests)} passed in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0
