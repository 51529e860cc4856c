#!/usr/bin/python3
"""End-to-end test of the audio accounting of `brisvox serve` (docs/PROTOCOL.md, Metrics).

Each case drives one way a stream can end (closed, reset, vanished, failed, resampled, POST) and
checks, once every stream is closed, that the samples it sent are counted and that
received = processed + rejected exactly, with the rejections where they belong.

  /usr/bin/python3 tests/server/test_accounting.py --brisvox build/release/brisvox \
      --sample third_party/audio/sample.wav
"""
import argparse
import array
import asyncio
import io
import json
import os
import socket
import struct
import sys
import time
import urllib.error
import urllib.request
import wave

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_server import Server  # noqa: E402  (the same server launcher as the other e2e tests)


def metrics(server):
    with urllib.request.urlopen(server.url("/metrics"), timeout=10) as r:
        out = {}
        for line in r.read().decode().splitlines():
            if not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                out[key] = float(value)
        return out


def ledger(m):
    rejected = {k.split('"')[1]: int(v) for k, v in m.items() if k.startswith("brisvox_audio_samples_rejected_total{")}
    return {"received": int(m["brisvox_audio_samples_received_total"]),
            "processed": int(m["brisvox_audio_samples_processed_total"]), "rejected": rejected}


def settled(server, timeout_s=15):
    """The ledger once no stream is open (engine streams are retired by their worker after close)."""
    deadline = time.monotonic() + timeout_s
    while True:
        m = metrics(server)
        quiet = m["brisvox_websocket_sessions_active"] == 0 and m["brisvox_active_streams"] == 0
        if quiet or time.monotonic() > deadline:
            assert quiet, "streams still open"
            return ledger(m)
        time.sleep(0.05)


def delta(before, after):
    d = {"received": after["received"] - before["received"], "processed": after["processed"] - before["processed"],
         "rejected": {k: after["rejected"][k] - before["rejected"].get(k, 0) for k in after["rejected"]}}
    d["rejected_total"] = sum(d["rejected"].values())
    assert d["received"] == d["processed"] + d["rejected_total"], f"unbalanced: {d}"
    return d


def abort_tcp(ws):
    ws.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    ws.transport.abort()


async def session(server, query, steps):
    """Runs `steps` (bytes: send; str: send text; ("wait", s); ("expect", type); "abort"; "client_close")
    and returns the close code (None if aborted)."""
    async with websockets.connect(server.ws_url(query), max_size=None, ping_interval=None) as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        for step in steps:
            if isinstance(step, bytes):
                await ws.send(step)
            elif step == "abort":
                abort_tcp(ws)
                return None
            elif step == "client_close":
                await ws.close()
                return ws.close_code
            elif isinstance(step, str):
                await ws.send(step)
            elif step[0] == "wait":
                await asyncio.sleep(step[1])
            elif step[0] == "expect":
                while json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] != step[1]:
                    pass
        try:
            while True:
                await asyncio.wait_for(ws.recv(), 30)
        except websockets.ConnectionClosed:
            return ws.close_code


def run(server, query, steps):
    before = settled(server)
    code = asyncio.run(session(server, query, steps))
    return code, delta(before, settled(server))


def s16(samples):
    return samples.tobytes()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--sample", required=True)
    args = ap.parse_args()
    with wave.open(args.sample) as w:
        pcm = array.array("h", w.readframes(w.getnframes()))
    close = '{"type":"close"}'
    server = Server(args.brisvox)
    failures = []

    def case(name, fn):
        try:
            fn()
            print(f"ok   {name}")
        except Exception as e:  # noqa: BLE001 (reported and counted)
            failures.append(name)
            print(f"FAIL {name}: {e!r}")

    def closed_with_a_partial_frame():
        code, d = run(server, "", [s16(pcm[:16100]), close])
        assert code == 1000 and d["received"] == 16100 and d["processed"] == 16100, d

    def reset_discards_the_partial_frame():
        # 1000 samples = 512 + 488: at least the 488 can never be analysed once the reset comes.
        code, d = run(server, "", [s16(pcm[:1000]), ("wait", 0.3), '{"type":"reset"}', ("expect", "reset"),
                                   s16(pcm[:512]), close])
        assert code == 1000 and d["received"] == 1512, d
        assert d["rejected_total"] >= 488 and d["processed"] >= 512, d

    def client_vanishes_mid_stream():
        # The server reads 4000 samples at a time: what it received is a multiple of 4000 under
        # 64000, never of 512, so something is unanalysed (no flush) when the client resets TCP.
        code, d = run(server, "", [s16(pcm[:8000]), ("wait", 0.5), s16(pcm[8000:40000]), "abort"])
        assert code is None and 8000 <= d["received"] <= 40000, d
        assert d["rejected_total"] >= d["received"] % 512 > 0, d

    def client_close_without_close_message():
        code, d = run(server, "", [s16(pcm[:24000]), "client_close"])
        assert d["received"] <= 24000, d

    def bad_audio_ends_the_session():
        good = array.array("f", (x / 32768 for x in pcm[:1000])).tobytes()
        code, d = run(server, "encoding=pcm_f32le", [good, ("wait", 0.3), struct.pack("<4f", 0, float("nan"), 0, 0)])
        # The decoder refuses the NaN message whole (never received); the stream ends unflushed.
        assert code == 1007 and d["received"] == 1000, d
        assert d["rejected"]["stream_closed"] >= 488, d

    def flush_then_resampled_close():
        up = array.array("h", (x for x in pcm[:16000] for _ in range(3)))  # 48 kHz
        code, d = run(server, "sample_rate=48000", [s16(up[:30000]), '{"type":"flush"}', ("expect", "flushed"),
                                                     s16(up[30000:]), close])
        assert code == 1000 and d["received"] == 48000 and d["processed"] == 48000, d

    def post_counts_the_file():
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(s16(pcm[:20000]))
        before = settled(server)
        with urllib.request.urlopen(urllib.request.Request(server.url("/v1/vad"), data=buf.getvalue()), timeout=60):
            pass
        try:
            urllib.request.urlopen(urllib.request.Request(server.url("/v1/vad"), data=b"RIFF garbage"), timeout=60)
        except urllib.error.HTTPError:
            pass
        d = delta(before, settled(server))
        assert d["received"] == 20000 and d["processed"] == 20000, d

    try:
        for name, fn in [("closed_with_a_partial_frame", closed_with_a_partial_frame),
                         ("reset_discards_the_partial_frame", reset_discards_the_partial_frame),
                         ("client_vanishes_mid_stream", client_vanishes_mid_stream),
                         ("client_close_without_close_message", client_close_without_close_message),
                         ("bad_audio_ends_the_session", bad_audio_ends_the_session),
                         ("flush_then_resampled_close", flush_then_resampled_close),
                         ("post_counts_the_file", post_counts_the_file)]:
            case(name, fn)
        total = settled(server)
        print(json.dumps(total))
    finally:
        server.kill()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
