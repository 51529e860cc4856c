#!/usr/bin/python3
"""scripts/soak.py's RSS windows (issue 13: `server_soak_short` failed once on a fresh clone with
"too few RSS samples for a baseline" and passed on re-run). The windows were fractions of the whole
run, which also waits up to 90 s for the last sessions after the RSS sampling stopped: a slow end
left the last window empty. They are now fractions of the sampled span. Seconds, no server."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import soak  # noqa: E402


def main():
    # 36 s of load sampled every 0.5 s, then the sessions took 20 s more to end (a 56 s run).
    rss = [(0.5 * i, 100 + (i >= 60) * 3) for i in range(73)]
    base, end = soak.rss_window(rss, 0.5, 0.6), soak.rss_window(rss, 0.9, 1.0)
    assert base == 100 and end == 103, (base, end)
    # Sparse sampling: a window with no sample takes the nearest one.
    rss = [(0.0, 10), (10.0, 20), (36.0, 30)]
    assert soak.rss_window(rss, 0.5, 0.6) == 20, soak.rss_window(rss, 0.5, 0.6)
    assert soak.rss_window(rss, 0.9, 1.0) == 30
    assert soak.rss_window(rss[:1], 0.9, 1.0) is None  # one sample: no growth to measure
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
