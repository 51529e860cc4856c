#!/usr/bin/python3
"""End-to-end tests of `brisvox serve` (docs/PROTOCOL.md), on loopback only.

Starts the real server (`brisvox serve --port 0`), talks to it with Debian's python3-websockets
and urllib, and compares what it says with `brisvox vad --format json` on the same audio.
Every test is bounded in time, and every server process is killed at the end, whatever happens.

  /usr/bin/python3 tests/server/test_server.py --brisvox build/release/brisvox \
      --sample third_party/audio/sample.wav [--only NAME ...]
"""
import argparse
import asyncio
import base64
import http.client
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
import wave

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server, parse_metrics, run_tests  # noqa: E402  (scripts/serve_process.py, shared with the soak)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop  # python 3.11: mu-law and rate conversion for the test inputs

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TIME_EPS = 1e-6


# --- reference results -------------------------------------------------------------------------

def cli_json(brisvox, path, *args):
    out = subprocess.run([brisvox, "vad", "--format", "json", "--no-progress", *args, path],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out)


def segments_of(cli_result):
    return [(s["start"], s["end"]) for s in cli_result["segments"]]


def same_segments(got, want):
    return len(got) == len(want) and all(abs(a[0] - b[0]) < TIME_EPS and abs(a[1] - b[1]) < TIME_EPS
                                          for a, b in zip(got, want))


def write_wav(path, pcm, rate):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)


# --- WebSocket helpers -------------------------------------------------------------------------

async def connect(server, query="", headers=None, retry=True, **kwargs):
    """A stream. A 503 (with Retry-After) is retried as it says, for 20 s, unless `retry` is False:
    the engine's admission control refuses new streams while its queue delay is over budget, which
    a machine busy with other tests' servers can put it over for a moment (a client retries)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return await websockets.connect(server.ws_url(query), extra_headers=headers or AUTH, max_size=None,
                                            open_timeout=10, close_timeout=10, **kwargs)
        except websockets.exceptions.InvalidStatusCode as e:
            if not retry or e.status_code != 503 or time.monotonic() > deadline:
                raise
            await asyncio.sleep(float(e.headers.get("Retry-After", "1")))


async def recv_json(ws, timeout=10):
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def read_until_closed(ws, timeout=30):
    """Every message until the server closes; returns (messages, close code, close reason)."""
    messages = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("the server did not close the stream in time")
            messages.append(json.loads(await asyncio.wait_for(ws.recv(), left)))
    except websockets.exceptions.ConnectionClosed:
        pass
    return messages, ws.close_code, ws.close_reason


def random_chunks(data, rng, largest=9000):
    """Splits bytes at random places: odd sizes, samples split across messages."""
    i = 0
    while i < len(data):
        n = rng.randint(1, largest)
        yield data[i:i + n]
        i += n


async def stream_file(server, query, data, rng, control_after=None):
    """Streams `data` in random chunks, then {"type":"close"}; returns (messages, code, reason)."""
    ws = await connect(server, query)
    ready = await recv_json(ws)
    assert ready["type"] == "ready", ready
    for chunk in random_chunks(data, rng):
        await ws.send(chunk)
    await ws.send(json.dumps({"type": "close"}))
    messages, code, reason = await read_until_closed(ws)
    return [ready] + messages, code, reason


def speech_segments(messages):
    """(start, end) of every speech_end; checks each follows its speech_start."""
    segments, open_start = [], None
    for m in messages:
        if m["type"] == "speech_start":
            assert open_start is None, f"two speech_start in a row: {m}"
            open_start = m["start"]
        elif m["type"] == "speech_end":
            assert open_start is not None and abs(open_start - m["start"]) < TIME_EPS, f"speech_end without start: {m}"
            segments.append((m["start"], m["end"]))
            open_start = None
    return segments


def http_request(method, url, body=None, headers=None, timeout=30):
    """(status, headers, body bytes) without raising on HTTP errors. A 503 "overloaded" (the engine's
    admission control, which a machine busy with other tests can trip for a moment) is retried as
    its Retry-After says, for 20 s, as a client does."""
    deadline = time.monotonic() + 20
    while True:
        req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            status, response_headers, response = e.code, dict(e.headers), e.read()
        if status != 503 or b'"overloaded"' not in response or time.monotonic() > deadline:
            return status, response_headers, response
        time.sleep(float(response_headers.get("Retry-After", "1")))


def upgrade_request(server, query="", headers=None):
    """A raw WebSocket upgrade: (status, JSON body or None) of a refusal, or (101, None)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    h = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
         "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    h.update(headers if headers is not None else AUTH)
    conn.request("GET", "/v1/stream" + ("?" + query if query else ""), headers=h)
    r = conn.getresponse()
    body = r.read() if r.status != 101 else b""
    conn.close()
    return r.status, (json.loads(body) if body else None)


