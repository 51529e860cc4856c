"""OpenAI's Realtime API transcription sessions on `brisvox serve` (docs/OPENAI.md), with the official
`openai` client: `client.realtime.connect(extra_query={"intent": "transcription"})`.

A real server (Whisper tiny.en, a token) on loopback. A real recording is sent as the session's
audio (24 kHz PCM, or 8 kHz G.711 mu-law); each item's transcript must equal `brisvox transcribe`'s
of the same audio with the same VAD parameters (the session's turn_detection), items must come as
speech_started, speech_stopped, committed, delta, completed, and bad events must come back as error
events while the session goes on. Pipecat's own OpenAIRealtimeSTTService, pointed at brisvox by
base_url, must transcribe the same clip in a real pipeline.

  BRISVOX=build/release/brisvox BRISVOX_SAMPLE=third_party/audio/sample.wav \
      .venv/bin/python -m pytest -q tests/server/test_openai_realtime.py
"""
import audioop  # noqa: F401  (deprecated, still in 3.11: G.711 mu-law for the pcmu test)
import base64
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import wave

import numpy as np
import openai
import pytest
import soxr
import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server  # noqa: E402

BRISVOX = os.environ.get("BRISVOX", "build/release/brisvox")
SAMPLE = os.environ.get("BRISVOX_SAMPLE", "third_party/audio/sample.wav")
TOKEN = "realtime-test-token"
CLIP_S = 12  # the sample's first 12 s: two utterances
VAD = {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500}


@pytest.fixture(scope="module")
def server():
    s = Server(BRISVOX, "--workers", "1", "--stt-model", "tiny.en", "--turn-model", "v3.2", "--token", TOKEN)
    yield s
    s.kill()
    print("\n".join(s.lines[-40:]))


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url("/v1"), api_key=TOKEN, max_retries=0)


