"""Shared fixtures of the Python package's tests (docs/PYTHON.md, "Tests").

They run against the installed package (scripts/test.sh installs the wheel it builds and puts it
on PYTHONPATH), never against the source tree: python/brisvox alone has no compiled module.
BRISVOX_CLI and BRISVOX_TURN_TOOL name the release build's `brisvox` and
`brisvox_turn_probability` (the references some tests compare with); by default
build/release/... of this checkout.
"""

import os
import re
import wave
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_WAV = ROOT / "third_party/audio/sample.wav"  # 28.4 s of read speech, 16 kHz (scripts/setup.sh)
ASTERISK = Path("/usr/share/asterisk/sounds/en")    # 8 kHz prompts (apt: asterisk-core-sounds-en)
PIPER_VOICE = ROOT / "third_party/models/piper/en_US-joe-medium.onnx"  # a Piper voice (scripts/setup.sh)
WHISPER_TINY = ROOT / "third_party/models/whisper-tiny.en"  # Whisper tiny.en, converted by scripts/setup.sh
WHISPER_BASE = ROOT / "third_party/models/whisper-base"  # Whisper base (multilingual), converted by scripts/setup.sh


def words(text: str) -> list[str]:
    """The lower-case words of a transcript, for comparing transcripts."""
    return re.findall(r"[a-z0-9']+", text.lower())


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate of `hypothesis` against `reference` (Levenshtein over words())."""
    r, h = words(reference), words(hypothesis)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
    return d[len(h)] / max(1, len(r))


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """int16 samples and rate of a mono 16-bit WAV file."""
    with wave.open(str(path), "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").copy(), w.getframerate()


def build_tool(env: str, relative: str) -> Path:
    path = Path(os.environ.get(env, ROOT / "build/release" / relative))
    if not path.exists():
        pytest.fail(f"{path} is missing: build the release preset first (or set {env})")
    return path


@pytest.fixture(scope="session")
def sample() -> np.ndarray:
    samples, rate = read_wav(SAMPLE_WAV)
    assert rate == 16000
    return samples


@pytest.fixture(scope="session")
def cli() -> Path:
    return build_tool("BRISVOX_CLI", "brisvox")


@pytest.fixture(scope="session")
def turn_tool() -> Path:
    return build_tool("BRISVOX_TURN_TOOL", "tests/turn/brisvox_turn_probability")
