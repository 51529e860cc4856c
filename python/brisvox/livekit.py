"""A LiveKit Agents VAD on brisvox's shared engine (livekit-agents 1.8; `pip install
'brisvox[livekit]'`, which brings livekit-agents and livekit-plugins-silero 1.8).

    from brisvox.livekit import VAD
    vad = VAD.load()            # in place of livekit.plugins.silero.VAD.load(), same options
    session = AgentSession(vad=vad, ...)

The same Silero model as livekit-plugins-silero (v6: the plugin bundles that very file), the
same options and the same state machine: brisvox.livekit.VAD is the plugin's VAD whose model
calls go to brisvox. Every stream of every VAD of the process is a stream of one engine
(brisvox.shared_engine(vad_gather_wait_us=0)): the windows of all the calls are batched onto the
engine's workers, where the plugin runs one ONNX Runtime call per 32 ms window per call. livekit-plugins-silero's
VADStream (its speech buffer, prefix padding, exponential smoothing, thresholds and events) is
used as it is, pinned at 1.8.9; only its model object is brisvox's (_EngineModel).
"""

from __future__ import annotations

import weakref
from typing import Literal

import numpy as np

try:
    from livekit import agents
    from livekit.plugins.silero import vad as _silero_vad
except ImportError as _missing:  # brisvox itself does not need LiveKit: say which extra does
    raise ImportError(
        f"brisvox.livekit needs LiveKit Agents and its Silero plugin (livekit-agents and "
        f"livekit-plugins-silero 1.8), which are not installed here ({_missing}): "
        f"pip install 'brisvox[livekit]'", name=_missing.name) from _missing

import brisvox
from brisvox._window import window_probability

# How long one window waits for the engine's probability before the call gives up on it (the
# plugin's model call then raises, and the stream ends with that error). The engine answers in a
# few ms; this only bounds a stuck engine.
_PROBABILITY_TIMEOUT_S = 2.0

# The plugin's stream asks for one window at a time from the event loop's default executor, whose
# few threads bound the windows in flight to a handful whatever the number of tracks: an engine
# that waits for a fuller batch (its 2 ms default) only delays each of them. Measured with
# bench/livekit_tracks.py, 100 tracks in real time: wall 24.2 s for 20 s of audio at 500 us,
# 31.3 s at the default, 20.3 s (real time kept) at 0.
_GATHER_WAIT_US = 0


class _EngineModel:
    """livekit-plugins-silero's OnnxModel interface (window, context, reset, one probability per
    call) on a stream of a brisvox engine.

    Like the plugin's model: 512-sample windows at 16 kHz (256 at 8 kHz) with the 64 (32) samples
    before each as context, zeros before the first, and reset() clearing the recurrent state and
    context: the engine's stream does the same, and reset() continues on a fresh one. Called from
    the plugin's executor thread, one window at a time per stream; the GIL is released while it
    waits.
    """

    def __init__(self, engine: brisvox.Engine, sample_rate: int):
        if sample_rate not in (8000, 16000):
            raise ValueError(f"brisvox.livekit: sample_rate must be 8000 or 16000 Hz, got {sample_rate}")
        self._engine = engine
        self._sample_rate = sample_rate
        self._window = 512 if sample_rate == 16000 else 256
        self._stream: brisvox.Stream | None = None
        self._open()

    def _open(self) -> None:
        if self._stream is not None:
            self._stream.close()
        # LiveKit's Silero plugin runs the model at the track's rate, one probability per window as
        # it arrives: so does this one (model_rate), where the engine's default would upsample 8 kHz
        # to the 16 kHz model, whose 3 ms look-ahead holds each window's probability back.
        self._stream = self._engine.open_stream(sample_rate=self._sample_rate, model_rate=self._sample_rate,
                                                emit_probabilities=True)

    @property
    def sample_rate(self) -> int:
        return self._sample_rate

    @property
    def window_size_samples(self) -> int:
        return self._window

    @property
    def context_size(self) -> int:
        return 64 if self._sample_rate == 16000 else 32

    def reset(self) -> None:
        self._open()

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __call__(self, x: np.ndarray) -> float:
        stream = self._stream
        if stream is None:
            raise brisvox.ClosedError("brisvox.livekit: the stream is closed")
        if x.shape != (self._window,):
            raise ValueError(f"brisvox.livekit: a window is {self._window} samples, got shape {x.shape}")
        return window_probability(stream, np.ascontiguousarray(x, dtype=np.float32), _PROBABILITY_TIMEOUT_S)


class VADStream(_silero_vad.VADStream):
    """livekit-plugins-silero's VADStream on an _EngineModel; closes the engine's stream when it
    ends (end_input and the last frame, or aclose)."""

    async def _main_task(self) -> None:
        try:
            await super()._main_task()
        finally:
            self._model.close()


class VAD(_silero_vad.VAD):
    """LiveKit Agents' VAD on brisvox: livekit-plugins-silero's behaviour, the engine's model calls."""

    @classmethod
    def load(
        cls,
        *,
        min_speech_duration: float = 0.05,
        min_silence_duration: float = 0.55,
        prefix_padding_duration: float = 0.5,
        max_buffered_speech: float = 60.0,
        activation_threshold: float = 0.5,
        sample_rate: Literal[8000, 16000] = 16000,
        deactivation_threshold: float | None = None,
        engine: brisvox.Engine | None = None,
        vad_model: str = "v6",
    ) -> "VAD":
        """The options and defaults of livekit.plugins.silero.VAD.load (see its documentation);
        engine: the Engine to use (default: brisvox.shared_engine(vad_model, vad_gather_wait_us=0),
        see _GATHER_WAIT_US); vad_model: "v6"
        (the plugin's model) or "v5". Raises ValueError for a rate other than 8000 or 16000 Hz
        or a deactivation_threshold <= 0."""
        if sample_rate not in (8000, 16000):
            raise ValueError(f"brisvox.livekit: sample_rate must be 8000 or 16000 Hz, got {sample_rate}")
        if deactivation_threshold is not None and deactivation_threshold <= 0:
            raise ValueError("brisvox.livekit: deactivation_threshold must be greater than 0")
        opts = _silero_vad._VADOptions(
            min_speech_duration=min_speech_duration,
            min_silence_duration=min_silence_duration,
            prefix_padding_duration=prefix_padding_duration,
            max_buffered_speech=max_buffered_speech,
            activation_threshold=activation_threshold,
            deactivation_threshold=deactivation_threshold or max(activation_threshold - 0.15, 0.01),
            sample_rate=sample_rate,
        )
        if engine is None:
            engine = brisvox.shared_engine(vad_model, vad_gather_wait_us=_GATHER_WAIT_US)
        return cls(engine=engine, opts=opts)

    def __init__(self, *, engine: brisvox.Engine, opts: "_silero_vad._VADOptions") -> None:
        # The plugin's VAD.__init__ keeps an ONNX Runtime session for its streams; this one keeps
        # the engine instead.
        agents.vad.VAD.__init__(self, capabilities=agents.vad.VADCapabilities(update_interval=0.032))
        self._engine = engine
        self._onnx_session = None
        self._opts = opts
        self._streams = weakref.WeakSet()

    @property
    def engine(self) -> brisvox.Engine:
        return self._engine

    @property
    def provider(self) -> str:
        return "brisvox"

    def stream(self) -> VADStream:
        """A new stream (one per participant's audio track), on a stream of the engine."""
        stream = VADStream(self, self._opts, _EngineModel(self._engine, self._opts.sample_rate))
        self._streams.add(stream)
        return stream
