"""brisvox.Engine and brisvox.Stream: samples in, events out, and every misuse a clear exception."""

import asyncio
import threading
import time

import numpy as np
import pytest

import brisvox


@pytest.fixture(scope="module")
def engine():
    # Without admission control: these tests push faster than real time, and on a loaded machine
    # the engine's latency budget (100 ms) would refuse the next test's streams (OverloadedError;
    # test_overloaded_at_max_streams checks refusals on an engine of its own).
    return brisvox.Engine(vad_workers=1, admission_control=False)


def events_of(stream, earlier=()):
    return list(earlier) + list(stream)  # the blocking iterator: until END_OF_STREAM


def segments(events):
    return [(e.start_s, e.end_s) for e in events if e.type == brisvox.EventType.SPEECH_END]


def feed(stream, samples, chunk=1600):
    """Pushes faster than real time, as much as the stream takes, reading events meanwhile (the
    stream's event queue is bounded); returns the events read so far."""
    events = []
    i = 0
    while i < len(samples):
        room = stream.writable()
        if room == 0:
            time.sleep(0.002)  # the buffer is full: the worker catches up
        else:
            i += stream.push(samples[i:i + min(chunk, room)])
        events += stream.poll()
    stream.finish()
    return events


def test_speech_segments_of_a_recording_float32_and_int16_agree(engine, sample):
    with engine.open_stream(sample_rate=16000) as s:
        from_int16 = events_of(s, feed(s, sample))
    with engine.open_stream(sample_rate=16000) as s:
        from_float = events_of(s, feed(s, sample.astype(np.float32) / 32768.0))
    assert from_int16[-1].type == brisvox.EventType.END_OF_STREAM
    assert abs(from_int16[-1].end_s - len(sample) / 16000) < 0.04
    segs = segments(from_int16)
    assert len(segs) >= 3, segs  # a reading with pauses
    assert segs == segments(from_float)
    starts = [e for e in from_int16 if e.type == brisvox.EventType.SPEECH_START]
    assert len(starts) == len(segs) and starts[0].probability is None and "SPEECH_START" in repr(starts[0])


def test_feed_takes_a_whole_file_from_one_thread(engine, sample):
    # The README's loop: a 28 s recording in one call, no reader thread. push() alone would take
    # one buffer's worth; feed() gives every sample to the engine and loses no event.
    with engine.open_stream(sample_rate=16000, emit_probabilities=True) as s:
        fed = list(s.feed(sample))
    with engine.open_stream(sample_rate=16000, emit_probabilities=True) as s:
        reference = events_of(s, feed(s, sample))
    assert fed[-1].type == brisvox.EventType.END_OF_STREAM
    assert abs(fed[-1].end_s - len(sample) / 16000) < 0.04
    assert not [e for e in fed if e.type in (brisvox.EventType.OVERLOAD, brisvox.EventType.ERROR)]
    assert segments(fed) == segments(reference) and len(segments(fed)) >= 3
    def windows(events):
        return [e.frame_index for e in events if e.type == brisvox.EventType.VAD_PROBABILITY]
    assert windows(fed) == windows(reference) and len(windows(fed)) >= len(sample) // 512  # none lost


def test_feed_refuses_what_push_refuses(engine):
    with engine.open_stream(sample_rate=16000) as s:
        with pytest.raises(ValueError, match="chunk"):
            next(s.feed(np.zeros(16000, np.int16), chunk=0))
        with pytest.raises(TypeError):
            next(s.feed(np.zeros(16000, np.float64)))
    with pytest.raises(brisvox.ClosedError):
        next(s.feed(np.zeros(16000, np.int16)))  # closed by the with block


def test_probabilities_one_per_window(engine, sample):
    with engine.open_stream(emit_probabilities=True) as s:
        probs = [e for e in events_of(s, feed(s, sample[: 512 * 20])) if e.type == brisvox.EventType.VAD_PROBABILITY]
    assert [e.frame_index for e in probs] == list(range(20))
    assert all(0.0 <= e.probability <= 1.0 for e in probs)


