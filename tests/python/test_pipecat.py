"""brisvox.pipecat in pipecat-ai 1.14: BrisvoxVADAnalyzer in a real pipeline fed audio frames,
against SileroVADAnalyzer on the same audio; BrisvoxSmartTurnAnalyzer against
LocalSmartTurnAnalyzerV3 through BaseSmartTurn's interface."""

import asyncio

import numpy as np
import pytest
import soxr
from loguru import logger

import brisvox
from brisvox.pipecat import BrisvoxSmartTurnAnalyzer, BrisvoxVADAnalyzer
from conftest import ASTERISK, read_wav
from pipecat_harness import match_transitions, run_call

logger.remove()  # Pipecat logs every frame at debug level
logger.add(lambda m: print(m, end=""), level="WARNING")


@pytest.mark.parametrize("rate", [16000, 8000])
def test_vad_analyzer_in_a_pipeline_agrees_with_silero(sample, rate):
    from pipecat.audio.vad.silero import SileroVADAnalyzer

    audio = sample if rate == 16000 else soxr.resample(sample, 16000, 8000, quality="HQ").astype(np.int16)
    ours = asyncio.run(run_call(BrisvoxVADAnalyzer(), audio, rate)).transitions
    theirs = asyncio.run(run_call(SileroVADAnalyzer(), audio, rate)).transitions
    assert len(theirs) >= 6, theirs  # a reading with pauses: several speaking/quiet turns
    assert [k for k, _ in ours[:2]] == ["speaking", "quiet"]
    # The same Silero weights (v6) through Pipecat's own state machine, with the model's state
    # cleared at the same windows: the same transitions at the same instants (measured: 10 of 10,
    # 0 ms apart, at both rates; 1031 of 1031 over 100 calls in bench/pipecat_calls.py).
    matched, worst = match_transitions(theirs, ours, 0.001)
    assert matched == len(theirs) == len(ours), (ours, theirs, worst)


@pytest.mark.parametrize("rate", [16000, 8000])
def test_vad_analyzer_clears_the_model_state_where_silero_does(sample, rate):
    from pipecat.audio.vad.silero import SileroVADAnalyzer

    audio = sample if rate == 16000 else soxr.resample(sample, 16000, 8000, quality="HQ").astype(np.int16)
    ours, theirs = BrisvoxVADAnalyzer(), SileroVADAnalyzer()
    ours.set_sample_rate(rate)
    theirs.set_sample_rate(rate)
    window = ours.num_frames_required()
    # Speech, then 4 s of silence, then the speech again: resets are due in the silence.
    clip = np.concatenate([audio[: 6 * rate], np.zeros(4 * rate, np.int16), audio[: 3 * rate]])
    our_resets, their_resets, worst = [], [], 0.0
    stream = ours._stream
    for i in range(len(clip) // window):
        buffer = clip[i * window:(i + 1) * window].tobytes()
        theirs_p = float(np.ravel(theirs.voice_confidence(buffer))[0])  # SileroVADAnalyzer: a 1-element array
        worst = max(worst, abs(ours.voice_confidence(buffer) - theirs_p))
        if ours._stream is not stream:
            our_resets.append(i)
            stream = ours._stream
        if theirs._windows_since_reset == 0:
            their_resets.append(i)
    assert len(their_resets) >= 2, their_resets
    assert our_resets == their_resets
    assert worst < 1e-4, worst


def test_vad_analyzer_awaits_the_engine_on_the_loop_as_its_executor_path_would_answer(sample):
    # analyze_audio awaits the engine on the event loop and runs Pipecat's _run_analyzer there;
    # Pipecat's own path (its executor, voice_confidence waiting) must give the same states for
    # the same buffers: of every size, so that buffers completing none, one or several windows
    # (the last take Pipecat's path) all occur. 20 ms frames never touch the executor.
    from pipecat.audio.vad.vad_analyzer import VADAnalyzer

    class ExecutorPath(BrisvoxVADAnalyzer):
        analyze_audio = VADAnalyzer.analyze_audio

    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 1600, 400)
    cuts = np.cumsum(sizes)
    buffers = [b.tobytes() for b in np.split(sample[: cuts[-1]], cuts[:-1])]

    async def states(analyzer):
        analyzer.set_sample_rate(16000)
        out = [await analyzer.analyze_audio(b) for b in buffers]
        await analyzer.cleanup()
        return out

    ours, theirs = asyncio.run(states(BrisvoxVADAnalyzer())), asyncio.run(states(ExecutorPath()))
    assert ours == theirs
    assert len(set(ours)) >= 3, set(ours)  # the clip goes through quiet, starting, speaking, ...

    async def frames_of_20_ms():
        analyzer = BrisvoxVADAnalyzer()
        analyzer.set_sample_rate(16000)
        for i in range(0, 16000 * 3, 320):
            await analyzer.analyze_audio(sample[i:i + 320].tobytes())
        used = len(analyzer._executor._threads)
        await analyzer.cleanup()
        return used

    assert asyncio.run(frames_of_20_ms()) == 0


def test_vad_analyzer_refuses_other_rates():
    with pytest.raises(ValueError, match="16000 or 8000"):
        BrisvoxVADAnalyzer().set_sample_rate(44100)


def test_vad_analyzers_share_one_engine():
    a, b = BrisvoxVADAnalyzer(), BrisvoxVADAnalyzer()
    assert a._engine is b._engine is brisvox.shared_engine()


async def end_of_turn(analyzer, turn: np.ndarray, rate: int):
    """One turn through BaseSmartTurn's interface as Pipecat's turn strategy drives it: the speech
    frames, then a pause, then analyze_end_of_turn."""
    analyzer.set_sample_rate(rate)
    step = rate // 50
    for i in range(0, len(turn), step):
        analyzer.append_audio(turn[i:i + step].tobytes(), is_speech=True)
    for _ in range(10):  # 200 ms of silence
        analyzer.append_audio(np.zeros(step, np.int16).tobytes(), is_speech=False)
    state, metrics = await analyzer.analyze_end_of_turn()
    await analyzer.cleanup()
    return state, metrics.probability


@pytest.mark.parametrize("name", ["activated", "if-correct-press", "conf-onlyperson", "vm-theperson"])
def test_smart_turn_analyzer_agrees_with_pipecats(name):
    import onnxruntime
    from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3

    assert onnxruntime.__version__ == "1.29.0", "put third_party/onnxruntime-python first on PYTHONPATH"
    x, rate = read_wav(ASTERISK / f"{name}.wav")
    turn = soxr.resample(x, rate, 16000, quality="HQ").astype(np.int16)
    ours = asyncio.run(end_of_turn(BrisvoxSmartTurnAnalyzer(), turn, 16000))
    theirs = asyncio.run(end_of_turn(LocalSmartTurnAnalyzerV3(), turn, 16000))
    assert ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1], abs=1e-4)
