#!/usr/bin/python3
"""POST /v1/vad uploads (issue 13 defect 3, issue 14 item 6) against `brisvox serve` on loopback:

- a long upload is decoded a block at a time as the engine takes it, so the server's memory does
  not grow with the audio's duration (before: a 10-minute FLAC of 1.6 MB cost +52 MiB of peak RSS,
  6 hours 2.3 GiB);
- multipart/form-data (`curl -F file=@call.wav`) is read from its field "file" (before: 415), and
  a form without that field gets 400 naming the fields it has.

  /usr/bin/python3 tests/server/test_uploads.py --brisvox build/release/brisvox \
      --sample third_party/audio/sample.wav
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server, run_tests  # noqa: E402

MIB = 1 << 20


def post(server, path, body, content_type=None):
    """(status, JSON body) of one POST."""
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Length: {len(body)}\r\n"
    if content_type:
        head += f"Content-Type: {content_type}\r\n"
    head += "Connection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=150) as sock:
        sock.sendall(head.encode() + body)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(rest)


def form(fields, boundary="----brisvoxBoundary7MA4YWxk"):
    """A multipart/form-data body of (name, filename or None, bytes) parts, as curl -F writes it."""
    body = b""
    for name, filename, data in fields:
        body += f"--{boundary}\r\n".encode()
        disposition = f'Content-Disposition: form-data; name="{name}"'
        if filename:
            disposition += f'; filename="{filename}"'
        body += disposition.encode() + b"\r\n"
        if filename:
            body += b"Content-Type: application/octet-stream\r\n"
        body += b"\r\n" + data + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def peak_rss_bytes(server):
    with open(f"/proc/{server.pid()}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


class Context:
    def __init__(self, server, sample, tmp):
        self.server, self.sample, self.tmp = server, sample, tmp

    def log(self, msg):
        print("  " + msg, flush=True)


def test_multipart_upload(c):
    with open(c.sample, "rb") as f:
        wav = f.read()
    status, raw = post(c.server, "/v1/vad", wav)
    assert status == 200, raw
    body, content_type = form([("note", None, b"agent left"), ("file", "call 7.wav", wav)])
    status, doc = post(c.server, "/v1/vad", body, content_type)
    assert status == 200, doc
    assert doc["segments"] == raw["segments"], (doc, raw)
    assert doc["file"] == "call 7.wav", doc  # the uploaded file's name, unless ?name= says otherwise
    status, doc = post(c.server, "/v1/vad?name=x", body, content_type)
    assert status == 200 and doc["file"] == "x", doc
    # A quoted boundary, and a preamble before the first part.
    body, _ = form([("file", "a.wav", wav)], boundary="b=1")
    status, doc = post(c.server, "/v1/vad", b"preamble\r\n" + body, 'multipart/form-data; boundary="b=1"')
    assert status == 200 and doc["segments"] == raw["segments"], doc


def test_multipart_errors(c):
    with open(c.sample, "rb") as f:
        wav = f.read()
    body, content_type = form([("audio", "a.wav", wav)])
    status, doc = post(c.server, "/v1/vad", body, content_type)
    assert status == 400 and doc["error"]["code"] == "bad_request", doc
    assert "no field 'file' (fields: 'audio')" in doc["error"]["message"], doc
    assert "curl -F file=@" in doc["error"]["message"], doc
    status, doc = post(c.server, "/v1/vad", body, "multipart/form-data")
    assert status == 400 and "no valid boundary" in doc["error"]["message"], doc
    status, doc = post(c.server, "/v1/vad", body[: len(body) // 2], content_type)
    assert status == 400 and "cut short" in doc["error"]["message"], doc


def test_long_upload_in_bounded_memory(c):
    """A 5-minute FLAC of silence: answered 200, and the server's peak RSS grows by less than
    10 MiB (decoded whole: +28.6 MiB; 10 minutes cost +52 MiB). 5 minutes, not more: the test runs
    under ThreadSanitizer too."""
    if not shutil.which("sox"):
        c.log("sox missing: skipped")
        return
    flac = os.path.join(c.tmp, "long.flac")
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", flac, "trim", "0", "300"], check=True)
    with open(flac, "rb") as f:
        body = f.read()
    # Warm up: the first request allocates the engine's per-stream buffers.
    with open(c.sample, "rb") as f:
        assert post(c.server, "/v1/vad", f.read())[0] == 200
    peak0 = peak_rss_bytes(c.server)
    t0 = time.monotonic()
    status, doc = post(c.server, "/v1/vad", body)
    took = time.monotonic() - t0
    peak1 = peak_rss_bytes(c.server)
    c.log(f"{len(body)} bytes of FLAC for 300 s: {status} in {took:.1f} s, peak RSS "
          f"{peak0 / MIB:.1f} -> {peak1 / MIB:.1f} MiB")
    assert status == 200 and doc["duration"] == 300.0 and doc["segments"] == [], doc
    assert peak1 - peak0 < 10 * MIB, f"peak RSS +{(peak1 - peak0) / MIB:.1f} MiB for a 300 s upload"


TESTS = [test_multipart_upload, test_multipart_errors, test_long_upload_in_bounded_memory]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--sample", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="brisvox-uploads-test-") as tmp:
        server = Server(args.brisvox, "--workers", "1", "--max-upload-seconds", "3600")
        c = Context(server, args.sample, tmp)
        failures = run_tests([(t.__name__, lambda t=t: t(c)) for t in TESTS], [server])
    print(f"{len(TESTS) - len(failures)} of {len(TESTS)} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
