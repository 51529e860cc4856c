#!/usr/bin/python3
"""Regression tests of the second hostile test's defects (issue 35) against `brisvox serve` on
loopback; docs/RELIABILITY.md ("Hardening, round two") lists each defect with its test. D6 (the
configuration loader) is in test_config_file.py, the JSON depth bound's unit tests in
peer_json_test.cpp.

Raw sockets, as in test_hardening.py (its helpers are used here), against a server without a voice
and small limits: about 5 s.

  /usr/bin/python3 tests/server/test_hardening_round2.py --brisvox build/release/brisvox \
      [--voice en_US-joe-medium] [--only NAME ...]
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
import time
import wave

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server, run_tests, wait_line  # noqa: E402
from test_hardening import TOKEN, MIB, connect, error_code, get, read_response, request  # noqa: E402

args = None
servers = []
tmp = tempfile.TemporaryDirectory(prefix="brisvox-hardening2-")


def post_head(server, path, length, extra=""):
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n{extra}\r\n").encode()


def healthz_ms(server):
    t0 = time.monotonic()
    r = get(server, "/healthz")
    assert r and r[0] == 200, r
    return (time.monotonic() - t0) * 1000


def server(*extra):
    s = Server(args.brisvox, "--workers", "1", "--token", TOKEN, "--max-uploads", "2", *extra)
    servers.append(s)
    return s


# --- D1: a JSON nesting bomb on POST /v1/tts -----------------------------------------------------

def test_d1_tts_json_bomb():
    """64 MiB of '[' to POST /v1/tts (a server without a voice, as in the report): refused from its
    head (413), and the largest body the route takes, all '[', is refused at the ninth bracket
    (400) with /healthz answering at once and RSS where it was (it went 37 MiB -> 4.2 GiB)."""
    s = server()
    rss0 = s.rss_bytes()
    sock = connect(s)
    sock.sendall(post_head(s, "/v1/tts", 64 * MIB))
    r = read_response(sock)
    sock.close()
    assert r[0] == 413 and error_code(r) == "payload_too_large", r
    assert b"262144 bytes" in r[2], r[2]
    body = b"[" * (256 << 10)
    sock = connect(s)
    sock.sendall(post_head(s, "/v1/tts", len(body)) + body)
    r = read_response(sock)
    sock.close()
    assert r[0] == 400 and b"nested deeper than 8" in r[2], r
    ms = healthz_ms(s)
    grown = (s.rss_bytes() - rss0) / MIB
    print(f"    /healthz after the bomb: {ms:.1f} ms; RSS +{grown:.1f} MiB")
    assert ms < 1000
    assert grown < 32, f"RSS grew {grown:.0f} MiB"


# --- D2: bodies outside the upload gate ----------------------------------------------------------

def test_d2_bodies_outside_the_upload_gate():
    """16 bodies of 64 MiB - 1 held one byte short on /v1/tts, /healthz or an unknown path held
    +1 GiB with the uploads gauge at 0: every such head is now answered 413 before its body is
    read, and a body over a route's own limit sent without Content-Length (chunked) too."""
    s = server()
    rss0 = s.rss_bytes()
    for path, limit in (("/v1/tts", 256 << 10), ("/healthz", 8 << 10), ("/no/such/path", 8 << 10)):
        socks = []
        for _ in range(6):
            sock = connect(s)
            sock.sendall(post_head(s, path, 64 * MIB - 1))
            socks.append(sock)
        for sock in socks:
            r = read_response(sock)
            assert r[0] == 413 and error_code(r) == "payload_too_large", (path, r)
            assert f"{limit} bytes".encode() in r[2], (path, r[2])
            sock.close()
        # Chunked: no length to refuse from; the parser's limit stops it at the route's size.
        sock = connect(s)
        head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
                f"Transfer-Encoding: chunked\r\n\r\n").encode()
        chunk = b"%x\r\n" % (64 << 10) + b"x" * (64 << 10) + b"\r\n"
        sock.sendall(head)
        try:
            for _ in range(8):
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = read_response(sock)
        assert r[0] == 413, (path, r)
        sock.close()
    grown = (s.rss_bytes() - rss0) / MIB
    print(f"    18 bodies of 64 MiB - 1 and 3 chunked ones refused: RSS +{grown:.1f} MiB")
    assert grown < 32, f"RSS grew {grown:.0f} MiB"
    # The uploads keep their own limit.
    sock = connect(s)
    sock.sendall(post_head(s, "/v1/vad", 10 * MIB).replace(b"application/json", b"audio/wav"))
    sock.settimeout(0.5)
    try:
        early = sock.recv(100)
    except TimeoutError:
        early = b""
    assert early == b"", f"an upload under --max-body-bytes was answered before its body: {early!r}"
    sock.close()


