#!/usr/bin/python3
"""A telephony call's application for `brisvox serve --call-app ws://127.0.0.1:9000/` (docs/TELEPHONY.md).
It greets the caller, answers each thing heard, stops when talked over, and hangs up on '#'.
    python3 telephony_app.py [PORT]        (Debian: apt-get install python3-websockets)"""
import asyncio
import json
import sys

import websockets


async def call(ws, path=None):
    said = 0

    async def say(text):
        nonlocal said
        said += 1
        await ws.send(json.dumps({"type": "speak", "text": text, "id": f"s{said}"}))

    async for raw in ws:
        m = json.loads(raw)
        kind = m["type"]
        if kind == "call_start":
            name = m["parameters"].get("FirstName", "there")
            print(f"call {m['call_id']} from {m['provider']}, stream {m['stream_id']}", flush=True)
            await say(f"Hello {name}, thanks for calling. How can I help?")
        elif kind == "transcript" and m["text"].strip():
            print(f"caller: {m['text'].strip()}", flush=True)
            await say(f"You said: {m['text'].strip()}")
        elif kind == "interrupted":
            print(f"the caller talked over {m['id']} after {m['sent_ms']:.0f} ms", flush=True)
        elif kind == "speak_done":
            print(f"{m['id']} was heard to its end", flush=True)
        elif kind == "dtmf":
            print(f"key {m['digit']}", flush=True)
            if m["digit"] == "#":
                await say("Goodbye.")
                await ws.send(json.dumps({"type": "hangup"}))  # after the goodbye is heard
        elif kind == "call_end":
            print(f"call ended: {m['reason']}", flush=True)
        elif kind == "error":
            print(f"error: {m['message']}", flush=True)


async def main(port):
    async with websockets.serve(call, "127.0.0.1", port):
        print(f"listening on ws://127.0.0.1:{port}/", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 9000))
