"""brisvox.Call (Engine.open_call): the caller's audio in, the call's speech out, barge-in between
them, with the real models: the bundled Silero VAD, the Piper voice of scripts/setup.sh, the
sample recording as the caller (its second speech segment is at 8.83-11.49 s, silence at
7.0-8.8 s), and Whisper tiny.en for transcripts when setup converted it."""

import asyncio
import threading
import time

import numpy as np
import pytest

import brisvox
from conftest import PIPER_VOICE, WHISPER_TINY

T = brisvox.EventType
RATE = 16000
LONG_REPLY = "".join(f"This is sentence number {n} of a long reply. " for n in range(1, 13))


@pytest.fixture(scope="module")
def engine():
    if not PIPER_VOICE.exists():
        pytest.fail(f"{PIPER_VOICE} is missing: run scripts/setup.sh")
    # noise_scale 0 and noise_w_scale 0: the voice's audio is deterministic.
    return brisvox.Engine(vad_workers=1, voice=str(PIPER_VOICE), tts_workers=1,
                          voice_options={"noise_scale": 0, "noise_w_scale": 0.0})


def clip(sample, begin_s, end_s):
    """The recording's samples in [begin_s, end_s), float32."""
    return sample[int(begin_s * RATE):int(end_s * RATE)].astype(np.float32) / 32768.0


class Heard:
    """The events a test read, with the time.monotonic() each came out at."""

    def __init__(self):
        self.events, self.at = [], []

    def add(self, events):
        now = time.monotonic()
        for e in events:
            self.events.append(e)
            self.at.append(now)

    def of(self, type_, utterance=None):
        return [e for e in self.events if e.type == type_ and (utterance is None or e.utterance_id == utterance)]

    def index(self, type_, utterance=None):
        return next(i for i, e in enumerate(self.events)
                    if e.type == type_ and (utterance is None or e.utterance_id == utterance))


def listen(call, heard, done, timeout_s=30.0):
    """Reads events until done(heard) holds, or the timeout."""
    deadline = time.monotonic() + timeout_s
    while not done(heard) and time.monotonic() < deadline:
        e = call.next_event(timeout=0.05)
        if e is not None:
            heard.add([e])
    return done(heard)


def push_audio(call, heard, samples, pace=1.0):
    """Pushes `samples` 20 ms at a time at `pace` x real time, reading events meanwhile."""
    block = RATE // 50
    start = time.monotonic()
    pos = 0
    while pos < len(samples):
        n = min(block, len(samples) - pos, call.writable())
        if n > 0:
            pos += call.push(samples[pos:pos + n])
        heard.add(call.poll())
        wait = start + pos / RATE / pace - time.monotonic()
        time.sleep(max(wait, 0.005 if n == 0 else 0.0))


@pytest.mark.parametrize("rate, speech_rate, expected", [(16000, 0, 16000), (8000, 0, 8000), (16000, 24000, 24000)])
def test_a_call_speaks_a_reply_and_iteration_ends_once_all_is_said(engine, rate, speech_rate, expected):
    with engine.open_call(sample_rate=rate, speech_sample_rate=speech_rate, playout_lead_ms=0) as call:
        assert (call.sample_rate, call.speech_sample_rate) == (rate, expected)
        uid = call.speak("Hello. How can I help you today?")
        assert uid == 1 and not call.ended
        call.finish()  # no caller audio: the caller's side ends at once, the reply goes on
        events = list(call)  # until END_OF_STREAM and the reply's end
        assert call.ended and call.next_event(timeout=0) is None
    types = [e.type for e in events]
    assert types.count(T.END_OF_STREAM) == 1 and types.count(T.TTS_END) == 1
    pieces = [e for e in events if e.type == T.TTS_AUDIO]
    assert pieces and all(e.utterance_id == uid for e in pieces)
    assert types.index(T.TTS_END) > max(i for i, t in enumerate(types) if t == T.TTS_AUDIO)
    for e in pieces:
        a = e.audio
        assert a.dtype == np.float32 and a.ndim == 1
        assert abs(len(a) - (e.end_s - e.start_s) * expected) <= 1
        assert np.abs(a).max() <= 1.0
    total = sum(len(e.audio) for e in pieces) / expected
    end = events[types.index(T.TTS_END)]
    assert end.utterance_id == uid and abs(end.end_s - total) < 0.01 and total > 1.0
    assert "TTS_AUDIO" in repr(pieces[0]) and "utterance_id=1" in repr(end)
    assert end.audio is None and end.text is None and events[types.index(T.END_OF_STREAM)].utterance_id is None