# --- D4: work going on after the client left -------------------------------------------------------

def tts_runs(s):
    r = get(s, "/metrics")
    m = re.search(rb'^brisvox_batches_total\{model="tts"\} (\d+)', r[2], re.M)
    assert m, "no tts runs in /metrics"
    return int(m.group(1))


def test_d4_tts_stops_when_its_client_leaves():
    """A POST /v1/tts (WAV) of many sentences whose client closes after 0.5 s: the synthesis stops
    (it kept a worker for ~4 minutes), and the next request is not queued behind it."""
    if not args.voice:
        print("    no --voice: skipped")
        return
    s = server("--tts-voice", args.voice, "--tts-workers", "1")
    text = " ".join(f"This is sentence number {i} of a reply nobody will hear." for i in range(300))
    body = json.dumps({"text": text}).encode()
    sock = connect(s)
    sock.sendall(post_head(s, "/v1/tts", len(body)) + body)
    time.sleep(0.5)
    sock.close()
    wait_line(s, r"tts request \d+: the client went away before its answer", timeout=5)
    runs = tts_runs(s)
    time.sleep(3)
    more = tts_runs(s) - runs
    assert more <= 1, f"{more} more sentences synthesised after the client left (one may be in flight)"
    t0 = time.monotonic()
    short = b'{"text":"Hi."}'
    sock = connect(s)
    sock.sendall(post_head(s, "/v1/tts", len(short)) + short)
    r = read_response(sock, timeout=20)
    sock.close()
    print(f"    {runs} sentences of 300 made when the client left, {runs + more} 3 s later; the next request answered in "
          f"{(time.monotonic() - t0) * 1000:.0f} ms")
    assert r[0] == 200, r


def metric(s, name):
    m = re.search(rb"^" + name.encode() + rb" (\S+)$", get(s, "/metrics")[2], re.M)
    assert m, f"no {name} in /metrics"
    return float(m.group(1))


def test_d4_upload_stops_when_its_client_leaves():
    """An upload of 5 minutes of speech to /v1/transcribe whose client leaves once it is sent: the
    job stops at its next block and the upload slot is free again at once (it was held until the
    whole file had been transcribed, for nobody)."""
    if not args.sample:
        print("    no --sample: skipped")
        return
    s = server("--stt-model", "tiny.en-int8", "--max-upload-seconds", "600")
    with wave.open(args.sample, "rb") as w:
        params, frames = w.getparams(), w.readframes(w.getnframes())
    path = os.path.join(tmp.name, "long.wav")
    with wave.open(path, "wb") as w:
        w.setparams(params)
        for _ in range(int(300 / (len(frames) / 2 / params.framerate)) + 1):
            w.writeframes(frames)
    with open(path, "rb") as f:
        body = f.read()
    sock = connect(s)
    sock.sendall(post_head(s, "/v1/transcribe", len(body)).replace(b"application/json", b"audio/wav") + body)
    time.sleep(1.0)
    assert metric(s, "brisvox_uploads_in_progress") == 1
    sock.close()
    t0 = time.monotonic()
    while metric(s, "brisvox_uploads_in_progress") != 0:
        assert time.monotonic() - t0 < 5, "the upload's slot is still held 5 s after its client left"
        time.sleep(0.05)
    print(f"    the slot was free {(time.monotonic() - t0) * 1000:.0f} ms after the client left")


