"""brisvox.livekit in livekit-agents 1.8.9: the VAD's streams fed rtc.AudioFrames as a LiveKit
agent's audio track delivers them, against livekit-plugins-silero's VAD on the same audio; the STT
on utterances of the recording against brisvox.transcribe of the same audio, and behind LiveKit's
own stt.StreamAdapter; the TTS's audio against brisvox.say of the same text, whole or pushed as
an LLM writes it, and its interruption."""

import asyncio
import time
import wave

import numpy as np
import pytest
import soxr
from livekit import rtc
from livekit.agents import APIConnectOptions, APIError, tokenize
from livekit.agents import stt as agents_stt
from livekit.agents.vad import VADEventType
from livekit.plugins import silero

import brisvox
import brisvox.livekit
from conftest import PIPER_VOICE, SAMPLE_WAV, WHISPER_TINY, wer, words

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


# --- STT ------------------------------------------------------------------------------------------


def frames_of(audio: np.ndarray, rate: int, channels: int = 1) -> list[rtc.AudioFrame]:
    """int16 audio (interleaved when channels > 1) as the FRAME_MS frames of a LiveKit track."""
    step = rate * FRAME_MS // 1000
    return [rtc.AudioFrame(data=audio[i * channels:(i + step) * channels].tobytes(), sample_rate=rate,
                           num_channels=channels, samples_per_channel=step)
            for i in range(0, len(audio) // channels - step + 1, step)]


def write_wav(path, audio: np.ndarray, rate: int):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate), w.writeframes(audio.tobytes())


@pytest.fixture(scope="module")
def stt():
    return brisvox.livekit.STT(model=str(WHISPER_TINY))


@pytest.fixture(scope="module")
def utterances(sample, tmp_path_factory):
    """Two utterances of the recording (the first two segments of brisvox.transcribe, 0.3 s of
    context either side), each with brisvox.transcribe's text of that very audio as a file,
    segmented as the STT segments (one utterance: min_silence_ms=2000)."""
    segments = brisvox.transcribe(SAMPLE_WAV, stt_model=str(WHISPER_TINY))["segments"]
    found = []
    for n, seg in enumerate(segments[:2]):
        audio = sample[int((seg["start"] - 0.3) * 16000):int((seg["end"] + 0.3) * 16000)]
        path = tmp_path_factory.mktemp("utterances") / f"{n}.wav"
        write_wav(path, audio, 16000)
        found.append((audio, brisvox.transcribe(path, stt_model=str(WHISPER_TINY), min_silence_ms=2000)["text"]))
    return found


def test_stt_transcribes_an_utterance_as_transcribe_does(stt, utterances):
    for audio, reference in utterances:
        event = asyncio.run(stt.recognize(frames_of(audio, 16000)))
        assert event.type == agents_stt.SpeechEventType.FINAL_TRANSCRIPT and len(event.alternatives) == 1
        said = event.alternatives[0]
        assert said.text == reference.strip() and len(words(reference)) >= 5, (said.text, reference)
        assert said.language == "en" and 0 <= said.start_time < said.end_time <= len(audio) / 16000 + 1e-3
        assert 0 < said.confidence <= 1


def test_stt_takes_a_48k_stereo_track(stt, utterances):
    # What a WebRTC track carries: the engine resamples it; both channels the same.
    audio, reference = utterances[1]
    stereo = np.repeat(soxr.resample(audio, 16000, 48000, quality="HQ").astype(np.int16), 2)
    said = asyncio.run(stt.recognize(frames_of(stereo, 48000, channels=2))).alternatives[0]
    assert wer(reference, said.text) <= 0.1, (said.text, reference)


def test_stt_behind_livekits_stream_adapter(stt, sample):
    # What AgentSession does with a non-streaming STT: its VAD cuts the track into utterances.
    adapter = agents_stt.StreamAdapter(stt=stt, vad=brisvox.livekit.VAD.load())
    # A second of silence after the recording, as a live track goes on: the VAD ends the last
    # utterance after its min_silence_duration (at the end of input it drops speech still open).
    track = np.concatenate([sample, np.zeros(16000, np.int16)])

    async def run():
        stream = adapter.stream()
        for n, frame in enumerate(frames_of(track, 16000)):
            stream.push_frame(frame)
            if n % 50 == 0:
                await asyncio.sleep(0)
        stream.end_input()
        events = [ev async for ev in stream]
        await stream.aclose()
        return events

    events = asyncio.run(run())
    finals = [e.alternatives[0].text for e in events if e.type == agents_stt.SpeechEventType.FINAL_TRANSCRIPT]
    reference = brisvox.transcribe(SAMPLE_WAV, stt_model=str(WHISPER_TINY))
    print(f"\n    adapter:    {' | '.join(finals)}\n    transcribe: {reference['text']}")
    # The same five utterances (LiveKit's VAD pads them differently: Whisper may hear a word
    # differently, hence the WER bound).
    assert len(finals) == len(reference["segments"]) >= 3, (finals, reference["segments"])
    assert wer(reference["text"], " ".join(finals)) <= 0.15, (finals, reference["text"])


def test_stt_options_and_their_errors(stt):
    assert stt.capabilities.streaming is False and stt.capabilities.interim_results is False
    assert stt.provider == "brisvox" and stt.model == str(WHISPER_TINY)
    assert stt.engine is brisvox.shared_engine(stt_model=str(WHISPER_TINY), admission_control=False)
    assert brisvox.livekit.STT(model=str(WHISPER_TINY), language="en-US")._language == "en"
    with pytest.raises(NotImplementedError):
        stt.stream()
    with pytest.raises(brisvox.InvalidArgumentError, match="English-only"):
        brisvox.livekit.STT(model=str(WHISPER_TINY), language="fr")
    with pytest.raises(brisvox.InvalidArgumentError, match="English-only"):
        asyncio.run(stt.recognize(frames_of(np.zeros(8000, np.int16), 16000), language="de"))
    with pytest.raises(brisvox.InvalidArgumentError, match="'full' or 'fit'"):
        brisvox.livekit.STT(model=str(WHISPER_TINY), window="half")
    with pytest.raises(brisvox.IoError, match="no-whisper"):
        brisvox.livekit.STT(model="/no-whisper")
    with pytest.raises(brisvox.InvalidArgumentError, match="no Whisper model"):
        brisvox.livekit.STT(engine=brisvox.shared_engine())
    # An engine failure while transcribing is LiveKit's APIError, retryable at capacity.
    full = brisvox.Engine(stt_model=str(WHISPER_TINY), admission_control=False, max_streams=1, stt_workers=1)
    busy = brisvox.livekit.STT(engine=full)
    assert busy.model == str(WHISPER_TINY)
    deadline = time.monotonic() + 10
    while True:  # the one slot, once the engine has let go of the stream the language check opened
        try:
            held = full.open_stream()
            break
        except brisvox.OverloadedError:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    with held, pytest.raises(APIError, match="brisvox: .*max_streams") as caught:
        asyncio.run(busy.recognize(frames_of(np.zeros(8000, np.int16), 16000),
                                   conn_options=APIConnectOptions(max_retry=0)))
    assert caught.value.retryable and isinstance(caught.value.__cause__, brisvox.OverloadedError)
    # No speech, or no audio at all: an empty transcript, not an error.
    assert asyncio.run(stt.recognize(frames_of(np.zeros(16000, np.int16), 16000))).alternatives[0].text == ""
    assert asyncio.run(stt.recognize([])).alternatives[0].text == ""


# --- TTS ------------------------------------------------------------------------------------------

DETERMINISTIC = {"noise_scale": 0.0, "noise_w_scale": 0.0}
REPLY = "Thanks for calling. Your table is booked for Monday at seven. See you then!"
LONG_REPLY = "".join(f"This is sentence number {n} of a long reply. " for n in range(1, 13))


def tts_of(**options) -> brisvox.livekit.TTS:
    return brisvox.livekit.TTS(voice=str(PIPER_VOICE), voice_options=DETERMINISTIC, **options)


def said(text: str, sample_rate: int = 0) -> np.ndarray:
    """brisvox.say's audio for `text` as the 16-bit samples the TTS's frames carry."""
    samples, _ = brisvox.say(text, voice=str(PIPER_VOICE), sample_rate=sample_rate, fast_start=True,
                             voice_options=DETERMINISTIC)
    return np.clip(np.round(samples * 32767.0), -32768, 32767).astype(np.int16)


def pcm_of(events) -> np.ndarray:
    return np.frombuffer(b"".join(bytes(e.frame.data) for e in events), dtype=np.int16)


async def collect(stream) -> list:
    events = [ev async for ev in stream]
    await stream.aclose()
    return events


def synthesized(tts, text: str) -> list:
    """The SynthesizedAudio events of tts.synthesize(text) (made in the loop, as LiveKit's are)."""
    async def run():
        return await collect(tts.synthesize(text))
    return asyncio.run(run())


@pytest.mark.parametrize("rate", [None, 16000])
def test_tts_synthesize_speaks_what_say_speaks(rate):
    tts = tts_of(sample_rate=rate)
    expected_rate = 22050 if rate is None else rate  # en_US-joe-medium's own, or the engine's resampling
    assert tts.sample_rate == expected_rate and tts.num_channels == 1
    events = synthesized(tts, REPLY)
    assert all(e.frame.sample_rate == expected_rate and e.frame.num_channels == 1 for e in events)
    assert events[-1].is_final and not any(e.is_final for e in events[:-1])
    ours, reference = pcm_of(events), said(REPLY, rate or 0)
    assert len(ours) == len(reference) > expected_rate, (len(ours), len(reference))
    assert np.abs(ours.astype(np.int32) - reference).max() <= 1


async def sentences_of(tokenizer, pieces: list[str]) -> list[str]:
    """The sentences `tokenizer` makes of text pushed in these pieces (what the TTS's stream speaks)."""
    stream = tokenizer.stream()
    for piece in pieces:
        stream.push_text(piece)
    stream.end_input()
    return [t.token.strip() async for t in stream if t.token.strip()]


def test_tts_stream_speaks_each_sentence_as_it_completes():
    tts = tts_of()
    pieces = [w + " " for w in LONG_REPLY.split(" ")[:40]]  # word by word, as an LLM writes

    async def run():
        stream = tts.stream()
        for piece in pieces:
            stream.push_text(piece)
            await asyncio.sleep(0)
        stream.end_input()
        return await collect(stream)

    events = asyncio.run(run())
    sentences = asyncio.run(sentences_of(tokenize.blingfire.SentenceTokenizer(), pieces))
    assert len(sentences) >= 3, sentences
    assert all(e.frame.sample_rate == 22050 for e in events) and events[-1].is_final
    # Each sentence is an utterance of its own: the audio is say()'s of each, one after the other.
    reference = np.concatenate([said(s) for s in sentences])
    ours = pcm_of(events)
    assert len(ours) == len(reference), (len(ours), len(reference))
    assert np.abs(ours.astype(np.int32) - reference).max() <= 1


def test_tts_stream_waits_for_the_next_sentence():
    # The first sentence is said in full before the second is pushed: the stream does not end
    # when the engine has nothing left to say, only when the input has ended.
    tts = tts_of(sample_rate=16000)
    first, rest = "Hello there, how are you doing today? I hope", " you are well."

    async def run():
        stream = tts.stream()
        stream.push_text(first)
        events = []

        async def read():
            async for ev in stream:
                events.append(ev)

        reader = asyncio.create_task(read())
        # The whole first sentence comes out (nothing held back) while the second is not written.
        deadline = time.monotonic() + 60
        while len(pcm_of(events)) < len(one):
            assert time.monotonic() < deadline, f"{len(pcm_of(events))} of the {len(one)} samples came"
            await asyncio.sleep(0.01)
        assert stream.speech.ended and len(pcm_of(events)) == len(one)
        stream.push_text(rest)
        stream.end_input()
        await reader
        await stream.aclose()
        return events

    sentences = asyncio.run(sentences_of(tokenize.blingfire.SentenceTokenizer(), [first, rest]))
    assert sentences == ["Hello there, how are you doing today?", "I hope you are well."], sentences
    one, two = said(sentences[0], 16000), said(sentences[1], 16000)
    ours = pcm_of(asyncio.run(run()))
    assert len(ours) == len(one) + len(two), (len(ours), len(one), len(two))
    assert np.abs(ours.astype(np.int32) - np.concatenate([one, two])).max() <= 1


@pytest.mark.parametrize("kind", ["synthesize", "stream"])
def test_tts_aclose_mid_reply_closes_the_engines_session(kind):
    tts = tts_of(sample_rate=16000)

    async def run():
        if kind == "synthesize":
            stream = tts.synthesize(LONG_REPLY)
        else:
            stream = tts.stream()
            stream.push_text(LONG_REPLY)
            stream.end_input()
        events = [await stream.__anext__()]  # the first audio: the reply is under way
        speech = stream.speech
        assert speech is not None and not speech.closed
        await stream.aclose()
        events += [ev async for ev in stream]  # nothing more comes
        return events, speech, stream

    events, speech, stream = asyncio.run(run())
    assert speech.closed and stream.speech is None
    full = said(LONG_REPLY, 16000)
    print(f"\n    {len(pcm_of(events)) / 16000:.2f} s of a {len(full) / 16000:.2f} s reply came out")
    assert len(pcm_of(events)) < len(full) / 2


def test_tts_options_and_their_errors():
    tts = tts_of()
    assert tts.capabilities.streaming is True and tts.provider == "brisvox" and tts.model == str(PIPER_VOICE)
    assert tts.engine is brisvox.shared_engine(voice=str(PIPER_VOICE))
    assert tts_of(sample_rate=22050).sample_rate == 22050  # the voice's own, named
    assert brisvox.livekit.TTS(engine=tts.engine).model == tts.engine.voice_path
    with pytest.raises(brisvox.InvalidArgumentError, match="22050 Hz.*8000, 16000, 24000, 48000.*44100"):
        tts_of(sample_rate=44100)
    with pytest.raises(brisvox.IoError, match="no-such-voice.*installed"):
        brisvox.livekit.TTS(voice="no-such-voice")
    with pytest.raises(brisvox.InvalidArgumentError, match="no setting 'bogus'"):
        brisvox.livekit.TTS(voice=str(PIPER_VOICE), voice_options={"bogus": 1.0})
    with pytest.raises(brisvox.InvalidArgumentError, match="no voice"):
        brisvox.livekit.TTS(engine=brisvox.shared_engine())
    # Nothing to say: no audio, no error; an over-long text: the engine's error, as it is.
    assert synthesized(tts, "  ") == []
    with pytest.raises(brisvox.InvalidArgumentError):
        synthesized(tts, "word " * 5000)
