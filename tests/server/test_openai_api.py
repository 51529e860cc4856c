"""OpenAI's audio API on `brisvox serve` (docs/OPENAI.md), with the official `openai` client.

A real server (Whisper tiny.en, the Piper voice, a token) on loopback; the client is pointed at it by base_url and
api_key only. Transcripts must equal `brisvox transcribe`'s and POST /v1/transcribe's for the same
file; SRT and WebVTT must parse into the same segments; verbose_json segments must be monotone
within the audio; streamed deltas must concatenate to the done text; speech in each offered format
must decode and transcribe back to its text, the streamed one's first bytes well before its end; bad input must raise the
client's own exception types, and the server must go on answering.

  BRISVOX=build/release/brisvox BRISVOX_SAMPLE=third_party/audio/sample.wav \
      BRISVOX_VOICE=third_party/models/piper/en_US-joe-medium.onnx \
      .venv/bin/python -m pytest -q tests/server/test_openai_api.py
"""
import base64
import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import wave

import openai
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server  # noqa: E402

BRISVOX = os.environ.get("BRISVOX", "build/release/brisvox")
SAMPLE = os.environ.get("BRISVOX_SAMPLE", "third_party/audio/sample.wav")
VOICE = os.environ.get("BRISVOX_VOICE", "third_party/models/piper/en_US-joe-medium.onnx")
TOKEN = "openai-test-token"
MAX_BODY = 4_000_000


@pytest.fixture(scope="module")
def server():
    s = Server(BRISVOX, "--workers", "1", "--stt-model", "tiny.en", "--max-body-bytes", str(MAX_BODY),
               "--tts-voice", VOICE, "--token", TOKEN)
    yield s
    s.kill()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url("/v1"), api_key=TOKEN, max_retries=0, timeout=120)


