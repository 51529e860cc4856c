"""brisvox: voice activity and end-of-turn detection for many concurrent audio streams on one engine,
and calls that listen and speak at once (Engine.open_call: docs/PYTHON.md, "Calls").

    import brisvox, numpy as np
    engine = brisvox.shared_engine()                  # one per process: models loaded once
    with engine.open_stream(sample_rate=16000) as s:
        for event in s.feed(pcm):                     # a whole buffer: float32 in [-1, 1], or int16
            print(event)                              # ... up to END_OF_STREAM

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
    Speech,
    Stream,
    TurnReason,
    UnsupportedAudioError,
    __version__,
    smart_turn_probability,
)
from ._brisvox import _transcribe_file, _vad_file

__all__ = [
    "BadAudioError", "BadModelError", "Call", "ClosedError", "Engine", "Error", "Event", "EventType",
    "InferenceError", "InferenceTimeoutError", "InternalError", "InvalidArgumentError", "IoError",
    "LimitExceededError", "ModelMismatchError", "OverloadedError", "ProviderUnavailableError",
    "Speech", "Stream", "TurnReason", "UnsupportedAudioError", "__version__", "say", "shared_engine",
    "smart_turn_probability", "transcribe", "vad",
]


def _feed(self: Stream, samples, chunk: int = 4096):
    """Pushes the whole of `samples` (1-D int16 or float32 at the stream's sample_rate: a file's
    worth is fine) as fast as the engine takes it, yields the events that come meanwhile, then
    finishes the stream and yields the rest up to and including END_OF_STREAM.

        for event in stream.feed(pcm):
            print(event)

    push() alone takes what fits in the stream's buffer and returns how many samples it took; a
    whole file pushed at once mostly does not fit. Reading events while pushing matters too: the
    event queue is bounded, and events nobody reads while a long buffer goes in are lost. The
    exceptions are push()'s (TypeError, ValueError, BadAudioError, ClosedError).
    """
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, got {chunk}")
    total = len(samples)
    taken = 0
    while taken < total:
        room = self.writable()
        if room > 0:
            taken += self.push(samples[taken:taken + min(room, chunk)])
            yield from self.poll()
        else:
            # The buffer is full until the engine's worker takes the next frames: wait for an event
            # or a few milliseconds, whichever comes first (the GIL is released meanwhile).
            event = self.next_event(timeout=0.005)
            if event is not None:
                yield event
    self.finish()
    yield from self


Stream.feed = _feed

_engines: dict = {}
_engines_lock = _threading.Lock()


def shared_engine(vad_model: str = "v6", turn_model: "str | None" = None, vad_gather_wait_us: int = -1,
                  stt_model: "str | None" = None, voice: "str | None" = None,
                  admission_control: bool = True, stt_max_width: int = 1, stt_prompt_tokens: int = 0) -> Engine:
    """The process-wide Engine for these models and gather wait, created on first use (thread-safe).

    Every caller asking for the same settings gets the same engine, so that all the streams of a
    process share its workers and batches (the Pipecat analyzers and brisvox.livekit use it).
    vad_gather_wait_us: Engine's (-1: its default); stt_model and voice: Engine's (None: none);
    admission_control: Engine's (False for audio that is not real time: whole files, finished
    segments, which go in faster than real time and would count as queue delay); stt_max_width,
    stt_prompt_tokens: Engine's (room for beam search and prompts).
    For other settings, make an Engine of your own.
    """
    key = (vad_model, turn_model, vad_gather_wait_us, stt_model, voice, admission_control, stt_max_width,
           stt_prompt_tokens)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = Engine(vad_model=vad_model, turn_model=turn_model,
                                            vad_gather_wait_us=vad_gather_wait_us, stt_model=stt_model,
                                            voice=voice, admission_control=admission_control,
                                            stt_max_width=stt_max_width, stt_prompt_tokens=stt_prompt_tokens)
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


def transcribe(path: "str | _os.PathLike[str]", *, stt_model: str = "base-int8", vad_model: str = "v6",
               **params) -> dict:
    """The transcript of an audio file (WAV, FLAC, Ogg, ... at any rate): the document that
    `brisvox transcribe --format json FILE` prints, parsed.

    {"file": path, "duration": s, "language": "en", "language_probability": p, "text": "...",
     "segments": [{"start": s, "end": s, "text": "..."}, ...]}
    The segments are the VAD's (at most 30 s each), each transcribed by Whisper on its own. params:
    language (a multilingual model detects it without one), language_detection ('first': the first
    segment's for the file, or 'each'), window ('full' or 'fit'), decoding options (decoding
    'greedy' or 'faster-whisper', beam_size, best_of, temperatures, prompt, hotwords, word_timestamps: each
    segment's "words") and the segmenter options of
    Engine.open_stream (threshold, min_speech_ms, ...). stt_model: 'tiny.en', 'base' or a converted Whisper
    folder (docs/MODELS.md). Runs on shared_engine(vad_model, stt_model=stt_model,
    admission_control=False), as `brisvox transcribe` runs its engine.
    """
    width = max(5 if params.get("decoding") == "faster-whisper" else 1, int(params.get("beam_size", 1)),
                int(params.get("best_of", 1)))
    prompt_tokens = 446 if params.get("prompt") or params.get("hotwords") else 0
    engine = shared_engine(vad_model, stt_model=stt_model, admission_control=False, stt_max_width=width,
                           stt_prompt_tokens=prompt_tokens)
    return _json.loads(_transcribe_file(engine, _os.fspath(path), **params))


def _error_classes() -> dict:
    classes, todo = {}, [Error]
    while todo:
        cls = todo.pop()
        classes.setdefault(cls.code, cls)
        todo += cls.__subclasses__()
    return classes


def say(text: str, *, voice: str = "en_US-joe-medium", sample_rate: int = 0, fast_start: bool = False,
        **options) -> "tuple":
    """Speaks `text` with a Piper voice: (samples, sample_rate), the samples float32 in [-1, 1] (a
    1-D numpy array), the audio `brisvox say` writes before its 16-bit rounding.

    voice: an installed voice's name or a VOICE.onnx path (VOICE.onnx.json beside it); sample_rate:
    0 (the voice's own), 8000, 16000, 24000 or 48000; options: Engine.open_speech's (voice_options,
    volume, max_queued). fast_start is off as in `brisvox say` (every chunk a whole sentence).
    Runs on shared_engine(voice=voice). InvalidArgumentError for empty, over-long or malformed
    text; an utterance that fails raises its ERROR's class (InferenceError, ...).
    """
    import numpy as np
    engine = shared_engine(voice=voice)
    pieces = []
    with engine.open_speech(sample_rate=sample_rate, fast_start=fast_start, **options) as speech:
        speech.speak(text)
        for event in speech:
            if event.type == EventType.TTS_AUDIO:
                pieces.append(event.audio)
            elif event.type == EventType.ERROR:
                raise _error_classes().get(event.error_code, Error)(f"say: {event.message}")
        rate = speech.sample_rate
    samples = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
    return samples, rate