def test_strided_and_resampled_input(engine, sample):
    # A non-contiguous view is copied, a 48 kHz stream resampled: same speech as the 16 kHz one.
    up = np.repeat(sample[: 16000 * 8], 3)
    with engine.open_stream(sample_rate=48000) as s:
        at48 = segments(events_of(s, feed(s, up[::1])))
    with engine.open_stream(sample_rate=16000) as s:
        at16 = segments(events_of(s, feed(s, up[::3])))
    assert at16 and len(at48) == len(at16)
    for a, b in zip(at48, at16):
        assert abs(a[0] - b[0]) < 0.1 and abs(a[1] - b[1]) < 0.1


def test_async_iterator(engine, sample):
    async def run():
        with engine.open_stream() as s:
            early = feed(s, sample[: 16000 * 6])
            return early + [e async for e in s]

    events = asyncio.run(run())
    assert events[-1].type == brisvox.EventType.END_OF_STREAM
    assert segments(events)


def test_many_streams_iterated_on_one_loop_without_threads(engine, sample):
    # 40 streams read at once by one event loop: each gets the events a blocking reader gets, and
    # no executor thread was used (the loop is woken by the engine through brisvox._aio). OVERLOAD
    # events are left out: 40 streams of 6 s pushed at once do queue up.
    clip = sample[: 16000 * 6]

    def kept(events):
        return [(e.type, e.start_s, e.end_s) for e in events if e.type != brisvox.EventType.OVERLOAD]

    with engine.open_stream(buffer_ms=7000) as s:
        s.push(clip)
        s.finish()
        expected = kept(s)

    async def one():
        with engine.open_stream(buffer_ms=7000) as s:
            assert s.push(clip) == len(clip)
            s.finish()
            return kept([e async for e in s])

    async def run():
        got = await asyncio.gather(*(one() for _ in range(40)))
        return got, asyncio.get_running_loop()._default_executor

    got, executor = asyncio.run(run())
    assert expected[-1][0] == brisvox.EventType.END_OF_STREAM and segments_of(expected)
    assert all(g == expected for g in got)
    assert executor is None


def segments_of(triples):
    return [(a, b) for t, a, b in triples if t == brisvox.EventType.SPEECH_END]


def test_async_iteration_without_add_reader_waits_in_the_executor(engine, sample):
    # A loop that cannot watch a file descriptor (not a selector loop) still iterates: each wait
    # goes to its default executor.
    from brisvox import _aio

    async def run():
        _aio._loops[asyncio.get_running_loop()] = None  # as for a loop without add_reader
        with engine.open_stream(buffer_ms=7000) as s:
            s.push(sample[: 16000 * 6])
            s.finish()
            events = [e async for e in s]
        return events, asyncio.get_running_loop()._default_executor

    events, executor = asyncio.run(run())
    assert events[-1].type == brisvox.EventType.END_OF_STREAM and segments(events)
    assert executor is not None


def test_closing_a_stream_wakes_its_async_reader(engine):
    async def run():
        s = engine.open_stream()  # no audio: nothing will come
        asyncio.get_running_loop().call_later(0.1, s.close)
        with pytest.raises(brisvox.ClosedError):
            await s.__anext__()
        assert s.closed

    asyncio.run(run())


def test_waiting_releases_the_gil(engine):
    # While one thread waits in next_event (no audio: nothing comes), another runs Python code.
    with engine.open_stream() as s:
        ticks = 0
        stop = threading.Event()

        def count():
            nonlocal ticks
            while not stop.is_set():
                ticks += 1

        t = threading.Thread(target=count)
        t.start()
        try:
            time.sleep(0.05)
            before = ticks
            assert s.next_event(timeout=0.5) is None
            during = ticks - before
        finally:
            stop.set()
            t.join()
    assert during > 10000, during  # with the GIL held the counter would not have moved