def read_clip():
    with wave.open(SAMPLE, "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(CLIP_S * rate), dtype="<i2")
    return pcm, rate


@pytest.fixture(scope="module")
def pcm24k(tmp_path_factory):
    """The clip at 24 kHz, 16-bit (what audio/pcm is), and a WAV of the same samples."""
    pcm, rate = read_clip()
    pcm24 = soxr.resample(pcm.astype(np.float32) / 32768.0, rate, 24000)
    pcm24 = np.clip(np.round(pcm24 * 32768.0), -32768, 32767).astype("<i2")
    path = tmp_path_factory.mktemp("realtime") / "clip24k.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(24000)
        w.writeframes(pcm24.tobytes())
    return pcm24.tobytes(), str(path)


def cli_segments(path, *extra):
    out = subprocess.run([BRISVOX, "transcribe", "--model", "tiny.en", "--min-silence-ms", "500", "--speech-pad-ms", "300", *extra, path],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)


@contextlib.contextmanager
def connect(client, **kwargs):
    """A transcription session. A 503 (the engine's admission control, which a machine busy with
    other tests can trip for a moment) is retried as its Retry-After says, for 20 s."""
    deadline = time.monotonic() + 20
    while True:
        manager = client.realtime.connect(extra_query={"intent": "transcription"}, **kwargs)
        try:
            conn = manager.__enter__()
            break
        except websockets.InvalidStatus as e:
            if e.response.status_code != 503 or time.monotonic() > deadline:
                raise
            time.sleep(float(e.response.headers.get("Retry-After", "1")))
    try:
        yield conn
    except BaseException:
        manager.__exit__(*sys.exc_info())
        raise
    manager.__exit__(None, None, None)


class Reader:
    """Collects a connection's events on a thread, so that the test never blocks on recv()."""

    def __init__(self, conn):
        self.conn = conn
        self.events = []
        self.cond = threading.Condition()
        self.closed = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for event in self.conn:
                with self.cond:
                    self.events.append(event)
                    self.cond.notify_all()
        except Exception as e:  # the close, as the client reports it
            with self.cond:
                self.closed = e
                self.cond.notify_all()
            return
        with self.cond:
            self.closed = "closed"
            self.cond.notify_all()

    def wait(self, pred, timeout=60):
        with self.cond:
            assert self.cond.wait_for(lambda: pred(self.events) or self.closed is not None, timeout), \
                [e.type for e in self.events]
            assert pred(self.events), (self.closed, [e.type for e in self.events])
            return list(self.events)

    def of(self, type_):
        with self.cond:
            return [e for e in self.events if e.type == type_]


def count(type_, n):
    return lambda events: sum(e.type == type_ for e in events) >= n


def append_all(conn, data, chunk_bytes, real_time=False):
    """Appends 24 kHz PCM in pieces; with real_time, each piece when its audio would have been said."""
    start = time.monotonic()
    for i in range(0, len(data), chunk_bytes):
        if real_time:
            time.sleep(max(0.0, start + i / 48000 - time.monotonic()))
        conn.input_audio_buffer.append(audio=base64.b64encode(data[i:i + chunk_bytes]).decode())


def test_session_created_then_updated(client):
    with connect(client) as conn:
        reader = Reader(conn)
        created = reader.wait(count("session.created", 1))[0]
        assert created.type == "session.created"
        s = created.session
        assert s.type == "transcription"
        assert s.audio.input.format.type == "audio/pcm" and s.audio.input.format.rate == 24000
        assert s.audio.input.turn_detection.type == "server_vad"
        assert s.audio.input.turn_detection.silence_duration_ms == 500
        assert s.audio.input.transcription.model == "stt"
        conn.session.update(session={"type": "transcription", "audio": {"input": {
            "format": {"type": "audio/pcmu"},
            "transcription": {"model": "whisper-1", "language": "en"},
            "turn_detection": {"type": "server_vad", "threshold": 0.6, "silence_duration_ms": 700}}}})
        updated = reader.wait(count("session.updated", 1))
        s = [e for e in updated if e.type == "session.updated"][0].session
        assert s.audio.input.format.type == "audio/pcmu"
        assert s.audio.input.transcription.model == "whisper-1" and s.audio.input.transcription.language == "en"
        td = s.audio.input.turn_detection
        assert (td.threshold, td.prefix_padding_ms, td.silence_duration_ms) == (0.6, 300, 700)
        assert s.audio.input.noise_reduction is None  # brisvox filters nothing, and says so


@pytest.fixture(scope="module")
def reference24k(pcm24k):
    return cli_segments(pcm24k[1])


DELTA = "conversation.item.input_audio_transcription.delta"
COMPLETED = "conversation.item.input_audio_transcription.completed"


@pytest.mark.parametrize("model", ["whisper-1", "gpt-4o-transcribe"])
def test_server_vad_items_equal_cli(client, server, pcm24k, reference24k, model):
    """whisper-1: each item's transcript as one delta, as OpenAI's whisper-1 sends it. The other
    names: deltas while the speech goes on (the partial transcripts' agreed text), the rest at the end."""
    data, path = pcm24k
    reference = reference24k
    assert len(reference["segments"]) >= 2, reference
    revised_before = server.metric("brisvox_realtime_deltas_revised_total")
    with connect(client) as conn:
        reader = Reader(conn)
        conn.session.update(session={"type": "transcription", "audio": {"input": {"transcription": {"model": model}}}})
        reader.wait(count("session.updated", 1))
        # 20 ms pieces; at real time where the deltas come from partials (a partial is asked every
        # 500 ms of audio, one at a time: audio faster than the decodes would leave fewer).
        append_all(conn, data, 24000 * 2 // 50, real_time=model != "whisper-1")
        append_all(conn, bytes(24000 * 2), 4800)  # a second of silence ends the last speech
        events = reader.wait(count(COMPLETED, len(reference["segments"])))
        conn.close()
    kinds = [e.type for e in events if e.type != "session.created"]
    completed = [e for e in events if e.type == COMPLETED]
    started = [e for e in events if e.type == "input_audio_buffer.speech_started"]
    stopped = [e for e in events if e.type == "input_audio_buffer.speech_stopped"]
    committed = [e for e in events if e.type == "input_audio_buffer.committed"]
    assert len(started) == len(stopped) == len(committed) == len(reference["segments"]), kinds
    # Each item: started, stopped, committed, then its transcript (later items may start before
    # an earlier transcript comes); deltas between its start and its completed.
    revised = early = 0
    for i, item in enumerate(started):
        assert stopped[i].item_id == committed[i].item_id == completed[i].item_id == item.item_id
        assert committed[i].previous_item_id == (committed[i - 1].item_id if i else None)
        seq = [e.type for e in events if getattr(e, "item_id", None) == item.item_id]
        assert [k for k in seq if k != DELTA] == ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
                                                  "input_audio_buffer.committed", COMPLETED], seq
        deltas = [e.delta for e in events if e.type == DELTA and e.item_id == item.item_id]
        if model == "whisper-1":
            assert deltas == [completed[i].transcript], seq
        else:
            early += DELTA in seq and seq.index(DELTA) < seq.index("input_audio_buffer.speech_stopped")
            # The deltas say the transcript, unless the final decode changed a word they had said
            # (then no more is sent: the completed transcript is the one that counts).
            if "".join(deltas) != completed[i].transcript:
                revised += 1
                assert not completed[i].transcript.startswith("".join(deltas)), (deltas, completed[i].transcript)
    for seg, start, stop, done in zip(reference["segments"], started, stopped, completed):
        assert done.transcript == seg["text"].strip()
        assert abs(start.audio_start_ms - seg["start"] * 1000) <= 1
        assert abs(stop.audio_end_ms - seg["end"] * 1000) <= 1
        assert done.usage.type == "duration" and abs(done.usage.seconds - (seg["end"] - seg["start"])) < 0.002
    assert server.metric("brisvox_realtime_deltas_revised_total") - revised_before == revised
    if model != "whisper-1":
        assert early >= 1, "no item had a delta while its speech went on"


def test_manual_commit_joins_the_buffer(client, pcm24k, reference24k):
    data, path = pcm24k
    reference = reference24k
    with connect(client) as conn:
        reader = Reader(conn)
        conn.session.update(session={"type": "transcription", "audio": {"input": {"turn_detection": None}}})
        reader.wait(count("session.updated", 1))
        append_all(conn, data, 32000)
        conn.input_audio_buffer.commit(event_id="my-commit")
        events = reader.wait(count("conversation.item.input_audio_transcription.completed", 1))
    assert not [e for e in events if e.type.startswith("input_audio_buffer.speech")]
    committed = [e for e in events if e.type == "input_audio_buffer.committed"]
    completed = [e for e in events if e.type == "conversation.item.input_audio_transcription.completed"]
    assert len(committed) == 1 and committed[0].item_id == completed[0].item_id
    assert completed[0].transcript == " ".join(s["text"].strip() for s in reference["segments"])


def test_semantic_vad_items_are_turns(client, pcm24k, reference24k):
    """semantic_vad: Smart Turn ends the items; each item's transcript is its segments' joined, so
    all of them together are the segments' texts in order (the same VAD parameters)."""
    data, _ = pcm24k
    with connect(client) as conn:
        reader = Reader(conn)
        conn.session.update(session={"type": "transcription", "audio": {"input": {
            "turn_detection": {"type": "semantic_vad", "eagerness": "high"}}}})
        updated = [e for e in reader.wait(count("session.updated", 1)) if e.type == "session.updated"][0]
        td = updated.session.audio.input.turn_detection
        assert td.type == "semantic_vad" and td.eagerness == "high"
        append_all(conn, data, 9600)
        append_all(conn, bytes(24000 * 2 * 3), 9600)  # 3 s of silence: longer than high eagerness's 2 s
        reader.wait(lambda ev: sum(e.type == "conversation.item.input_audio_transcription.completed" for e in ev)
                    >= sum(e.type == "input_audio_buffer.speech_started" for e in ev) > 0
                    and sum(e.type == "input_audio_buffer.committed" for e in ev)
                    == sum(e.type == "input_audio_buffer.speech_started" for e in ev))
        events = reader.wait(lambda ev: True)
    started = [e for e in events if e.type == "input_audio_buffer.speech_started"]
    completed = [e for e in events if e.type == "conversation.item.input_audio_transcription.completed"]
    assert 1 <= len(started) <= len(reference24k["segments"])
    for item in started:
        seq = [e.type for e in events if getattr(e, "item_id", None) == item.item_id]
        assert [k for k in seq if k != DELTA] == ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
                                                  "input_audio_buffer.committed", COMPLETED], seq
        assert DELTA in seq, seq
    assert " ".join(c.transcript for c in completed) == " ".join(s["text"].strip() for s in reference24k["segments"])


