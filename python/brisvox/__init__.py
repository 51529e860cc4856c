"""brisvox: voice activity and end-of-turn detection for many concurrent audio streams on one engine,
and calls that listen and speak at once (Engine.open_call: docs/PYTHON.md, "Calls").

    import brisvox, numpy as np
    engine = brisvox.shared_engine()                  # one per process: models loaded once
    with engine.open_stream(sample_rate=16000) as s:
        s.push(np.zeros(16000, np.float32))           # float32 in [-1, 1], or int16 PCM
        s.finish()
        for event in s:                               # blocks (GIL released) until END_OF_STREAM
            print(event)

    brisvox.vad("call.wav")                           # the document `brisvox vad --format json` prints
    brisvox.smart_turn_probability(samples)           # Smart Turn v3.2 on one turn (16 kHz)

Pipecat analyzers backed by the shared engine: brisvox.pipecat (docs/PYTHON.md).
"""

import json as _json
import os as _os
import threading as _threading
from pathlib import Path as _Path

# The bundled models ship in the wheel next to this file; the engine looks for them in
# $BRISVOX_MODELS_DIR (src/models/model_paths.cpp), which a user may also set to another folder.
_bundled_models = _Path(__file__).resolve().parent / "models"
if _bundled_models.is_dir():
    _os.environ.setdefault("BRISVOX_MODELS_DIR", str(_bundled_models))

from ._brisvox import (  # noqa: E402  (after BRISVOX_MODELS_DIR is set)
    BadAudioError,
    BadModelError,
    Call,
    ClosedError,
    Engine,
    Error,
    Event,
    EventType,
    InferenceError,
    InferenceTimeoutError,
    InternalError,
    InvalidArgumentError,
    IoError,
    LimitExceededError,
    ModelMismatchError,
    OverloadedError,
    ProviderUnavailableError,
    Stream,
    TurnReason,
    UnsupportedAudioError,
    __version__,
    smart_turn_probability,
)
from ._brisvox import _vad_file

__all__ = [
    "BadAudioError", "BadModelError", "Call", "ClosedError", "Engine", "Error", "Event", "EventType",
    "InferenceError", "InferenceTimeoutError", "InternalError", "InvalidArgumentError", "IoError",
    "LimitExceededError", "ModelMismatchError", "OverloadedError", "ProviderUnavailableError",
    "Stream", "TurnReason", "UnsupportedAudioError", "__version__", "shared_engine",
    "smart_turn_probability", "vad",
]

_engines: dict = {}
_engines_lock = _threading.Lock()


def shared_engine(vad_model: str = "v6", turn_model: "str | None" = None, vad_gather_wait_us: int = -1) -> Engine:
    """The process-wide Engine for these models and gather wait, created on first use (thread-safe).

    Every caller asking for the same settings gets the same engine, so that all the streams of a
    process share its workers and batches (the Pipecat analyzers and brisvox.livekit use it).
    vad_gather_wait_us: Engine's (-1: its default). For other settings, make an Engine of your own.
    """
    key = (vad_model, turn_model, vad_gather_wait_us)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = Engine(vad_model=vad_model, turn_model=turn_model,
                                            vad_gather_wait_us=vad_gather_wait_us)
        return engine


def vad(path: "str | _os.PathLike[str]", *, vad_model: str = "v6", turn_model: "str | None" = None, **params) -> dict:
    """Speech segments of an audio file (WAV, FLAC, Ogg, ... at any rate): the document that
    `brisvox vad --format json FILE` prints, parsed.

    {"file": path, "sample_rate": Hz, "duration": s, "segments": [{"start": s, "end": s}, ...]},
    plus "frame_probs" with emit_probabilities=True and "turns" with turn=True (which needs
    turn_model, e.g. "v3.2"). params: the segmenter and turn options of Engine.open_stream
    (threshold, min_speech_ms, ...; not sample_rate: the file's is used). Runs on
    shared_engine(vad_model, turn_model).
    """
    return _json.loads(_vad_file(shared_engine(vad_model, turn_model), _os.fspath(path), **params))
