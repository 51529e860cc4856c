"""A real Pipecat pipeline fed audio frames: VADProcessor(analyzer) -> Recorder.

Used by tests/python/test_pipecat.py and bench/pipecat_calls.py. The Recorder counts the audio
that has passed it, so each VAD transition is placed at the stream position (seconds) of the
audio frame that caused it: positions depend on the audio and the analyzer, not on timing.
"""

import asyncio
import time

import numpy as np
from pipecat.frames.frames import (EndFrame, InputAudioRawFrame, VADUserStartedSpeakingFrame,
                                   VADUserStoppedSpeakingFrame)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.runner import PipelineRunner
from pipecat.pipeline.task import PipelineParams, PipelineTask
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

FRAME_MS = 20  # what a transport delivers per InputAudioRawFrame


class Recorder(FrameProcessor):
    def __init__(self, sample_rate: int):
        super().__init__()
        self._rate = sample_rate
        self.samples = 0
        self.transitions: list[tuple[str, float]] = []  # ("speaking" | "quiet", seconds)

    async def process_frame(self, frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame):
            self.samples += len(frame.audio) // 2
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self.transitions.append(("speaking", self.samples / self._rate))
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self.transitions.append(("quiet", self.samples / self._rate))
        await self.push_frame(frame, direction)


async def run_call(analyzer, audio: np.ndarray, sample_rate: int, realtime: bool = False,
                   max_backlog_s: float | None = None) -> Recorder:
    """Runs one call: `audio` (int16) through VADProcessor(analyzer) in FRAME_MS frames, then
    EndFrame. realtime: frames are paced at the audio's rate (as a transport delivers them).
    max_backlog_s: the feeder waits while more than this much queued audio has not reached the
    Recorder (None: it never waits, and on a machine that cannot keep up the frames pile up in the
    pipeline's queues, so the process's memory then measures how far behind it fell)."""
    recorder = Recorder(sample_rate)
    task = PipelineTask(Pipeline([VADProcessor(vad_analyzer=analyzer), recorder]),
                        params=PipelineParams(audio_in_sample_rate=sample_rate),
                        enable_rtvi=False, enable_turn_tracking=False, cancel_on_idle_timeout=False)
    runner = PipelineRunner(handle_sigint=False)
    step = sample_rate * FRAME_MS // 1000

    async def feed():
        start = time.monotonic()
        for n, i in enumerate(range(0, len(audio) - step + 1, step)):
            if realtime:
                delay = start + n * FRAME_MS / 1000 - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            if max_backlog_s is not None:
                while i - recorder.samples > max_backlog_s * sample_rate:
                    await asyncio.sleep(FRAME_MS / 1000)
            await task.queue_frame(InputAudioRawFrame(audio=audio[i:i + step].tobytes(),
                                                      sample_rate=sample_rate, num_channels=1))
        await task.queue_frame(EndFrame())

    await asyncio.gather(runner.run(task), feed())
    return recorder


def match_transitions(reference, other, tolerance_s: float):
    """How many of `reference`'s transitions `other` has, of the same kind, within tolerance_s
    (each matched at most once), and the largest distance among those matched."""
    used = [False] * len(other)
    matched, worst = 0, 0.0
    for kind, t in reference:
        best = None
        for j, (k2, t2) in enumerate(other):
            if not used[j] and k2 == kind and abs(t2 - t) <= tolerance_s and (best is None or abs(t2 - t) < abs(other[best][1] - t)):
                best = j
        if best is not None:
            used[best] = True
            matched += 1
            worst = max(worst, abs(other[best][1] - t))
    return matched, worst