def test_turn_detection_changed_mid_speech(client, pcm24k, reference24k):
    """server_vad -> null in the middle of the first utterance: the update ends the engine stream
    (the speech so far becomes its item, stopped and committed), then the rest is one manual item.
    Every item committed is completed; nothing hangs."""
    data, _ = pcm24k
    first_end_ms = reference24k["segments"][0]["end"] * 1000
    with connect(client) as conn:
        reader = Reader(conn)
        half = int(first_end_ms / 2 / 1000 * 24000) * 2
        append_all(conn, data[:half], 9600)
        conn.session.update(session={"type": "transcription", "audio": {"input": {"turn_detection": None}}})
        reader.wait(count("session.updated", 1))
        append_all(conn, data[half:], 9600)
        conn.input_audio_buffer.commit()
        events = reader.wait(count("conversation.item.input_audio_transcription.completed", 2))
    kinds = [e.type for e in events]
    committed = [e for e in events if e.type == "input_audio_buffer.committed"]
    completed = [e for e in events if e.type == "conversation.item.input_audio_transcription.completed"]
    assert [c.item_id for c in committed] == [c.item_id for c in completed], kinds
    assert kinds.index("input_audio_buffer.speech_stopped") < kinds.index("session.updated")
    assert all(c.transcript for c in completed), completed


