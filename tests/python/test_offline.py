"""brisvox.vad against `brisvox vad --format json`, and brisvox.smart_turn_probability against
the C++ tool of tests/turn and against Pipecat's LocalSmartTurnAnalyzerV3."""

import json
import subprocess
import sys
import time

import numpy as np
import pytest
import soxr

import brisvox
from conftest import ASTERISK, SAMPLE_WAV, WHISPER_BASE, WHISPER_TINY, read_wav


def cli_vad(cli, path, *options):
    out = subprocess.run([str(cli), "vad", "--format", "json", *options, str(path)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.mark.parametrize("kwargs, options", [
    ({}, []),
    ({"emit_probabilities": True}, ["--frame-probs"]),
    ({"threshold": 0.3, "min_silence_ms": 300, "speech_pad_ms": 10, "max_speech_s": 4.0},
     ["--threshold", "0.3", "--min-silence-ms", "300", "--speech-pad-ms", "10", "--max-speech-s", "4"]),
    ({"vad_model": "v5", "model_rate": 8000}, ["--model", "v5", "--model-rate", "8000"]),
])
def test_vad_is_the_cli_document(cli, kwargs, options):
    doc = brisvox.vad(str(SAMPLE_WAV), **kwargs)
    assert doc == cli_vad(cli, SAMPLE_WAV, *options)
    assert doc["file"] == str(SAMPLE_WAV) and doc["sample_rate"] == 16000 and len(doc["segments"]) >= 3


def test_vad_of_an_8khz_file(cli):
    path = ASTERISK / "conf-onlyperson.wav"
    assert brisvox.vad(path) == cli_vad(cli, path)  # a PathLike works too


def test_transcribe_is_the_cli_document(cli):
    # Whisper tiny.en, converted by scripts/setup.sh (the wheel bundles no Whisper model).
    doc = brisvox.transcribe(SAMPLE_WAV, stt_model=str(WHISPER_TINY))
    out = subprocess.run([str(cli), "transcribe", "--model", str(WHISPER_TINY), "--format", "json", str(SAMPLE_WAV)],
                         check=True, capture_output=True, text=True).stdout
    assert doc == json.loads(out)
    assert len(doc["segments"]) >= 3 and "the" in doc["text"].lower(), doc
    path = ASTERISK / "conf-onlyperson.wav"  # 8 kHz, the encoder's window cut to the segment
    doc = brisvox.transcribe(path, stt_model=str(WHISPER_TINY), window="fit")
    out = subprocess.run([str(cli), "transcribe", "--model", str(WHISPER_TINY), "--window", "fit", "--format", "json",
                          str(path)], check=True, capture_output=True, text=True).stdout
    assert doc == json.loads(out) and "only person" in doc["text"].lower(), doc
    # The segmenter's options (which the CLI's transcribe does not take) cut the segments.
    split = brisvox.transcribe(SAMPLE_WAV, stt_model=str(WHISPER_TINY), min_silence_ms=30, max_speech_s=3.0)
    assert len(split["segments"]) > len(brisvox.transcribe(SAMPLE_WAV, stt_model=str(WHISPER_TINY))["segments"])
    assert all(s["end"] - s["start"] <= 3.0 + 1e-6 for s in split["segments"]), split


def test_a_multilingual_model_detects_the_language(cli):
    # Whisper base (scripts/setup.sh) on a Spanish and a Russian prompt: the language detected and
    # reported as the CLI reports it; given, it is decoded in with probability 1.
    for language in ("es", "ru"):
        path = f"/usr/share/asterisk/sounds/{language}/vm-tocallnum.wav"
        doc = brisvox.transcribe(path, stt_model=str(WHISPER_BASE))
        out = subprocess.run([str(cli), "transcribe", "--model", str(WHISPER_BASE), "--format", "json", path],
                             check=True, capture_output=True, text=True).stdout
        assert doc == json.loads(out)
        assert doc["language"] == language and 0.2 < doc["language_probability"] < 1, doc  # detected, not given
        given = brisvox.transcribe(path, stt_model=str(WHISPER_BASE), language=language)
        assert given["language"] == language and given["language_probability"] == 1.0
        assert given["text"] == doc["text"]
    english = brisvox.transcribe(ASTERISK / "conf-onlyperson.wav", stt_model=str(WHISPER_TINY))
    assert english["language"] == "en" and english["language_probability"] == 1.0
    with pytest.raises(brisvox.InvalidArgumentError, match="English-only"):
        brisvox.transcribe(ASTERISK / "conf-onlyperson.wav", stt_model=str(WHISPER_TINY), language="fr")


def test_faster_whisper_decoding_is_the_cli_document(cli):
    # Beam search with the fallback (faster-whisper's defaults) through Python equals the CLI's, and
    # differs from greedy decoding on this Spanish prompt (Whisper base).
    path = "/usr/share/asterisk/sounds/es/vm-tocallnum.wav"
    doc = brisvox.transcribe(path, stt_model=str(WHISPER_BASE), decoding="faster-whisper")
    out = subprocess.run([str(cli), "transcribe", "--model", str(WHISPER_BASE), "--decoding", "faster-whisper",
                          "--format", "json", path], check=True, capture_output=True, text=True).stdout
    assert doc == json.loads(out)
    refined = brisvox.transcribe(path, stt_model=str(WHISPER_BASE), decoding="faster-whisper", beam_size=2,
                                 temperatures=[0.0])
    assert refined["language"] == "es" and refined["text"], refined


def test_word_timestamps_are_the_cli_document(cli):
    # Words through Python equal the CLI's --word-timestamps; a stream's TRANSCRIPT events carry
    # the same words. A model without alignment heads (the sherpa-onnx layout) is refused.
    path = ASTERISK / "vm-intro.wav"
    doc = brisvox.transcribe(path, stt_model=str(WHISPER_TINY), word_timestamps=True)
    out = subprocess.run([str(cli), "transcribe", "--model", str(WHISPER_TINY), "--word-timestamps", "--format",
                          "json", str(path)], check=True, capture_output=True, text=True).stdout
    assert doc == json.loads(out)
    words = [w for s in doc["segments"] for w in s["words"]]
    assert "".join(w["word"] for w in words).strip() == doc["text"], doc
    engine = brisvox.Engine(stt_model=str(WHISPER_TINY))
    samples, rate = read_wav(path)
    with engine.open_stream(sample_rate=rate, transcripts=True, word_timestamps=True) as stream:
        events = [e for e in stream.feed(samples) if e.type == brisvox.EventType.TRANSCRIPT]
    got = [w for e in events for w in e.words]
    assert [(w["start"], w["end"], w["word"]) for w in got] == [(w["start"], w["end"], w["word"]) for w in words]
    with pytest.raises(brisvox.InvalidArgumentError, match="alignment heads"):
        brisvox.transcribe(path, stt_model=str(WHISPER_TINY) + "-sherpa", word_timestamps=True)


def test_partial_transcripts_in_a_stream():
    # partial_ms: TRANSCRIPT_PARTIAL events before each TRANSCRIPT, their agreed text only growing.
    engine = brisvox.Engine(stt_model=str(WHISPER_TINY))
    samples, rate = read_wav(SAMPLE_WAV)
    partials, finals = [], []
    segments = brisvox.transcribe(SAMPLE_WAV, stt_model=str(WHISPER_TINY))["segments"]

    def take(events):
        for e in events:
            (partials if e.type == brisvox.EventType.TRANSCRIPT_PARTIAL else finals).append(e)

    # As fast as the stream takes it, but 1 s into each segment (all are longer) the test waits (up
    # to 30 s) for a partial of it: a loaded machine makes the test slower, never the partials late.
    with engine.open_stream(sample_rate=rate, transcripts=True, partial_ms=500) as stream:
        pos = 0
        pauses = [seg["start"] + 1.0 for seg in segments]
        while pos < len(samples):
            for seg, pause in zip(segments, pauses):
                if pause <= pos / rate < pause + 0.1:
                    deadline = time.monotonic() + 30
                    while not any(abs(p.start_s - seg["start"]) < 0.05 for p in partials) and time.monotonic() < deadline:
                        event = stream.next_event(timeout=0.05)
                        if event is not None:
                            take([event])
            room = min(1600, stream.writable())
            if room == 0:  # the stream's buffer is full: wait for it to be read (no refusals)
                event = stream.next_event(timeout=0.01)
                take([event] if event is not None else [])
                continue
            pos += stream.push(samples[pos:pos + room])
            take(stream.poll())
        stream.finish()
        take(stream)
    assert len({p.start_s for p in partials}) == len(segments), partials
    agreed = {}
    for p in partials:
        assert p.text.startswith(agreed.get(p.start_s, "")) and isinstance(p.unstable, str), p
        agreed[p.start_s] = p.text
    transcripts = [e for e in finals if e.type == brisvox.EventType.TRANSCRIPT]
    assert set(agreed) <= {t.start_s for t in transcripts}
    assert transcripts[0].unstable is None
    with pytest.raises(brisvox.InvalidArgumentError, match="partial_interval_ms"):
        engine.open_stream(transcripts=True, partial_ms=50)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"sample_rate": 8000}, TypeError, "sample_rate is not an option here"),
    ({"decoding": "exhaustive"}, brisvox.InvalidArgumentError, "decoding must be"),
    ({"temperatures": "0.2"}, TypeError, "temperatures must be a sequence"),
    ({"temperatures": [0.0, -1.0]}, brisvox.InvalidArgumentError, "temperature"),
    ({"beam_size": 17}, brisvox.InvalidArgumentError, "1 to 16"),
    ({"hotwords": "call\x01me"}, brisvox.InvalidArgumentError, "control character"),
    ({"transcripts": False}, TypeError, "transcripts is not an option here"),
    ({"beam": 5}, TypeError, "beam"),
    ({"window": "half"}, brisvox.InvalidArgumentError, "window must be"),
])
def test_transcribe_errors(kwargs, error, words):
    with pytest.raises(error, match=words):
        brisvox.transcribe(SAMPLE_WAV, stt_model=str(WHISPER_TINY), **kwargs)


