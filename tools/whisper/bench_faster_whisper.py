#!/usr/bin/env python3
"""faster-whisper's time on the files brisvox's Whisper benchmarks use, for comparison
(docs/PERFORMANCE.md). Runs in the project's venv.

  bench_faster_whisper.py [--model third_party/models/faster-whisper-tiny.en] [--repeats 5]
                          [--threads 2 1] [--compute-types int8 float32]

For each compute type and thread count: the median wall time of transcribe() (greedy,
temperature 0, without timestamps, no VAD: the goldens' options) on the 3.16 s Asterisk prompt
conf-onlyperson.wav, from 16 kHz samples in memory (decoding and resampling excluded), and of
the encoder alone on one 30 s window (WhisperModel.encode), so that both sides of the comparison
measure the same work.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
UTTERANCE = "/usr/share/asterisk/sounds/en/conf-onlyperson.wav"
OPTIONS = dict(beam_size=1, temperature=0.0, without_timestamps=True,
               condition_on_previous_text=False, vad_filter=False, language="en")


def median_ms(f, repeats):
    """Median wall and process CPU milliseconds of f() (the CPU time sums every thread: on a
    shared, loaded machine it is the steadier of the two)."""
    f()  # warm
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        f()
        wall.append(1e3 * (time.perf_counter() - t))
        cpu.append(1e3 * (time.process_time() - c))
    return f"{statistics.median(wall):6.1f} ms wall ({statistics.median(cpu):6.1f} ms CPU)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "third_party/models/faster-whisper-tiny.en"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    ap.add_argument("--compute-types", nargs="+", default=["int8", "float32"])
    args = ap.parse_args()
    from faster_whisper import WhisperModel
    from faster_whisper.audio import decode_audio

    audio = decode_audio(UTTERANCE)  # 16 kHz float32 (PyAV's resampler)
    for compute_type in args.compute_types:
        for threads in args.threads:
            m = WhisperModel(args.model, device="cpu", compute_type=compute_type, cpu_threads=threads)

            def transcribe():
                segments, _ = m.transcribe(audio, **OPTIONS)
                return [s.text for s in segments]

            features = m.feature_extractor(audio)[:, :3000]
            features = np.pad(features, ((0, 0), (0, 3000 - features.shape[1])))[None].astype(np.float32)
            text = transcribe()
            print(f"{compute_type:8s} cpu_threads={threads}: transcribe 3.16 s prompt "
                  f"{median_ms(transcribe, args.repeats)}, encoder 30 s window "
                  f"{median_ms(lambda: m.encode(features), args.repeats)}  {text}")


if __name__ == "__main__":
    main()
