#!/usr/bin/python3
"""Whisper's log-mel spectrogram in plain numpy: the reference brisvox's LogMelExtractor is tested
against (tests/audio/log_mel_test.cpp).

An independent implementation of what transformers' WhisperFeatureExtractor computes (its
numpy path, _np_extract_fbank_features, as Pipecat Smart Turn v3 uses it), written from the
algorithm, in float64 throughout:
  - STFT: n_fft 400, hop 160, periodic Hann window of 400, centred frames (numpy "reflect"
    padding of 200 samples on each side), power spectrum |X|^2 of 201 bins;
  - 80 triangular mel filters over 0-8000 Hz on the Slaney mel scale with Slaney area
    normalisation (librosa.filters.mel(sr=16000, n_fft=400, n_mels=80) with its defaults);
  - log10(max(mel, 1e-10)), drop the last frame, floor at (global max - 8), then (x + 4) / 4.
Output: [80, n_samples // 160] float32.

Inputs shorter than one hop (160 samples) have no frame: the output is [80, 0] (transformers
would fail on the empty max). Between 160 and 200 samples numpy's reflect padding reflects
repeatedly, which is what this script does (np.pad) and what the C++ code reproduces.

Usage:
  mel_reference.py INPUT -o OUT.npy     INPUT: .wav (16-bit PCM, mono, 16 kHz) or raw float32 LE
  mel_reference.py A B -o A.npy -o B.npy  several at once (one numpy start-up), paired in order
  mel_reference.py --filters OUT.npy    the [80, 201] filterbank, float64
  mel_reference.py --self-test          checks the filterbank against known properties
Needs only numpy (python3-numpy).
"""
import argparse
import sys
import wave

import numpy as np

SAMPLE_RATE_HZ = 16000
N_FFT = 400
HOP = 160
N_MELS = 80
F_MAX_HZ = 8000.0

# Slaney's Auditory Toolbox mel scale: linear below 1 kHz (3 mel per 200 Hz), logarithmic above
# (27 steps per factor 6.4).
_F_SP = 200.0 / 3.0
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOG_STEP = np.log(6.4) / 27.0


def hz_to_mel(hz):
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / _F_SP
    log = _MIN_LOG_MEL + np.log(np.maximum(hz, _MIN_LOG_HZ) / _MIN_LOG_HZ) / _LOG_STEP
    return np.where(hz >= _MIN_LOG_HZ, log, linear)


def mel_to_hz(mel):
    mel = np.asarray(mel, dtype=np.float64)
    linear = mel * _F_SP
    log = _MIN_LOG_HZ * np.exp(_LOG_STEP * (np.maximum(mel, _MIN_LOG_MEL) - _MIN_LOG_MEL))
    return np.where(mel >= _MIN_LOG_MEL, log, linear)


def mel_filters():
    """[N_MELS, N_FFT // 2 + 1] triangular filters, each of area 1 in Hz (Slaney norm)."""
    bin_hz = np.linspace(0.0, SAMPLE_RATE_HZ / 2, N_FFT // 2 + 1)
    edges_hz = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(F_MAX_HZ), N_MELS + 2))
    filters = np.zeros((N_MELS, bin_hz.size))
    for m in range(N_MELS):
        lo, centre, hi = edges_hz[m], edges_hz[m + 1], edges_hz[m + 2]
        rising = (bin_hz - lo) / (centre - lo)
        falling = (hi - bin_hz) / (hi - centre)
        filters[m] = np.maximum(0.0, np.minimum(rising, falling)) * (2.0 / (hi - lo))
    return filters


def log_mel(samples):
    x = np.asarray(samples, dtype=np.float64)
    num_frames = x.size // HOP
    if num_frames == 0:
        return np.zeros((N_MELS, 0), dtype=np.float32)
    padded = np.pad(x, N_FFT // 2, mode="reflect")
    n = np.arange(N_FFT)
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * n / N_FFT)  # periodic Hann
    # One frame more than kept: the STFT has 1 + n // 160 frames, Whisper drops the last one.
    starts = np.arange(num_frames + 1) * HOP
    frames = padded[starts[:, None] + n[None, :]] * window
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2  # [frames, 201]
    mel = mel_filters() @ power.T  # [80, frames]
    spec = np.log10(np.maximum(mel, 1e-10))[:, :-1]
    spec = np.maximum(spec, spec.max() - 8.0)
    return ((spec + 4.0) / 4.0).astype(np.float32)


