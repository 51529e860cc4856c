"""One window's speech probability from a stream of the engine, for the framework adapters whose
interface asks for it synchronously (brisvox.pipecat's voice_confidence, brisvox.livekit's model
call): push the window, wait for its VAD_PROBABILITY event.
"""

import numpy as np

from . import _brisvox


def window_probability(stream, samples: np.ndarray, timeout_s: float) -> float:
    """Pushes `samples` (one model window, int16 or float32) to `stream` and returns the engine's
    probability of it. Raises brisvox.InferenceTimeoutError when none comes within timeout_s,
    brisvox.InferenceError for the engine's ERROR event, and what Stream.push raises. SPEECH_START,
    SPEECH_END and OVERLOAD events of the stream's own segmenter are skipped."""
    stream.push(samples)
    while True:
        event = stream.next_event(timeout_s)
        if event is None:
            raise timed_out(timeout_s)
        probability = probability_of(event)
        if probability is not None:
            return probability


def probability_of(event):
    """The window's probability for a VAD_PROBABILITY event; None for the segmenter's events, which
    are skipped; brisvox.InferenceError for the engine's ERROR event. (brisvox._aio's awaited
    window_probability reads events the same way.)"""
    if event.type == _brisvox.EventType.VAD_PROBABILITY:
        return float(event.probability)
    if event.type == _brisvox.EventType.ERROR:
        raise _brisvox.InferenceError(f"{event.error_code}: {event.message}")
    return None


def timed_out(timeout_s: float) -> Exception:
    return _brisvox.InferenceTimeoutError(f"no probability from the engine within {timeout_s} s")
