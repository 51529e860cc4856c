"""`async for event in stream`: Stream.__anext__ returns next_event(stream) below.

The wait runs in the event loop's default executor (a thread), with the GIL released inside
Stream.next_event, so the loop goes on serving other tasks. Waits are sliced (0.5 s) so that a
cancelled task does not leave a thread blocked for long.
"""

import asyncio

_SLICE_S = 0.5


async def next_event(stream):
    loop = asyncio.get_running_loop()
    while True:
        event = await loop.run_in_executor(None, stream.next_event, _SLICE_S)
        if event is not None:
            return event
        if stream.ended:
            raise StopAsyncIteration