def test_uploads_no_head_of_line_blocking():
    """Two long uploads (58 minutes of silence as FLAC each) held both job threads, and a normal
    upload waited behind them (53 s instead of 0.25 s): every upload with a slot now runs at once,
    so the short one is answered while the long ones go on."""
    if not args.sample or not shutil.which("sox"):
        print("    no --sample or no sox: skipped")
        return
    s = Server(args.brisvox, "--workers", "1", "--token", TOKEN, "--max-uploads", "4", "--max-upload-seconds", "3600")
    servers.append(s)
    long_path = os.path.join(tmp.name, "silence.flac")
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", long_path, "trim", "0", "3500"], check=True)
    with open(long_path, "rb") as f:
        long_body = f.read()
    with open(args.sample, "rb") as f:
        short_body = f.read()
    longs = []
    for _ in range(2):
        sock = connect(s)
        sock.sendall(post_head(s, "/v1/vad", len(long_body)).replace(b"application/json", b"audio/flac") + long_body)
        longs.append(sock)
    time.sleep(0.5)
    t0 = time.monotonic()
    sock = connect(s)
    sock.sendall(post_head(s, "/v1/vad", len(short_body)).replace(b"application/json", b"audio/wav") + short_body)
    r = read_response(sock, timeout=120)
    sock.close()
    took = time.monotonic() - t0
    assert r[0] == 200, r
    for long_sock in longs:
        long_sock.setblocking(False)
        try:
            early = long_sock.recv(1)
        except BlockingIOError:
            early = b""
        assert early == b"", f"a long upload was answered before the short one (it waited behind it: {took:.1f} s)"
        long_sock.close()  # its job stops (D4)
    print(f"    12 s of speech answered in {took:.2f} s while two 58-minute uploads ran")


# --- D5: error replies to a client that never reads ----------------------------------------------

def test_d5_error_replies_bounded():
    """Bad one-byte messages on WebSocket /v1/tts from a client that never reads: each error reply
    waits in the connection's one bounded send queue, and when it is full the client is dropped as
    a slow reader (RSS went 183 -> 836 MiB before the drop)."""
    if not args.voice:
        print("    no --voice: skipped")
        return
    s = server("--tts-voice", args.voice, "--tts-workers", "1")
    rss0 = s.rss_bytes()

    async def flood():
        # A fixed receive buffer: Linux's autotuning may grow a socket's to tcp_rmem's maximum (32 MiB
        # on some machines), and a client whose kernel buffer is that full drops the server's ACKs,
        # so its own sends stall before the server's queue is ever full.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 << 10)
        sock.connect(("127.0.0.1", s.port))
        ws = await websockets.connect(f"ws://127.0.0.1:{s.port}/v1/tts?token={TOKEN}", sock=sock, max_queue=1,
                                      max_size=None)
        sent = 0
        try:
            while sent < 2_000_000:
                await asyncio.wait_for(ws.send("x"), 5)
                sent += 1
        except websockets.exceptions.ConnectionClosed:
            pass  # the server closed it
        except asyncio.TimeoutError:
            # The server stopped reading it. Whether this client then sees the reset of the socket
            # the server drops depends on its kernel (a loaded CI machine once did not, for 15 s):
            # the server's log below says what the server did.
            pass
        return sent
    sent = asyncio.run(flood())
    assert sent < 2_000_000, "the server never dropped a client that does not read"
    wait_line(s, r"reads too slowly", timeout=5)
    # Dropped: after its close handshake, or close_timeout_ms (3 s) later without one.
    wait_line(s, r"tts stream \d+ closed", timeout=10)
    grown = (s.rss_bytes() - rss0) / MIB
    print(f"    dropped after {sent} bad messages; RSS +{grown:.1f} MiB")
    # Under ASan freed blocks stay resident in its quarantine (one run grew 35 MiB there): the
    # release phase holds the bound; the drop above is checked in every phase.
    if os.environ.get("BRISVOX_TEST_PRESET") not in ("asan", "tsan"):
        assert grown < 32, f"RSS grew {grown:.0f} MiB"


