"""Waiting for a stream's or a call's events from asyncio without a thread per wait.

`async for event in stream` (Stream.__anext__ and Call.__anext__ return next_event(source) below)
and the framework adapters' async paths (window_probability: BrisvoxVADAnalyzer.analyze_audio)
wait here.

Each running event loop has one _LoopEvents: a brisvox._LoopNotifier (an eventfd) watched with
loop.add_reader. A stream that waits is attached to it (Stream._notify_via); the engine worker that
writes the stream's events queues the stream's token and makes the fd readable, once for however
many streams had events in the meantime. The loop then resolves the futures of those streams. So
100 calls on one loop cost one loop wake-up per VAD batch, where a wait in an executor thread costs
a thread hand-off each way per window (docs/PYTHON.md). A loop without add_reader (not a selector
loop) falls back to waiting in the loop's default executor.

A call also holds events back until their time (its speech within the playout lead, its marks
when playback reaches them), and no engine worker announces that time: a wait ends by then too
(Call._next_due).
"""

import asyncio
import weakref

from . import _brisvox, _window

_SLICE_S = 0.5  # the executor fallback's wait: bounded, so a cancelled task frees its thread soon
_loops: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopEvents | None]" = weakref.WeakKeyDictionary()


class _LoopEvents:
    """One event loop's wake-ups from the engine (see the module's docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._notifier = _brisvox._LoopNotifier()
        self._waiters: dict[int, asyncio.Future] = {}
        loop.add_reader(self._notifier.fileno(), self._on_ready)

    def _on_ready(self) -> None:
        for token in self._notifier.take():
            waiter = self._waiters.pop(token, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def attach(self, stream) -> int:
        """The stream's token; its events wake this loop from now on (call before looking)."""
        return stream._notify_via(self._notifier)

    async def wait(self, token: int, timeout_s: float) -> None:
        """Returns when the stream of `token` has had events since it was last told of (maybe
        none left: another reader, or an announcement of events already read), or after
        timeout_s. The caller looks at the stream again either way."""
        waiter = self._loop.create_future()
        self._waiters[token] = waiter
        timer = self._loop.call_later(timeout_s, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            if self._waiters.get(token) is waiter:
                del self._waiters[token]


def _expire(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _loop_events() -> "_LoopEvents | None":
    """The running loop's _LoopEvents (made on first use); None when the loop cannot watch an fd."""
    loop = asyncio.get_running_loop()
    try:
        return _loops[loop]
    except KeyError:
        pass
    try:
        events = _LoopEvents(loop)
    except NotImplementedError:  # e.g. a proactor loop: no add_reader
        events = None
    _loops[loop] = events
    return events


async def next_event(stream):
    """The next event of a Stream or a Call; StopAsyncIteration once it has ended (a stream after
    END_OF_STREAM; a call once its speech has ended too)."""
    events = _loop_events()
    if events is None:
        loop = asyncio.get_running_loop()
        while True:
            event = await loop.run_in_executor(None, stream.next_event, _SLICE_S)
            if event is not None:
                return event
            if stream.ended:
                raise StopAsyncIteration
    token = events.attach(stream)
    while True:
        event = stream.next_event(0)
        if event is not None:
            return event
        if stream.ended:
            raise StopAsyncIteration
        due = stream._next_due()  # a call's held event: nobody wakes the loop when it is due
        await events.wait(token, _SLICE_S if due is None else min(_SLICE_S, due))


async def window_probability(stream, samples, timeout_s: float) -> float:
    """As brisvox._window.window_probability, awaited: pushes one window and returns its
    probability, with the event loop free meanwhile."""
    loop = asyncio.get_running_loop()
    events = _loop_events()
    if events is None:
        return await loop.run_in_executor(None, _window.window_probability, stream, samples, timeout_s)
    token = events.attach(stream)
    stream.push(samples)
    deadline = loop.time() + timeout_s
    while True:
        event = stream.next_event(0)
        if event is None:
            left = deadline - loop.time()
            if left <= 0:
                raise _window.timed_out(timeout_s)
            await events.wait(token, left)
            continue
        probability = _window.probability_of(event)
        if probability is not None:
            return probability
