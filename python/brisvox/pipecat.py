"""Pipecat analyzers on brisvox's shared engine (pipecat-ai 1.14; `pip install 'brisvox[pipecat]'`).

    from brisvox.pipecat import BrisvoxVADAnalyzer, BrisvoxSmartTurnAnalyzer
    vad = BrisvoxVADAnalyzer()              # in place of SileroVADAnalyzer()
    turn = BrisvoxSmartTurnAnalyzer()       # in place of LocalSmartTurnAnalyzerV3()

Every analyzer of a process is a stream of one engine (brisvox.shared_engine): the Silero model is
loaded once, and the frames of all the calls are batched onto the engine's workers instead of
each call running its own ONNX Runtime session. The analyzers keep Pipecat's interfaces and state
machines (VADAnalyzer, BaseSmartTurn): only the model calls go to brisvox.

BrisvoxVADAnalyzer.analyze_audio also skips the thread hop Pipecat's VADAnalyzer makes for every
audio frame (its per-analyzer executor): it awaits the engine's probability on the event loop
itself (brisvox._aio), and runs Pipecat's own _run_analyzer on it there.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

try:
    from loguru import logger
    from pipecat.audio.turn.smart_turn.base_smart_turn import BaseSmartTurn
    from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams, VADState
except ImportError as _missing:  # brisvox itself does not need Pipecat: say which extra does
    raise ImportError(
        f"brisvox.pipecat needs Pipecat (pipecat-ai 1.14 or later), which is not installed here "
        f"({_missing}): pip install 'brisvox[pipecat]'", name=_missing.name) from _missing

import brisvox
from brisvox import _aio
from brisvox._window import window_probability

# How long voice_confidence waits for the engine's verdict on one 32 ms window before it gives up
# on it (logs, and reports silence, as SileroVADAnalyzer does on an error). The engine answers in
# a few ms; this only bounds a stuck engine.
_CONFIDENCE_TIMEOUT_S = 2.0

# SileroVADAnalyzer (pipecat-ai 1.14, pipecat/audio/vad/silero.py) clears the model's recurrent
# state and audio context once at least 2 s of audio have been scored since the last clear, the
# VAD is quiet and the last 5 windows scored below 0.1: long non-speech drifts the state so that
# the model under-reports the speech after it. BrisvoxVADAnalyzer does the same at the same
# windows, so both analyzers see the same model state and make the same transitions.
_RESET_INTERVAL_S = 2.0
_RESET_MAX_CONFIDENCE = 0.1
_RESET_LOW_WINDOWS = 5


class BrisvoxVADAnalyzer(VADAnalyzer):
    """Pipecat's VADAnalyzer on brisvox's Silero VAD (v6 by default), shared by every call.

    Like SileroVADAnalyzer: 8000 or 16000 Hz, one confidence per 512-sample (16 kHz) or 256-sample
    (8 kHz) window, and the model's state cleared at the same windows as SileroVADAnalyzer clears
    it (about every 2 s of quiet): the analyzer then continues on a fresh stream of the engine,
    whose state and context start at zero like a cleared Silero model's.
    """

    def __init__(
        self,
        *,
        sample_rate: int | None = None,
        params: VADParams | None = None,
        engine: brisvox.Engine | None = None,
        vad_model: str = "v6",
    ):
        """engine: the Engine to use (default: brisvox.shared_engine(vad_model))."""
        super().__init__(sample_rate=sample_rate, params=params)
        self._engine = engine if engine is not None else brisvox.shared_engine(vad_model)
        self._stream: brisvox.Stream | None = None
        self._windows_since_reset = 0
        self._low_windows = 0
        # analyze_audio -> voice_confidence: the probability awaited for the window that
        # _run_analyzer is about to score (None: none, voice_confidence asks the engine itself),
        # and whether the engine gave one (False: it failed, the window counts as silence).
        self._awaited: float | None = None
        self._awaited_ok = True
        self._analyze_lock = asyncio.Lock()

    def set_sample_rate(self, sample_rate: int):
        """Opens the analyzer's stream at this rate (8000 or 16000 Hz)."""
        rate = self._init_sample_rate or sample_rate
        if rate not in (8000, 16000):
            raise ValueError(f"BrisvoxVADAnalyzer: sample rate must be 16000 or 8000 Hz, got {rate}")
        super().set_sample_rate(sample_rate)  # self.sample_rate: the rate above
        self._open_stream()

    def _open_stream(self):
        if self._stream is not None:
            self._stream.close()
        # Every window's probability, nothing else is needed from the segmenter.
        self._stream = self._engine.open_stream(sample_rate=self.sample_rate, emit_probabilities=True)
        self._windows_since_reset = 0
        self._low_windows = 0

    def num_frames_required(self) -> int:
        return 512 if self.sample_rate == 16000 else 256

    async def analyze_audio(self, buffer: bytes) -> VADState:
        """Pipecat's VADAnalyzer.analyze_audio, without its executor thread.

        A buffer that completes one window pushes that window to the engine and awaits its
        probability on the event loop; then Pipecat's _run_analyzer runs, unchanged, in the loop,
        its voice_confidence answering with that probability. A buffer that completes no window
        only accumulates (no model call). One that completes several (frames over 32 ms, rare)
        takes Pipecat's own path through its executor, window by window.
        """
        async with self._analyze_lock:  # calls in order, as Pipecat's one-thread executor keeps them
            n = self._vad_frames_num_bytes
            windows = (len(self._vad_buffer) + len(buffer)) // n
            if windows > 1 or self._stream is None:
                return await super().analyze_audio(buffer)
            if windows == 1:
                window = (self._vad_buffer + buffer)[:n]
                try:
                    self._awaited = await _aio.window_probability(
                        self._stream, np.frombuffer(window, dtype=np.int16), _CONFIDENCE_TIMEOUT_S)
                    self._awaited_ok = True
                except brisvox.Error as e:
                    logger.error(f"BrisvoxVADAnalyzer: {e}")
                    self._awaited, self._awaited_ok = 0.0, False
            return self._run_analyzer(buffer)

    def voice_confidence(self, buffer: bytes) -> float:
        """The engine's speech probability of one window (num_frames_required int16 samples)."""
        if self._awaited is not None:  # analyze_audio has it already
            confidence, ok = self._awaited, self._awaited_ok
            self._awaited = None
            if ok:
                self._maybe_reset(confidence)
            return confidence
        stream = self._stream
        if stream is None:
            raise RuntimeError("BrisvoxVADAnalyzer: set_sample_rate() was not called")
        try:
            confidence = window_probability(stream, np.frombuffer(buffer, dtype=np.int16), _CONFIDENCE_TIMEOUT_S)
        except brisvox.Error as e:
            logger.error(f"BrisvoxVADAnalyzer: {e}")
            return 0.0
        self._maybe_reset(confidence)
        return confidence

    def _maybe_reset(self, confidence: float):
        """After this window, a fresh stream if SileroVADAnalyzer would clear its model now.

        Nothing of the old stream is pending: its last window has just been answered. The VAD
        state read here is the one before this window, as in SileroVADAnalyzer.
        """
        self._windows_since_reset += 1
        self._low_windows = self._low_windows + 1 if confidence < _RESET_MAX_CONFIDENCE else 0
        due = self._windows_since_reset * self.num_frames_required() >= _RESET_INTERVAL_S * self.sample_rate
        if due and self._vad_state == VADState.QUIET and self._low_windows >= _RESET_LOW_WINDOWS:
            self._open_stream()

    async def cleanup(self):
        """Closes the stream and Pipecat's executor."""
        await super().cleanup()
        if self._stream is not None:
            self._stream.close()
            self._stream = None


class BrisvoxSmartTurnAnalyzer(BaseSmartTurn):
    """Pipecat's BaseSmartTurn with brisvox's Smart Turn v3.2 (LocalSmartTurnAnalyzerV3's model).

    Pipecat's state machine decides when to ask; the probability is brisvox.smart_turn_probability
    (its preprocessing and model, equal to Pipecat's within 1e-4 at 16 kHz), on one session per
    process that the calls take turns on. 8 kHz pipelines are resampled to 16 kHz, as Pipecat does.
    """

    def __init__(self, *, model: str = "v3.2", **kwargs):
        """model: 'v3.2' (bundled) or a Smart Turn v3.x .onnx path; kwargs: BaseSmartTurn's."""
        super().__init__(**kwargs)
        self._model = model

    def _predict_endpoint(self, audio_array: np.ndarray) -> dict[str, Any]:
        rate = self._sample_rate or 16000
        probability = brisvox.smart_turn_probability(
            np.ascontiguousarray(audio_array, dtype=np.float32), sample_rate=rate, model=self._model)
        return {"prediction": 1 if probability > 0.5 else 0, "probability": probability}
