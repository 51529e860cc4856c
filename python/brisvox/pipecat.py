"""Pipecat analyzers and services on brisvox's shared engine (pipecat-ai 1.14; `pip install
'brisvox[pipecat]'`).

    from brisvox.pipecat import (BrisvoxVADAnalyzer, BrisvoxSmartTurnAnalyzer, BrisvoxSTTService,
                                 BrisvoxTTSService)
    vad = BrisvoxVADAnalyzer()              # in place of SileroVADAnalyzer()
    turn = BrisvoxSmartTurnAnalyzer()       # in place of LocalSmartTurnAnalyzerV3()
    stt = BrisvoxSTTService(model="tiny.en")            # in place of WhisperSTTService
    tts = BrisvoxTTSService(voice="en_US-joe-medium")   # in place of PiperTTSService

The services put every pipeline of a process on one engine too: Whisper runs the segments of all
the calls on its workers, Piper speaks the replies of all the calls on its, a sentence of each in
turn, and each model is loaded once.

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
    from pipecat.frames.frames import ErrorFrame, TranscriptionFrame
    from pipecat.services.settings import STTSettings, TTSSettings
    from pipecat.services.stt_service import SegmentedSTTService
    from pipecat.services.tts_service import TTSService
    from pipecat.transcriptions.language import Language
    from pipecat.utils.time import time_now_iso8601
    from pipecat.utils.tracing.service_decorators import traced_stt, traced_tts
except ImportError as _missing:  # brisvox itself does not need Pipecat: say which extra does
    raise ImportError(
        f"brisvox.pipecat needs Pipecat (pipecat-ai 1.14 or later), which is not installed here "
        f"({_missing}): pip install 'brisvox[pipecat]'", name=_missing.name) from _missing

import brisvox
from brisvox import _aio, _speech_services
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
        # Every window's probability, nothing else is needed from the segmenter. The model runs at
        # the window's own rate, as SileroVADAnalyzer's does (voice_confidence answers for the window
        # just given): the engine's default, 8 kHz upsampled to the 16 kHz model, would hold each
        # window's probability back by the upsampler's 3 ms look-ahead.
        self._stream = self._engine.open_stream(sample_rate=self.sample_rate, model_rate=self.sample_rate,
                                                emit_probabilities=True)
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


# --- speech-to-text and text-to-speech services ---------------------------------------------------

def _language(code: str) -> "Language | str":
    try:
        return Language(code)
    except ValueError:
        return code


class BrisvoxSTTService(SegmentedSTTService):
    """Pipecat's segmented STT service on brisvox's Whisper, shared by every pipeline of the process.

    Each segment Pipecat's VAD closed goes to a stream of the engine (brisvox.shared_engine with
    this stt_model) that transcribes it: the segments of all the calls are batched onto the
    engine's Whisper workers instead of each pipeline running its own model. One
    TranscriptionFrame per segment that holds speech (Whisper's no-speech rule drops the others,
    as WhisperSTTService's no_speech_prob does), with this service's language.

    model: 'tiny.en' (from $BRISVOX_MODELS_DIR: the wheel bundles no Whisper model) or a converted
    Whisper folder (docs/MODELS.md); language: the segments' language for a multilingual model;
    window: 'full' (Whisper's 30 s) or 'fit' (cut to the segment: faster, docs/PERFORMANCE.md).
    """

    def __init__(self, *, model: str = "tiny.en", language: str = "en", window: str = "full",
                 engine: "brisvox.Engine | None" = None, **kwargs):
        """engine: the Engine to use (default: brisvox.shared_engine(stt_model=model,
        admission_control=False): a finished segment goes in faster than real time, which the
        latency budget of real-time streams would count as queue delay)."""
        settings = kwargs.pop("settings", None) or STTSettings(model=model, language=language)
        super().__init__(settings=settings, **kwargs)
        self._engine = engine if engine is not None else brisvox.shared_engine(stt_model=model,
                                                                                admission_control=False)
        self._options = {"language": language, "window": window}
        self._language = language

    @property
    def wants_wav_segments(self) -> bool:
        return False  # the engine takes the 16-bit samples themselves

    def can_generate_metrics(self) -> bool:
        return True

    @traced_stt
    async def _handle_transcription(self, transcript: str, is_final: bool, language: "Language | str | None" = None):
        """A transcript, for Pipecat's tracing (as WhisperSTTService reports its own)."""

    async def run_stt(self, audio: bytes):
        """Transcribes one segment (16-bit mono PCM at the pipeline's rate) on the engine."""
        samples = np.frombuffer(audio, dtype="<i2")
        await self.start_processing_metrics()
        try:
            transcripts = await _speech_services.transcribe_segment(self._engine, samples, self.sample_rate,
                                                                    **self._options)
        except brisvox.Error as e:
            await self.stop_processing_metrics()
            yield ErrorFrame(error=f"{self}: transcription failed: {e}")
            return
        texts = [t.text.strip() for t in transcripts]
        await self.stop_processing_metrics()
        text = " ".join(t for t in texts if t)
        if text:
            language = _language(self._language)
            await self._handle_transcription(text, True, language)
            yield TranscriptionFrame(text, self._user_id, time_now_iso8601(), language)


class BrisvoxTTSService(TTSService):
    """Pipecat's TTS service on brisvox's Piper voice, shared by every pipeline of the process.

    Each text Pipecat hands over is one utterance of a speech session on the engine
    (brisvox.shared_engine(voice=voice)): its audio streams out sentence by sentence, the sessions
    of all the calls interleave on the voice's workers, and an interruption (Pipecat cancels the
    synthesis) closes the session, so synthesis stops within the sentence being made. At a
    transport rate of 8, 16, 24 or 48 kHz the engine resamples (libsoxr); at another, Pipecat does.

    voice: an installed voice's name or a VOICE.onnx path (VOICE.onnx.json beside it);
    voice_options: the voice's settings ({"length_scale": 1.1, ...}).
    """

    def __init__(self, *, voice: str = "en_US-joe-medium", voice_options: "dict[str, float] | None" = None,
                 engine: "brisvox.Engine | None" = None, **kwargs):
        """engine: the Engine to use (default: brisvox.shared_engine(voice=voice))."""
        settings = kwargs.pop("settings", None) or TTSSettings(model=None, voice=voice, language=None)
        super().__init__(push_start_frame=True, push_stop_frames=True, settings=settings, **kwargs)
        self._engine = engine if engine is not None else brisvox.shared_engine(voice=voice)
        self._voice_options = voice_options

    def can_generate_metrics(self) -> bool:
        return True

    @traced_tts
    async def run_tts(self, text: str, context_id: str):
        """Speaks `text`: its audio frames as the engine makes them, sentence by sentence."""
        # A transport rate the engine does not make gets the voice's own, resampled by Pipecat.
        rate = self.sample_rate if self.sample_rate in _speech_services.SPEECH_RATES else 0
        await self.start_tts_usage_metrics(text)
        try:
            with self._engine.open_speech(sample_rate=rate, voice_options=self._voice_options) as speech:
                speech.speak(text)

                async def pcm():
                    async for samples in _speech_services.speech_audio(speech):
                        yield _speech_services.pcm16(samples)

                async for frame in self._stream_audio_frames_from_iterator(
                        pcm(), in_sample_rate=speech.sample_rate, context_id=context_id):
                    await self.stop_ttfb_metrics()
                    yield frame
        except brisvox.Error as e:
            yield ErrorFrame(error=f"{self}: speech failed: {e}")
        finally:
            await self.stop_ttfb_metrics()