# --- D7: cheap refusals, and no address holding every connection -----------------------------------

def open_fds(s):
    return len(os.listdir(f"/proc/{s.pid()}/fd"))


def test_d7_per_client_cap_within_the_total():
    """--max-connections 16 alone (per client: the default 256): one address gets a quarter, and
    another address still gets in while it holds them."""
    s = server("--max-connections", "16")
    wait_line(s, r"--max-connections-per-client 256 is above --max-connections 16: lowered to 4")
    held = [connect(s) for _ in range(4)]
    time.sleep(0.2)
    extra = connect(s)
    r = read_response(extra, timeout=3)
    extra.close()
    assert r is not None and r[0] == 503 and error_code(r) == "too_many_connections", r
    r = request(s, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nConnection: close\r\n\r\n".encode(),
                source="127.0.0.2")
    assert r[0] == 200, r
    for sock in held:
        sock.close()


def test_d7_refusals_are_cheap():
    """600 connections over the cap, held open by the client: each refusal used to linger a second
    with a 64 KiB buffer and a descriptor (8000 in 1.2 s: RSS 38 -> 413 MiB, then accept failures);
    now at most 32 linger, a quarter of a second, on 512 bytes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 2048:
        print(f"    hard open-file limit {hard}: skipped")
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    s = server("--max-connections", "4", "--max-connections-per-client", "4")
    held = [connect(s) for _ in range(4)]
    time.sleep(0.2)
    fds0, rss0 = open_fds(s), s.rss_bytes()
    flood, peak = [], 0
    for i in range(600):
        flood.append(connect(s))
        if i % 50 == 49:
            peak = max(peak, open_fds(s) - fds0)
    peak = max(peak, open_fds(s) - fds0)
    grown = (s.rss_bytes() - rss0) / MIB
    for sock in flood + held:
        sock.close()
    print(f"    600 refused connections held open: at most {peak} more descriptors, RSS +{grown:.1f} MiB")
    assert peak <= 32 + 8, f"{peak} more descriptors open during the flood (at most 32 lingering refusals)"
    assert grown < 16, f"RSS grew {grown:.0f} MiB"
    assert not any("accept failed" in line for line in s.lines), "\n".join(s.lines[-5:])
    r = get(s, "/healthz")
    assert r[0] == 200, r


# --- minor defects ------------------------------------------------------------------------------

def test_minor_tts_post_query_is_checked():
    """POST /v1/tts took any query (`?tag=<script>` got 200): now its tag is checked as everywhere
    and other keys are refused (the options go in the body)."""
    s = server()
    for query, wanted in (("?tag=%3Cscript%3E", b"query key 'tag'"), ("?length_scale=9", b"unknown query key")):
        body = b'{"text":"Hi."}'
        sock = connect(s)
        sock.sendall(post_head(s, "/v1/tts" + query, len(body)) + body)
        r = read_response(sock)
        sock.close()
        assert r[0] == 400 and wanted in r[2], (query, r)


def test_minor_one_hz_wav_is_a_bad_request():
    """A 1 Hz WAV whose declared duration passes --max-upload-seconds: 400 (the documented answer
    to a rate the engine cannot take), not 413 audio_too_long."""
    s = server()
    path = os.path.join(tmp.name, "1hz.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(1)
        w.writeframes(b"\0\0" * 4000)  # 4000 s at 1 Hz: over the default 3600
    with open(path, "rb") as f:
        body = f.read()
    sock = connect(s)
    sock.sendall(post_head(s, "/v1/vad", len(body)).replace(b"application/json", b"audio/wav") + body)
    r = read_response(sock)
    sock.close()
    assert r[0] == 400 and error_code(r) == "bad_request" and b"at least 1000 Hz" in r[2], r


def test_undeclared_length_flac_refused_before_decoding():
    """A FLAC whose STREAMINFO declares no length (0 samples) and runs past --max-upload-seconds is
    refused from where its last frame ends, before decoding (6 hours took 17-24 s of a core to
    decode before the refusal): the answer says so; with its last frame damaged, the refusal comes
    from decoding, as before."""
    s = server("--max-upload-seconds", "60")
    path = os.path.join(tmp.name, "long.flac")
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", path, "trim", "0", "600"], check=True)
    with open(path, "rb") as f:
        body = bytearray(f.read())
    assert body[:4] == b"fLaC"
    body[21] &= 0xF0  # STREAMINFO's 36-bit total-samples field: 0, "unknown"
    body[22:26] = bytes(4)
    damaged = bytearray(body)
    damaged[-1] ^= 0x5A  # the last frame's CRC-16 no longer matches
    for data, says in ((body, b"its last FLAC frame ends at 600.0 s"), (damaged, b"it holds at least ")):
        sock = connect(s)
        sock.sendall(post_head(s, "/v1/vad", len(data)).replace(b"application/json", b"audio/flac") + bytes(data))
        r = read_response(sock, timeout=60)
        sock.close()
        assert r[0] == 413 and error_code(r) == "audio_too_long" and says in r[2], r


def test_minor_tts_errors_name_no_server_path():
    """A request's error named the voice by its file path on the server."""
    if not args.voice:
        print("    no --voice: skipped")
        return
    s = server("--tts-voice", args.voice, "--tts-workers", "1")
    body = b'{"text":"Hi.","speaker_id":3}'
    sock = connect(s)
    sock.sendall(post_head(s, "/v1/tts", len(body)) + body)
    r = read_response(sock, timeout=20)
    sock.close()
    assert r[0] == 400 and b"speaker_id 3" in r[2], r
    assert b"/" not in json.loads(r[2])["error"]["message"].encode(), r[2]


