"""Smart Turn v3.2 on real speech: brisvox's probability against Pipecat's own analyzer.

The reference is pipecat-ai 1.14.0's ``LocalSmartTurnAnalyzerV3._predict_endpoint`` (its vendored
Whisper features and its ONNX Runtime session on the model the wheel ships), run in the project's
venv (scripts/setup.sh installs the wheel there without its dependencies), on the ONNX Runtime
release brisvox links (1.29: the official wheel, unpacked into third_party/onnxruntime-python/ and
put first on PYTHONPATH). The release matters: this int8 model's probability moves by up to 0.2
between onnxruntime 1.29 and 1.32 on identical features (docs/MODELS.md), so parity within 1e-4
is only defined for one runtime. brisvox's side is ``brisvox_turn_probability``
(tests/turn/turn_probability_tool.cpp): the engine's TurnFeatures and SmartTurn on the same 16 kHz
samples. Both sides get identical float32 arrays: the recordings are read here and the 8 kHz ones
upsampled once with soxr, as Pipecat does for an 8 kHz pipeline.

Run by CTest (tests/turn/CMakeLists.txt), which sets BRISVOX_TURN_TOOL, BRISVOX_TURN_MODEL and
PYTHONPATH. By hand:

    BRISVOX_TURN_TOOL=build/release/tests/turn/brisvox_turn_probability \
    BRISVOX_TURN_MODEL=third_party/models/smart-turn-v3.2-cpu.onnx \
    PYTHONPATH=third_party/onnxruntime-python \
    .venv/bin/python -m pytest -q -s tests/turn/test_pipecat_parity.py
"""

import hashlib
import os
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest
import soxr

TOLERANCE = 1e-4
SHARE = Path("/usr/share")
ASTERISK = SHARE / "asterisk/sounds/en"
LIBRIVOX = SHARE / "pocketsphinx/test/data/librivox"

# Real turns: Asterisk's prompts (8 kHz; finished sentences, fragments that stop mid-phrase such
# as "If this is correct, press...", and four longer than the 8 s window, which both sides cut),
# the five LibriVox readings (16 kHz), a silent prompt file, and three recordings cut mid-sentence.
ASTERISK_PROMPTS = [
    "activated", "agent-loginok", "calling", "conf-adminmenu-18", "conf-extended",
    "conf-onlyperson", "confbridge-menu-exit-in", "confbridge-pin", "demo-echotest",
    "demo-nomatch", "dir-intro-fn", "if-correct-press", "is-set-to", "pbx-invalid",
    "please-try-call-later", "priv-introsaved", "something-terribly-wrong", "tt-allbusy",
    "vm-forward", "vm-from", "vm-newpassword", "vm-theperson", "vm-tocancelmsg", "with",
]
LIBRIVOX_CLIPS = [f"sense_and_sensibility_01_austen_64kb-{n}" for n in ("0870", "0880", "0890", "0920", "0930")]
CUTS = [  # (name, seconds kept from the start)
    ("asterisk/vm-newpassword", 1.5),
    ("asterisk/confbridge-pin", 2.5),
    ("librivox/sense_and_sensibility_01_austen_64kb-0870", 4.0),
]


def read_wav_16k(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, path
        rate = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
    if rate != 16000:
        x = soxr.resample(x, rate, 16000, quality="HQ").astype(np.float32)
    return x


def turns() -> list[tuple[str, np.ndarray]]:
    clips = {}
    for name in ASTERISK_PROMPTS:
        clips[f"asterisk/{name}"] = read_wav_16k(ASTERISK / f"{name}.wav")
    for name in LIBRIVOX_CLIPS:
        clips[f"librivox/{name}"] = read_wav_16k(LIBRIVOX / f"{name}.wav")
    clips["asterisk/silence/1"] = read_wav_16k(ASTERISK / "silence/1.wav")
    out = list(clips.items())
    for name, seconds in CUTS:
        out.append((f"{name} (first {seconds} s)", clips[name][: int(seconds * 16000)].copy()))
    return out


def env_path(name: str) -> Path:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set (CTest sets it; see this file's docstring)")
    return Path(value)


@pytest.fixture(scope="module")
def reference():
    from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3

    analyzer = LocalSmartTurnAnalyzerV3()  # the model bundled in the wheel, one CPU thread
    analyzer.set_sample_rate(16000)
    return analyzer


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("turns")
    out = []
    for i, (name, samples) in enumerate(turns()):
        path = folder / f"{i:02d}.f32"
        samples.astype("=f4").tofile(path)
        out.append((name, samples, path))
    return out


def brisvox_probabilities(args: list[str]) -> list[list[float]]:
    tool = env_path("BRISVOX_TURN_TOOL")
    run = subprocess.run([str(tool), *args], capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    return [[float(v) for v in line.split()] for line in run.stdout.splitlines()]


def test_same_onnx_runtime():
    import onnxruntime

    ours = subprocess.run([str(env_path("BRISVOX_TURN_TOOL")), "--ort-version"], capture_output=True, text=True)
    assert ours.returncode == 0, ours.stderr
    assert onnxruntime.__version__ == ours.stdout.strip(), (
        f"the reference runs on onnxruntime {onnxruntime.__version__} ({onnxruntime.__file__}), brisvox on "
        f"{ours.stdout.strip()}: put third_party/onnxruntime-python first on PYTHONPATH (scripts/setup.sh makes it)")


def test_same_model_file():
    import pipecat.audio.turn.smart_turn.data as data

    bundled = Path(data.__file__).parent / "smart-turn-v3.2-cpu.onnx"
    model = env_path("BRISVOX_TURN_MODEL")
    assert hashlib.sha256(bundled.read_bytes()).hexdigest() == hashlib.sha256(model.read_bytes()).hexdigest()


def test_probability_matches_pipecat(reference, clips):
    assert len(clips) >= 20
    ours = brisvox_probabilities([str(env_path("BRISVOX_TURN_MODEL"))] + [str(p) for _, _, p in clips])
    assert len(ours) == len(clips)
    worst = 0.0
    print()
    for (name, samples, _), (p_brisvox,) in zip(clips, ours):
        result = reference._predict_endpoint(samples.copy())
        p_pipecat = float(result["probability"])
        diff = abs(p_brisvox - p_pipecat)
        worst = max(worst, diff)
        print(f"  {name:62} {len(samples) / 16000:6.2f} s  pipecat {p_pipecat:.6f}  brisvox {p_brisvox:.6f}  "
              f"|diff| {diff:.2e}")
        assert diff <= TOLERANCE, name
        assert (p_brisvox > 0.5) == (result["prediction"] == 1), name
    print(f"  {len(clips)} turns, max |diff| {worst:.3e}")


def test_batched_run_matches_single(clips):
    # The engine batches analyses of different streams (up to 4 by default): a batch must score
    # each turn as a run of its own does.
    some = clips[:8]
    rows = brisvox_probabilities(["--batch", str(env_path("BRISVOX_TURN_MODEL"))] + [str(p) for _, _, p in some])
    for (name, _, _), (single, batched) in zip(some, rows):
        assert abs(single - batched) <= 1e-5, name
