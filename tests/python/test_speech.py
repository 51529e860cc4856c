"""brisvox.Speech (Engine.open_speech) and brisvox.say with the Piper voice of scripts/setup.sh:
text in, the voice's audio out sentence by sentence; `say` against `brisvox say`'s output."""

import asyncio
import subprocess

import numpy as np
import pytest

import brisvox
from conftest import PIPER_VOICE

T = brisvox.EventType
DETERMINISTIC = {"noise_scale": 0.0, "noise_w_scale": 0.0}  # Piper's audio without its noise
LONG_REPLY = "".join(f"This is sentence number {n} of a long reply. " for n in range(1, 13))


@pytest.fixture(scope="module")
def engine():
    if not PIPER_VOICE.exists():
        pytest.fail(f"{PIPER_VOICE} is missing: run scripts/setup.sh")
    return brisvox.Engine(vad_workers=1, voice=str(PIPER_VOICE), tts_workers=1, voice_options=DETERMINISTIC)


def audio_of(events, utterance):
    pieces = [e.audio for e in events if e.type == T.TTS_AUDIO and e.utterance_id == utterance]
    return np.concatenate(pieces) if pieces else np.zeros(0, np.float32)


def test_utterances_and_a_mark_in_order_then_the_iteration_ends(engine):
    with engine.open_speech() as speech:
        assert speech.ended and speech.sample_rate == 22050  # nothing spoken yet; the voice's own rate
        first = speech.speak("Hello there.")
        second = speech.speak("Your table is booked for Monday at seven. See you then!")
        mark = speech.mark()
        assert (first, second, mark) == (1, 2, 3) and not speech.ended
        events = list(speech)
        assert speech.ended
    ends = [(e.type, e.utterance_id) for e in events if e.type != T.TTS_AUDIO]
    assert ends == [(T.TTS_END, 1), (T.TTS_END, 2), (T.TTS_MARK, 3)]
    # Each utterance's audio comes before its end, and all of the first before the second's.
    ids = [e.utterance_id for e in events if e.type == T.TTS_AUDIO]
    assert ids == sorted(ids) and set(ids) == {1, 2}
    for u in (first, second):
        audio = audio_of(events, u)
        end = next(e for e in events if e.type == T.TTS_END and e.utterance_id == u)
        assert audio.dtype == np.float32 and 0.3 < len(audio) / 22050 < 6 and np.abs(audio).max() <= 1.0
        assert abs(end.end_s - len(audio) / 22050) < 1e-3  # TTS_END's end_s: the utterance's length


def test_the_same_text_gives_the_same_audio_at_another_rate(engine):
    with engine.open_speech(sample_rate=16000, fast_start=False) as speech:
        speech.speak("The same words twice.")
        speech.speak("The same words twice.")
        events = list(speech)
        assert speech.sample_rate == 16000
    one, two = audio_of(events, 1), audio_of(events, 2)
    assert len(one) > 8000 and np.array_equal(one, two)  # deterministic voice settings


def test_cancel_stops_within_a_sentence_and_the_session_goes_on(engine):
    with engine.open_speech() as speech:
        long_id = speech.speak(LONG_REPLY)
        first = speech.next_event(timeout=30)
        assert first is not None and first.type == T.TTS_AUDIO and first.utterance_id == long_id
        assert speech.cancel() == long_id
        after = list(speech)
        cancelled = [e for e in after if e.type == T.TTS_CANCELLED]
        assert [e.utterance_id for e in cancelled] == [long_id]
        heard = len(first.audio) + sum(len(e.audio) for e in after if e.type == T.TTS_AUDIO)
        assert heard / 22050 < 8  # a sentence or two of a ~30 s reply, not the rest of it
        assert not [e for e in after if e.type == T.TTS_END]
        short = speech.speak("Still here.")
        assert [e.type for e in speech if e.type != T.TTS_AUDIO] == [T.TTS_END] and short == long_id + 1


def test_async_iteration(engine):
    async def speak():
        with engine.open_speech() as speech:
            speech.speak("Asynchronous speech.")
            return [e.type async for e in speech]
    types = asyncio.run(speak())
    assert types[-1] == T.TTS_END and T.TTS_AUDIO in types


def test_bad_text_options_and_closed_sessions(engine):
    with engine.open_speech() as speech:
        for text, words in [("", "empty"), ("   ", "empty"), ("a" * 30000, "bytes")]:
            with pytest.raises(brisvox.InvalidArgumentError, match=words):
                speech.speak(text)
        assert speech.ended  # nothing was queued
    with pytest.raises(brisvox.ClosedError, match="Speech.speak: the speech session is closed"):
        speech.speak("Too late.")
    with pytest.raises(TypeError, match="unknown option 'speech_sample_rate'"):
        engine.open_speech(speech_sample_rate=16000)
    with pytest.raises(TypeError, match="volume"):
        engine.open_speech(volume="loud")
    with pytest.raises(brisvox.InvalidArgumentError, match="sample rate of 12345 Hz"):
        engine.open_speech(sample_rate=12345)
    with pytest.raises(brisvox.InvalidArgumentError, match="length_scale"):
        engine.open_speech(voice_options={"length_scale": -1.0})


def test_an_engine_without_a_voice_has_no_speech():
    with pytest.raises(brisvox.Error, match="tts"):
        brisvox.Engine(vad_workers=1).open_speech()


def test_say_is_the_cli_audio(cli, tmp_path):
    text = "Thanks for calling. Your table is booked for Monday at seven."
    samples, rate = brisvox.say(text, voice=str(PIPER_VOICE), voice_options=DETERMINISTIC)
    out = tmp_path / "say.raw"
    subprocess.run([str(cli), "say", "-q", "--voice", str(PIPER_VOICE), "--noise-scale", "0", "--noise-w-scale", "0",
                    "--format", "raw", "-o", str(out), text], check=True)
    cli_pcm = np.fromfile(out, dtype="<i2")
    assert rate == 22050 and samples.dtype == np.float32 and len(samples) == len(cli_pcm)
    ours = np.clip(np.round(samples * 32767.0), -32768, 32767).astype(np.int32)
    assert np.abs(ours - cli_pcm.astype(np.int32)).max() <= 1  # the CLI's 16-bit rounding
    samples16, rate16 = brisvox.say(text, voice=str(PIPER_VOICE), sample_rate=16000, voice_options=DETERMINISTIC)
    assert rate16 == 16000 and abs(len(samples16) / 16000 - len(samples) / 22050) < 0.01


def test_say_refuses_bad_text():
    with pytest.raises(brisvox.InvalidArgumentError, match="empty"):
        brisvox.say("", voice=str(PIPER_VOICE))
