#!/usr/bin/env python3
"""Phone-band accuracy of brisvox's speech detection, on real recorded speech (docs/TELEPHONY.md).

The corpus is real recordings from Debian packages, each labelled from its own clean signal:
  wide    LibriVox and pocketsphinx test utterances (16 kHz, pocketsphinx-testdata, with their
          transcripts), joined with pauses of 0.4 to 2 s;
  prompts every 6th Asterisk prompt of en_US_f_Allison (8 kHz studio recordings,
          asterisk-core-sounds-en-wav), joined the same way.
The truth is the speech of each clean utterance on a 10 ms grid: a frame is speech when its energy
is at least 12 dB above the utterance's quietest frames and within 50 dB of its loudest; pauses
shorter than 200 ms inside speech count as speech (a detector is asked for speech regions, not
words), islands shorter than 50 ms do not.

Each conversation then goes through the phone channel (sox): the 300-3400 Hz band, 8 kHz, and a
G.711 round trip: mu-law, A-law, and mu-law with pink noise 10 dB below the speech mixed in before
the channel (a fixed seed). `brisvox vad` runs each condition through every path: the 8 kHz model
on the 8 kHz audio (native) and the 16 kHz model on it upsampled (up16), Silero v5 and v6, at the
thresholds given; its segments (the segmenter's defaults otherwise) are scored frame by frame.

  tools/telephony_eval.py --brisvox build/release/brisvox vad      the table (--json: the figures)
  tools/telephony_eval.py --brisvox ... density                    8 kHz callers per core, per path
  tools/telephony_eval.py --brisvox ... turn                       Smart Turn: phone vs wideband
  tools/telephony_eval.py --brisvox ... stt                        Whisper WER: phone vs wideband

Needs /usr/bin/python3 with numpy (python3-numpy), sox, and the two Debian packages above.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

FRAME_S = 0.01
PS = "/usr/share/pocketsphinx/test/data"
ASTERISK = "/usr/share/asterisk/sounds/en_US_f_Allison"
GAPS_S = [0.7, 1.5, 0.4, 2.0, 1.0, 0.6]
LEAD_S = 1.0
PATHS = [("native", 8000), ("up16", 16000)]
CONDITIONS = ["mulaw", "alaw", "mulaw_noisy"]


class EvalError(Exception):
    pass


def read_wav(path):
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise EvalError(f"{path}: expected 16-bit mono PCM")
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return data.astype(np.float64) / 32768.0, w.getframerate()


def write_wav(path, samples, rate):
    pcm = np.clip(np.round(samples * 32768.0), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def wide_sources():
    """(name, path-or-raw, transcript) of the 16 kHz utterances."""
    out = []
    lines = open(f"{PS}/librivox/transcription").read().splitlines()
    for line in lines:
        m = re.match(r"<s> (.*) </s> \((.*)\)", line.strip())
        if m:
            out.append((m.group(2), f"{PS}/librivox/{m.group(2)}.wav", m.group(1).strip()))
    for line in open(f"{PS}/cards/cards.transcription").read().splitlines():
        m = re.match(r"<s> (.*) </s> \((.*)\)", line.strip())
        if m:
            out.append(("cards-" + m.group(2), f"{PS}/cards/{m.group(2)}.wav", m.group(1).strip()))
    # pocketsphinx's own test utterances (headerless 16 kHz s16le; transcripts from its tests)
    out.append(("goforward", f"{PS}/goforward.raw", "go forward ten meters"))
    out.append(("numbers", f"{PS}/numbers.raw", None))
    out.append(("something", f"{PS}/something.raw", None))
    return out


def prompt_sources():
    names = sorted(f for f in os.listdir(ASTERISK) if f.endswith(".wav"))
    return [(n[:-4], f"{ASTERISK}/{n}", None) for n in names[::6]]


def load_source(path):
    if path.endswith(".raw"):
        data = np.fromfile(path, dtype="<i2").astype(np.float64) / 32768.0
        return data, 16000
    return read_wav(path)


def truth_frames(x, rate):
    """Speech (True) per 10 ms frame of a clean utterance."""
    hop = int(rate * FRAME_S)
    n = len(x) // hop
    frames = x[: n * hop].reshape(n, hop)
    e = 10 * np.log10(np.mean(frames * frames, axis=1) + 1e-12)
    floor = np.percentile(e, 5)
    speech = (e > floor + 12) & (e > e.max() - 50)
    return bridge(speech, gap=20, island=5)


def bridge(speech, gap, island):
    s = speech.copy()
    runs = runs_of(s)
    # fill short pauses between speech
    for v, a, b in runs:
        if not v and a > 0 and b < len(s) and b - a < gap:
            s[a:b] = True
    for v, a, b in runs_of(s):
        if v and b - a < island:
            s[a:b] = False
    return s


def runs_of(mask):
    out = []
    i = 0
    while i < len(mask):
        j = i
        while j < len(mask) and mask[j] == mask[i]:
            j += 1
        out.append((bool(mask[i]), i, j))
        i = j
    return out


def conversation(sources, rate):
    """Joins the utterances with pauses: (samples at `rate`, truth per frame, [(name, start_s, end_s, text)])."""
    parts = [np.zeros(int(LEAD_S * rate))]
    truth = [np.zeros(int(round(LEAD_S / FRAME_S)), dtype=bool)]
    spans = []
    t = LEAD_S
    for i, (name, path, text) in enumerate(sources):
        x, r = load_source(path)
        if r != rate:
            raise EvalError(f"{path}: {r} Hz, expected {rate}")
        hop = int(rate * FRAME_S)
        x = x[: (len(x) // hop) * hop]
        parts.append(x)
        truth.append(truth_frames(x, rate))
        spans.append((name, t, t + len(x) / rate, text))
        t += len(x) / rate
        gap = GAPS_S[i % len(GAPS_S)]
        parts.append(np.zeros(int(round(gap * rate))))
        truth.append(np.zeros(int(round(gap / FRAME_S)), dtype=bool))
        t += gap
    return np.concatenate(parts), np.concatenate(truth), spans


def sox(*args):
    subprocess.run(["sox", "-D", "-R", *args], check=True, capture_output=True)


def pink_noise(n, seed):
    """Pink (1/f) noise, unit RMS, from a fixed seed (Voss-McCartney by FFT shaping)."""
    rng = np.random.default_rng(seed)
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spec), dtype=np.float64)
    f[0] = 1.0
    y = np.fft.irfft(spec / np.sqrt(f), n)
    return y / np.sqrt(np.mean(y * y))


def phone_channel(src_wav, dst_wav, law, work):
    """The phone channel: 300-3400 Hz, 8 kHz, a G.711 round trip; written as 16-bit PCM."""
    coded = os.path.join(work, os.path.basename(dst_wav) + (".ul" if law == "mulaw" else ".al"))
    enc = "u-law" if law == "mulaw" else "a-law"
    sox(src_wav, "-r", "8000", "-e", enc, "-b", "8", "-t", "raw", coded, "sinc", "300-3400", "rate", "-v", "8000")
    sox("-t", "raw", "-r", "8000", "-e", enc, "-b", "8", "-c", "1", coded, "-b", "16", "-e", "signed-integer", dst_wav)
    os.remove(coded)


def build(work):
    """Writes every condition's WAV; returns {set: {"truth": mask, "spans": [...], "files": {cond: path}}}."""
    sets = {}
    for name, sources, rate in (("wide", wide_sources(), 16000), ("prompts", prompt_sources(), 8000)):
        x, truth, spans = conversation(sources, rate)
        clean = os.path.join(work, f"{name}_clean.wav")
        write_wav(clean, x, rate)
        speech_rms = np.sqrt(np.mean(x[np.repeat(truth, int(rate * FRAME_S))[: len(x)]] ** 2))
        noisy = os.path.join(work, f"{name}_noisy_src.wav")
        write_wav(noisy, x + pink_noise(len(x), seed=31) * speech_rms * 10 ** (-10 / 20), rate)
        files = {"wideband": clean} if rate == 16000 else {}
        for cond in CONDITIONS:
            dst = os.path.join(work, f"{name}_{cond}.wav")
            phone_channel(noisy if cond.endswith("noisy") else clean, dst, cond.split("_")[0], work)
            files[cond] = dst
        sets[name] = {"truth": truth, "spans": spans, "files": files, "rate": rate}
    return sets


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise EvalError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-800:]}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def hyp_frames(segments, n):
    h = np.zeros(n, dtype=bool)
    for s in segments:
        a = int(round(s["start"] / FRAME_S))
        b = int(round(s["end"] / FRAME_S))
        h[max(a, 0): min(b, n)] = True
    return h


