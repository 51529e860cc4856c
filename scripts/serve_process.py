"""`brisvox serve` as a child process on a free loopback port: shared by the server's end-to-end
tests (tests/server/) and the soak (scripts/soak.py). Python standard library only."""
import collections
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time


def die_with_parent():
    """In the child: SIGKILL when the parent dies, however it dies (a CTest timeout)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Server:
    """`brisvox serve --host 127.0.0.1 --port 0 ARGS...`; its stderr lines are collected in
    `lines` (only the last `keep_lines` when given: a long soak logs two lines per stream).

    `prefix` wraps the server (a profiler: "heaptrack", "valgrind --tool=massif"). RSS is read
    from, and signals are sent to, the brisvox process itself when the wrapper starts it as a
    child (heaptrack); a wrapper that execs (valgrind) is that process."""

    def __init__(self, brisvox, *args, prefix=(), keep_lines=None, start_timeout=60):
        self.brisvox = os.path.realpath(brisvox)
        self.proc = subprocess.Popen([*prefix, brisvox, "serve", "--host", "127.0.0.1", "--port", "0", *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=die_with_parent)
        self.wrapped = bool(prefix)
        self._pid = None
        self.lines = collections.deque(maxlen=keep_lines) if keep_lines else []
        self.port = None
        ready = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.lines.append(line.rstrip("\n"))
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if m and self.port is None:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(start_timeout) or self.port is None:
            self.kill()
            raise RuntimeError("the server did not start:\n" + "\n".join(self.lines))

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def ws_url(self, query=""):
        return f"ws://127.0.0.1:{self.port}/v1/stream{'?' + query if query else ''}"

    def alive(self):
        return self.proc.poll() is None

    def metric(self, name):
        """One sample of GET /metrics (its name with labels, as the text has it: 'x_total{a="b"}')."""
        import urllib.request
        values = parse_metrics(urllib.request.urlopen(self.url("/metrics"), timeout=10).read().decode())
        assert name in values, f"{name} not in /metrics"
        return values[name]

    def pid(self):
        """The brisvox process: the child, or under a wrapper the descendant running brisvox."""
        if not self.wrapped:
            return self.proc.pid
        if self._pid is None or not os.path.exists(f"/proc/{self._pid}"):
            self._pid = self._find_server(self.proc.pid) or self.proc.pid
        return self._pid

    def _find_server(self, root):
        todo = [root]
        while todo:
            pid = todo.pop()
            try:
                if os.path.realpath(f"/proc/{pid}/exe") == self.brisvox:
                    return pid
                with open(f"/proc/{pid}/task/{pid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
            except OSError:
                pass
        return None

    def terminate(self, sig=signal.SIGTERM):
        os.kill(self.pid(), sig)

    def rss_bytes(self):
        with open(f"/proc/{self.pid()}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait(10)


def wait_line(server, pattern, timeout=5):
    """The first line of `server`'s output matching `pattern`, waiting up to `timeout` s for it."""
    deadline = time.monotonic() + timeout
    while True:
        for line in list(server.lines):
            if re.search(pattern, line):
                return line
        assert time.monotonic() < deadline, f"no log line matches {pattern!r}:\n" + "\n".join(server.lines[-10:])
        time.sleep(0.02)


def parse_metrics(text):
    """A /metrics body (Prometheus text) as {sample name with labels: value}."""
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def run_tests(tests, servers, budget=None, test_timeout=None, started=None):
    """Runs each (name, callable) of `tests` in order and prints PASS/FAIL with its time; a
    callable may return a coroutine, which runs under asyncio with `test_timeout` seconds (and no
    more than what is left of `budget`, counted from `started`). Then kills `servers` (their last
    log lines printed when something failed). Returns the failed names."""
    import asyncio
    import time
    import traceback
    started = time.monotonic() if started is None else started
    failures = []
    try:
        for name, t in tests:
            t0 = time.monotonic()
            try:
                left = None if budget is None else budget - (t0 - started)
                if left is not None and left < 1:
                    raise TimeoutError(f"the whole script's {budget} s budget is spent")
                result = t()
                if asyncio.iscoroutine(result):
                    limits = [x for x in (test_timeout, left) if x is not None]
                    asyncio.run(asyncio.wait_for(result, min(limits)) if limits else result)
                print(f"PASS {name} ({time.monotonic() - t0:.1f} s)", flush=True)
            except Exception:
                failures.append(name)
                print(f"FAIL {name} ({time.monotonic() - t0:.1f} s)", flush=True)
                traceback.print_exc()
    finally:
        for s in servers:
            s.kill()
        if failures:
            for s in servers:
                print(f"--- server {s.port} stderr:\n" + "\n".join(s.lines[-40:]), file=sys.stderr)
    return failures