def cli_transcript(path):
    out = subprocess.run([BRISVOX, "transcribe", "--model", "tiny.en", path], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    ref = json.loads(out)
    assert ref["text"] and len(ref["segments"]) > 1, ref
    return ref


@pytest.fixture(scope="module")
def full_reference():
    return cli_transcript(SAMPLE)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """The sample's first 12 s (two utterances): most tests need a transcript, not a long one."""
    path = tmp_path_factory.mktemp("openai") / "clip.wav"
    with wave.open(SAMPLE, "rb") as src, wave.open(str(path), "wb") as dst:
        dst.setparams(src.getparams())
        dst.writeframes(src.readframes(12 * src.getframerate()))
    return str(path)


@pytest.fixture(scope="module")
def reference(clip):
    return cli_transcript(clip)


@pytest.fixture(scope="module")
def transcribe(client, clip):
    def run(**kwargs):
        with open(clip, "rb") as f:
            return client.audio.transcriptions.create(file=("clip.wav", f), **kwargs)
    return run


def test_json_equals_cli_and_native_route(client, server, full_reference):
    with open(SAMPLE, "rb") as f:
        got = client.audio.transcriptions.create(file=("sample.wav", f), model="whisper-1")
    assert got.text == full_reference["text"]
    req = urllib.request.Request(server.url("/v1/transcribe"), data=open(SAMPLE, "rb").read(), method="POST",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=120) as r:
        native = json.loads(r.read())
    assert got.text == native["text"]


def test_stock_and_own_model_names(transcribe, reference):
    for name in ("gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-transcribe", "gpt-realtime-whisper", "stt"):
        assert transcribe(model=name, language="en").text == reference["text"], name


def test_text(transcribe, reference):
    got = transcribe(model="whisper-1", response_format="text")
    assert isinstance(got, str) and got.strip() == reference["text"]


CUE = re.compile(r"(\d\d):(\d\d):(\d\d)[,.](\d\d\d) --> (\d\d):(\d\d):(\d\d)[,.](\d\d\d)")


def parse_cues(text):
    cues = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = CUE.fullmatch(line.strip())
        if m:
            g = [int(x) for x in m.groups()]
            start = g[0] * 3600 + g[1] * 60 + g[2] + g[3] / 1000
            end = g[4] * 3600 + g[5] * 60 + g[6] + g[7] / 1000
            body = []
            for following in lines[i + 1:]:
                if not following.strip():
                    break
                body.append(following.strip())
            cues.append((start, end, " ".join(body)))
    return cues


@pytest.mark.parametrize("fmt", ["srt", "vtt"])
def test_subtitles(transcribe, reference, fmt):
    got = transcribe(model="whisper-1", response_format=fmt)
    assert isinstance(got, str)
    if fmt == "vtt":
        assert got.startswith("WEBVTT"), got[:40]
    cues = parse_cues(got)
    assert len(cues) == len(reference["segments"]), got
    for (start, end, text), seg in zip(cues, reference["segments"]):
        assert abs(start - seg["start"]) <= 0.001 and abs(end - seg["end"]) <= 0.001, (start, end, seg)
        assert text == seg["text"]


def test_verbose_json(transcribe, reference):
    got = transcribe(model="whisper-1", response_format="verbose_json", timestamp_granularities=["segment"])
    assert got.task == "transcribe" and got.language == "english"
    assert got.text == reference["text"]
    assert abs(got.duration - reference["duration"]) < 1e-6
    assert [s.text for s in got.segments] == [s["text"] for s in reference["segments"]]
    previous_end = 0.0
    for i, s in enumerate(got.segments):
        assert s.id == i
        assert previous_end <= s.start < s.end <= got.duration, (previous_end, s)
        assert 0 <= s.no_speech_prob <= 1 and s.avg_logprob <= 0
        previous_end = s.end
    assert got.words is None


def test_stream(transcribe, reference):
    events = list(transcribe(model="whisper-1", stream=True))
    deltas = [e for e in events if e.type == "transcript.text.delta"]
    done = [e for e in events if e.type == "transcript.text.done"]
    assert len(done) == 1 and events[-1] is done[0], events
    assert len(deltas) == len(reference["segments"])
    assert "".join(d.delta for d in deltas) == done[0].text == reference["text"]


def test_word_timestamps(transcribe, clip):
    # The words of `brisvox transcribe --word-timestamps`, without their leading space; segments
    # only when asked for too.
    ref = json.loads(subprocess.run([BRISVOX, "transcribe", "--model", "tiny.en", "--word-timestamps", str(clip)], check=True,
                                    capture_output=True, text=True, timeout=120).stdout)
    want = [w for s in ref["segments"] for w in s["words"]]
    assert len(want) > 10
    got = transcribe(model="whisper-1", response_format="verbose_json", timestamp_granularities=["word"])
    assert got.segments is None and got.text == ref["text"]
    assert [w.word for w in got.words] == [w["word"].strip() for w in want]
    for w, r in zip(got.words, want):
        assert w.start == r["start"] and w.end == r["end"] and w.start <= w.end
    both = transcribe(model="whisper-1", response_format="verbose_json", timestamp_granularities=["word", "segment"])
    assert len(both.segments) == len(ref["segments"]) and len(both.words) == len(want)


def test_granularities_need_verbose_json(transcribe):
    with pytest.raises(openai.BadRequestError) as e:
        transcribe(model="whisper-1", response_format="json", timestamp_granularities=["segment"])
    assert "verbose_json" in e.value.message


def test_missing_file(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.post("/audio/transcriptions", cast_to=object, body={"model": "whisper-1"},
                    files=[("prompt", ("prompt.txt", b"hello"))])
    assert e.value.body["param"] == "file", e.value.body
    assert e.value.body["type"] == "invalid_request_error"


def test_unknown_model(transcribe):
    with pytest.raises(openai.NotFoundError) as e:
        transcribe(model="whisper-9000")
    assert e.value.body["code"] == "model_not_found" and "whisper-9000" in e.value.message


def test_bad_response_format(transcribe):
    with pytest.raises(openai.BadRequestError) as e:
        transcribe(model="whisper-1", response_format="mp4")
    assert e.value.body["param"] == "response_format"


def test_bad_temperature(transcribe):
    with pytest.raises(openai.BadRequestError) as e:
        transcribe(model="whisper-1", temperature=3)
    assert e.value.body["param"] == "temperature"


def test_not_audio(client):
    with pytest.raises(openai.BadRequestError):
        client.audio.transcriptions.create(file=("notes.wav", b"this is not audio at all" * 100), model="whisper-1")


def test_language_an_english_model_cannot_take(transcribe):
    with pytest.raises(openai.BadRequestError) as e:
        transcribe(model="whisper-1", language="fr")
    assert "fr" in e.value.message and "English" in e.value.message, e.value.message


def test_wrong_key(server):
    bad = openai.OpenAI(base_url=server.url("/v1"), api_key="not-the-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as e:
        with open(SAMPLE, "rb") as f:
            bad.audio.transcriptions.create(file=("sample.wav", f), model="whisper-1")
    assert e.value.body["code"] == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()


def test_oversize_upload(client):
    with pytest.raises(openai.APIStatusError) as e:
        client.audio.transcriptions.create(file=("big.wav", b"\0" * (MAX_BODY + 1)), model="whisper-1")
    assert e.value.status_code == 413 and "--max-body-bytes" in e.value.message


def test_translations_refused(client):
    with pytest.raises(openai.BadRequestError) as e:
        with open(SAMPLE, "rb") as f:
            client.audio.translations.create(file=("sample.wav", f), model="whisper-1")
    assert "multilingual" in e.value.message


def test_unoffered_route_is_openai_404(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.post("/audio/voices", cast_to=object, body={})
    assert e.value.body["type"] == "invalid_request_error"


def test_models(client):
    ids = [m.id for m in client.models.list()]
    assert ids == ["stt", "whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe",
                   "gpt-4o-mini-transcribe-2025-12-15", "gpt-transcribe", "gpt-live-transcribe",
                   "gpt-realtime-whisper", "tts", "tts-1", "tts-1-hd", "gpt-4o-mini-tts"], ids




SPEECH = "The weather is nice today. We will walk to the park after lunch."
# Piper samples its noise afresh on every synthesis, so the same text is not the same audio twice,
# and Whisper tiny may mishear one of these 13 words (a CI run heard "weather" as "water"): one is
# allowed, two are not.
SPEECH_WER = 0.08
LONG_SPEECH = " ".join([
    "This reply is long on purpose.", "It has several sentences, one after the other.",
    "The server speaks the first one while it makes the rest.", "A client can play the start at once.",
    "Then the middle arrives, sentence by sentence.", "And at last the end of the reply comes too.",
])


def words(text):
    return re.sub(r"[^a-z0-9' ]", " ", text.lower()).split()


def wer(reference, hypothesis):
    r, h = words(reference), words(hypothesis)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
    return d[len(h)] / len(r)


def wav_of_pcm(pcm, rate=24000):
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


def heard(client, wav_bytes):
    return client.audio.transcriptions.create(file=("speech.wav", wav_bytes), model="whisper-1").text


def wav_params(data):
    with wave.open(io.BytesIO(data), "rb") as w:
        return w.getframerate(), w.getsampwidth(), w.getnchannels(), w.getnframes()


def test_speech_wav_transcribes_back(client):
    data = client.audio.speech.create(model="tts-1", voice="alloy", input=SPEECH, response_format="wav").content
    rate, width, channels, frames = wav_params(data)
    assert (rate, width, channels) == (24000, 2, 1) and frames > 24000
    text = heard(client, data)
    assert wer(SPEECH, text) <= SPEECH_WER, text


def test_speech_pcm_transcribes_back(client):
    pcm = client.audio.speech.create(model="gpt-4o-mini-tts", voice="nova", input=SPEECH, response_format="pcm").content
    assert len(pcm) % 2 == 0 and len(pcm) > 48000
    text = heard(client, wav_of_pcm(pcm))
    assert wer(SPEECH, text) <= SPEECH_WER, text


def test_pipecat_openai_tts_service(client, server):
    """Pipecat's own OpenAITTSService (unmodified: streamed 24 kHz PCM from /v1/audio/speech) with
    base_url pointed at brisvox, in a real pipeline: its audio frames transcribe back to the text."""
    import asyncio

    from pipecat.frames.frames import EndFrame, ErrorFrame, TTSAudioRawFrame, TTSSpeakFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.runner import PipelineRunner
    from pipecat.pipeline.task import PipelineParams, PipelineTask
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.services.openai.tts import OpenAITTSService

    class Collector(FrameProcessor):
        def __init__(self):
            super().__init__()
            self.pcm, self.errors = bytearray(), []

        async def process_frame(self, frame, direction: FrameDirection):
            await super().process_frame(frame, direction)
            if isinstance(frame, TTSAudioRawFrame):
                self.pcm += frame.audio
            elif isinstance(frame, ErrorFrame):
                self.errors.append(frame.error)
            await self.push_frame(frame, direction)

    async def run():
        collector = Collector()
        tts = OpenAITTSService(api_key=TOKEN, base_url=server.url("/v1"), voice="alloy")
        task = PipelineTask(Pipeline([tts, collector]), params=PipelineParams(audio_out_sample_rate=24000),
                            enable_rtvi=False, enable_turn_tracking=False, cancel_on_idle_timeout=False)

        async def drive():
            await task.queue_frame(TTSSpeakFrame(SPEECH))
            deadline = time.monotonic() + 60
            while len(collector.pcm) < 24000 * 2 * 3 and time.monotonic() < deadline and not collector.errors:
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # the rest of the reply
            await task.queue_frame(EndFrame())

        await asyncio.gather(PipelineRunner(handle_sigint=False).run(task), drive())
        return collector

    collector = asyncio.run(run())
    assert not collector.errors, collector.errors
    text = heard(client, wav_of_pcm(bytes(collector.pcm)))
    assert wer(SPEECH, text) <= SPEECH_WER, text


def test_livekit_openai_tts(client, server):
    """LiveKit's own OpenAI TTS plugin (livekit-plugins-openai, unmodified) with base_url pointed at
    brisvox: the frames of a synthesize() transcribe back to the text, in its default format (mp3,
    decoded by the plugin) and in pcm."""
    import asyncio

    from livekit.plugins import openai as lk_openai

    async def run(**kwargs):
        tts = lk_openai.TTS(base_url=server.url("/v1"), api_key=TOKEN, model="tts-1", voice="alloy", **kwargs)
        pcm, rate = bytearray(), None
        async with tts.synthesize(SPEECH) as stream:
            async for ev in stream:
                pcm += ev.frame.data.tobytes()
                rate = ev.frame.sample_rate
        await tts.aclose()
        return bytes(pcm), rate

    for kwargs in ({}, {"response_format": "pcm"}):
        pcm, rate = asyncio.run(run(**kwargs))
        assert rate and len(pcm) > rate * 2, kwargs
        text = heard(client, wav_of_pcm(pcm, rate))
        # One word of the 13 (tiny.en once dropped the leading "The" of a pcm reply: the voice
        # samples its noise, so no two replies are the same audio).
        assert wer(SPEECH, text) <= 0.08, (kwargs, text)


@pytest.mark.parametrize("fmt,magic,content_type", [
    ("mp3", (b"ID3", b"\xff\xf3", b"\xff\xfb", b"\xff\xf2"), "audio/mpeg"),
    ("opus", (b"OggS",), "audio/ogg"),
    ("flac", (b"fLaC",), "audio/flac"),
])
def test_speech_compressed_formats_transcribe_back(client, fmt, magic, content_type):
    r = client.audio.speech.with_raw_response.create(model="tts-1", voice="alloy", input=SPEECH, response_format=fmt)
    data = r.content
    assert r.headers["content-type"] == content_type
    assert data.startswith(magic), data[:8]
    if fmt == "opus":
        assert b"OpusHead" in data[:100]
    # The server reads what it wrote (libsndfile: FLAC, MP3 through mpg123, Ogg Opus).
    text = client.audio.transcriptions.create(file=(f"speech.{fmt}", data), model="whisper-1").text
    assert wer(SPEECH, text) <= SPEECH_WER, text


def test_speech_sse_events(client):
    """stream_format sse: speech.audio.delta events (base64 PCM as each piece is made), then
    speech.audio.done; their audio transcribes back to the text. A file format comes as one delta."""
    with client.audio.speech.with_streaming_response.create(model="gpt-4o-mini-tts", voice="alloy", input=SPEECH,
                                                             response_format="pcm", stream_format="sse") as r:
        assert r.headers["content-type"] == "text/event-stream"
        events = [json.loads(line[len("data: "):]) for line in r.iter_lines() if line.startswith("data: ")]
    deltas = [e for e in events if e["type"] == "speech.audio.delta"]
    # Two sentences, the first clause of the first alone (fast_start): at least two pieces.
    assert len(deltas) >= 2 and events[-1]["type"] == "speech.audio.done", [e["type"] for e in events]
    assert set(events[-1]["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}
    pcm = b"".join(base64.b64decode(d["audio"]) for d in deltas)
    # The same words as the plain pcm answer (tiny.en's transcript, as test_speech_pcm_transcribes_back).
    text = heard(client, wav_of_pcm(pcm))
    assert wer(SPEECH, text) <= SPEECH_WER, text
    with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy", input=SPEECH,
                                                             response_format="flac", stream_format="sse") as r:
        events = [json.loads(line[len("data: "):]) for line in r.iter_lines() if line.startswith("data: ")]
    assert [e["type"] for e in events] == ["speech.audio.delta", "speech.audio.done"]
    assert base64.b64decode(events[0]["audio"]).startswith(b"fLaC")


def test_speech_streams_from_the_first_sentence(client):
    t0 = time.monotonic()
    first = None
    pcm = b""
    with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy", input=LONG_SPEECH,
                                                             response_format="pcm") as r:
        for chunk in r.iter_bytes():
            if chunk and first is None:
                first = time.monotonic() - t0
            pcm += chunk
    total = time.monotonic() - t0
    print(f"speech streamed: first bytes after {first * 1000:.0f} ms, all {len(pcm) / 48000:.1f} s of audio "
          f"after {total * 1000:.0f} ms")
    assert first < 0.6 * total, (first, total)
    assert wer(LONG_SPEECH, heard(client, wav_of_pcm(pcm))) <= 0.1


def test_speech_speed(client):
    normal = wav_params(client.audio.speech.create(model="tts-1", voice="alloy", input=SPEECH,
                                                   response_format="wav").content)[3]
    fast = wav_params(client.audio.speech.create(model="tts-1", voice="alloy", input=SPEECH, response_format="wav",
                                                 speed=2.0).content)[3]
    assert 0.35 < fast / normal < 0.7, (fast, normal)


@pytest.mark.parametrize("fields,error,param", [
    ({"voice": "robot"}, openai.BadRequestError, "voice"),
    ({"response_format": "aac"}, openai.BadRequestError, "response_format"),
    ({"stream_format": "chunks"}, openai.BadRequestError, "stream_format"),
    ({"speed": 9}, openai.BadRequestError, "speed"),
    ({"model": "tts-9"}, openai.NotFoundError, "model"),
])
def test_speech_bad_input(client, fields, error, param):
    args = dict(model="tts-1", voice="alloy", input="Hello.", response_format="wav") | fields
    with pytest.raises(error) as e:
        client.audio.speech.create(**args)
    assert e.value.body["param"] == param and e.value.body["type"] == "invalid_request_error", e.value.body


def test_speech_engine_refusal_is_openai_shaped(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.audio.speech.create(model="tts-1", voice="alloy", input="", response_format="wav")
    assert e.value.body["type"] == "invalid_request_error" and e.value.message, e.value.body


def test_still_serving_after_bad_requests(transcribe, reference):
    assert transcribe(model="whisper-1").text == reference["text"]