def metrics_values(server):
    """GET /metrics as {sample name with labels: value}."""
    status, _, body = http_request("GET", server.url("/metrics"))
    assert status == 200, status
    return parse_metrics(body.decode())


async def wait_streams_released(server, timeout=5.0, active=0):
    """Waits until the engine and the server both count `active` open streams; returns the values."""
    deadline = time.monotonic() + timeout
    while True:
        values = metrics_values(server)
        if values["brisvox_active_streams"] == active and values["brisvox_websocket_sessions_active"] == active:
            return values
        if time.monotonic() > deadline:
            raise AssertionError(f"streams not released: engine {values['brisvox_active_streams']}, "
                                 f"sessions {values['brisvox_websocket_sessions_active']}, want {active}")
        await asyncio.sleep(0.05)


async def wait_log(server, pattern, timeout=5.0, since=0):
    """The first stderr line of the server matching `pattern` (a regex), waiting for it; only lines
    from index `since` on (a client port in a pattern may be one an earlier stream had)."""
    deadline = time.monotonic() + timeout
    while True:
        for line in list(server.lines)[since:]:
            m = re.search(pattern, line)
            if m:
                return m
        if time.monotonic() > deadline:
            raise AssertionError(f"no server log line matches {pattern!r}:\n" + "\n".join(server.lines[-20:]))
        await asyncio.sleep(0.05)


