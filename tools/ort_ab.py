#!/usr/bin/env python3
"""Times two or more renditions of one model side by side on ONNX Runtime 1.29 (the release brisvox
links), one intra-op thread, the sessions alternated run by run, and says how far their outputs
are apart. For a graph rewrite's before/after (docs/PERFORMANCE.md).

    .venv/bin/python tools/ort_ab.py piper [--phonemes 60] [--rounds 20] VOICE.onnx OTHER.onnx ...
    .venv/bin/python tools/ort_ab.py whisper-encoder [--frames 3000] [--rounds 10] A/encoder.onnx B/encoder.onnx ...
    .venv/bin/python tools/ort_ab.py smart-turn [--rounds 30] smart-turn-v3.2-cpu.onnx OTHER.onnx ...

piper: a Piper voice run on `phonemes` random phoneme ids (as Piper spaces them: ^, id, pad, ...,
$), noise scales 0 (deterministic), length scale 1. whisper-encoder: a brisvox-layout encoder on a
random log-mel window of `frames` frames. smart-turn: a Smart Turn model on a random [1, 80, 800]
feature window. The CPU arena is on for both (as brisvox's sessions). A file with brisvox's own
operators (the Piper conv2d rewrite since its pass 6) does not load here: ONNX Runtime alone does
not know them.
Prints, per file: the largest output difference from the first file, and the min and median
process CPU time per run. Uses third_party/onnxruntime-python (scripts/setup.sh) and the venv's
numpy.
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "third_party/onnxruntime-python"))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402


def piper_feeds(phonemes: int) -> dict:
    rng = np.random.default_rng(0)
    ids = [1, 0]
    for p in rng.integers(14, 120, size=phonemes):
        ids += [int(p), 0]
    ids.append(2)
    x = np.array([ids], dtype=np.int64)
    return {"input": x, "input_lengths": np.array([x.shape[1]], dtype=np.int64),
            "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32)}


def encoder_feeds(frames: int) -> dict:
    rng = np.random.default_rng(0)
    return {"mel": (rng.standard_normal((1, 80, frames)) * 0.3).astype(np.float32)}


def smart_turn_feeds() -> dict:
    rng = np.random.default_rng(0)
    return {"input_features": (rng.standard_normal((1, 80, 800)) * 0.5).astype(np.float32)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["piper", "whisper-encoder", "smart-turn"])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--phonemes", type=int, default=60)
    ap.add_argument("--frames", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--profile", metavar="PREFIX",
                    help="write ONNX Runtime's profile of each file's runs to PREFIX_<n>_*.json "
                         "(tools/ort_profile_summary.py sums it)")
    args = ap.parse_args()
    if ort.__version__ != "1.29.0":
        print(f"warning: onnxruntime {ort.__version__}, not brisvox's 1.29.0 (run scripts/setup.sh)", file=sys.stderr)
    ort.set_default_logger_severity(3)
    feeds = {"piper": lambda: piper_feeds(args.phonemes), "whisper-encoder": lambda: encoder_feeds(args.frames),
             "smart-turn": smart_turn_feeds}[args.kind]()
    sessions = []
    for f in args.files:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.enable_cpu_mem_arena = True
        if args.profile:
            so.enable_profiling = True
            so.profile_file_prefix = f"{args.profile}_{len(sessions)}"
        try:
            sessions.append(ort.InferenceSession(f, so, providers=["CPUExecutionProvider"]))
        except Exception as e:  # onnxruntime raises its own Fail/InvalidGraph types
            if "ai.brisvox" not in str(e):
                raise
            print(f"{f} uses brisvox's own operators (domain ai.brisvox, tools/piper/conv2d_rewrite.py pass 6): "
                  "it runs only in brisvox; compare it with `brisvox bench --tts-voice` instead", file=sys.stderr)
            return 2
    outputs = [s.run(None, feeds)[0] for s in sessions]  # also the warm-up
    times = [[] for _ in sessions]
    for _ in range(args.rounds):
        for k, s in enumerate(sessions):
            t = time.process_time()
            s.run(None, feeds)
            times[k].append(time.process_time() - t)
    what = {"piper": f"{args.phonemes} phonemes", "whisper-encoder": f"{args.frames} frames",
            "smart-turn": "8 s window"}[args.kind]
    print(f"{args.kind}, {what}, output {tuple(outputs[0].shape)}, {args.rounds} rounds, one thread, "
          f"onnxruntime {ort.__version__}, load average {os.getloadavg()[0]:.2f}")
    scale = float(np.abs(outputs[0]).max())
    for f, out, t in zip(args.files, outputs, times):
        diff = float(np.abs(out - outputs[0]).max()) if out.shape == outputs[0].shape else float("nan")
        print(f"  {f}: max |diff| {diff:.2e} (of {scale:.2f}); CPU per run min {1000 * min(t):.1f} ms, "
              f"median {1000 * float(np.median(t)):.1f} ms")
    if args.profile:
        for f, s in zip(args.files, sessions):
            print(f"  profile of {f}: {s.end_profiling()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