def test_commit_and_clear(client, pcm24k):
    data, _ = pcm24k
    with connect(client) as conn:
        reader = Reader(conn)
        conn.input_audio_buffer.commit(event_id="too-early")
        errors = reader.wait(count("error", 1))
        error = [e for e in errors if e.type == "error"][0].error
        assert error.code == "input_audio_buffer_commit_empty" and error.event_id == "too-early"
        assert error.type == "invalid_request_error"
        # Half of the first utterance, then clear: it never becomes an item.
        append_all(conn, data[:24000 * 2 * 2], 9600)
        conn.input_audio_buffer.clear()
        reader.wait(count("input_audio_buffer.cleared", 1))
        # The session goes on: the next utterance is transcribed.
        append_all(conn, data, 9600)
        append_all(conn, bytes(48000), 9600)
        events = reader.wait(count("conversation.item.input_audio_transcription.completed", 1))
    started = [e for e in events if e.type == "input_audio_buffer.speech_started"]
    stopped = [e for e in events if e.type == "input_audio_buffer.speech_stopped"]
    completed = [e for e in events if e.type == "conversation.item.input_audio_transcription.completed"]
    # The speech heard before the clear started an item; the clear dropped it: no stop, no transcript.
    cleared = [s.item_id for s in started if s.audio_start_ms < 2000]
    assert len(cleared) == 1
    assert cleared[0] not in {e.item_id for e in stopped + completed}
    # After it the timeline goes on (the cleared audio counts in it).
    later = [s for s in started if s.audio_start_ms >= 2000]
    assert later and {c.item_id for c in completed} <= {s.item_id for s in later}


def test_pcmu_transcribes(client, tmp_path):
    pcm, rate = read_clip()
    pcm8 = soxr.resample(pcm.astype(np.float32) / 32768.0, rate, 8000)
    pcm8 = np.clip(np.round(pcm8 * 32768.0), -32768, 32767).astype("<i2").tobytes()
    ulaw = audioop.lin2ulaw(pcm8, 2)
    path = tmp_path / "clip.ul"
    path.write_bytes(ulaw)
    reference = cli_segments(str(path), "--raw-encoding", "mulaw", "--raw-rate", "8000")
    with connect(client) as conn:
        reader = Reader(conn)
        conn.session.update(session={"type": "transcription", "audio": {"input": {"format": {"type": "audio/pcmu"}}}})
        reader.wait(count("session.updated", 1))
        append_all(conn, ulaw, 160)  # 20 ms
        append_all(conn, b"\xff" * 8000, 800)
        events = reader.wait(count("conversation.item.input_audio_transcription.completed", len(reference["segments"])))
    completed = [e.transcript for e in events if e.type == "conversation.item.input_audio_transcription.completed"]
    assert completed == [s["text"].strip() for s in reference["segments"]]


