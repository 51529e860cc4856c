#!/usr/bin/python3
"""N concurrent Twilio Media Streams calls against `brisvox serve`, each caller speaking and
interrupting, with the scripted application in Python (docs/TELEPHONY.md "Load"; docs/PERFORMANCE.md).

One asyncio loop holds both sides:
  - N fake Twilio streams (/v1/telephony/twilio, the messages of Twilio's Media Streams docs, as
    tests/server/test_telephony_twilio.py's FakeTwilio sends them): connected, start (the token as a
    custom parameter), then the bundled recording, looped, as 8 kHz mu-law in 20 ms media messages
    on an absolute real-time schedule (each call starts elsewhere in it), stop after --seconds.
    Each plays what brisvox sends at real time and echoes a mark once the audio before it has
    played; a clear drops what it has not played;
  - the application (serve --call-app): at each turn_end it speaks a two-sentence reply. The
    recording's next utterance usually comes while the reply plays: a barge-in.

Measured, all on this process's one clock:
  - turn end -> first reply audio at the provider: from the turn_end's arrival at the application
    to the first media message of the reply at the fake Twilio (the application's round trip, the
    voice's first sentence, the pacing);
  - barge-in -> clear: from the send of the caller's audio that confirmed the barge-in (the
    interrupted event's "at") to the clear's arrival at the fake Twilio;
  - frames lost: the caller's 20 ms frames of calls the server ended before the caller's stop (a
    1013 overloaded, ...); the server never drops audio of a call it keeps (it holds it back and
    paces the provider: the send lag says how far a provider fell behind real time);
  - CPU: the server's and this generator's CPU seconds over the run, per call.

  /usr/bin/python3 scripts/telephony_load.py --brisvox build/release/brisvox \\
      --voice third_party/models/piper/en_US-joe-medium.onnx --sample third_party/audio/sample.wav \\
      --calls 8 --seconds 60
"""
import argparse
import asyncio
import base64
import json
import os
import resource
import sys
import time
import uuid
import warnings
import wave

import websockets

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop  # Python 3.11's G.711 and resampling (Debian's python3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_process import Server  # noqa: E402

TOKEN = "load-token"
RATE = 8000
CHUNK = 160  # 20 ms of mu-law
REPLY = "Thanks, I have that. Let me check the calendar and come back to you in a moment."