def test_transcribe_of_a_missing_file_or_model(tmp_path):
    with pytest.raises(brisvox.IoError, match="missing.wav"):
        brisvox.transcribe(tmp_path / "missing.wav", stt_model=str(WHISPER_TINY))
    with pytest.raises(brisvox.Error, match="whisper"):
        brisvox.transcribe(SAMPLE_WAV, stt_model=str(tmp_path / "no-whisper"))


def test_vad_errors(tmp_path):
    with pytest.raises(brisvox.IoError, match="missing.wav"):
        brisvox.vad(tmp_path / "missing.wav")
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"not audio at all" * 10)
    with pytest.raises(brisvox.UnsupportedAudioError):
        brisvox.vad(junk)
    with pytest.raises(TypeError, match="sample_rate"):
        brisvox.vad(SAMPLE_WAV, sample_rate=8000)
    with pytest.raises(brisvox.InvalidArgumentError, match="threshold"):
        brisvox.vad(SAMPLE_WAV, threshold=-1.0)


def test_vad_with_turns():
    doc = brisvox.vad(SAMPLE_WAV, turn_model="v3.2", turn=True)
    assert doc["turns"] and all(t["reason"] in ("model", "timeout", "end_of_stream") for t in doc["turns"])


# Real turns at 16 kHz (the 8 kHz prompts upsampled once, as tests/turn does).
TURN_PROMPTS = ["activated", "if-correct-press", "conf-onlyperson", "vm-theperson", "pbx-invalid"]