def test_close_from_another_thread_ends_a_wait(engine):
    s = engine.open_stream()
    threading.Timer(0.2, s.close).start()
    with pytest.raises(brisvox.ClosedError):
        s.next_event(timeout=5)
    assert s.closed


@pytest.mark.parametrize("bad, error, words", [
    (np.zeros(16, np.float64), TypeError, "float64"),
    (np.zeros(16, np.int32), TypeError, "int32"),
    ([0.0] * 16, TypeError, "list"),
    (np.zeros((16, 2), np.float32), ValueError, "shape (16, 2)"),
    (np.zeros((1, 16), np.int16), ValueError, "1-D"),
])
def test_wrong_arrays_are_refused_with_a_message(engine, bad, error, words):
    with engine.open_stream() as s:
        with pytest.raises(error, match=r".*") as info:
            s.push(bad)
        assert words in str(info.value) and "Stream.push" in str(info.value)
        assert s.push(np.zeros(16, np.float32)) == 16  # the stream is still usable


def test_nan_is_bad_audio(engine):
    with engine.open_stream() as s:
        x = np.zeros(512, np.float32)
        x[100] = np.nan
        with pytest.raises(brisvox.BadAudioError) as info:
            s.push(x)
        assert isinstance(info.value, ValueError) and info.value.code == "bad_audio"
        assert "NaN" in str(info.value) or "nan" in str(info.value).lower()


def test_closed_and_finished_streams(engine):
    s = engine.open_stream()
    s.finish()
    with pytest.raises(brisvox.ClosedError):
        s.push(np.zeros(16, np.float32))
    assert [e.type for e in s] == [brisvox.EventType.END_OF_STREAM]
    assert s.next_event(timeout=0) is None and s.ended
    s.close()
    s.close()  # idempotent
    for call in (lambda: s.push(np.zeros(4, np.int16)), s.finish, s.poll, s.writable, lambda: next(iter(s))):
        with pytest.raises(brisvox.ClosedError, match="closed"):
            call()


def test_bad_options(engine):
    with pytest.raises(TypeError, match="unknown option 'treshold'"):
        engine.open_stream(treshold=0.3)
    with pytest.raises(TypeError, match="threshold must be a float"):
        engine.open_stream(threshold="high")
    with pytest.raises(brisvox.InvalidArgumentError, match="threshold"):
        engine.open_stream(threshold=2.0)
    with pytest.raises(brisvox.InvalidArgumentError, match="turn"):
        engine.open_stream(turn=True)  # no turn model in this engine
    with pytest.raises(ValueError, match="timeout"):
        engine.open_stream().next_event(timeout=-1)


def test_bad_engines():
    with pytest.raises(brisvox.IoError, match="not found") as info:
        brisvox.Engine(vad_model="/nonexistent.onnx")
    assert isinstance(info.value, OSError)
    with pytest.raises(brisvox.InvalidArgumentError):
        brisvox.Engine(max_streams=0)


def test_overloaded_at_max_streams():
    engine = brisvox.Engine(vad_workers=1, max_streams=2)
    a, b = engine.open_stream(), engine.open_stream()
    with pytest.raises(brisvox.OverloadedError):
        engine.open_stream()
    a.close()
    # The closed stream's slot is handed back by its worker, shortly after close() returns.
    deadline = time.monotonic() + 2
    while True:
        try:
            engine.open_stream().close()
            break
        except brisvox.OverloadedError:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    b.close()


def test_stream_keeps_its_engine_alive(sample):
    s = brisvox.Engine(vad_workers=1).open_stream()  # the engine has no other reference
    assert events_of(s, feed(s, sample[:16000 * 3]))[-1].type == brisvox.EventType.END_OF_STREAM


def test_shared_engine_is_one_per_models():
    assert brisvox.shared_engine() is brisvox.shared_engine("v6")
    assert brisvox.shared_engine().vad_model_path.endswith("silero_vad_v6.flat.onnx")