def test_the_caller_talking_over_a_long_reply_interrupts_it(engine, sample):
    with engine.open_call(sample_rate=RATE, barge_in_min_speech_ms=300) as call:
        heard = Heard()
        uid = call.speak(LONG_REPLY)
        assert listen(call, heard, lambda h: h.of(T.TTS_AUDIO))
        # A little silence, then the second segment of the recording (2.6 s of speech), in real time.
        push_audio(call, heard, clip(sample, 7.2, 11.6))
        assert listen(call, heard, lambda h: h.of(T.TTS_INTERRUPTED, uid))
        barge = heard.of(T.BARGE_IN)
        assert len(barge) == 1 and barge[0].utterance_id == uid, "the reply was being heard"
        # Confirmed after 300 ms of voiced frames, before the segment ended.
        assert barge[0].start_s + 0.3 - 1e-6 <= barge[0].end_s < barge[0].start_s + 1.2
        after = heard.events[heard.index(T.BARGE_IN):]
        assert not [e for e in after if e.type == T.TTS_AUDIO and e.utterance_id <= uid], "audio after the barge-in"
        assert not heard.of(T.TTS_END, uid), "the reply was not finished"
        assert sum(len(e.audio) for e in heard.of(T.TTS_AUDIO, uid)) / call.speech_sample_rate < 20.0
        # The call goes on: the next reply is spoken whole.
        again = call.speak("Sorry, go ahead.")
        assert listen(call, heard, lambda h: h.of(T.TTS_END, again))


@pytest.mark.parametrize("min_speech_ms", [100, 400])
def test_a_backchannel_shorter_than_the_minimum_does_not_interrupt(engine, sample, min_speech_ms):
    # 0.35 s from the start of the third segment, then 0.8 s of the silence after the first: speech
    # with a 100 ms minimum, a backchannel with the default 400 ms.
    quiet = clip(sample, 7.0, 7.8)
    burst = np.concatenate([clip(sample, 12.2, 12.55), quiet])
    with engine.open_call(sample_rate=RATE, barge_in_min_speech_ms=min_speech_ms) as call:
        heard = Heard()
        call.speak(LONG_REPLY)
        assert listen(call, heard, lambda h: h.of(T.TTS_AUDIO))
        push_audio(call, heard, quiet, pace=4.0)
        push_audio(call, heard, burst)
        listen(call, heard, lambda h: False, timeout_s=1.0)
    if min_speech_ms == 100:
        assert heard.of(T.BARGE_IN), "the burst is speech"
    else:
        assert not heard.of(T.BARGE_IN) and not heard.of(T.TTS_INTERRUPTED), "a backchannel under the minimum"


def test_speech_is_paced_and_marks_come_when_playback_reaches_them(engine):
    lead_s = 0.3
    with engine.open_call(sample_rate=RATE, playout_lead_ms=int(lead_s * 1000)) as call:
        heard = Heard()
        reply = call.speak("Your table is booked for Monday at seven. See you then!")
        mark = call.mark()
        assert mark == reply + 1, "marks share the utterances' sequence"
        assert listen(call, heard, lambda h: h.of(T.TTS_MARK))
    pieces = [(at, e) for at, e in zip(heard.at, heard.events) if e.type == T.TTS_AUDIO]
    first_at = pieces[0][0]
    handed_s = 0.0
    for at, e in pieces:
        # Each piece came out no earlier than the lead before the audio before it would have played.
        assert handed_s - (at - first_at) <= lead_s + 0.05
        handed_s += len(e.audio) / RATE
    assert handed_s > 2.0
    i = heard.index(T.TTS_MARK)
    m, mark_at = heard.events[i], heard.at[i]
    assert m.utterance_id == mark and i > heard.index(T.TTS_END, reply)
    # end_s: when playback reaches the mark, in time.monotonic() seconds: after all the audio, and
    # the mark comes out then, not a wait's slice later.
    assert m.end_s >= first_at + handed_s - 0.05
    assert m.end_s - 0.005 <= mark_at <= m.end_s + 0.15


def test_cancel_ends_the_reply_and_the_call_goes_on(engine):
    with engine.open_call(sample_rate=RATE, playout_lead_ms=0) as call:
        heard = Heard()
        uid = call.speak(LONG_REPLY)
        assert listen(call, heard, lambda h: h.of(T.TTS_AUDIO))
        assert call.cancel() == uid
        assert listen(call, heard, lambda h: h.of(T.TTS_CANCELLED, uid))
        after = heard.events[heard.index(T.TTS_CANCELLED, uid):]
        assert not [e for e in after if e.type == T.TTS_AUDIO and e.utterance_id == uid]
        assert not heard.of(T.BARGE_IN) and not heard.of(T.TTS_END, uid)
        assert call.cancel() == uid, "nothing new to stop"
        nxt = call.speak("Fine.")
        assert listen(call, heard, lambda h: h.of(T.TTS_END, nxt))
        assert heard.of(T.TTS_AUDIO, nxt)


