"""LiveKit Agents plugins on brisvox's shared engine (livekit-agents 1.8; `pip install
'brisvox[livekit]'`, which brings livekit-agents and livekit-plugins-silero 1.8): a VAD, a
speech-to-text and a text-to-speech.

    from brisvox.livekit import STT, TTS, VAD
    vad = VAD.load()            # in place of livekit.plugins.silero.VAD.load(), same options
    session = AgentSession(vad=vad, stt=STT(), tts=TTS(), ...)

The same Silero model as livekit-plugins-silero (v6: the plugin bundles that very file), the
same options and the same state machine: brisvox.livekit.VAD is the plugin's VAD whose model
calls go to brisvox. Every stream of every VAD of the process is a stream of one engine
(brisvox.shared_engine(vad_gather_wait_us=0)): the windows of all the calls are batched onto the
engine's workers, where the plugin runs one ONNX Runtime call per 32 ms window per call. livekit-plugins-silero's
VADStream (its speech buffer, prefix padding, exponential smoothing, thresholds and events) is
used as it is, pinned at 1.8.9; only its model object is brisvox's (_EngineModel).

STT transcribes a finished utterance with the engine's Whisper (LiveKit's non-streaming
interface: AgentSession cuts the utterances with its VAD, through stt.StreamAdapter); TTS speaks
with the engine's Piper voice, sentence by sentence, whole texts (synthesize) or text pushed as
an LLM writes it (stream). Each shares one engine per model across the sessions of the process,
the engines brisvox.pipecat's services use (brisvox.shared_engine).
"""

from __future__ import annotations

import asyncio
import math
import weakref
from typing import Literal

import numpy as np

try:
    from livekit import agents, rtc
    from livekit.agents import tokenize
    from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, APIConnectOptions, NotGivenOr
    from livekit.plugins.silero import vad as _silero_vad
except ImportError as _missing:  # brisvox itself does not need LiveKit: say which extra does
    raise ImportError(
        f"brisvox.livekit needs LiveKit Agents and its Silero plugin (livekit-agents and "
        f"livekit-plugins-silero 1.8), which are not installed here ({_missing}): "
        f"pip install 'brisvox[livekit]'", name=_missing.name) from _missing

import brisvox
from brisvox import _speech_services
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


# --- speech-to-text and text-to-speech ------------------------------------------------------------


def _raise_for(e: brisvox.Error) -> None:
    """Raises what LiveKit gets for an engine error while a request runs: InvalidArgumentError as
    it is (the caller has something to change: a language, an over-long text), anything else as
    the APIError LiveKit's plugins raise, so that its retries, error events and FallbackAdapter
    treat it as a provider's failure; retryable only when the engine was at capacity
    (OverloadedError)."""
    if isinstance(e, brisvox.InvalidArgumentError):
        raise e
    raise agents.APIError(f"brisvox: {e}", retryable=isinstance(e, brisvox.OverloadedError)) from e


def _whisper_language(language: str) -> str:
    """Whisper's code (ISO 639-1: "en", "fr") of a LiveKit language ("en-US", "english", "fra")."""
    return agents.LanguageCode(language).language