def raw_ws_connect(server, query="sample_rate=16000&encoding=pcm_s16le"):
    """A WebSocket session over a plain socket, for faults no client library makes: returns the
    socket (after the 101 answer) and the stream id the server logged for it."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /v1/stream?{query} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                  f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        more = sock.recv(4096)
        assert more, f"the server closed the connection during the upgrade: {answer!r}"
        answer += more
    assert answer.startswith(b"HTTP/1.1 101"), answer
    # Read the `ready` message: a socket closed with unread data sends a reset, not a FIN.
    while b"ready" not in answer:
        more = sock.recv(4096)
        assert more, f"the server closed the connection before `ready`: {answer!r}"
        answer += more
    port = sock.getsockname()[1]
    return sock, port


def client_frame_header(opcode, length, mask):
    """The header of one final, masked client frame carrying `length` payload bytes (RFC 6455 5.2)."""
    if length < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    return head + mask


def masked(payload, mask):
    return bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def client_frame(opcode, payload):
    mask = os.urandom(4)
    return client_frame_header(opcode, len(payload), mask) + masked(payload, mask)


# --- the tests ---------------------------------------------------------------------------------

class Context:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.brisvox = args.brisvox
        self.rng = random.Random(1234)
        with wave.open(args.sample, "rb") as w:
            assert w.getnchannels() == 1 and w.getsampwidth() == 2
            self.rate = w.getframerate()
            self.pcm = w.readframes(w.getnframes())
        self.reference = cli_json(self.brisvox, args.sample)
        self.server = None


async def test_stream_s16le_random_chunks(c):
    messages, code, _ = await stream_file(c.server, "sample_rate=16000&encoding=pcm_s16le", c.pcm, c.rng)
    assert code == 1000, f"close code {code}"
    ready = messages[0]
    assert ready["config"]["sample_rate"] == 16000 and ready["config"]["encoding"] == "pcm_s16le", ready
    got = speech_segments(messages)
    assert same_segments(got, segments_of(c.reference)), f"{got} != {segments_of(c.reference)}"


async def test_stream_f32le(c):
    samples = struct.unpack(f"<{len(c.pcm) // 2}h", c.pcm)
    data = struct.pack(f"<{len(samples)}f", *(s / 32768.0 for s in samples))
    messages, code, _ = await stream_file(c.server, "sample_rate=16000&encoding=pcm_f32le", data, c.rng)
    assert code == 1000
    assert same_segments(speech_segments(messages), segments_of(c.reference))


def make_8k(c):
    path = os.path.join(c.tmp, "sample8k.wav")
    if not os.path.exists(path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pcm8, _ = audioop.ratecv(c.pcm, 2, 1, c.rate, 8000, None)
        write_wav(path, pcm8, 8000)
    with wave.open(path, "rb") as w:
        return path, w.readframes(w.getnframes())


async def test_stream_8khz(c):
    path, pcm8 = make_8k(c)
    want = segments_of(cli_json(c.brisvox, path))
    messages, code, _ = await stream_file(c.server, "sample_rate=8000", pcm8, c.rng)
    assert code == 1000
    assert messages[0]["config"]["model_rate"] == 16000, messages[0]  # upsampled to the 16 kHz model
    got = speech_segments(messages)
    assert want and same_segments(got, want), f"{got} != {want}"


async def test_stream_mulaw(c):
    _, pcm8 = make_8k(c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ulaw = audioop.lin2ulaw(pcm8, 2)
    path = os.path.join(c.tmp, "sample.ul")
    with open(path, "wb") as f:
        f.write(ulaw)
    want = segments_of(cli_json(c.brisvox, path, "--raw-encoding", "mulaw", "--raw-rate", "8000"))
    messages, code, _ = await stream_file(c.server, "encoding=mulaw&sample_rate=8000", ulaw, c.rng)
    assert code == 1000
    got = speech_segments(messages)
    assert want and same_segments(got, want), f"{got} != {want}"


async def test_stream_resampled_44k(c):
    # A rate the model does not run at: the engine resamples. Compared with the CLI on the same file.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pcm44, _ = audioop.ratecv(c.pcm, 2, 1, c.rate, 44100, None)
    path = os.path.join(c.tmp, "sample44k.wav")
    write_wav(path, pcm44, 44100)
    want = segments_of(cli_json(c.brisvox, path))
    messages, code, _ = await stream_file(c.server, "sample_rate=44100", pcm44, c.rng)
    assert code == 1000
    assert same_segments(speech_segments(messages), want), f"{speech_segments(messages)} != {want}"


async def test_flush_continues_timeline(c):
    half = (len(c.pcm) // 2) & ~1
    first, second = c.pcm[:half], c.pcm[half:]
    p1, p2 = os.path.join(c.tmp, "first.wav"), os.path.join(c.tmp, "second.wav")
    write_wav(p1, first, c.rate)
    write_wav(p2, second, c.rate)
    offset = len(first) / 2 / c.rate
    want = segments_of(cli_json(c.brisvox, p1)) + [(s + offset, e + offset) for s, e in
                                                    segments_of(cli_json(c.brisvox, p2))]
    ws = await connect(c.server)
    assert (await recv_json(ws))["type"] == "ready"
    for chunk in random_chunks(first, c.rng):
        await ws.send(chunk)
    await ws.send(json.dumps({"type": "flush"}))
    before = []
    while True:
        m = await recv_json(ws)
        before.append(m)
        if m["type"] == "flushed":
            break
    assert abs(before[-1]["end"] - offset) < TIME_EPS, before[-1]
    for chunk in random_chunks(second, c.rng):
        await ws.send(chunk)
    await ws.send(json.dumps({"type": "close"}))
    after, code, _ = await read_until_closed(ws)
    assert code == 1000
    got = speech_segments(before + after)
    assert same_segments(got, want), f"{got} != {want}"


async def test_reset_restarts_timeline(c):
    ws = await connect(c.server)
    assert (await recv_json(ws))["type"] == "ready"
    await ws.send(c.pcm[:5 * 2 * c.rate + 1])  # 5 s and half a sample: reset drops it too
    await ws.send(json.dumps({"type": "reset"}))
    while (await recv_json(ws))["type"] != "reset":
        pass
    for chunk in random_chunks(c.pcm, c.rng):
        await ws.send(chunk)
    await ws.send(json.dumps({"type": "close"}))
    messages, code, _ = await read_until_closed(ws)
    assert code == 1000
    assert same_segments(speech_segments(messages), segments_of(c.reference))


async def test_bad_control_messages_keep_session(c):
    ws = await connect(c.server)
    assert (await recv_json(ws))["type"] == "ready"
    for bad in ['{"type":"bogus"}', "{not json", "[1,2]", '{"kind":"flush"}']:
        await ws.send(bad)
        m = await recv_json(ws)
        assert m["type"] == "error" and m["code"] == "bad_control" and m["message"], m
    for chunk in random_chunks(c.pcm, c.rng):
        await ws.send(chunk)
    await ws.send(json.dumps({"type": "close"}))
    messages, code, _ = await read_until_closed(ws)
    assert code == 1000
    assert same_segments(speech_segments(messages), segments_of(c.reference))


async def test_oversized_message_closes_1009(c):
    ws = await connect(c.server)
    assert (await recv_json(ws))["type"] == "ready"
    await ws.send(bytes((1 << 20) + 2))  # default --max-message-bytes is 1 MiB
    messages, code, _ = await read_until_closed(ws)
    assert code == 1009, f"close code {code}"
    assert any(m["type"] == "error" and m["code"] == "message_too_large" for m in messages), messages


async def test_too_many_streams_refused(c):
    # The earlier tests' streams first: a closed stream holds its place until its worker retires
    # it, which under ASan can be later than the next test's first connect.
    await wait_streams_released(c.server)
    held = [await connect(c.server) for _ in range(4)]  # --max-streams 4
    try:
        status, body = upgrade_request(c.server)
        assert status == 503 and body["error"]["code"] == "too_many_streams", (status, body)
        try:
            await connect(c.server, retry=False)
            raise AssertionError("a fifth stream was accepted")
        except websockets.exceptions.InvalidStatusCode as e:
            assert e.status_code == 503
    finally:
        for ws in held:
            await ws.close()
    await wait_streams_released(c.server)
    ws = await connect(c.server)  # room again
    await ws.close()


async def test_token(c):
    status, body = upgrade_request(c.server, headers={})
    assert status == 401 and body["error"]["code"] == "unauthorized", (status, body)
    status, body = upgrade_request(c.server, headers={"Authorization": "Bearer wrong"})
    assert status == 401, status
    status, _ = upgrade_request(c.server, query=f"token={TOKEN}", headers={})
    assert status == 101, status
    status, _, body = http_request("POST", c.server.url("/v1/vad"), body=b"x")
    assert status == 401 and json.loads(body)["error"]["code"] == "unauthorized"


async def test_origin(c):
    status, body = upgrade_request(c.server, headers={**AUTH, "Origin": "http://evil.example"})
    assert status == 403 and body["error"]["code"] == "forbidden_origin", (status, body)
    for ok in [f"http://127.0.0.1:{c.server.port}", "http://allowed.example"]:
        status, _ = upgrade_request(c.server, headers={**AUTH, "Origin": ok})
        assert status == 101, (ok, status)


async def test_bad_query_400(c):
    for query in ["encoding=mp3", "sample_rate=-5", "threshold=7", "events=words", "treshold=0.5",
                  "min_speech_ms=abc"]:
        status, body = upgrade_request(c.server, query=query)
        assert status == 400 and body["error"]["code"] == "bad_request" and body["error"]["message"], (query, body)


async def test_slow_reader_bounded(c):
    """A client that sends fast with events=vad and reads nothing: the server drops only vad
    messages (and says so), keeps its memory bounded, keeps serving others, still delivers every
    speech event, and keeps reading the client's audio even when the client pings it (Beast
    answers a ping before it reads on: the server must keep room in the socket for that pong).

    The pings are sent explicitly, every 30 s of audio, from the point where the server's socket
    is full: the library's keepalive (a ping after 20 s of wall time) would exercise that path only
    on a slow machine, and a client that reads nothing could never see its pong anyway."""
    rss_before = c.server.rss_bytes()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", c.server.port))
    sock.setblocking(False)
    ws = await websockets.connect(c.server.ws_url("events=vad"), sock=sock, extra_headers=AUTH, max_size=None,
                                  max_queue=4, read_limit=4096, open_timeout=10, ping_interval=None)
    minutes = 5
    data = c.pcm * (minutes * 60 * c.rate * 2 // len(c.pcm) + 1)
    rss_peak = 0
    for i in range(0, len(data), 32000):
        await asyncio.wait_for(ws.send(data[i:i + 32000]), 20)
        if i >= 32000 * 90 and i % (32000 * 30) == 0:
            await ws.ping()  # its pong is never read
        if i % (32000 * 50) == 0:
            rss_peak = max(rss_peak, c.server.rss_bytes())
    # Others are still served meanwhile.
    status, _, body = http_request("GET", c.server.url("/healthz"))
    assert status == 200 and json.loads(body)["status"] == "ok"
    await ws.send(json.dumps({"type": "close"}))
    await asyncio.sleep(1.0)
    rss_peak = max(rss_peak, c.server.rss_bytes())
    messages, code, _ = await read_until_closed(ws, timeout=40)
    assert code == 1000, code
    dropped = sum(m.get("dropped_messages", 0) for m in messages if m["type"] == "overload")
    vad = sum(1 for m in messages if m["type"] == "vad")
    frames = (len(data) // 2 + 511) // 512
    assert dropped > 0, f"no vad message was dropped ({vad} of {frames} arrived): the test did not fill the queue"
    # The engine's own event ring may drop a few more under load (counted in /metrics).
    assert frames - 100 <= vad + dropped <= frames, f"{vad} sent + {dropped} dropped vs {frames} frames"
    # Speech events are never dropped: the segments are those of the whole (repeated) recording.
    path = os.path.join(c.tmp, "long.wav")
    write_wav(path, data, c.rate)
    want = segments_of(cli_json(c.brisvox, path))
    assert same_segments(speech_segments(messages), want), "speech events were lost"
    growth = rss_peak - rss_before
    assert growth < 64 << 20, f"server memory grew by {growth >> 20} MiB"
    c.log(f"slow reader: {dropped} of {frames} vad messages dropped, server RSS +{growth >> 20} MiB")


async def test_client_disconnects_mid_message(c):
    """Two clients vanish: one mid-message (a frame header announcing 64000 bytes, 20000 sent, then
    FIN), one in the middle of streaming (TCP reset). Meanwhile another stream goes on: it gets
    exactly its segments; the two vanished streams are released (engine and session gauges, one
    log line each) while it still runs."""
    cut = 6 * c.rate * 2
    path = os.path.join(c.tmp, "first6s.wav")
    write_wav(path, c.pcm[:cut], c.rate)
    want = segments_of(cli_json(c.brisvox, path))
    healthy_done = asyncio.Event()

    async def healthy():
        # 6 s of audio at 3x real time: still streaming while the faults happen and are cleaned up.
        ws = await connect(c.server, "sample_rate=16000&encoding=pcm_s16le")
        assert (await recv_json(ws))["type"] == "ready"
        step = c.rate * 2 // 10
        for i in range(0, cut, step):
            await ws.send(c.pcm[i:min(i + step, cut)])
            await asyncio.sleep(0.1 / 3)
        await ws.send(json.dumps({"type": "close"}))
        messages, code, _ = await read_until_closed(ws)
        healthy_done.set()
        return messages, code

    task = asyncio.create_task(healthy())
    await asyncio.sleep(0.2)

    def mid_message():
        sock, port = raw_ws_connect(c.server)
        sock.sendall(client_frame(0x2, c.pcm[:32000]))  # 1 s of audio, whole
        mask = os.urandom(4)
        sock.sendall(client_frame_header(0x2, 64000, mask) + masked(c.pcm[32000:52000], mask))
        # Read what the server sent (a speech_start), so that close() sends a FIN, not a reset.
        sock.settimeout(0.3)
        try:
            while sock.recv(65536):
                pass
        except socket.timeout:
            pass
        sock.close()  # FIN, 44000 bytes short of the announced frame
        return port

    def reset_while_streaming():
        sock, port = raw_ws_connect(c.server)
        for i in range(5):
            sock.sendall(client_frame(0x2, c.pcm[i * 3200:(i + 1) * 3200]))
            time.sleep(0.05)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # RST
        return port

    loop = asyncio.get_running_loop()
    for fault, why in ((mid_message, "End of file"), (reset_while_streaming, "Connection reset")):
        since = len(c.server.lines)  # the kernel may give this fault's socket a port an earlier stream had
        port = await loop.run_in_executor(None, fault)
        opened = await wait_log(c.server, rf"stream (\d+) open: 127\.0\.0\.1:{port}\b", since=since)
        closed = await wait_log(c.server, rf"stream {opened.group(1)} closed: connection lost: {why}", since=since)
        c.log(f"{fault.__name__}: {closed.string.strip()}")
    # Only the healthy stream is left, in the engine and in the server.
    if not healthy_done.is_set():
        await wait_streams_released(c.server, active=1)
    else:
        raise AssertionError("the healthy stream ended before the faults were checked: make it longer")
    messages, code = await task
    assert code == 1000, code
    got = speech_segments(messages)
    assert same_segments(got, want), f"{got} != {want}"
    await wait_streams_released(c.server)
    status, _, body = http_request("GET", c.server.url("/healthz"))
    assert status == 200 and json.loads(body)["status"] == "ok", body


async def test_sigterm_under_load(c):
    """56 streams sending in real time, then SIGTERM: each gets its final events (the speech_end
    of its open segment) and a 1001 close, and the server exits 0 within --drain-timeout-s."""
    num_streams = 56
    drain_timeout_s = 10
    server = Server(c.brisvox, "--workers", "2", "--io-threads", "2", "--token", TOKEN, "--max-streams", "64",
                    "--drain-timeout-s", str(drain_timeout_s))
    c.extra_servers.append(server)
    step = c.rate * 2 // 10  # 100 ms
    ready = 0
    all_ready = asyncio.Event()

    async def one(i):
        nonlocal ready
        ws = await connect(server, "sample_rate=16000&encoding=pcm_s16le")
        assert (await recv_json(ws))["type"] == "ready"
        ready += 1
        if ready == num_streams:
            all_ready.set()
        messages = []

        async def reader():
            try:
                while True:
                    messages.append(json.loads(await ws.recv()))
            except websockets.exceptions.ConnectionClosed:
                pass

        reading = asyncio.create_task(reader())
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        sent = 0
        # Each stream starts elsewhere in the first segment (0.322 - 6.91 s), all inside speech.
        start = (i % 8) * step
        while not reading.done() and start + sent + step <= len(c.pcm):
            await asyncio.sleep(max(0.0, t0 + sent / (2 * c.rate) - loop.time()))
            try:
                await ws.send(c.pcm[start + sent:start + sent + step])
            except websockets.exceptions.ConnectionClosed:
                break
            sent += step
        await asyncio.wait_for(reading, 20)
        return messages, ws.close_code, ws.close_reason, sent / 2 / c.rate

    tasks = [asyncio.create_task(one(i)) for i in range(num_streams)]
    await asyncio.wait_for(all_ready.wait(), 15)
    await asyncio.sleep(2.5)
    values = metrics_values(server)
    assert values["brisvox_active_streams"] == num_streams, values["brisvox_active_streams"]
    t_signal = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    results = await asyncio.gather(*tasks)
    rc = await asyncio.get_running_loop().run_in_executor(None, server.proc.wait, drain_timeout_s + 5)
    exit_s = time.monotonic() - t_signal
    assert rc == 0, f"exit status {rc}"
    assert exit_s < drain_timeout_s, f"exit {exit_s:.1f} s after SIGTERM (drain timeout {drain_timeout_s} s)"
    for i, (messages, code, reason, sent_s) in enumerate(results):
        assert code == 1001 and reason == "going away", (i, code, reason)
        segments = speech_segments(messages)  # every speech_end follows its speech_start
        speech = [m["type"] for m in messages if m["type"] in ("speech_start", "speech_end")]
        assert speech and speech[-1] == "speech_end", f"stream {i}: speech left open at close: {speech}"
        # The final speech_end closes the open segment at the end of the audio the server read.
        end = segments[-1][1]
        assert 2.0 <= end <= sent_s + TIME_EPS, f"stream {i}: final speech_end at {end} s, {sent_s} s sent"
        assert not any(m["type"] == "error" for m in messages), (i, messages)
    log = "\n".join(server.lines)
    assert len(re.findall(r"stream \d+ closed: code 1001 going away", log)) == num_streams, log[-2000:]
    c.log(f"SIGTERM under load: {num_streams} streams closed 1001 with their final events, exit 0 "
          f"after {exit_s:.2f} s")


async def test_post_vad(c):
    data = open(c.args.sample, "rb").read()
    status, headers, body = http_request("POST", c.server.url("/v1/vad"), body=data, headers=AUTH)
    assert status == 200, (status, body)
    got = json.loads(body)
    want = dict(c.reference, file="request")
    assert got == want, f"{got} != {want}"
    status, _, body = http_request("POST", c.server.url("/v1/vad?name=sample.wav&encoding=pcm_s16le&sample_rate=16000"),
                                   body=c.pcm, headers=AUTH)
    assert status == 200 and json.loads(body) == dict(c.reference, file="sample.wav"), body
    status, _, body = http_request("POST", c.server.url("/v1/vad"), body=b"RIFF garbage" * 10, headers=AUTH)
    assert status in (400, 415) and json.loads(body)["error"]["code"] in ("bad_audio", "unsupported_audio"), body
    status, _, body = http_request("POST", c.server.url("/v1/vad"), body=bytes(3 << 20), headers=AUTH)
    assert status == 413 and json.loads(body)["error"]["code"] == "payload_too_large", (status, body)


async def test_turn_events(c):
    # Live stream: turn events arrive, well-formed (their verdicts depend on timing: see PROTOCOL.md).
    messages, code, _ = await stream_file(c.server, "sample_rate=16000&encoding=pcm_s16le&events=turn", c.pcm, c.rng)
    assert code == 1000, f"close code {code}"
    assert "turn" in messages[0]["config"]["events"], messages[0]
    turns = [m for m in messages if m["type"] in ("turn_end", "turn_incomplete")]
    ends = [m for m in turns if m["type"] == "turn_end"]
    # The file is sent as fast as the socket takes it, so how many pauses get their verdict before
    # the audio moves on depends on the machine (one turn for the whole file on a loaded or
    # sanitized build); at least the end of the stream closes a turn. The exact turns of the file
    # are checked through POST below, where the result does not depend on timing.
    assert len(ends) >= 1, turns
    for m in turns:
        assert 0 <= m["start"] < m["end"] <= 28.5, m
    assert all(m["reason"] in ("model", "timeout", "end_of_stream") for m in ends), ends
    # A whole file: POST /v1/vad?events=turn gives exactly what `brisvox turn` prints.
    data = open(c.args.sample, "rb").read()
    status, _, body = http_request("POST", c.server.url("/v1/vad?events=turn"), body=data, headers=AUTH)
    assert status == 200, (status, body)
    got = json.loads(body)["turns"]
    out = subprocess.run([c.brisvox, "turn", "--turn-model", c.args.turn_model, c.args.sample],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    want = json.loads(out.splitlines()[0])["turns"]
    assert got == want, f"{got} != {want}"
    # A server without a turn model refuses the request before the upgrade.
    status, body = upgrade_request(c.server2, "sample_rate=16000&events=turn", headers=AUTH)
    assert status == 400 and "turn model" in body["error"]["message"], (status, body)


async def test_healthz_metrics_page(c):
    status, _, body = http_request("GET", c.server.url("/healthz"))
    assert status == 200 and json.loads(body)["status"] == "ok", body
    status, headers, body = http_request("GET", c.server.url("/metrics"))
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4"), headers
    text = body.decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    for name in ["brisvox_active_streams", "brisvox_websocket_sessions_active", "brisvox_streams_opened_total",
                 "brisvox_streams_refused_total", "brisvox_frames_processed_total",
                 'brisvox_batch_size_count{model="vad"}', 'brisvox_queue_delay_seconds_count{model="vad"}',
                 'brisvox_inference_seconds_count{model="vad"}', 'brisvox_model_latency_seconds_count{model="vad"}',
                 'brisvox_batches_total{model="vad"}', 'brisvox_model_inputs_total{model="vad"}',
                 'brisvox_run_errors_total{model="vad"}', 'brisvox_model_workers{model="vad",family="silero_vad"}',
                 "brisvox_added_latency_seconds_count", "brisvox_samples_rejected_total",
                 'brisvox_events_dropped_total{stage="send_queue"}', "brisvox_process_resident_memory_bytes"]:
        assert name in values, f"{name} missing from /metrics"
    assert values["brisvox_frames_processed_total"] > 10000, values["brisvox_frames_processed_total"]
    assert values["brisvox_streams_refused_total"] >= 1
    assert values['brisvox_errors_total{code="bad_control"}'] >= 4
    assert values['brisvox_errors_total{code="unauthorized"}'] >= 1
    assert 1e7 < values["brisvox_process_resident_memory_bytes"] < 4e9
    assert (values['brisvox_queue_delay_seconds_bucket{model="vad",le="+Inf"}'] ==
            values['brisvox_queue_delay_seconds_count{model="vad"}'])
    assert values['brisvox_batch_size_count{model="vad"}'] > 0 and values['brisvox_inference_seconds_sum{model="vad"}'] > 0
    # The VAD model's inputs are the frames, and its latency is the engine's added latency.
    assert values['brisvox_model_inputs_total{model="vad"}'] == values["brisvox_frames_processed_total"]
    assert values['brisvox_model_latency_seconds_count{model="vad"}'] == values["brisvox_added_latency_seconds_count"]
    status, _, body = http_request("GET", c.server.url("/"))
    assert status == 200 or (status == 404 and b"index.html" in body), (status, body[:200])
    status, _, body = http_request("GET", c.server.url("/v1/nothing"))
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found"


async def test_idle_timeout(c):
    ws = await connect(c.server2)
    assert (await recv_json(ws))["type"] == "ready"
    t0 = time.monotonic()
    messages, code, _ = await read_until_closed(ws, timeout=10)
    assert code == 1008 and any(m.get("code") == "idle_timeout" for m in messages), (code, messages)
    assert 1.5 < time.monotonic() - t0 < 6


async def test_rate_limit_paces(c):
    # --max-rate 2 with a 2 s burst: 6 s of audio cannot be taken in less than (6 - 2) / 2 = 2 s.
    ws = await connect(c.server2)
    assert (await recv_json(ws))["type"] == "ready"
    t0 = time.monotonic()
    await ws.send(c.pcm[:6 * 2 * c.rate])
    await ws.send(json.dumps({"type": "flush"}))
    while (await recv_json(ws, timeout=15))["type"] != "flushed":
        pass
    elapsed = time.monotonic() - t0
    assert 1.8 < elapsed < 6, f"6 s of audio at 2x real time took {elapsed:.2f} s"
    await ws.close()


async def test_sigterm_drains(c):
    cut = 3 * c.rate * 2  # 3 s: inside the first segment, which the final events must close
    path = os.path.join(c.tmp, "first3s.wav")
    write_wav(path, c.pcm[:cut], c.rate)
    want = segments_of(cli_json(c.brisvox, path))
    received = metrics_values(c.server2)["brisvox_audio_samples_received_total"]
    ws = await connect(c.server2)
    assert (await recv_json(ws))["type"] == "ready"
    await ws.send(c.pcm[:cut])
    messages = [await recv_json(ws)]
    assert messages[0]["type"] == "speech_start", messages
    # SIGTERM only once the server has read all of it (2 s burst + 2x rate: 0.5 s on a quiet
    # machine): audio not read yet when draining starts is never analysed.
    deadline = time.monotonic() + 10
    while metrics_values(c.server2)["brisvox_audio_samples_received_total"] < received + cut // 2:
        assert time.monotonic() < deadline, "the server did not read the 3 s of audio in 10 s"
        await asyncio.sleep(0.05)
    c.server2.proc.send_signal(signal.SIGTERM)
    rest, code, reason = await read_until_closed(ws, timeout=10)
    messages += rest
    assert code == 1001, f"close code {code} {reason}"
    got = speech_segments(messages)
    assert same_segments(got, want), f"{got} != {want}"
    rc = c.server2.proc.wait(10)
    assert rc == 0, f"exit status {rc}"
    log = "\n".join(c.server2.lines)
    assert re.search(r"stream \d+ open", log) and re.search(r"stream \d+ closed: code 1001", log), log


TESTS = [
    test_stream_s16le_random_chunks,
    test_stream_f32le,
    test_stream_8khz,
    test_stream_mulaw,
    test_stream_resampled_44k,
    test_flush_continues_timeline,
    test_reset_restarts_timeline,
    test_bad_control_messages_keep_session,
    test_oversized_message_closes_1009,
    test_too_many_streams_refused,
    test_token,
    test_origin,
    test_bad_query_400,
    test_slow_reader_bounded,
    test_client_disconnects_mid_message,
    test_sigterm_under_load,
    test_post_vad,
    test_turn_events,
    test_healthz_metrics_page,
    # On the second server (--max-rate 2 --idle-timeout-s 2); the last one stops it.
    test_idle_timeout,
    test_rate_limit_paces,
    test_sigterm_drains,
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--sample", required=True)
    ap.add_argument("--turn-model", required=True, help="a Smart Turn v3 .onnx (the generated tiny one)")
    ap.add_argument("--only", action="append", help="run only tests whose name contains this")
    ap.add_argument("--test-timeout", type=float, default=30, help="seconds per test")
    # About 16 s on a quiet 2-core machine, 3x that under AddressSanitizer: the budget leaves room
    # for a loaded machine on top, and stays under CTest's 90 s TIMEOUT so that the script, not
    # CTest, stops the servers and prints their logs.
    ap.add_argument("--budget", type=float, default=80, help="seconds for all the tests")
    args = ap.parse_args()
    tests = [t for t in TESTS if not args.only or any(o in t.__name__ for o in args.only)]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="brisvox-server-test-") as tmp:
        c = Context(args, tmp)
        c.log = lambda msg: print(f"    {msg}", flush=True)
        servers = []
        c.extra_servers = servers  # servers a test starts itself: killed at the end too
        try:
            c.server = Server(args.brisvox, "--workers", "2", "--io-threads", "2", "--token", TOKEN,
                              "--turn-model", args.turn_model,
                              "--max-streams", "4", "--max-rate", "1000", "--max-body-bytes", "2000000",
                              "--allow-origin", "http://allowed.example")
            servers.append(c.server)
            c.server2 = Server(args.brisvox, "--workers", "1", "--token", TOKEN, "--max-rate", "2",
                               "--idle-timeout-s", "2", "--drain-timeout-s", "5")
            servers.append(c.server2)
        except BaseException:
            for s in servers:
                s.kill()
            raise
        failures = run_tests([(t.__name__, lambda t=t: t(c)) for t in tests], servers, args.budget,
                             args.test_timeout, started)
    print(f"{len(tests) - len(failures)} of {len(tests)} passed in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
