#!/usr/bin/python3
"""Regression tests of the hostile-client defects of issue 13 against `brisvox serve` on loopback
(docs/RELIABILITY.md, "Server hardening", lists each defect with its test).

Each test drives the real server over raw sockets, so that it can send what no client library
sends (a chunk extension that never ends, a head dripped byte by byte, two Host headers). Every
server runs with small limits so that each test takes about a second.

  /usr/bin/python3 tests/server/test_hardening.py --brisvox build/release/brisvox \
      --sample third_party/audio/sample.wav [--only NAME ...]
"""
import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import wave

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server, die_with_parent, run_tests, wait_line  # noqa: E402

TOKEN = "s3cret-token"
MIB = 1 << 20


# --- raw HTTP ------------------------------------------------------------------------------------

class Sock(socket.socket):
    """A socket that can hold the bytes read past one response (`pending`)."""


def connect(server, source="127.0.0.1", timeout=5):
    sock = Sock(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", server.port))
    return sock


def read_response(sock, head_request=False, timeout=5):
    """One HTTP response from `sock`: (status, {lower-case header: value}, body bytes), or None if
    the connection closed before a status line. Reads exactly Content-Length bytes of body (none
    for a HEAD request), so a second response on the same connection is left in `sock`'s buffer
    attribute `pending`."""
    sock.settimeout(timeout)
    data = getattr(sock, "pending", b"")
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in data:
        if time.monotonic() > deadline:
            raise AssertionError(f"no complete response head in {timeout} s: {data[:200]!r}")
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            chunk = b""
        if not chunk:
            if not data:
                return None
            raise AssertionError(f"connection closed inside a response head: {data[:200]!r}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    length = 0 if head_request else int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    sock.pending = rest[length:]
    return status, headers, rest[:length]


def request(server, raw, source="127.0.0.1", head_request=False, timeout=5):
    sock = connect(server, source)
    try:
        sock.sendall(raw)
        return read_response(sock, head_request=head_request, timeout=timeout)
    finally:
        sock.close()


def get(server, path, host=None, extra=""):
    host = host or f"127.0.0.1:{server.port}"
    return request(server, f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n".encode())


def post(server, path, body, extra=""):
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n").encode()
    return request(server, head + body, timeout=20)


def error_code(response):
    return json.loads(response[2])["error"]["code"]


def closed_by_server(sock, timeout=5):
    """True when the server closes `sock` (EOF or reset) within `timeout`, discarding what it sends."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


def wav_bytes(path, seconds, rate=16000):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\0" * int(seconds * rate))
    with open(path, "rb") as f:
        return f.read()


def upgrade_head(server, host=None, origin=None):
    host = host or f"127.0.0.1:{server.port}"
    h = (f"GET /v1/stream HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
         f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
         f"Authorization: Bearer {TOKEN}\r\n")
    if origin:
        h += f"Origin: {origin}\r\n"
    return (h + "\r\n").encode()


def wait_streams_closed(server, timeout=5):
    """Until the server counts no open stream (/healthz "streams")."""
    deadline = time.monotonic() + timeout
    while json.loads(get(server, "/healthz")[2])["streams"] != 0:
        assert time.monotonic() < deadline, "a stream stayed open"
        time.sleep(0.02)


# --- 1. SIGPIPE ----------------------------------------------------------------------------------

def test_sigpipe_closed_stderr(c):
    """`brisvox serve 2>&1 | head -1`: the reader of stderr goes away after the first line; the next
    log line ("stream N open") must not kill the server."""
    proc = subprocess.Popen([c.args.brisvox, "serve", "--host", "127.0.0.1", "--port", "0", "--workers", "1"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=die_with_parent)
    c.procs.append(proc)
    line = b""
    deadline = time.monotonic() + 60
    while b"listening on" not in line and time.monotonic() < deadline:
        line = proc.stderr.readline()
        assert line, "the server exited before listening"
    port = int(re.search(rb"127\.0\.0\.1:(\d+)", line).group(1))
    proc.stderr.close()  # what `head -1` does after its line

    async def stream():
        async with websockets.connect(f"ws://127.0.0.1:{port}/v1/stream", open_timeout=5) as ws:
            json.loads(await asyncio.wait_for(ws.recv(), 5))  # ready: "stream 1 open" was logged
            await ws.send(b"\0" * 3200)
    for _ in range(2):
        asyncio.run(stream())
    time.sleep(0.3)
    assert proc.poll() is None, f"the server died with status {proc.returncode} (SIGPIPE is 13)"

    class P:
        pass
    p = P()
    p.port = port
    r = get(p, "/healthz")
    assert r and r[0] == 200, r
    proc.kill()
    proc.wait(5)


# --- 2. Unbounded chunk extension / trailer ------------------------------------------------------

def flood(sock, prefix, filler, total):
    """Sends `prefix`, then `filler` until `total` bytes or the server stops taking them."""
    sent = 0
    try:
        sock.sendall(prefix)
        while sent < total:
            sock.sendall(filler)
            sent += len(filler)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    return sent


def chunked_attack(c, name, prefix):
    s = c.server
    rss0 = s.rss_bytes()
    sock = connect(s, timeout=3)
    head = (f"POST /v1/vad HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Transfer-Encoding: chunked\r\n\r\n").encode()
    sent = flood(sock, head + prefix, b"a" * 65536, 48 * MIB)
    rss1 = s.rss_bytes()
    c.log(f"{name}: sent {sent / MIB:.1f} MiB, server RSS {rss0 / MIB:.1f} -> {rss1 / MIB:.1f} MiB")
    r = read_response(sock, timeout=5)
    sock.close()
    assert r is not None, "no answer: the server closed without a status"
    assert r[0] in (400, 413), r
    assert rss1 - rss0 < 16 * MIB, f"the server buffered the attack: RSS +{(rss1 - rss0) / MIB:.1f} MiB"


def test_chunk_extension_bounded(c):
    chunked_attack(c, "chunk extension", b"1;ext=")


def test_chunk_trailer_bounded(c):
    chunked_attack(c, "trailer", b"1\r\na\r\n0\r\nX-Trailer: ")


# --- 3. Decompression bomb -------------------------------------------------------------------------

def test_upload_duration_limit(c):
    """--max-upload-seconds 20: a 60 s WAV, a 10-minute FLAC of silence (a few KB) and 60 s of
    headerless PCM are refused with 413 audio_too_long; a 3 s file passes."""
    s = c.server
    r = post(s, "/v1/vad", wav_bytes(os.path.join(c.tmp, "60s.wav"), 60))
    assert r[0] == 413 and error_code(r) == "audio_too_long", r
    assert "--max-upload-seconds" in json.loads(r[2])["error"]["message"], r
    r = post(s, "/v1/vad?encoding=pcm_s16le&sample_rate=16000", b"\0\0" * 16000 * 60)
    assert r[0] == 413 and error_code(r) == "audio_too_long", r
    if shutil.which("sox"):
        flac = os.path.join(c.tmp, "bomb.flac")
        subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", flac, "trim", "0", "600"], check=True)
        with open(flac, "rb") as f:
            body = f.read()
        rss0 = s.rss_bytes()
        t0 = time.monotonic()
        r = post(s, "/v1/vad", body)
        took = time.monotonic() - t0
        c.log(f"FLAC bomb: {len(body)} bytes for 600 s, answered in {took:.2f} s, "
              f"RSS {rss0 / MIB:.1f} -> {s.rss_bytes() / MIB:.1f} MiB")
        assert r[0] == 413 and error_code(r) == "audio_too_long", r
    else:
        c.log("sox missing: FLAC bomb part skipped")
    r = post(s, "/v1/vad", wav_bytes(os.path.join(c.tmp, "3s.wav"), 3))
    assert r[0] == 200, r


# --- 4. Connection exhaustion --------------------------------------------------------------------

def test_fd_limit_raised(c):
    """Started with a soft open-file limit of 256 (hard: unchanged), the server raises it to the hard
    limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard <= 256:
        c.log(f"hard limit {hard}: nothing to raise; skipped")
        return

    def low():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        die_with_parent()
    proc = subprocess.Popen([c.args.brisvox, "serve", "--host", "127.0.0.1", "--port", "0", "--workers", "1"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=low)
    c.procs.append(proc)
    while b"listening on" not in proc.stderr.readline():
        assert proc.poll() is None, "the server exited"
    with open(f"/proc/{proc.pid}/limits") as f:
        line = next(l for l in f if l.startswith("Max open files"))
    proc.kill()
    proc.wait(5)
    assert int(line.split()[3]) == hard, f"{line.strip()} (hard {hard})"


def test_connection_caps(c):
    """--max-connections 24 --max-connections-per-client 16: the 17th connection from one address
    and the 25th in all get 503 too_many_connections at once; the others keep working, and closing
    them makes room."""
    s = c.server
    held = [connect(s) for _ in range(16)]
    time.sleep(0.2)
    extra = connect(s)
    r = read_response(extra, timeout=3)
    extra.close()
    assert r is not None and r[0] == 503 and error_code(r) == "too_many_connections", r
    other = [connect(s, source="127.0.0.2") for _ in range(8)]
    time.sleep(0.2)
    extra = connect(s, source="127.0.0.3")
    r = read_response(extra, timeout=3)
    extra.close()
    assert r is not None and r[0] == 503 and error_code(r) == "too_many_connections", r
    # A held connection still works.
    held[0].sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n\r\n".encode())
    r = read_response(held[0])
    assert r[0] == 200, r
    for sock in held + other:
        sock.close()
    time.sleep(0.3)
    r = get(s, "/healthz")
    assert r[0] == 200, r


def test_request_head_timeout_408(c):
    """A connection that has not sent a complete request head within --request-head-timeout-s (1 s
    here) gets 408 and is closed, idle or dripping."""
    s = c.server
    sock = connect(s)
    t0 = time.monotonic()
    r = read_response(sock, timeout=5)
    took = time.monotonic() - t0
    sock.close()
    assert r is not None and r[0] == 408, r
    assert took < 3, f"408 after {took:.1f} s"
    sock = connect(s)
    t0 = time.monotonic()
    head = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nX-Drip: ".encode()
    drip = iter(head + b"a" * 10000)
    try:
        while time.monotonic() - t0 < 3:  # a byte every 10 ms: never a complete head
            sock.sendall(bytes([next(drip)]))
            time.sleep(0.01)
            sock.settimeout(0.001)
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    break
            except socket.timeout:
                pass
            sock.settimeout(5)
    except (BrokenPipeError, ConnectionResetError):
        pass
    r = read_response(sock, timeout=3)
    sock.close()
    assert r is not None and r[0] == 408, r
    # A kept-alive connection that sends nothing more is idle: closed after the same time, without
    # an answer its client would take for the answer to its next request.
    sock = connect(s)
    sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n\r\n".encode())
    r = read_response(sock, timeout=5)
    assert r is not None and r[0] == 200, r
    t0 = time.monotonic()
    assert read_response(sock, timeout=5) is None, "an idle kept-alive connection was answered"
    took = time.monotonic() - t0
    sock.close()
    assert 0.5 < took < 3, f"closed after {took:.1f} s"


def test_body_drip_408(c):
    """A body dripped slower than --http-timeout-s (3 s here) allows gets 408, not a bare close."""
    s = c.server
    sock = connect(s)
    sock.sendall((f"POST /v1/vad HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
                  f"Content-Length: 100000\r\n\r\n").encode())
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 5:
            sock.sendall(b"\0")
            time.sleep(0.1)
            sock.settimeout(0.01)
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    break
            except socket.timeout:
                pass
            sock.settimeout(5)
    except (BrokenPipeError, ConnectionResetError):
        pass
    r = read_response(sock, timeout=3)
    sock.close()
    assert r is not None and r[0] == 408, r


# --- 5. Concurrent uploads -----------------------------------------------------------------------

def test_uploads_bounded_503(c):
    """--max-uploads 2: two uploads held open (their bodies half sent) leave a third one refused at
    once with 503 and Retry-After; once they go, uploads work again."""
    s = c.server
    holders = []
    for _ in range(2):
        sock = connect(s)
        sock.sendall((f"POST /v1/vad HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
                      f"Content-Length: 1000000\r\n\r\n").encode() + b"\0" * 1000)
        holders.append(sock)
    time.sleep(0.3)
    t0 = time.monotonic()
    r = post(s, "/v1/vad", wav_bytes(os.path.join(c.tmp, "1s.wav"), 1))
    assert r[0] == 503 and error_code(r) == "too_many_uploads", r
    assert "retry-after" in r[1], r[1]
    assert time.monotonic() - t0 < 2
    for sock in holders:
        sock.close()
    time.sleep(0.3)
    r = post(s, "/v1/vad", wav_bytes(os.path.join(c.tmp, "1s.wav"), 1))
    assert r[0] == 200, r


# --- 6. DNS rebinding ----------------------------------------------------------------------------

def test_host_allow_list(c):
    s = c.server
    p = s.port
    r = request(s, upgrade_head(s, host=f"evil.example:{p}", origin=f"http://evil.example:{p}"))
    assert r[0] == 403 and error_code(r) == "forbidden_host", r
    r = get(s, "/metrics", host=f"evil.example:{p}")
    assert r[0] == 403 and error_code(r) == "forbidden_host", r
    r = request(s, upgrade_head(s, origin=f"ftp://127.0.0.1:{p}"))
    assert r[0] == 403 and error_code(r) == "forbidden_origin", r
    for host in (f"127.0.0.1:{p}", f"localhost:{p}", "localhost", f"[::1]:{p}"):
        r = get(s, "/healthz", host=host)
        assert r[0] == 200, (host, r)
    r = request(s, upgrade_head(s, origin=f"http://127.0.0.1:{p}"))
    assert r[0] == 101, r
    wait_streams_closed(s)
    r = request(s, upgrade_head(s, host=f"app.internal:{p}", origin=f"http://app.internal:{p}"))
    assert r[0] == 101, r  # --allow-host app.internal


# --- 8. HTTP conformance -------------------------------------------------------------------------

def test_head_has_no_body(c):
    """HEAD then GET on one kept-alive connection: the HEAD answer carries no body, so the GET's
    answer is read intact."""
    s = c.server
    for path in ("/healthz", "/metrics", "/v1/vad", "/v1/stream"):
        sock = connect(s)
        sock.sendall((f"HEAD {path} HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
                      f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nConnection: close\r\n\r\n").encode())
        first = read_response(sock, head_request=True)
        second = read_response(sock)
        sock.close()
        assert first[0] in (200, 405), (path, first)
        assert second is not None and second[0] == 200 and json.loads(second[2])["status"] == "ok", (path, second)


def test_malformed_requests_400(c):
    s = c.server
    h = f"Host: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
    cases = {
        "bad request line": b"GARBAGE\r\n\r\n",
        "bad version": f"GET /healthz HTTP/9\r\n{h}\r\n".encode(),
        "conflicting Content-Length": f"POST /v1/vad HTTP/1.1\r\n{h}Content-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef".encode(),
        "bad chunk size": f"POST /v1/vad HTTP/1.1\r\n{h}Transfer-Encoding: chunked\r\n\r\nzz\r\n".encode(),
        "chunked not last": f"POST /v1/vad HTTP/1.1\r\n{h}Transfer-Encoding: chunked, gzip\r\n\r\n".encode(),
        "no Host": b"GET /healthz HTTP/1.1\r\n\r\n",
        "two Hosts": f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n".encode(),
    }
    for name, raw in cases.items():
        r = request(s, raw)
        assert r is not None and r[0] == 400, (name, r)
    r = request(s, b"GET /healthz HTTP/1.0\r\n\r\n")  # HTTP/1.0 needs no Host
    assert r[0] == 200, r


def test_absolute_form_target(c):
    s = c.server
    r = get(s, f"http://127.0.0.1:{s.port}/healthz")
    assert r[0] == 200 and json.loads(r[2])["status"] == "ok", r
    # The authority is the Host that is checked: neither a foreign one nor an empty one passes.
    r = get(s, "http://evil.example/healthz")
    assert r[0] == 403 and error_code(r) == "forbidden_host", r
    r = get(s, "http:///metrics", host="evil.example")
    assert r[0] in (403, 404) and r[0] != 200, r


def test_documented_error_codes(c):
    """A WAV at 1 Hz and events=turn without a turn model: documented codes, not invalid_argument;
    MP3 garbage: a message about the data, not about a missing file."""
    s = c.server
    r = post(s, "/v1/vad", wav_bytes(os.path.join(c.tmp, "1hz.wav"), 10, rate=1))
    assert r[0] in (400, 415) and error_code(r) in ("bad_request", "bad_audio", "unsupported_audio"), r
    r = post(s, "/v1/vad?events=turn", wav_bytes(os.path.join(c.tmp, "1s.wav"), 1))
    assert r[0] == 400 and error_code(r) == "bad_request", r
    for garbage in (b"\xff\xfb\x90\x64" + bytes(range(256)) * 16, b"\xff\xe3" + bytes(100)):
        r = post(s, "/v1/vad", garbage)  # an MP3 frame sync, then no MPEG audio
        assert r[0] in (400, 415), r
        message = json.loads(r[2])["error"]["message"]
        assert "does not exist" not in message and "MP3" in message, r


# --- WebSocket: a client that only pings ----------------------------------------------------------

def test_ping_only_stream_times_out(c):
    """A stream whose client sends only pings (every 0.2 s) is closed at --idle-timeout-s (2 s here)
    with idle_timeout, as a silent one is: pings no longer hold a stream slot forever."""
    s = c.server

    async def pinger():
        async with websockets.connect(f"ws://127.0.0.1:{s.port}/v1/stream",
                                      extra_headers={"Authorization": f"Bearer {TOKEN}"}, open_timeout=5,
                                      ping_interval=0.2, ping_timeout=5) as ws:
            json.loads(await asyncio.wait_for(ws.recv(), 5))
            t0 = time.monotonic()
            messages = []
            try:
                while time.monotonic() - t0 < 5:
                    messages.append(json.loads(await asyncio.wait_for(ws.recv(), 5.5 - (time.monotonic() - t0))))
            except (websockets.exceptions.ConnectionClosed, asyncio.TimeoutError):
                pass
            return ws.close_code, messages, time.monotonic() - t0
    wait_streams_closed(s)
    code, messages, took = asyncio.run(pinger())
    assert code == 1008, f"close code {code} after {took:.1f} s"
    assert any(m.get("code") == "idle_timeout" for m in messages), messages
    wait_streams_closed(s)


def test_oversize_message_refused_at_once(c):
    """A 2 MiB binary message (limit 1 MiB) is refused from its frame header: message_too_large and
    close 1009 within a second, instead of after reading it at the paced rate (4x real time: 64 s
    of audio took 7.7 s) and analysing it."""
    s = c.server
    wait_streams_closed(s)

    async def oversize():
        async with websockets.connect(f"ws://127.0.0.1:{s.port}/v1/stream", max_size=None,
                                      extra_headers={"Authorization": f"Bearer {TOKEN}"}, open_timeout=5) as ws:
            json.loads(await asyncio.wait_for(ws.recv(), 5))
            t0 = time.monotonic()
            await ws.send(bytes(2 << 20))
            messages = []
            try:
                while True:
                    messages.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            except websockets.exceptions.ConnectionClosed:
                pass
            return ws.close_code, messages, time.monotonic() - t0
    code, messages, took = asyncio.run(oversize())
    assert code == 1009, code
    assert any(m.get("code") == "message_too_large" for m in messages), messages
    assert not any(m.get("type") in ("speech_start", "vad") for m in messages), messages
    assert took < 1.5, f"refused after {took:.1f} s"
    wait_streams_closed(s)


def test_log_timestamps(c):
    """--log-timestamps: every line starts with its UTC time, ISO 8601 with milliseconds."""
    proc = subprocess.Popen([c.args.brisvox, "serve", "--host", "127.0.0.1", "--port", "0", "--workers", "1",
                             "--log-timestamps"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
    c.procs.append(proc)
    line = proc.stderr.readline()
    proc.kill()
    proc.wait(5)
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d{3}Z brisvox serve: listening on http://", line)
    assert m, line
    stamp = time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert abs(stamp - time.time()) < 120, (line, time.time())


# --- Operations: readiness ------------------------------------------------------------------------

def open_stream(server, source):
    """A WebSocket upgrade from `source` held open: the socket, after the 101 (or the refusal)."""
    sock = connect(server, source)
    sock.sendall(upgrade_head(server))
    return sock, read_response(sock)  # a 101 has no body (no Content-Length)


def test_readyz(c):
    """/readyz: 200 ready while a new stream would be admitted; 503 not_ready (max_streams) while both
    slots (--max-streams 2) are taken; ready again once the streams close."""
    s = c.server
    wait_streams_closed(s)
    r = get(s, "/readyz")
    assert r[0] == 200 and json.loads(r[2])["status"] == "ready", r
    a, ra = open_stream(s, "127.0.0.1")
    b, rb = open_stream(s, "127.0.0.2")
    try:
        assert ra[0] == 101 and rb[0] == 101, (ra, rb)
        r = get(s, "/readyz")
        assert r[0] == 503, r
        body = json.loads(r[2])
        assert body["status"] == "not_ready" and body["reasons"] == ["max_streams"], body
    finally:
        a.close()
        b.close()
    wait_streams_closed(s)
    r = get(s, "/readyz")
    assert r[0] == 200, r


def test_streams_per_client(c):
    """--max-streams-per-client 1 (of --max-streams 2): a second stream from the same address gets
    503 too_many_streams at once, one from another address is accepted; the slot comes back when
    the stream closes."""
    s = c.server
    wait_streams_closed(s)
    a, ra = open_stream(s, "127.0.0.1")
    try:
        assert ra[0] == 101, ra
        b, rb = open_stream(s, "127.0.0.1")
        b.close()
        assert rb[0] == 503 and error_code(rb) == "too_many_streams", rb
        assert "--max-streams-per-client" in json.loads(rb[2])["error"]["message"], rb
        other, ro = open_stream(s, "127.0.0.2")
        other.close()
        assert ro[0] == 101, ro
    finally:
        a.close()
    wait_streams_closed(s)
    again, r = open_stream(s, "127.0.0.1")
    again.close()
    assert r[0] == 101, r
    wait_streams_closed(s)


# --- Operations: access log ----------------------------------------------------------------------

def test_access_log(c):
    """--access-log: one line per answer with client, method, path (never the query: it may hold
    the token), status, bytes, time and the error code of a refusal."""
    s = c.server
    r = get(s, "/healthz?probe=1")
    line = wait_line(s, r"access: 127\.0\.0\.1:\d+ GET /healthz 200 \d+ B [\d.]+ ms$")
    assert "probe" not in line, line
    sock = connect(s)
    sock.sendall(f"POST /v1/vad?token=leak HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\nx".encode())
    assert read_response(sock)[0] == 401
    sock.close()
    line = wait_line(s, r"access: 127\.0\.0\.1:\d+ POST /v1/vad 401 \d+ B [\d.]+ ms unauthorized: the token sent is not this server.s")
    assert all("leak" not in l for l in s.lines), "the query (a token) was logged"
    r = get(s, "/healthz", host="evil.example")
    wait_line(s, r"GET /healthz 403 \d+ B [\d.]+ ms forbidden_host: Host 'evil\.example' is not a name")


# --- Operations: process and limit metrics -------------------------------------------------------

def test_process_and_limit_metrics(c):
    """/metrics carries the standard process metrics, brisvox_build_info and the limit gauges; an
    upload held open shows in brisvox_uploads_in_progress, connections in
    brisvox_http_connections_open."""
    s = c.server
    held = connect(s)
    held.sendall((f"POST /v1/vad HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
                  f"Content-Length: 1000\r\n\r\n").encode())
    time.sleep(0.2)
    r = get(s, "/metrics")
    held.close()
    values = {}
    for line in r[2].decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    for name in ("process_cpu_seconds_total", "process_start_time_seconds", "process_open_fds", "process_max_fds",
                 "brisvox_http_connections_max", "brisvox_uploads_max"):
        assert name in values, name
    assert abs(values["process_start_time_seconds"] - time.time()) < 3600, values["process_start_time_seconds"]
    assert values["brisvox_uploads_in_progress"] == 1 and values["brisvox_uploads_max"] == 2, values
    assert values["brisvox_http_connections_open"] >= 2, values  # the held upload and this GET
    assert any(k.startswith("brisvox_build_info{version=") for k in values), sorted(values)
    # HTTP answers by handler and code: /healthz answered 200 before, an unknown /v1/ path 404.
    get(s, "/v1/nothing")
    r = get(s, "/metrics")
    text = r[2].decode()
    assert re.search(r'^brisvox_http_responses_total\{handler="healthz",code="200"\} [1-9]', text, re.M), text[-800:]
    assert re.search(r'^brisvox_http_responses_total\{handler="not_found",code="404"\} [1-9]', text, re.M), text[-800:]


# --- Operations: ONNX Runtime telemetry ----------------------------------------------------------

def test_no_telemetry_files(c):
    """ONNX Runtime 1.29 writes a device id and an event queue under
    ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ (and uploads them) unless telemetry is off:
    with a fresh HOME, `brisvox vad` and `brisvox serve` running a stream write nothing there."""
    home = os.path.join(c.tmp, "home")
    os.makedirs(home)
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env["HOME"] = home
    subprocess.run([c.args.brisvox, "vad", "--no-progress", c.args.sample], env=env, check=True,
                   capture_output=True, timeout=60)
    proc = subprocess.Popen([c.args.brisvox, "serve", "--host", "127.0.0.1", "--port", "0", "--workers", "1"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=die_with_parent)
    c.procs.append(proc)
    line = b""
    while b"listening on" not in line:
        line = proc.stderr.readline()
        assert line, "the server exited before listening"
    port = int(re.search(rb"127\.0\.0\.1:(\d+)", line).group(1))

    async def stream():
        async with websockets.connect(f"ws://127.0.0.1:{port}/v1/stream", open_timeout=5) as ws:
            json.loads(await asyncio.wait_for(ws.recv(), 5))
            await ws.send(b"\0" * 32000)
            await ws.send(json.dumps({"type": "close"}))
            try:
                while True:
                    await asyncio.wait_for(ws.recv(), 5)
            except websockets.exceptions.ConnectionClosed:
                pass
    asyncio.run(stream())
    proc.terminate()
    proc.wait(10)
    written = [os.path.join(d, f) for d, _, files in os.walk(home) for f in files]
    assert not written, f"written under HOME: {written}"


TESTS = [
    test_sigpipe_closed_stderr,
    test_chunk_extension_bounded,
    test_chunk_trailer_bounded,
    test_upload_duration_limit,
    test_fd_limit_raised,
    test_connection_caps,
    test_request_head_timeout_408,
    test_body_drip_408,
    test_uploads_bounded_503,
    test_host_allow_list,
    test_head_has_no_body,
    test_malformed_requests_400,
    test_absolute_form_target,
    test_documented_error_codes,
    test_no_telemetry_files,
    test_readyz,
    test_access_log,
    test_ping_only_stream_times_out,
    test_process_and_limit_metrics,
    test_streams_per_client,
    test_oversize_message_refused_at_once,
    test_log_timestamps,
]


class Context:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.procs = []
        self.server = None


def start_server(args):
    if args.legacy:  # a build from before these fixes knows none of the new options
        return Server(args.brisvox, "--workers", "1", "--token", TOKEN, "--max-streams", "2", "--idle-timeout-s", "2")
    return Server(args.brisvox, "--workers", "1", "--token", TOKEN, "--max-upload-seconds", "20",
                  "--max-uploads", "2", "--max-connections", "24", "--max-connections-per-client", "16",
                  "--request-head-timeout-s", "1", "--http-timeout-s", "3", "--allow-host", "app.internal",
                  "--max-streams", "2", "--max-streams-per-client", "1", "--access-log",
                  "--idle-timeout-s", "2")


def guarded(t, c, servers, args):
    """`t(c)` bounded by --test-timeout (the tests are synchronous: a thread bounds them), failing
    if the server died; a dead server is replaced for the tests after it (run_tests kills all)."""
    def run():
        err = []
        th = threading.Thread(target=lambda: _run(t, c, err), daemon=True)
        th.start()
        th.join(args.test_timeout)
        if th.is_alive():
            raise TimeoutError(f"{t.__name__} ran past {args.test_timeout} s")
        if not c.server.alive():
            status = c.server.proc.returncode
            print("--- server stderr:\n" + "\n".join(c.server.lines[-40:]), file=sys.stderr)
            c.server = start_server(args)
            servers.append(c.server)
            raise AssertionError(f"the server died (status {status})") from (err[0] if err else None)
        if err:
            raise err[0]
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--sample", required=True)
    ap.add_argument("--only", action="append", help="run only tests whose name contains this")
    ap.add_argument("--legacy", action="store_true",
                    help="start the server without the options the fixes added: to see each test fail "
                         "against a build from before them")
    ap.add_argument("--test-timeout", type=float, default=20, help="seconds per test")
    args = ap.parse_args()
    selected = [t for t in TESTS if not args.only or any(o in t.__name__ for o in args.only)]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="brisvox-hardening-test-") as tmp:
        c = Context(args, tmp)
        c.log = lambda msg: print(f"    {msg}", flush=True)
        servers = []
        try:
            c.server = start_server(args)
            servers.append(c.server)
            failures = run_tests([(t.__name__, guarded(t, c, servers, args)) for t in selected], servers)
        finally:
            for s in servers:
                s.kill()
            for p in c.procs:  # the servers a test started itself
                if p.poll() is None:
                    p.kill()
    print(f"{len(selected) - len(failures)} of {len(selected)} passed in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


def _run(t, c, err):
    try:
        t(c)
    except BaseException as e:  # noqa: BLE001  (reported by the caller)
        err.append(e)


if __name__ == "__main__":
    sys.exit(main())