class STT(agents.stt.STT):
    """LiveKit Agents' speech-to-text on brisvox's Whisper, shared by every session of the process.

    Non-streaming (STTCapabilities(streaming=False, interim_results=False)): recognize() takes a
    finished utterance and returns one FINAL_TRANSCRIPT. brisvox has no partial transcripts, so
    there is no stream(); AgentSession wraps this STT in stt.StreamAdapter with the session's VAD
    (brisvox.livekit.VAD or Silero), which hands it each utterance as speech ends. Each utterance
    is transcribed on a stream of the engine (brisvox.shared_engine(stt_model=model,
    admission_control=False), as brisvox.pipecat.BrisvoxSTTService): the utterances of all the
    sessions are batched onto its Whisper workers, one model in memory.
    """

    def __init__(self, *, model: str = "tiny.en", language: str = "en", window: str = "full",
                 engine: "brisvox.Engine | None" = None):
        """model: 'tiny.en' (found in $BRISVOX_MODELS_DIR: the wheel bundles no Whisper model) or a
        converted Whisper folder (docs/MODELS.md); language: the speech's language, any form
        LiveKit takes ("en", "en-US", "french"), which a multilingual model needs and an English
        model refuses unless English; window: 'full' (Whisper's 30 s) or 'fit' (cut to the
        utterance: faster); engine: the Engine to use, which needs an stt_model (default: the
        shared one above; with an engine, model is the engine's).

        Raises what the engine raises for the model (brisvox.IoError: not found, naming where it
        looked) and brisvox.InvalidArgumentError for a language the model does not have, a window
        other than 'full' or 'fit', or an engine without a Whisper model.
        """
        super().__init__(capabilities=agents.stt.STTCapabilities(streaming=False, interim_results=False))
        if window not in ("full", "fit"):
            raise brisvox.InvalidArgumentError(f"brisvox.livekit.STT: window must be 'full' or 'fit', got {window!r}")
        self._engine = engine if engine is not None else brisvox.shared_engine(stt_model=model,
                                                                                admission_control=False)
        if self._engine.stt_model_path is None:
            raise brisvox.InvalidArgumentError(
                "brisvox.livekit.STT: the engine given has no Whisper model (make it with stt_model=...)")
        self._model = model if engine is None else self._engine.stt_model_path
        self._window = window
        self._language = self._checked_language(language)

    def _checked_language(self, language: str) -> str:
        """Whisper's code for `language`, once the engine has accepted it with this model (a stream
        with these options, opened and closed: the model's languages are the engine's to know)."""
        code = _whisper_language(language)
        try:
            self._engine.open_stream(transcripts=True, language=code, window=self._window).close()
        except brisvox.InvalidArgumentError as e:
            raise brisvox.InvalidArgumentError(f"brisvox.livekit.STT: language {language!r}: {e}") from e
        return code

    @property
    def engine(self) -> brisvox.Engine:
        return self._engine

    @property
    def model(self) -> str:
        return self._model

    @property
    def provider(self) -> str:
        return "brisvox"

    async def _recognize_impl(self, buffer: "agents.utils.AudioBuffer", *, language: NotGivenOr[str] = NOT_GIVEN,
                              conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> agents.stt.SpeechEvent:
        """One utterance (frames of one rate and channel count; channels are averaged) -> one
        FINAL_TRANSCRIPT: the text of its speech (empty when Whisper hears none), start and end
        within the buffer, confidence the mean over its segments of exp(Whisper's average token
        log-probability). The engine resamples any rate; conn_options' timeout is not applied
        (the engine bounds each model run itself, Engine(run_timeout_ms=2000))."""
        code = self._language if not agents.utils.is_given(language) else self._checked_language(language)
        frames = buffer if isinstance(buffer, list) else [buffer]
        frames = [f for f in frames if f.samples_per_channel > 0]
        request_id = agents.utils.shortuuid()
        if not frames:
            return self._final(request_id, code, [])
        frame = rtc.combine_audio_frames(frames)
        samples = np.frombuffer(frame.data, dtype=np.int16)
        if frame.num_channels > 1:
            samples = samples.reshape(-1, frame.num_channels).mean(axis=1, dtype=np.float32) / 32768.0
        try:
            transcripts = await _speech_services.transcribe_segment(
                self._engine, samples, frame.sample_rate, language=code, window=self._window)
        except brisvox.Error as e:
            _raise_for(e)
        return self._final(request_id, code, transcripts)

    @staticmethod
    def _final(request_id: str, language: str, transcripts: list) -> agents.stt.SpeechEvent:
        texts = [t.text.strip() for t in transcripts]
        data = agents.stt.SpeechData(
            language=language, text=" ".join(t for t in texts if t),
            start_time=transcripts[0].start_s if transcripts else 0.0,
            end_time=transcripts[-1].end_s if transcripts else 0.0,
            confidence=(sum(math.exp(t.avg_logprob) for t in transcripts) / len(transcripts)
                        if transcripts else 0.0))
        return agents.stt.SpeechEvent(type=agents.stt.SpeechEventType.FINAL_TRANSCRIPT, request_id=request_id,
                                      alternatives=[data])


class TTS(agents.tts.TTS):
    """LiveKit Agents' text-to-speech on brisvox's Piper voice, shared by every session of the process.

    synthesize(text) -> ChunkedStream: the text is one utterance of a speech session on the engine
    (brisvox.shared_engine(voice=voice), as brisvox.pipecat.BrisvoxTTSService), its audio streamed
    out sentence by sentence as the engine makes it. stream() -> SynthesizeStream: text pushed as
    an LLM writes it, cut into sentences by LiveKit's sentence tokenizer, each spoken as soon as
    it is complete on one speech session. The sessions of all the calls take turns on the voice's
    workers a sentence at a time. Closing either (aclose, an interruption) closes the engine's
    session, which stops synthesis within the sentence being made.

    Mono 16-bit frames at the rate chosen here: the voice's own by default (22050 Hz for
    en_US-joe-medium), or 8000, 16000, 24000 or 48000 Hz, which the engine resamples to (libsoxr).
    """

    def __init__(self, *, voice: str = "en_US-joe-medium", sample_rate: "int | None" = None,
                 voice_options: "dict[str, float] | None" = None, fast_start: bool = True,
                 sentence_tokenizer: NotGivenOr[tokenize.SentenceTokenizer] = NOT_GIVEN,
                 engine: "brisvox.Engine | None" = None):
        """voice: an installed voice's name or a VOICE.onnx path (VOICE.onnx.json beside it);
        sample_rate: None (the voice's own), 8000, 16000, 24000 or 48000; voice_options: the voice's
        settings over the engine's ({"length_scale": 1.1, "noise_scale": 0.0, ...}); fast_start:
        each utterance's first clause synthesised alone, for sooner first audio (as
        Engine.open_speech); sentence_tokenizer: how stream() cuts pushed text (default: LiveKit's
        blingfire tokenizer, as its tts.StreamAdapter); engine: the Engine to use, which needs a
        voice (default: the shared one above; with an engine, voice is the engine's).

        Raises what the engine raises for the voice (brisvox.IoError: not found, naming the
        installed voices) and brisvox.InvalidArgumentError for another sample rate, bad
        voice_options, or an engine without a voice.
        """
        model = voice if engine is None else engine.voice_path
        engine = engine if engine is not None else brisvox.shared_engine(voice=voice)
        if engine.voice_path is None:
            raise brisvox.InvalidArgumentError(
                "brisvox.livekit.TTS: the engine given has no voice (make it with voice=...)")
        # A session opened and closed at once: the voice's own rate, and the options checked now
        # rather than at the first reply.
        try:
            with engine.open_speech(voice_options=voice_options, fast_start=fast_start) as speech:
                native = speech.sample_rate
        except brisvox.InvalidArgumentError as e:
            raise brisvox.InvalidArgumentError(f"brisvox.livekit.TTS: {e}") from e
        if sample_rate is None or sample_rate == native:
            rate, self._engine_rate = native, 0
        elif sample_rate in _speech_services.SPEECH_RATES:
            rate = self._engine_rate = sample_rate
        else:
            raise brisvox.InvalidArgumentError(
                f"brisvox.livekit.TTS: sample_rate must be None (the voice's own, {native} Hz) or one the "
                f"engine resamples to ({', '.join(map(str, _speech_services.SPEECH_RATES))}), got {sample_rate!r}; "
                f"LiveKit's audio output resamples to the room's rate itself")
        super().__init__(capabilities=agents.tts.TTSCapabilities(streaming=True), sample_rate=rate, num_channels=1)
        self._engine = engine
        self._voice = model
        self._voice_options = voice_options
        self._fast_start = fast_start
        self._sentence_tokenizer = (sentence_tokenizer if agents.utils.is_given(sentence_tokenizer)
                                    else tokenize.blingfire.SentenceTokenizer())

    @property
    def engine(self) -> brisvox.Engine:
        return self._engine

    @property
    def model(self) -> str:
        return self._voice

    @property
    def provider(self) -> str:
        return "brisvox"

    def _open_speech(self, **options) -> brisvox.Speech:
        return self._engine.open_speech(sample_rate=self._engine_rate, voice_options=self._voice_options,
                                        fast_start=self._fast_start, **options)

    def synthesize(self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> "ChunkedStream":
        return ChunkedStream(tts=self, input_text=text, conn_options=conn_options)

    def stream(self, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> "SynthesizeStream":
        return SynthesizeStream(tts=self, conn_options=conn_options)


class ChunkedStream(agents.tts.ChunkedStream):
    """One text, one utterance of a speech session of the engine, its audio as the engine makes it.
    speech: the session while it is open (None before and after)."""

    speech: "brisvox.Speech | None" = None

    async def _run(self, output_emitter: agents.tts.AudioEmitter) -> None:
        tts: TTS = self._tts
        output_emitter.initialize(request_id=agents.utils.shortuuid(), sample_rate=tts.sample_rate, num_channels=1,
                                  mime_type="audio/pcm")
        if not self._input_text.strip():
            return  # nothing to say (the engine refuses empty text)
        try:
            # Leaving this block (the end, an error, or aclose() cancelling the task) closes the session.
            with tts._open_speech() as speech:
                self.speech = speech
                speech.speak(self._input_text)
                async for samples in _speech_services.speech_audio(speech):
                    output_emitter.push(_speech_services.pcm16(samples))
        except brisvox.Error as e:
            _raise_for(e)
        finally:
            self.speech = None
        # No output_emitter.flush() here: the end of the input (LiveKit's _main_task) sends the
        # held-back tail as the final frame, where a flush first would add 10 ms of silence.


class SynthesizeStream(agents.tts.SynthesizeStream):
    """Text pushed as it is written: each sentence LiveKit's tokenizer completes is spoken at once,
    as the next utterance of one speech session, while the audio of those before it streams out.
    speech: the session while it is open (None before and after)."""

    speech: "brisvox.Speech | None" = None

    # The sentences of a long text pushed at once all wait as utterances of the one session (text
    # only; the engine synthesises them in turn as the reader takes the audio): the engine's
    # default limit of 16 would refuse the 17th.
    _MAX_QUEUED = 4096

    async def _run(self, output_emitter: agents.tts.AudioEmitter) -> None:
        tts: TTS = self._tts
        output_emitter.initialize(request_id=agents.utils.shortuuid(), sample_rate=tts.sample_rate, num_channels=1,
                                  mime_type="audio/pcm", stream=True)
        output_emitter.start_segment(segment_id=agents.utils.shortuuid())
        sentences = tts._sentence_tokenizer.stream()
        spoken = asyncio.Event()  # set when an utterance is queued, and once all are
        all_spoken = False

        async def forward_input() -> None:
            async for data in self._input_ch:
                if isinstance(data, self._FlushSentinel):
                    sentences.flush()
                else:
                    sentences.push_text(data)
            sentences.end_input()

        async def speak(speech: brisvox.Speech) -> None:
            nonlocal all_spoken
            async for sentence in sentences:
                if text := sentence.token.strip():
                    self._mark_started()
                    speech.speak(text)
                    spoken.set()
            all_spoken = True
            spoken.set()

        async def read(speech: brisvox.Speech) -> None:
            while True:
                # speech_audio ends whenever everything queued so far has been said, which is not
                # the end while more text may come: then wait for the next sentence.
                # (No await between its end and the clear below: a sentence queued meanwhile
                # would have kept it going.)
                async for samples in _speech_services.speech_audio(speech):
                    output_emitter.push(_speech_services.pcm16(samples))
                if all_spoken:
                    return
                # Nothing more to say until the next sentence: hand out the audio the emitter holds
                # back (a partial frame) now, rather than when its flush timer fires.
                output_emitter.flush()
                spoken.clear()
                await spoken.wait()

        try:
            with tts._open_speech(max_queued=self._MAX_QUEUED) as speech:
                self.speech = speech
                tasks = [asyncio.create_task(forward_input()), asyncio.create_task(speak(speech)),
                         asyncio.create_task(read(speech))]
                try:
                    await asyncio.gather(*tasks)
                finally:
                    await agents.utils.aio.cancel_and_wait(*tasks)
                    await sentences.aclose()
        except brisvox.Error as e:
            _raise_for(e)
        finally:
            self.speech = None
