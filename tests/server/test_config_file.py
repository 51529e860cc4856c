#!/usr/bin/python3
"""`brisvox serve --config FILE` (issue 13): a TOML file sets every serve option, the command
line overrides it, $BRISVOX_TOKEN stays the fallback, and an unknown key, section or bad value is
an error naming the key and the file (exit 2, before anything is loaded). The loader fails closed
(issue 35 D6): a syntax error never swallows a line, an empty token is an error, not "no token",
and a FIFO, a device, a huge or deeply nested file is refused at once. About 5 s.

  /usr/bin/python3 tests/server/test_config_file.py --brisvox build/release/brisvox
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server, run_tests  # noqa: E402

args = None
tmp = tempfile.TemporaryDirectory(prefix="brisvox-config-")
servers = []


def write(name, text):
    path = os.path.join(tmp.name, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def serve(config, *extra, env=None):
    """A server on `config` (and `extra` options), with `env` added to its environment."""
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        s = Server(args.brisvox, "--config", config, *extra, start_timeout=30)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    servers.append(s)
    return s


def get(server, path, token=None, data=None):
    """(status, body) of GET `path`, or of a POST when `data` is given."""
    req = urllib.request.Request(server.url(path), data=data)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def vad_status(server, token=None):
    """The status of POST /v1/vad with a body that is no audio: 401 without the right token, 4xx
    about the audio with it."""
    return get(server, "/v1/vad", token=token, data=b"not audio")[0]


def metric(server, name):
    status, text = get(server, "/metrics")
    assert status == 200, status
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


def stop(server):
    server.terminate()
    assert server.proc.wait(15) == 0, "\n".join(server.lines)


def refused(config_text, *extra, name="bad.toml"):
    """Runs serve with a config that must be refused: (exit code, stderr, the file's path)."""
    path = write(name, config_text)
    p = subprocess.run([args.brisvox, "serve", "--port", "0", "--config", path, *extra],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    return p.returncode, p.stderr, path


def test_file_sets_options():
    # Top-level keys: an option with a value, a flag, a repeatable option as an array.
    config = write("serve.toml", "# brisvox serve\nmax-connections = 77\nmax-uploads = 3\n"
                   "access-log = true\ntoken = \"file-token\"\n"
                   "allow-host = [\"a.example\", \"b.example\"]\n")
    s = serve(config)
    assert metric(s, "brisvox_http_connections_max") == 77
    assert metric(s, "brisvox_uploads_max") == 3
    assert vad_status(s) == 401, "token from the file not required"
    assert vad_status(s, "file-token") != 401
    assert get(s, "/healthz")[0] == 200
    deadline = time.monotonic() + 5  # the access line is written once the answer is
    while not any("GET /healthz" in line and "200" in line for line in s.lines):
        assert time.monotonic() < deadline, "access-log = true not applied:\n" + "\n".join(s.lines)
        time.sleep(0.05)
    stop(s)


def test_serve_section():
    config = write("section.ini", "[serve]\nmax-connections = 66\n")
    s = serve(config)
    assert metric(s, "brisvox_http_connections_max") == 66
    stop(s)


def test_command_line_overrides_file():
    # serve_process passes --host 127.0.0.1 --port 0: the file's port (out of range) is never used.
    config = write("override.toml", "port = 99999\nmax-connections = 77\nmax-uploads = 3\n")
    s = serve(config, "--max-connections", "55")
    assert metric(s, "brisvox_http_connections_max") == 55, "the command line must win"
    assert metric(s, "brisvox_uploads_max") == 3, "the file's other keys still apply"
    stop(s)


def test_file_overrides_environment_token():
    config = write("token.toml", "token = \"file-token\"\n")
    s = serve(config, env={"BRISVOX_TOKEN": "env-token"})
    assert vad_status(s, "env-token") == 401
    assert vad_status(s, "file-token") != 401
    stop(s)
    # Without the key, $BRISVOX_TOKEN still applies, as without --config.
    s = serve(write("empty.toml", "max-uploads = 2\n"), env={"BRISVOX_TOKEN": "env-token"})
    assert vad_status(s) == 401
    assert vad_status(s, "env-token") != 401
    stop(s)


def test_unknown_key_is_an_error():
    code, err, path = refused("max-streams = 8\nmax-stream = 8\n")
    assert code == 2, err
    assert "unknown key 'max-stream'" in err and path in err, err


def test_unknown_section_is_an_error():
    code, err, path = refused("[vad]\nmodel = \"v5\"\n")
    assert code == 2, err
    assert "vad.model" in err and path in err, err


def test_bad_value_is_an_error():
    code, err, path = refused("max-streams = \"lots\"\n")
    assert code == 2, err
    assert "key 'max-streams'" in err and "lots" in err and path in err, err
    code, err, path = refused("access-log = perhaps\n")  # not TOML: a bare word
    assert code == 2, err
    assert "line 1" in err and path in err, err


def test_out_of_range_value_names_the_file():
    code, err, path = refused("max-streams = 0\n")
    assert code == 2, err
    assert "key 'max-streams'" in err and "--max-streams must be 1 to 100000" in err and path in err, err


def test_unclosed_array_does_not_swallow_the_token():
    # CLI11's parser took the next line into the array: the server started without its token.
    code, err, path = refused('allow-host = ["a.example", "b.example"\ntoken = "secret"\n')
    assert code == 2, err
    assert "line 2" in err and path in err, err


def test_bare_word_is_an_error():
    code, err, path = refused("host = 0.0.0.0\n")
    assert code == 2 and "line 1" in err and path in err, err


def test_empty_token_is_an_error():
    code, err, path = refused('token = ""\n')
    assert code == 2 and "key 'token'" in err and "--token is empty" in err and path in err, err
    code, err, _ = refused("max-uploads = 2\n", "--token", "")
    assert code == 2 and "--token is empty" in err, err
    env = dict(os.environ, BRISVOX_TOKEN="")
    p = subprocess.run([args.brisvox, "serve", "--port", "0"], capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL, env=env)
    assert p.returncode == 2 and "$BRISVOX_TOKEN is set but empty" in p.stderr, p.stderr
    code, err, _ = refused('token = "two words"\n')
    assert code == 2 and "printable ASCII without spaces" in err, err


def test_not_a_regular_file_is_refused_at_once():
    fifo = os.path.join(tmp.name, "config.fifo")
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        t0 = time.monotonic()
        p = subprocess.run([args.brisvox, "serve", "--port", "0", "--config", path], capture_output=True,
                           text=True, timeout=10, stdin=subprocess.DEVNULL)
        assert p.returncode == 2 and "not a regular file" in p.stderr, (path, p.stderr)
        assert time.monotonic() - t0 < 5, f"{path}: refused only after {time.monotonic() - t0:.1f} s"


def test_huge_or_deep_files_are_refused():
    code, err, _ = refused("# " + "x" * (2 << 20) + "\n")
    assert code == 2 and "at most 1048576 bytes" in err, err[:300]
    code, err, _ = refused("x = " + "[" * 10000 + "]" * 10000 + "\n")
    assert code == 2 and "nested" in err, err[:300]
    code, err, _ = refused("[" + ".".join(["a"] * 10000) + "]\n")
    assert code == 2 and "unknown section" in err, err[:300]


def test_control_and_non_ascii_characters_are_refused():
    # Non-ASCII outside strings made toml++ 3.3 reach __builtin_unreachable() (a fuzz finding).
    code, err, _ = refused('host = "127.0.0.1" # caf\u00e9\n')
    assert code == 2 and "line 1: a byte outside ASCII" in err, err
    code, err, _ = refused('max-uploads = 2\nhost = "a\x01b"\n')
    assert code == 2 and "line 2: control character U+0001" in err, err
    code, err, _ = refused("[$serve]\nmax-uploads = 2\n")
    assert code == 2 and "line 1" in err, err


def test_flag_takes_true_or_false_only():
    code, err, _ = refused('access-log = "yes"\n')
    assert code == 2 and "key 'access-log' is a flag" in err, err


def test_missing_file_is_an_error():
    p = subprocess.run([args.brisvox, "serve", "--config", os.path.join(tmp.name, "nope.toml")],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and "nope.toml" in p.stderr, p.stderr


def main():
    global args
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brisvox", required=True)
    args = parser.parse_args()
    tests = [(name, fn) for name, fn in globals().items() if name.startswith("test_")]
    failures = run_tests(tests, servers)
    tmp.cleanup()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