def test_minor_json_log_holds_only_records():
    """--log-format json: libmpg123 (inside libsndfile) wrote its own lines into the log. Every line
    is a JSON record now; theirs carry "from": "stderr"."""
    s = server("--log-format", "json")
    for garbage in (b"\xff\xfb\x90\x64" + bytes(range(256)) * 16, b"\xff\xe3" + bytes(100)):
        sock = connect(s)
        sock.sendall(post_head(s, "/v1/vad", len(garbage)).replace(b"application/json", b"audio/mpeg") + garbage)
        r = read_response(sock)
        sock.close()
        assert r[0] == 400, r
    s.terminate()
    s.proc.wait(15)
    records = []
    for line in s.lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON record: {line!r}")
    assert any(r.get("from") == "stderr" for r in records), "libmpg123's lines did not come through as records"


TESTS = [test_d1_tts_json_bomb, test_d2_bodies_outside_the_upload_gate, test_d4_tts_stops_when_its_client_leaves,
         test_d4_upload_stops_when_its_client_leaves,
         test_uploads_no_head_of_line_blocking, test_d5_error_replies_bounded,
         test_d7_per_client_cap_within_the_total, test_d7_refusals_are_cheap, test_minor_tts_post_query_is_checked,
         test_minor_one_hz_wav_is_a_bad_request, test_minor_tts_errors_name_no_server_path,
         test_minor_json_log_holds_only_records, test_undeclared_length_flac_refused_before_decoding]


def main():
    global args
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--voice", help="a Piper voice for the /v1/tts tests (skipped without)")
    ap.add_argument("--sample", help="a speech WAV for the upload tests (skipped without)")
    ap.add_argument("--only", action="append", help="run only tests whose name contains this")
    args = ap.parse_args()
    selected = [(t.__name__, t) for t in TESTS if not args.only or any(o in t.__name__ for o in args.only)]
    failures = run_tests(selected, servers, test_timeout=60)
    print(f"{len(selected) - len(failures)} of {len(selected)} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
