"""Every Python snippet of README.md and docs/PYTHON.md runs, as a reader would paste it.

Each ```python block runs in a fresh interpreter of this venv (the installed package first on
PYTHONPATH, as for the other tests), in a scratch folder that holds what the docs' placeholders
name: `call.wav` (the sample recording), `VOICE.onnx` (the Piper voice and its .json), and
`third_party/` (the checkout's, for the snippets that name its files). Names a snippet uses but
does not define are the audio it is shown with: `pcm` and `pcm_int16`, an 8 kHz int16 telephone
prompt (the snippets open 8 kHz streams). A snippet fails the test if it raises or prints a
traceback.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ASTERISK, PIPER_VOICE, ROOT, SAMPLE_WAV

DOCS = [ROOT / "README.md", ROOT / "docs/PYTHON.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

# What the snippets' undefined names stand for: an 8 kHz recording, read the way a user would.
PRELUDE = f"""
import wave as _wave
import numpy as _np
with _wave.open({str(ASTERISK / "vm-goodbye.wav")!r}) as _w:
    pcm = pcm_int16 = _np.frombuffer(_w.readframes(_w.getnframes()), _np.int16)
"""


def snippets():
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 2
            found.append(pytest.param(m.group(1), id=f"{doc.name}:{line}"))
    return found


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    d = tmp_path_factory.mktemp("snippets")
    (d / "call.wav").symlink_to(SAMPLE_WAV)
    (d / "VOICE.onnx").symlink_to(PIPER_VOICE)
    (d / "VOICE.onnx.json").symlink_to(PIPER_VOICE.with_name(PIPER_VOICE.name + ".json"))
    (d / "third_party").symlink_to(ROOT / "third_party")
    return d


def test_the_docs_have_snippets():
    assert len(snippets()) >= 5


@pytest.mark.parametrize("code", snippets())
def test_snippet_runs(code, scratch):
    assert (ASTERISK / "vm-goodbye.wav").exists(), "apt: asterisk-core-sounds-en-wav"
    r = subprocess.run([sys.executable, "-c", PRELUDE + code], cwd=scratch, env=dict(os.environ),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
