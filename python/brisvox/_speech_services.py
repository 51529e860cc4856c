"""What the framework adapters' speech-to-text and text-to-speech services share
(brisvox.pipecat's BrisvoxSTTService and BrisvoxTTSService, brisvox.livekit's STT and TTS): one
finished segment transcribed on a stream of the engine, a speech session's audio read as it comes,
and the 16-bit PCM the frameworks carry.
"""

import asyncio

import numpy as np

import brisvox

# While a stream's buffer is full, how long the pushing task sleeps before it pushes again (the
# engine's VAD worker takes 128 ms of audio in well under a millisecond).
PUSH_RETRY_S = 0.002

# The rates the engine resamples a voice's speech to itself (libsoxr), besides the voice's own.
SPEECH_RATES = (8000, 16000, 24000, 48000)

# A finished segment is one utterance already: a pause inside it shorter than this does not make
# the engine's VAD cut it in two (each piece would be transcribed without the other's context).
_SEGMENT_MIN_SILENCE_MS = 2000


def error_of(event) -> "brisvox.Error":
    """The exception for an ERROR event: the class of its error code (InferenceError, ...)."""
    return brisvox._error_classes().get(event.error_code, brisvox.Error)(event.message)


def pcm16(samples: np.ndarray) -> bytes:
    """float32 in [-1, 1] as 16-bit little-endian PCM (rounded as `brisvox say` writes it)."""
    return np.clip(np.round(samples * 32767.0), -32768, 32767).astype("<i2").tobytes()


async def transcribe_segment(engine, samples: np.ndarray, sample_rate: int, **options) -> list:
    """The TRANSCRIPT events (those that hold speech: Whisper's no-speech rule drops the others)
    of one finished segment, 1-D int16 or float32 samples at sample_rate, on a stream of `engine`
    (which needs an stt_model). options: Engine.open_stream's (language, window, ...).

    The samples are pushed as fast as the engine takes them, the event loop free meanwhile; the
    engine batches the segments of every caller onto its Whisper workers. Raises what open_stream
    and push raise (InvalidArgumentError for a bad option, ...) and, for the stream's ERROR event,
    the exception of its code.
    """
    found = []
    with engine.open_stream(sample_rate=sample_rate, transcripts=True,
                            min_silence_ms=_SEGMENT_MIN_SILENCE_MS, **options) as stream:
        taken = 0
        while taken < len(samples):
            room = stream.writable()
            if room > 0:
                taken += stream.push(samples[taken:taken + room])
            else:
                await asyncio.sleep(PUSH_RETRY_S)
        stream.finish()
        async for event in stream:
            if event.type == brisvox.EventType.TRANSCRIPT and event.text and not event.no_speech:
                found.append(event)
            elif event.type == brisvox.EventType.ERROR:
                raise error_of(event)
    return found


async def speech_audio(speech):
    """The audio of a speech session (float32 arrays at speech.sample_rate) as the engine makes
    it, until everything spoken so far has ended. An utterance's ERROR raises its exception."""
    async for event in speech:
        if event.type == brisvox.EventType.TTS_AUDIO:
            yield event.audio
        elif event.type == brisvox.EventType.ERROR:
            raise error_of(event)