def test_bad_events_are_errors_and_the_session_goes_on(client, server):
    with connect(client) as conn:
        reader = Reader(conn)
        reader.wait(count("session.created", 1))
        conn.send({"type": "response.create"})
        conn.input_audio_buffer.append(audio="not base64!", event_id="bad-audio")
        conn.session.update(session={"type": "transcription",
                                     "audio": {"input": {"turn_detection": {"type": "semantic_vad",
                                                                            "eagerness": "eager"}}}})
        conn.session.update(session={"type": "transcription",
                                     "audio": {"input": {"transcription": {"model": "no-such-model"}}}})
        conn.session.update(session={"type": "transcription",
                                     "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}})
        conn.session.update(session={"type": "realtime"})
        # A prompt, on a server started without room for one in the decoder.
        conn.session.update(session={"type": "transcription",
                                     "audio": {"input": {"transcription": {"model": "whisper-1", "prompt": "Dashwood"}}}})
        errors = [e.error for e in reader.wait(count("error", 7)) if e.type == "error"]
        assert [e.param for e in errors] == [
            "type", "audio", "session.audio.input.turn_detection.eagerness",
            "session.audio.input.transcription.model", "session.audio.input.format.rate", "session.type", "session"]
        assert errors[1].event_id == "bad-audio"
        assert errors[3].code == "model_not_found"
        assert "--stt-prompt-tokens" in errors[6].message, errors[6]
        assert all(e.type == "invalid_request_error" and e.message for e in errors)
        # Still the default session, and still serving.
        conn.session.update(session={"type": "transcription"})
        reader.wait(count("session.updated", 1))
    assert server.alive()


def test_refusals(client, server):
    with pytest.raises(websockets.InvalidStatus) as wrong_key:
        with openai.OpenAI(base_url=server.url("/v1"), api_key="wrong", max_retries=0).realtime.connect(
                extra_query={"intent": "transcription"}) as conn:
            conn.recv()
    assert wrong_key.value.response.status_code == 401
    body = json.loads(wrong_key.value.response.body)
    assert body["error"]["type"] == "invalid_request_error"
    with pytest.raises(websockets.InvalidStatus) as no_intent:
        with client.realtime.connect(model="gpt-realtime") as conn:
            conn.recv()
    assert no_intent.value.response.status_code == 400
    assert "intent=transcription" in json.loads(no_intent.value.response.body)["error"]["message"]


@pytest.fixture(scope="module")
def clip_words():
    """The words `brisvox transcribe` (its own VAD parameters) finds in the clip's segments."""
    reference = json.loads(subprocess.run([BRISVOX, "transcribe", "--model", "tiny.en", SAMPLE], check=True, capture_output=True,
                                          text=True, timeout=120).stdout)
    expected = " ".join(s["text"].strip() for s in reference["segments"] if s["end"] <= CLIP_S)
    assert expected
    return expected


def words(text):
    return re.findall(r"[a-z0-9']+", text.lower())


def wer(ref, hyp):
    r, h = words(ref), words(hyp)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
    return d[len(h)] / max(1, len(r))


def test_pipecat_openai_realtime_stt_service(server, clip_words):
    """Pipecat's own OpenAIRealtimeSTTService (unmodified, its default model name
    gpt-realtime-whisper) pointed at brisvox by base_url, in a real pipeline: the clip at 16 kHz in
    20 ms frames (the service resamples to 24 kHz), brisvox's VAD deciding the turns."""
    import asyncio

    from pipecat.frames.frames import EndFrame, ErrorFrame, InputAudioRawFrame, TranscriptionFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.runner import PipelineRunner
    from pipecat.pipeline.task import PipelineParams, PipelineTask
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.services.openai.stt import OpenAIRealtimeSTTService

    pcm, rate = read_clip()
    audio = np.concatenate([pcm, np.zeros(rate * 3 // 2, dtype="<i2")])
    expected = clip_words

    class Collector(FrameProcessor):
        def __init__(self):
            super().__init__()
            self.texts, self.errors, self.audio_frames = [], [], 0

        async def process_frame(self, frame, direction: FrameDirection):
            await super().process_frame(frame, direction)
            if isinstance(frame, TranscriptionFrame):
                self.texts.append(frame.text)
            elif isinstance(frame, ErrorFrame):
                self.errors.append(frame.error)
            elif isinstance(frame, InputAudioRawFrame):
                self.audio_frames += 1
            await self.push_frame(frame, direction)

    async def run():
        stt = OpenAIRealtimeSTTService(api_key=TOKEN, base_url=server.url("/v1/realtime").replace("http", "ws", 1),
                                       turn_detection={"type": "server_vad", "silence_duration_ms": 500})
        collector = Collector()
        task = PipelineTask(Pipeline([stt, collector]), params=PipelineParams(audio_in_sample_rate=rate),
                            enable_rtvi=False, enable_turn_tracking=False, cancel_on_idle_timeout=False)
        step = rate // 50

        async def feed():
            for n, i in enumerate(range(0, len(audio) - step + 1, step)):
                while collector.audio_frames < n:
                    await asyncio.sleep(0.001)
                await task.queue_frame(InputAudioRawFrame(audio=audio[i:i + step].tobytes(), sample_rate=rate,
                                                          num_channels=1))
            deadline = time.monotonic() + 60
            while len(" ".join(collector.texts).split()) < len(expected.split()) * 0.8 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await task.queue_frame(EndFrame())

        await asyncio.gather(PipelineRunner(handle_sigint=False).run(task), feed())
        return collector

    collector = asyncio.run(run())
    assert not collector.errors, collector.errors
    got = " ".join(collector.texts)
    assert len(collector.texts) >= 2, collector.texts
    assert wer(expected, got) <= 0.05, (expected, got)


def test_livekit_openai_stt_realtime(server, clip_words):
    """LiveKit's own OpenAI STT plugin (livekit-plugins-openai, unmodified) with use_realtime=True and
    base_url pointed at brisvox: a LiveKit STT stream fed rtc.AudioFrames of the clip, brisvox's VAD
    deciding the turns (the plugin's server_vad settings), its FINAL_TRANSCRIPTs the clip's words."""
    import asyncio

    from livekit import rtc
    from livekit.agents import stt as agents_stt
    from livekit.agents.utils import http_context
    from livekit.plugins import openai as lk_openai

    pcm, rate = read_clip()
    audio = np.concatenate([pcm, np.zeros(rate * 3 // 2, dtype="<i2")])
    expected = clip_words

    async def run():
        async with http_context.open():
            stt = lk_openai.STT(base_url=server.url("/v1"), api_key=TOKEN, model="gpt-4o-mini-transcribe",
                                use_realtime=True, vad=None)
            stream = stt.stream()
            finals = []

            async def read():
                async for ev in stream:
                    if ev.type == agents_stt.SpeechEventType.FINAL_TRANSCRIPT:
                        finals.append(ev.alternatives[0].text)

            reader = asyncio.create_task(read())
            step = rate // 50
            for i in range(0, len(audio) - step + 1, step):
                stream.push_frame(rtc.AudioFrame(data=audio[i:i + step].tobytes(), sample_rate=rate, num_channels=1,
                                                 samples_per_channel=step))
                await asyncio.sleep(0)
            deadline = time.monotonic() + 60
            while len(" ".join(finals).split()) < len(expected.split()) * 0.8 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            # The plugin's stream keeps its socket open for more input: closing it ends the session.
            await stream.aclose()
            reader.cancel()
            await stt.aclose()
            return finals

    finals = asyncio.run(run())
    assert len(finals) >= 2, finals
    assert wer(expected, " ".join(finals)) <= 0.05, (expected, finals)