def turn_clips(sample):
    clips = []
    for name in TURN_PROMPTS:
        x, rate = read_wav(ASTERISK / f"{name}.wav")
        clips.append(soxr.resample(x.astype(np.float32) / 32768.0, rate, 16000, quality="HQ").astype(np.float32))
    clips.append(sample[: 16000 * 5].astype(np.float32) / 32768.0)
    clips.append(sample[16000 * 3: 16000 * 14].astype(np.float32) / 32768.0)  # > 8 s: the end is used
    return clips


def test_smart_turn_probability_is_the_engines(turn_tool, sample, tmp_path):
    clips = turn_clips(sample)
    files = []
    for i, c in enumerate(clips):
        files.append(tmp_path / f"{i}.f32")
        c.astype("<f4").tofile(files[-1])
    out = subprocess.run([str(turn_tool), "v3.2", *map(str, files)], check=True, capture_output=True, text=True)
    expected = [float(line) for line in out.stdout.split()]
    got = [brisvox.smart_turn_probability(c) for c in clips]
    assert got == pytest.approx(expected, abs=1e-6)
    assert min(got) < 0.5 < max(got)  # both verdicts occur among these turns


def test_smart_turn_probability_matches_pipecat(sample):
    import onnxruntime
    if onnxruntime.__version__ != "1.29.0":
        pytest.fail(f"onnxruntime {onnxruntime.__version__} imported; the parity reference is 1.29.0 "
                    "(put third_party/onnxruntime-python first on PYTHONPATH, as scripts/test.sh does)")
    from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3

    pipecat = LocalSmartTurnAnalyzerV3()
    for clip in turn_clips(sample):
        want = pipecat._predict_endpoint(clip)["probability"]
        assert brisvox.smart_turn_probability(clip) == pytest.approx(want, abs=1e-4)
    # int16 input and 8 kHz input (resampled to 16 kHz by brisvox, by soxr for Pipecat).
    x, rate = read_wav(ASTERISK / "if-correct-press.wav")
    pipecat._sample_rate = rate
    want = pipecat._predict_endpoint(x.astype(np.float32) / 32768.0)["probability"]
    assert brisvox.smart_turn_probability(x, sample_rate=rate) == pytest.approx(want, abs=0.02)


