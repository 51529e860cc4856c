"""brisvox.pipecat's services in real Pipecat 1.14 pipelines: BrisvoxSTTService behind
VADProcessor(BrisvoxVADAnalyzer) on the sample recording, against Pipecat's own WhisperSTTService
(faster-whisper on the same tiny.en weights); BrisvoxTTSService speaking into a pipeline, its audio
against brisvox.say and understood by Whisper, and an interruption that stops it."""

import asyncio
import time
import wave

import numpy as np
import pytest
from loguru import logger
from pipecat.frames.frames import (EndFrame, ErrorFrame, InputAudioRawFrame, InterruptionFrame, TranscriptionFrame,
                                   TTSAudioRawFrame, TTSSpeakFrame, TTSStartedFrame, TTSStoppedFrame)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.runner import PipelineRunner
from pipecat.pipeline.task import PipelineParams, PipelineTask
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

import brisvox
from brisvox.pipecat import BrisvoxSTTService, BrisvoxTTSService, BrisvoxVADAnalyzer
from conftest import PIPER_VOICE, ROOT, WHISPER_TINY, wer, words

logger.remove()  # Pipecat logs every frame at debug level
logger.add(lambda m: print(m, end=""), level="WARNING")

FASTER_WHISPER_TINY = ROOT / "third_party/models/faster-whisper-tiny.en"  # CTranslate2 (scripts/setup.sh)
DETERMINISTIC = {"noise_scale": 0.0, "noise_w_scale": 0.0}
FRAME_MS = 20
REPLY = "Thanks for calling. Your table is booked for Monday at seven. See you then!"
LONG_REPLY = "".join(f"This is sentence number {n} of a long reply. " for n in range(1, 13))


class Collector(FrameProcessor):
    """Keeps the frames of the given types that reach the end of the pipeline, with their time."""

    def __init__(self, *types):
        super().__init__()
        self._types = types
        self.audio_frames = 0
        self.frames: list = []
        self.at: list[float] = []

    async def process_frame(self, frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame):
            self.audio_frames += 1  # counted, not kept
        elif isinstance(frame, self._types):
            self.frames.append(frame)
            self.at.append(time.monotonic())
        await self.push_frame(frame, direction)


def task_of(processors, in_rate=16000, out_rate=16000):
    return PipelineTask(Pipeline(processors),
                        params=PipelineParams(audio_in_sample_rate=in_rate, audio_out_sample_rate=out_rate),
                        enable_rtvi=False, enable_turn_tracking=False, cancel_on_idle_timeout=False)


async def transcribe_in_a_pipeline(stt, audio: np.ndarray, rate: int) -> list[str]:
    """The recording through VADProcessor(BrisvoxVADAnalyzer) -> stt, in 20 ms frames, each queued
    once the one before it has passed the whole pipeline (faster than real time, but in the order
    a transport's pace gives: the segments do not depend on timing), then EndFrame: the texts of
    the TranscriptionFrames, in order. No ErrorFrame may come."""
    collector = Collector(TranscriptionFrame, ErrorFrame)
    task = task_of([VADProcessor(vad_analyzer=BrisvoxVADAnalyzer()), stt, collector], in_rate=rate)
    step = rate * FRAME_MS // 1000

    async def feed():
        for n, i in enumerate(range(0, len(audio) - step + 1, step)):
            while collector.audio_frames < n:  # the n frames before it have passed
                await asyncio.sleep(0.001)
            await task.queue_frame(InputAudioRawFrame(audio=audio[i:i + step].tobytes(), sample_rate=rate,
                                                      num_channels=1))
        await task.queue_frame(EndFrame())

    await asyncio.gather(PipelineRunner(handle_sigint=False).run(task), feed())
    errors = [f.error for f in collector.frames if isinstance(f, ErrorFrame)]
    assert not errors, errors
    return [f.text for f in collector.frames if isinstance(f, TranscriptionFrame)]


@pytest.fixture(scope="module")
def stt_engine():
    return brisvox.Engine(vad_workers=1, stt_model=str(WHISPER_TINY), admission_control=False)  # as the service's own


def test_stt_service_transcribes_each_segment_like_whisper_stt_service(sample, stt_engine):
    from pipecat.services.whisper.stt import WhisperSTTService

    ours = asyncio.run(transcribe_in_a_pipeline(
        BrisvoxSTTService(model=str(WHISPER_TINY), engine=stt_engine), sample, 16000))
    theirs = asyncio.run(transcribe_in_a_pipeline(
        WhisperSTTService(settings=WhisperSTTService.Settings(model=str(FASTER_WHISPER_TINY), language="en"),
                          device="cpu", compute_type="float32"), sample, 16000))
    print(f"\n    brisvox:        {' | '.join(ours)}\n    faster-whisper: {' | '.join(theirs)}")
    assert len(ours) >= 3 and len(ours) == len(theirs), (ours, theirs)
    # The same weights on the same segments: greedy decoding in both, the engine's in float32.
    assert wer(" ".join(theirs), " ".join(ours)) <= 0.05, (ours, theirs)
    assert "dashwood" in " ".join(ours).lower()