def score(truth, hyp):
    tp = int(np.sum(truth & hyp))
    fp = int(np.sum(~truth & hyp))
    fn = int(np.sum(truth & ~hyp))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": p, "recall": r, "f1": f}


def path_list(args):
    out = []
    for model in args.models:
        for path, model_rate in PATHS:
            for th in (args.native_thresholds if path == "native" else args.up16_thresholds):
                out.append({"path": path, "model": model, "model_rate": model_rate, "threshold": th})
    out.append({"path": "default", "model": "v6", "model_rate": 0, "threshold": 0.5})
    return out


def vad_eval(args, sets):
    rows = []
    for cond in ["wideband"] + CONDITIONS:
        inputs = [s for s in sets.values() if cond in s["files"]]
        for p in path_list(args):
            if cond == "wideband" and p["path"] != "default":
                continue
            cmd = [args.brisvox, "vad", "--no-progress", "--model", p["model"], "--threshold", str(p["threshold"])]
            if p["model_rate"]:
                cmd += ["--model-rate", str(p["model_rate"])]
            outs = {o["file"]: o for o in run_json(cmd + [s["files"][cond] for s in inputs])}
            total = {"tp": 0, "fp": 0, "fn": 0}
            for s in inputs:
                sc = score(s["truth"], hyp_frames(outs[s["files"][cond]]["segments"], len(s["truth"])))
                for k in total:
                    total[k] += sc[k]
            tp, fp, fn = total["tp"], total["fp"], total["fn"]
            prec = tp / (tp + fp) if tp + fp else 0.0
            rec = tp / (tp + fn) if tp + fn else 0.0
            f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
            rows.append({"condition": cond, **p, "precision": round(prec, 4), "recall": round(rec, 4),
                         "f1": round(f1, 4), "frames": tp + fn + fp})
    return rows