def test_async_iteration_of_a_call(engine, sample):
    # One event loop reads the call (no executor thread): the caller's events, the reply, and the
    # mark when playback reaches it, although no engine worker wakes the loop then.
    async def run():
        with engine.open_call(sample_rate=RATE, buffer_ms=1000, playout_lead_ms=200) as call:
            uid = call.speak("Hello there. Nice to meet you.")
            mark = call.mark()
            assert call.push(clip(sample, 7.0, 7.8)) == 12800
            call.finish()
            got = []
            async for e in call:
                got.append((time.monotonic(), e))
            return got, uid, mark, call.ended, asyncio.get_running_loop()._default_executor

    got, uid, mark, ended, executor = asyncio.run(run())
    assert ended and executor is None
    types = [e.type for _, e in got]
    assert T.END_OF_STREAM in types and T.TTS_AUDIO in types
    assert [e.utterance_id for _, e in got if e.type == T.TTS_END] == [uid]
    at, m = next((at, e) for at, e in got if e.type == T.TTS_MARK)
    assert m.utterance_id == mark
    assert m.end_s - 0.005 <= at <= m.end_s + 0.2  # the loop's own wait is 0.5 s


def test_bad_options_are_refused_with_their_name(engine):
    with pytest.raises(TypeError, match="Engine.open_call: unknown option 'bargein'.*playout_lead_ms"):
        engine.open_call(bargein=False)
    with pytest.raises(TypeError, match="barge_in must be a bool"):
        engine.open_call(barge_in=1)
    with pytest.raises(TypeError, match="voice_options must be a dict"):
        engine.open_call(voice_options=[("noise_scale", 0.5)])
    with pytest.raises(TypeError, match=r"voice_options\['length_scale'\] must be a float"):
        engine.open_call(voice_options={"length_scale": "slow"})
    for options, words in [
        ({"barge_in_min_speech_ms": 5}, "min_speech_ms"),
        ({"playout_lead_ms": -1}, "playout_lead_ms"),
        ({"barge_in_on_turn_end": True}, "turn"),
        ({"sample_rate": 44100}, "44100"),
        ({"volume": 11.0}, "volume"),
        ({"max_queued": 0}, "max_queued"),
        ({"voice_options": {"bogus": 1.0}}, "bogus"),
        ({"window": "wide"}, "window"),
        ({"transcripts": True}, "stt"),  # the engine has no Whisper model
    ]:
        with pytest.raises(brisvox.InvalidArgumentError, match=words):
            engine.open_call(**options)
    with pytest.raises(brisvox.InvalidArgumentError, match="tts"):
        brisvox.shared_engine().open_call()  # no voice in that engine
    with engine.open_call() as call:
        with pytest.raises(brisvox.InvalidArgumentError):
            call.speak("   ")
        with pytest.raises(ValueError, match="timeout"):
            call.next_event(timeout=-1)
        with pytest.raises(TypeError, match="Call.push"):
            call.push(np.zeros(16, np.float64))
    with pytest.raises(TypeError, match="voice="):
        brisvox.Engine(voice_options={"noise_scale": 0.5})
    with pytest.raises(TypeError, match="speaker_id"):
        brisvox.Engine(voice=str(PIPER_VOICE), voice_options={"speaker_id": [0]})


def test_a_closed_call_raises_closed_error(engine):
    call = engine.open_call(sample_rate=8000)
    call.close()
    call.close()  # idempotent
    assert call.closed and call.sample_rate == 8000 and call.speech_sample_rate == 8000
    for method in (lambda: call.push(np.zeros(4, np.int16)), call.finish, call.writable, call.poll,
                   lambda: call.speak("Hello."), call.mark, call.cancel, lambda: call.next_event(0),
                   lambda: next(iter(call))):
        with pytest.raises(brisvox.ClosedError, match=r"Call\.\w+: the call is closed"):
            method()


def test_close_from_another_thread_ends_a_wait(engine):
    call = engine.open_call()
    threading.Timer(0.2, call.close).start()
    with pytest.raises(brisvox.ClosedError):
        call.next_event(timeout=5)
    assert call.closed


@pytest.fixture(scope="module")
def stt_engine():
    if not (WHISPER_TINY / "encoder.onnx").exists():
        pytest.skip(f"no Whisper tiny.en at {WHISPER_TINY} (scripts/setup.sh converts it)")
    return brisvox.Engine(vad_workers=1, voice=str(PIPER_VOICE), tts_workers=1, stt_model=str(WHISPER_TINY))


def test_a_callers_utterance_is_transcribed(stt_engine, sample):
    # The second segment of the recording, pushed at once, on a call and on a stream.
    audio = clip(sample, 7.0, 11.8)
    texts = []
    for opener in (stt_engine.open_call, stt_engine.open_stream):
        with opener(transcripts=True, buffer_ms=6000) as source:
            assert source.push(audio) == len(audio)
            source.finish()
            events = list(source)
        transcripts = [e for e in events if e.type == T.TRANSCRIPT]
        assert len(transcripts) == 1, events
        e = transcripts[0]
        assert e.no_speech is False and e.avg_logprob < 0 and 0 <= e.probability <= 1
        assert 1.7 < e.start_s < 2.0 and 4.3 < e.end_s < 4.8  # 8.83-11.49 s of the recording
        texts.append(e.text)
    assert texts[0] == texts[1]
    # `brisvox transcribe` of the whole recording: "He was not an old-sposed young man."
    assert texts[0].startswith(" ") and "he was not an" in texts[0].lower() and "young man" in texts[0], texts[0]
