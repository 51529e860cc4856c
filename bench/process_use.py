"""What the Python benchmarks (bench/pipecat_*.py) measure of their own process: RSS, its peak over a
run (sampled every 200 ms), CPU seconds of all its threads; and a percentile."""

import os
import resource
import threading


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class PeakRss:
    """The process's RSS now (`base`) and its peak until stop() (`peak`)."""

    def __init__(self):
        self.base = rss_bytes()
        self.peak = self.base
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._done.wait(0.2):
            self.peak = max(self.peak, rss_bytes())

    def stop(self):
        self._done.set()
        self._thread.join()


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")