def check(rows, min_f1, margin):
    """The guard tests/vad runs: on every phone condition the default path is within `margin` of
    the best path measured, and on mu-law at least `min_f1`. Returns the failures."""
    failures = []
    for cond in CONDITIONS:
        of = [r for r in rows if r["condition"] == cond]
        best = max(of, key=lambda r: r["f1"])
        default = next(r for r in of if r["path"] == "default")
        if default["f1"] < best["f1"] - margin:
            failures.append(f"{cond}: the default's F1 {default['f1']} is more than {margin} below the best path's "
                            f"({best['path']} {best['model']} threshold {best['threshold']}: {best['f1']})")
        if cond == "mulaw" and default["f1"] < min_f1:
            failures.append(f"{cond}: the default's F1 {default['f1']} < {min_f1}")
    return failures


def print_vad(rows, sets):
    seconds = {k: len(s["truth"]) * FRAME_S for k, s in sets.items()}
    speech = {k: float(np.sum(s["truth"])) * FRAME_S for k, s in sets.items()}
    print("corpus: " + ", ".join(f"{k} {seconds[k]:.1f} s ({speech[k]:.1f} s speech, {len(sets[k]['spans'])} utterances)"
                                 for k in sets))
    print(f"{'condition':<12} {'path':<8} {'model':<5} {'rate':>5} {'thr':>4}  {'precision':>9} {'recall':>7} {'F1':>7}")
    for r in rows:
        print(f"{r['condition']:<12} {r['path']:<8} {r['model']:<5} {r['model_rate'] or 'auto':>5} {r['threshold']:>4}  "
              f"{r['precision']:>9.4f} {r['recall']:>7.4f} {r['f1']:>7.4f}")