def read_input(path):
    if path.lower().endswith(".wav"):
        with wave.open(path, "rb") as w:
            if w.getsampwidth() != 2 or w.getnchannels() != 1 or w.getframerate() != SAMPLE_RATE_HZ:
                sys.exit(f"{path}: need 16-bit PCM mono 16 kHz, got {8 * w.getsampwidth()}-bit, "
                         f"{w.getnchannels()} channels, {w.getframerate()} Hz")
            data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return data.astype(np.float64) / 32768.0
    return np.fromfile(path, dtype="<f4").astype(np.float64)


def self_test():
    assert abs(hz_to_mel(1000.0) - 15.0) < 1e-12
    assert abs(mel_to_hz(hz_to_mel(6123.0)) - 6123.0) < 1e-9
    assert abs(hz_to_mel(8000.0) - (15.0 + 27.0 * np.log(8.0) / np.log(6.4))) < 1e-12
    f = mel_filters()
    assert f.shape == (80, 201)
    # Filter 0 runs 0 -> 37.24 -> 74.47 Hz (mel step 45.2456 / 81 = 0.55859, x 66.67 Hz): only
    # bin 1 (40 Hz) falls in it, on the falling side: (74.47 - 40) / 37.24 * 2 / 74.47 = 0.0248626,
    # librosa's (and Whisper's mel_filters.npz) first value.
    assert np.count_nonzero(f[0]) == 1 and abs(f[0, 1] - 0.0248626) < 1e-6, f[0, :3]
    # Filter 1 (37.24 -> 74.47 -> 111.71 Hz): bins 1 and 2, 0.0019908 and 0.0228718 (librosa).
    assert np.allclose(f[1, :4], [0.0, 0.0019908, 0.0228718, 0.0], atol=1e-6), f[1, :4]
    # Every filter sees at least one bin (no empty filters at 80 mels and n_fft 400).
    assert np.all(f.max(axis=1) > 0)
    # Slaney normalisation: each triangle has area 1 in Hz, so filters wide enough to be sampled
    # well by the 40 Hz bins (from filter 41, 4+ bins) sum to ~1 / 40 Hz.
    area = f.sum(axis=1) * (SAMPLE_RATE_HZ / N_FFT)
    assert np.all(np.abs(area[41:] - 1.0) < 0.02), area[41:]
    # Centres are linear up to 1 kHz (below filter 26), logarithmic above; the last filter ends
    # at 8 kHz (bin 200) and is zero there.
    assert f[-1, 200] == 0.0 and f[-1, 199] > 0.0
    # A silent input sits at the floor everywhere: log10(1e-10) = -10 -> (-10 + 4) / 4.
    assert np.all(log_mel(np.zeros(1600)) == np.float32(-1.5))
    assert log_mel(np.zeros(128000)).shape == (80, 800)
    assert log_mel(np.zeros(159)).shape == (80, 0)
    print("ok")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inputs", nargs="*", help=".wav (16-bit mono 16 kHz) or raw float32 LE")
    parser.add_argument("-o", "--output", action="append", default=[],
                        help="the [80, frames] float32 .npy to write, one per input")
    parser.add_argument("--filters", help="write the [80, 201] float64 filterbank to this .npy")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_intermixed_args()
    if args.self_test:
        self_test()
    if args.filters:
        np.save(args.filters, mel_filters())
    if len(args.output) != len(args.inputs):
        parser.error(f"{len(args.inputs)} inputs but {len(args.output)} -o outputs")
    for path, out in zip(args.inputs, args.output):
        np.save(out, log_mel(read_input(path)))
    if not (args.inputs or args.self_test or args.filters):
        parser.error("nothing to do")


if __name__ == "__main__":
    main()
