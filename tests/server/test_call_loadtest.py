#!/usr/bin/python3
"""`brisvox loadtest --calls`, short: three calls of 20 s against a spawned server with the real
models. Every frame answered, every call completed, turns answered with replies whose first audio
is timed, and the server's view of a reply's time reported. Not a performance test (the figures of
docs/PERFORMANCE.md come from longer runs on a quiet machine): it checks the load generator's call
mode works end to end (about 30 s).

  /usr/bin/python3 tests/server/test_call_loadtest.py --brisvox build/release/brisvox \\
      --voice third_party/models/piper/en_US-joe-medium.onnx
"""
import argparse
import json
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--voice", required=True)
    args = ap.parse_args()
    out = subprocess.run([args.brisvox, "loadtest", "--calls", "--spawn-server", "--server-args",
                          f"--tts-voice {args.voice} --turn-model v3.2 --stt-model tiny.en --tts-workers 1",
                          "--streams", "3", "--seconds", "20", "--ramp-s", "2", "--grace-s", "40", "--json"],
                         capture_output=True, text=True, timeout=120)
    print(out.stderr, file=sys.stderr)
    r = json.loads(out.stdout)
    calls = r["calls"]
    print(json.dumps({k: r[k] for k in ("ok", "frames_sent", "frames_lost", "connections_completed")}), calls,
          r["server"].get("call"))
    assert out.returncode == 0 and r["ok"], r
    assert r["frames_lost"] == 0 and r["connections_completed"] == 3, r
    assert calls["turns"] >= 3 and calls["transcripts"] >= 3, calls
    assert calls["replies_started"] >= 3 and calls["turn_end_to_first_audio"]["samples"] >= 3, calls
    assert calls["replies_done"] + calls["replies_interrupted"] >= 3, calls
    assert r["server"]["call"]["first_audio_mean_ms"] is not None, r["server"]
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
