"""brisvox.livekit in livekit-agents 1.8.9: the VAD's streams fed rtc.AudioFrames as a LiveKit
agent's audio track delivers them, against livekit-plugins-silero's VAD on the same audio."""

import asyncio

import numpy as np
import pytest
import soxr
from livekit import rtc
from livekit.agents.vad import VADEventType
from livekit.plugins import silero

import brisvox
import brisvox.livekit

FRAME_MS = 10  # what a LiveKit audio track delivers per frame


async def run_track(vad, audio: np.ndarray, rate: int, flush_at_s: float | None = None) -> list:
    """The events of one stream of `vad` for `audio` (int16) pushed as FRAME_MS frames."""
    stream = vad.stream()
    events = []

    async def read():
        async for ev in stream:
            events.append(ev)

    reader = asyncio.create_task(read())
    step = rate * FRAME_MS // 1000
    flush_at = None if flush_at_s is None else int(flush_at_s * rate) // step * step
    for i in range(0, len(audio) - step + 1, step):
        if i == flush_at:
            stream.flush()
        stream.push_frame(rtc.AudioFrame(data=audio[i:i + step].tobytes(), sample_rate=rate, num_channels=1,
                                         samples_per_channel=step))
        if i % (50 * step) == 0:
            await asyncio.sleep(0)  # let the stream run, as a real track's pacing does
    stream.end_input()
    await reader
    await stream.aclose()
    return events


def transitions(events) -> list[tuple[str, int, float, float]]:
    return [(e.type.value, e.samples_index, round(e.speech_duration, 6), round(e.silence_duration, 6))
            for e in events if e.type != VADEventType.INFERENCE_DONE]


def compare(ours, theirs):
    """The same speech events at the same samples, the same smoothed probability per window."""
    assert transitions(ours) == transitions(theirs)
    p_ours = [e.probability for e in ours if e.type == VADEventType.INFERENCE_DONE]
    p_theirs = [e.probability for e in theirs if e.type == VADEventType.INFERENCE_DONE]
    assert len(p_ours) == len(p_theirs) > 0
    worst = float(np.max(np.abs(np.array(p_ours) - np.array(p_theirs))))
    assert worst < 1e-4, worst
    # The speech of each END_OF_SPEECH (with its prefix padding) is the same audio.
    ends = [(e, f) for e, f in zip(ours, theirs) if e.type == VADEventType.END_OF_SPEECH]
    for e, f in ends:
        assert e.frames[0].data.tobytes() == f.frames[0].data.tobytes()
    return worst


@pytest.mark.parametrize("rate", [16000, 8000])
def test_vad_agrees_with_livekit_silero(sample, rate):
    audio = sample if rate == 16000 else soxr.resample(sample, 16000, 8000, quality="HQ").astype(np.int16)
    ours = asyncio.run(run_track(brisvox.livekit.VAD.load(sample_rate=rate), audio, rate))
    theirs = asyncio.run(run_track(silero.VAD.load(sample_rate=rate), audio, rate))
    kinds = [t[0] for t in transitions(theirs)]
    assert kinds.count("start_of_speech") >= 3, kinds  # a reading with pauses
    compare(ours, theirs)


def test_48k_track_resampled_like_the_plugin(sample):
    # A WebRTC track at 48 kHz, the model at 16 kHz: both resample with LiveKit's own resampler.
    audio = soxr.resample(sample[: 12 * 16000], 16000, 48000, quality="HQ").astype(np.int16)
    # That resampler is not bit-exact from one instance to the next: two runs of the plugin itself
    # give windows 2 LSB apart and smoothed probabilities up to 0.004-0.008 apart (measured). So
    # here: the same events within one window (32 ms), probabilities within 0.02.
    ours = asyncio.run(run_track(brisvox.livekit.VAD.load(), audio, 48000))
    theirs = asyncio.run(run_track(silero.VAD.load(), audio, 48000))
    a, b = transitions(ours), transitions(theirs)
    assert [t[0] for t in a] == [t[0] for t in b] and len(b) >= 2, (a, b)
    assert all(abs(x[1] - y[1]) <= 512 for x, y in zip(a, b)), (a, b)
    p_ours = [e.probability for e in ours if e.type == VADEventType.INFERENCE_DONE]
    p_theirs = [e.probability for e in theirs if e.type == VADEventType.INFERENCE_DONE]
    assert len(p_ours) == len(p_theirs)
    assert float(np.max(np.abs(np.array(p_ours) - np.array(p_theirs)))) < 0.02
    assert ours[0].frames[0].sample_rate == 48000


def test_flush_starts_a_fresh_segment_like_the_plugin(sample):
    # flush() in the middle of speech: the model's state and the speech buffer start again.
    audio = sample[: 10 * 16000]
    ours = asyncio.run(run_track(brisvox.livekit.VAD.load(), audio, 16000, flush_at_s=3.3))
    theirs = asyncio.run(run_track(silero.VAD.load(), audio, 16000, flush_at_s=3.3))
    compare(ours, theirs)


def test_options_are_the_plugins():
    vad = brisvox.livekit.VAD.load(min_silence_duration=0.3, activation_threshold=0.6)
    assert vad.min_silence_duration == 0.3
    assert vad._opts.deactivation_threshold == pytest.approx(0.45)
    vad.update_options(min_silence_duration=0.7)
    assert vad.min_silence_duration == 0.7
    assert vad.provider == "brisvox" and vad.model == "silero"
    with pytest.raises(ValueError, match="8000 or 16000"):
        brisvox.livekit.VAD.load(sample_rate=44100)
    with pytest.raises(ValueError, match="greater than 0"):
        brisvox.livekit.VAD.load(deactivation_threshold=-1)


def test_every_vad_and_stream_shares_one_engine(sample):
    a, b = brisvox.livekit.VAD.load(), brisvox.livekit.VAD.load(min_silence_duration=0.3)
    assert a.engine is b.engine is brisvox.shared_engine("v6", vad_gather_wait_us=0)
    assert a.engine is not brisvox.shared_engine()  # the Pipecat analyzers' (a 2 ms gather wait)

    async def two_tracks():
        return await asyncio.gather(run_track(a, sample[: 5 * 16000], 16000), run_track(b, sample[: 5 * 16000], 16000))

    ours_a, ours_b = asyncio.run(two_tracks())
    theirs = asyncio.run(run_track(silero.VAD.load(), sample[: 5 * 16000], 16000))
    compare(ours_a, theirs)
    assert len(transitions(ours_b)) >= 1