def percentile(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Call:
    def __init__(self, run, index):
        self.run = run
        self.index = index
        self.stream_sid = "MZ" + uuid.uuid4().hex
        self.call_sid = "CA" + uuid.uuid4().hex
        self.seq = 0
        self.sent_at = []        # send time of each 20 ms frame, in order
        self.send_lag = []       # a frame's send minus its schedule (s)
        self.play_end = 0.0
        self.pending_marks = []  # [due time, name]
        self.turn_at = None      # the application's last turn_end, awaiting the reply's first audio
        self.first_audio = []    # seconds
        self.clears = []         # arrival times
        self.interrupts = []     # the interrupted events' "at" (s of the caller's audio)
        self.close_code = None
        self.stopped = False     # the caller's stop was sent
        self.frames_planned = 0
        self.error = None
        self.ws = None

    async def send(self, message):
        self.seq += 1
        if message["event"] != "connected":
            message = {**message, "sequenceNumber": str(self.seq)}
        await self.ws.send(json.dumps(message))

    async def main(self, start_at, offset_s, seconds):
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        try:
            self.ws = await websockets.connect(f"ws://127.0.0.1:{self.run.server.port}/v1/telephony/twilio",
                                               max_size=None, open_timeout=20, close_timeout=10)
        except Exception as e:  # noqa: BLE001 - a refused call is a result, reported by reason
            self.error = f"connect: {e}"
            return
        reader = asyncio.ensure_future(self.read())
        marker = asyncio.ensure_future(self.echo_marks())
        try:
            await self.send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
            await self.send({"event": "start", "streamSid": self.stream_sid,
                             "start": {"accountSid": "AC" + "0" * 32, "streamSid": self.stream_sid,
                                       "callSid": self.call_sid, "tracks": ["inbound"],
                                       "customParameters": {"token": TOKEN},
                                       "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": RATE,
                                                       "channels": 1}}})
            audio = self.run.mulaw
            position = int(offset_s * RATE) // CHUNK * CHUNK
            self.frames_planned = int(seconds * 50)
            t0 = time.monotonic()
            for k in range(self.frames_planned):
                if self.close_code is not None:
                    break
                chunk = audio[position:position + CHUNK]
                position = (position + CHUNK) % (len(audio) - CHUNK)
                due = t0 + k * 0.02
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                self.send_lag.append(time.monotonic() - due)
                await self.send({"event": "media", "streamSid": self.stream_sid,
                                 "media": {"track": "inbound", "chunk": str(k + 1), "timestamp": str(k * 20),
                                           "payload": base64.b64encode(chunk).decode()}})
                self.sent_at.append(time.monotonic())
            if self.close_code is None:
                self.stopped = True
                await self.send({"event": "stop", "streamSid": self.stream_sid,
                                 "stop": {"accountSid": "AC" + "0" * 32, "callSid": self.call_sid}})
            await asyncio.wait_for(reader, 30)
        except websockets.exceptions.ConnectionClosed as e:
            self.error = self.error or f"closed {e.code} {e.reason}".strip()
        except asyncio.TimeoutError:
            self.error = self.error or "no close within 30 s of the stop"
        finally:
            marker.cancel()
            reader.cancel()
            if self.ws is not None:
                self.close_code = self.close_code or self.ws.close_code
                await self.ws.close()

    async def read(self):
        try:
            async for raw in self.ws:
                now = time.monotonic()
                m = json.loads(raw)
                if m["event"] == "media":
                    if self.turn_at is not None:
                        self.first_audio.append(now - self.turn_at)
                        self.turn_at = None
                    n = len(base64.b64decode(m["media"]["payload"]))
                    self.play_end = max(now, self.play_end) + n / RATE
                elif m["event"] == "mark":
                    self.pending_marks.append([max(now, self.play_end), m["mark"]["name"]])
                elif m["event"] == "clear":
                    self.clears.append(now)
                    self.play_end = now
                    for mark in self.pending_marks:
                        mark[0] = now
        except websockets.exceptions.ConnectionClosed:
            pass
        self.close_code = self.ws.close_code

    async def echo_marks(self):
        while True:
            now = time.monotonic()
            for mark in [m for m in self.pending_marks if m[0] <= now]:
                self.pending_marks.remove(mark)
                try:
                    await self.send({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": mark[1]}})
                except websockets.exceptions.ConnectionClosed:
                    return
            await asyncio.sleep(0.01)

    def barge_in_to_clear(self):
        """(seconds from the confirming audio's send to the clear) for each barge-in."""
        out = []
        for at in self.interrupts:
            k = int(at * 50)
            if k >= len(self.sent_at):
                continue
            sent = self.sent_at[k]
            clear = next((t for t in self.clears if t >= sent), None)
            if clear is not None:
                out.append(clear - sent)
        return out


class Run:
    def __init__(self, args):
        with wave.open(args.sample, "rb") as w:
            pcm16k = w.readframes(w.getnframes())
        pcm8k, _ = audioop.ratecv(pcm16k, 2, 1, 16000, RATE, None)
        self.mulaw = audioop.lin2ulaw(pcm8k, 2)
        self.calls = {}  # callSid -> Call
        self.app_messages = {}  # type -> count
        self.server = None

    async def app(self, ws, path="/"):
        call = None
        replies = 0
        try:
            async for raw in ws:
                m = json.loads(raw)
                kind = m["type"]
                self.app_messages[kind] = self.app_messages.get(kind, 0) + 1
                if kind == "call_start":
                    call = self.calls.get(m["call_id"])
                elif call is None:
                    continue
                elif kind == "turn_end":
                    replies += 1
                    call.turn_at = time.monotonic()
                    await ws.send(json.dumps({"type": "speak", "text": REPLY, "id": f"r{replies}"}))
                elif kind == "interrupted" and m.get("reason") == "barge_in" and m.get("at") is not None:
                    call.interrupts.append(m["at"])
        except websockets.exceptions.ConnectionClosed:
            pass


async def main_async(args, run):
    app_server = await websockets.serve(run.app, "127.0.0.1", 0, max_size=None)
    app_port = app_server.sockets[0].getsockname()[1]
    server_args = ["--tts-voice", args.voice, "--turn-model", "v3.2", "--stt-model", args.stt_model,
                   "--token", TOKEN, "--call-app", f"ws://127.0.0.1:{app_port}/calls",
                   *args.server_args.split()]
    run.server = Server(args.brisvox, *server_args, keep_lines=2000)
    pid = run.server.pid()
    length_s = len(run.mulaw) / RATE
    t0 = time.monotonic() + 0.5
    calls = [Call(run, i) for i in range(args.calls)]
    for c in calls:
        run.calls[c.call_sid] = c
    cpu0 = cpu_seconds(pid)
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.monotonic()
    await asyncio.gather(*(c.main(t0 + args.ramp_s * i / args.calls, (i * 1.7) % length_s, args.seconds)
                           for i, c in enumerate(calls)))
    wall = time.monotonic() - wall0
    cpu = cpu_seconds(pid) - cpu0
    self1 = resource.getrusage(resource.RUSAGE_SELF)
    gen_cpu = (self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime)
    app_server.close()
    run.server.terminate()
    return calls, wall, cpu, gen_cpu


def report(args, calls, wall, cpu, gen_cpu, app_messages):
    first = [x for c in calls for x in c.first_audio]
    clear = [x for c in calls for x in c.barge_in_to_clear()]
    lag = [x for c in calls for x in c.send_lag]
    ended_early = [c for c in calls if not c.stopped]
    lost = sum(c.frames_planned - len(c.sent_at) for c in ended_early)
    reasons = {}
    for c in ended_early:
        why = c.error or f"closed {c.close_code}"
        reasons[why] = reasons.get(why, 0) + 1
    ms = lambda v: None if v is None else round(v * 1000, 1)  # noqa: E731
    out = {
        "calls": args.calls, "seconds": args.seconds, "stt_model": args.stt_model,
        "calls_completed": len(calls) - len(ended_early), "calls_ended_early": reasons,
        "frames_sent": sum(len(c.sent_at) for c in calls), "frames_lost": lost,
        "turns": app_messages.get("turn_end", 0), "replies_started": app_messages.get("speak_started", 0),
        "barge_ins": app_messages.get("interrupted", 0), "clears": sum(len(c.clears) for c in calls),
        "overload_events": app_messages.get("overload", 0), "error_events": app_messages.get("error", 0),
        "turn_end_to_first_audio_ms": {"n": len(first), "p50": ms(percentile(first, 50)),
                                       "p99": ms(percentile(first, 99)), "max": ms(max(first, default=None))},
        "barge_in_to_clear_ms": {"n": len(clear), "p50": ms(percentile(clear, 50)),
                                 "p99": ms(percentile(clear, 99)), "max": ms(max(clear, default=None))},
        "send_lag_ms": {"p50": ms(percentile(lag, 50)), "p99": ms(percentile(lag, 99)),
                        "max": ms(max(lag, default=None))},
        "wall_s": round(wall, 1), "server_cpu_cores": round(cpu / wall, 2),
        "server_cpu_per_call_cores": round(cpu / wall / args.calls, 4),
        "generator_cpu_cores": round(gen_cpu / wall, 2),
    }
    if args.json:
        print(json.dumps(out))
        return
    for k, v in out.items():
        print(f"{k:28} {v}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--voice", required=True, help="the Piper VOICE.onnx")
    ap.add_argument("--sample", required=True, help="third_party/audio/sample.wav")
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60, help="the caller's audio per call")
    ap.add_argument("--ramp-s", type=float, default=5, help="the calls start evenly over this")
    ap.add_argument("--stt-model", default="tiny.en")
    ap.add_argument("--server-args", default="", help="more serve options, space-separated")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    run = Run(args)
    calls, wall, cpu, gen_cpu = asyncio.run(main_async(args, run))
    report(args, calls, wall, cpu, gen_cpu, run.app_messages)


if __name__ == "__main__":
    main()