def test_smart_turn_probability_errors():
    with pytest.raises(TypeError, match="float64"):
        brisvox.smart_turn_probability(np.zeros(16000))
    with pytest.raises(ValueError, match="1-D"):
        brisvox.smart_turn_probability(np.zeros((2, 16000), np.float32))
    with pytest.raises(brisvox.BadAudioError):
        brisvox.smart_turn_probability(np.full(16000, np.nan, np.float32))
    with pytest.raises(brisvox.BadAudioError, match="no samples"):
        brisvox.smart_turn_probability(np.zeros(0, np.float32))
    with pytest.raises(brisvox.IoError, match="nonexistent"):
        brisvox.smart_turn_probability(np.zeros(16000, np.float32), model="/nonexistent.onnx")
    with pytest.raises(brisvox.InvalidArgumentError, match="sample_rate"):
        brisvox.smart_turn_probability(np.zeros(16000, np.float32), sample_rate=0)


@pytest.mark.parametrize("module, missing, extra", [
    ("brisvox.pipecat", "loguru", "brisvox[pipecat]"),
    ("brisvox.pipecat", "pipecat", "brisvox[pipecat]"),
    ("brisvox.livekit", "livekit", "brisvox[livekit]"),
])
def test_an_integration_without_its_framework_names_the_extra(module, missing, extra):
    # `pip install .` alone brings neither Pipecat nor LiveKit: importing their integration says
    # which extra installs them instead of "No module named 'loguru'".
    code = f"import sys; sys.modules[{missing!r}] = None\nimport {module}"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError") and extra in last and missing in last, r.stderr[-2000:]