def test_stt_service_at_8khz(sample, stt_engine):
    import soxr
    audio = soxr.resample(sample, 16000, 8000, quality="HQ").astype(np.int16)
    texts = asyncio.run(transcribe_in_a_pipeline(
        BrisvoxSTTService(model=str(WHISPER_TINY), engine=stt_engine), audio, 8000))
    reference = brisvox.transcribe(ROOT / "third_party/audio/sample.wav", stt_model=str(WHISPER_TINY))["text"]
    assert len(texts) >= 3 and wer(reference, " ".join(texts)) <= 0.2, (texts, reference)


def test_stt_service_reports_a_bad_model():
    with pytest.raises(brisvox.Error, match="no-whisper"):
        BrisvoxSTTService(model="/no-whisper")


@pytest.fixture(scope="module")
def voice_engine():
    return brisvox.Engine(vad_workers=1, voice=str(PIPER_VOICE), tts_workers=1, voice_options=DETERMINISTIC)


async def speak_in_a_pipeline(tts, text: str, out_rate: int, interrupt_after_s: "float | None" = None):
    """TTSSpeakFrame(text) into a pipeline of `tts`; returns the frames that reached its end, the
    16-bit audio they carried, and (with interrupt_after_s) the time the InterruptionFrame went."""
    collector = Collector(TTSAudioRawFrame, TTSStartedFrame, TTSStoppedFrame)
    task = task_of([tts, collector], out_rate=out_rate)
    interrupted = []

    async def drive():
        await task.queue_frame(TTSSpeakFrame(text))
        if interrupt_after_s is not None:
            while not any(isinstance(f, TTSAudioRawFrame) for f in collector.frames):
                await asyncio.sleep(0.01)
            await asyncio.sleep(interrupt_after_s)
            interrupted.append(time.monotonic())
            await task.queue_frame(InterruptionFrame())
            await asyncio.sleep(1.0)
        else:
            while not any(isinstance(f, TTSStoppedFrame) for f in collector.frames):
                await asyncio.sleep(0.01)
        await task.queue_frame(EndFrame())

    await asyncio.gather(PipelineRunner(handle_sigint=False).run(task), drive())
    audio = [f for f in collector.frames if isinstance(f, TTSAudioRawFrame)]
    pcm = np.frombuffer(b"".join(f.audio for f in audio), dtype="<i2")
    return collector, pcm, (interrupted[0] if interrupted else None)


def test_tts_service_speaks_what_say_speaks_and_whisper_understands_it(voice_engine, tmp_path):
    tts = BrisvoxTTSService(voice=str(PIPER_VOICE), voice_options=DETERMINISTIC, engine=voice_engine)
    collector, pcm, _ = asyncio.run(speak_in_a_pipeline(tts, REPLY, 16000))
    types = [type(f) for f in collector.frames]
    assert types[0] is TTSStartedFrame and TTSStoppedFrame in types, types[:3]
    assert all(f.sample_rate == 16000 and f.num_channels == 1 for f in collector.frames
               if isinstance(f, TTSAudioRawFrame))
    said, rate = brisvox.say(REPLY, voice=str(PIPER_VOICE), sample_rate=16000, voice_options=DETERMINISTIC)
    assert rate == 16000 and abs(len(pcm) - len(said)) / len(said) < 0.05, (len(pcm), len(said))
    path = tmp_path / "reply.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(pcm.tobytes())
    heard = brisvox.transcribe(path, stt_model=str(WHISPER_TINY))["text"]
    assert wer(REPLY, heard) <= 0.1, heard


def test_tts_service_at_a_rate_the_engine_does_not_make(voice_engine):
    # 22050 is the voice's own; 11025 is neither: the voice's rate, resampled by Pipecat.
    tts = BrisvoxTTSService(voice=str(PIPER_VOICE), voice_options=DETERMINISTIC, engine=voice_engine)
    collector, pcm, _ = asyncio.run(speak_in_a_pipeline(tts, "Hello there.", 11025))
    rates = {f.sample_rate for f in collector.frames if isinstance(f, TTSAudioRawFrame)}
    assert rates == {11025} and 0.4 < len(pcm) / 11025 < 3, (rates, len(pcm))


def test_an_interruption_stops_the_speech_within_a_sentence(voice_engine):
    tts = BrisvoxTTSService(voice=str(PIPER_VOICE), voice_options=DETERMINISTIC, engine=voice_engine)
    collector, pcm, at = asyncio.run(speak_in_a_pipeline(tts, LONG_REPLY, 16000, interrupt_after_s=0.0))
    after = [t for f, t in zip(collector.frames, collector.at) if isinstance(f, TTSAudioRawFrame) and t > at + 0.05]
    full, _ = brisvox.say(LONG_REPLY, voice=str(PIPER_VOICE), sample_rate=16000, voice_options=DETERMINISTIC)
    print(f"\n    {len(pcm) / 16000:.2f} s of a {len(full) / 16000:.2f} s reply came out; "
          f"{len(after)} audio frames after the interruption")
    assert len(pcm) < len(full) / 2, "the reply went on after the interruption"
    assert not after, f"{len(after)} audio frames more than 50 ms after the interruption"