def cpu_s_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise EvalError(f"{' '.join(cmd)} failed: {p.stderr.strip()[-800:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def density(args, sets, work):
    """8 kHz callers per core, per path: seconds of phone audio analysed per CPU second of one
    worker (`brisvox vad --workers 1` over many copies of the mu-law conversation: full batches,
    the stream's resampler included), minus the cost of loading the model (a run on one short file)."""
    src = sets["prompts"]["files"]["mulaw"]
    copies = args.copies
    listing = [src] * copies
    audio_s = len(sets["prompts"]["truth"]) * FRAME_S * copies
    short = os.path.join(work, "short.wav")
    x, r = read_wav(src)
    write_wav(short, x[: r], r)
    out = []
    for model in args.models:
        for path, model_rate in PATHS:
            base = [args.brisvox, "vad", "--no-progress", "--workers", "1", "--model", model, "--model-rate", str(model_rate)]
            best = None
            for _ in range(args.repeat):
                load = cpu_s_of(base + [short])
                cpu = cpu_s_of(base + listing) - load
                best = cpu if best is None else min(best, cpu)
            out.append({"path": path, "model": model, "model_rate": model_rate, "audio_s": round(audio_s, 1),
                        "cpu_s": round(best, 3), "callers_per_core": round(audio_s / best, 1)})
    return out


PHONE_PATHS = [("default", None), ("native", 8000)]


def rate_flags(model_rate):
    return ["--model-rate", str(model_rate)] if model_rate else []


def turn_eval(args, sets):
    """Smart Turn verdicts on the phone conditions against the wideband ones, turn by turn (matched
    by their ends, within 0.3 s), through the default path and the native 8 kHz one."""
    s = sets["wide"]
    ref = run_json([args.brisvox, "turn", "--no-progress", s["files"]["wideband"]])[0]["turns"]
    res = {}
    for cond in CONDITIONS:
        for path, model_rate in PHONE_PATHS:
            turns = run_json([args.brisvox, "turn", "--no-progress", *rate_flags(model_rate), s["files"][cond]])[0]["turns"]
            agree = 0
            diffs = []
            for t in ref:
                near = [u for u in turns if abs(u["end"] - t["end"]) < 0.3]
                if near:
                    u = min(near, key=lambda u: abs(u["end"] - t["end"]))
                    agree += (u["probability"] >= 0.5) == (t["probability"] >= 0.5)
                    diffs.append(abs(u["probability"] - t["probability"]))
            res[f"{cond}/{path}"] = {"wideband_turns": len(ref), "turns": len(turns), "agree": agree,
                                     "agreement": round(agree / len(ref), 4) if ref else None,
                                     "mean_abs_probability_difference": round(float(np.mean(diffs)), 4) if diffs else None}
    return res


def words(text):
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


def wer(ref, hyp):
    d = np.arange(len(hyp) + 1)
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
            prev, d[j] = d[j], cur
    return d[len(hyp)], len(ref)


def stt_eval(args, sets, work):
    """Whisper WER of the transcribed utterances: wideband, and each phone condition through the
    default path and the native 8 kHz one. Every utterance with a transcript is cut out of the
    condition's audio (its span plus 0.3 s) and transcribed alone."""
    s = sets["wide"]
    res = {}
    for cond in ["wideband"] + CONDITIONS:
        x, r = read_wav(s["files"][cond])
        paths, refs = [], []
        for name, a, b, text in s["spans"]:
            if not text:
                continue
            p = os.path.join(work, f"stt_{cond}_{name}.wav")
            write_wav(p, x[max(0, int((a - 0.3) * r)): int((b + 0.3) * r)], r)
            paths.append(p)
            refs.append(text)
        for path, model_rate in PHONE_PATHS if cond != "wideband" else [("default", None)]:
            outs = run_json([args.brisvox, "transcribe", "--no-progress", "--model", args.stt_model,
                             *rate_flags(model_rate), *paths])
            by_file = {o["file"]: " ".join(seg["text"] for seg in o["segments"]) for o in outs}
            errors = total = 0
            for p, ref in zip(paths, refs):
                e, n = wer(words(ref), words(by_file.get(p, "")))
                errors += e
                total += n
            res[f"{cond}/{path}"] = {"utterances": len(paths), "words": total, "errors": int(errors),
                                     "wer": round(errors / total, 4)}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--work", help="keep the corpus here (default: a temporary folder)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--models", nargs="+", default=["v5", "v6"])
    ap.add_argument("--native-thresholds", nargs="+", type=float, default=[0.5, 0.4, 0.3])
    ap.add_argument("--up16-thresholds", nargs="+", type=float, default=[0.5])
    ap.add_argument("--copies", type=int, default=64, help="density: copies of the prompts conversation")
    ap.add_argument("--repeat", type=int, default=3, help="density: runs per path (the least CPU is kept)")
    ap.add_argument("--stt-model", default="tiny.en")
    ap.add_argument("--check", action="store_true",
                    help="vad: exit 1 unless the default path's F1 is within 0.005 of the best on every phone "
                         "condition and >= 0.93 on mu-law")
    ap.add_argument("what", nargs="*", default=["vad"], choices=["vad", "density", "turn", "stt"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="brisvox-phone-") as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        try:
            sets = build(work)
            report = {}
            if "vad" in args.what:
                report["vad"] = vad_eval(args, sets)
            if "density" in args.what:
                report["density"] = density(args, sets, work)
            if "turn" in args.what:
                report["turn"] = turn_eval(args, sets)
            if "stt" in args.what:
                report["stt"] = stt_eval(args, sets, work)
        except EvalError as e:
            print(f"telephony_eval: {e}", file=sys.stderr)
            return 1
        failures = check(report["vad"], 0.93, 0.005) if args.check and "vad" in report else []
        if args.json:
            print(json.dumps(report))
            return 1 if failures else 0
        if "vad" in report:
            print_vad(report["vad"], sets)
        for key in ("density", "turn", "stt"):
            if key in report:
                print(f"{key}: {json.dumps(report[key], indent=1)}")
        for f in failures:
            print(f"FAILED: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
