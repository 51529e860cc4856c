#!/usr/bin/python3
"""End-to-end tests of speech-to-text on `brisvox serve --stt-model` (docs/PROTOCOL.md), on loopback.

POST /v1/transcribe must answer exactly the document `brisvox transcribe --format json` prints for
the same file; a WebSocket stream with events=transcript must get one transcript message per speech
segment, with the same texts; a server without --stt-model refuses both clearly; the per-model
metrics carry model="stt". Every server process is killed at the end, whatever happens.

  /usr/bin/python3 tests/server/test_transcribe.py --brisvox build/release/brisvox \
      --sample third_party/audio/sample.wav
"""
import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import wave

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from serve_process import Server, run_tests  # noqa: E402

import websockets  # Debian's python3-websockets  # noqa: E402


def http_request(method, url, body=None, timeout=120):
    req = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def cli_transcript(args, *options):
    out = subprocess.run([args.brisvox, "transcribe", "--model", "tiny.en", *options, args.sample], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    return json.loads(out)


def test_post_transcribe(server, args, reference):
    data = open(args.sample, "rb").read()
    status, body = http_request("POST", server.url("/v1/transcribe?name=sample.wav"), body=data)
    assert status == 200, (status, body)
    got = json.loads(body)
    want = dict(reference, file="sample.wav")
    assert got == want, f"{got}\n!=\n{want}"


def test_post_transcribe_decoding_and_prompt(server, args):
    # Beam search with the fallback and a prompt, asked in the query: the CLI's document for the
    # same options (the server has --stt-max-width 5 --stt-prompt-tokens 120).
    data = open(args.sample, "rb").read()
    query = "decoding=faster-whisper&prompt=Brisvox%20reads%20the%20news.&hotwords=Zendesk&name=sample.wav"
    status, body = http_request("POST", server.url(f"/v1/transcribe?{query}"), body=data)
    assert status == 200, (status, body)
    want = dict(cli_transcript(args, "--decoding", "faster-whisper", "--prompt", "Brisvox reads the news.",
                               "--hotwords", "Zendesk"), file="sample.wav")
    assert json.loads(body) == want, f"{body}\n!=\n{want}"
    # Wider than the server's lanes allow, or a prompt longer than its room: refused, saying why.
    status, body = http_request("POST", server.url("/v1/transcribe?beam_size=6"), body=data)
    assert status == 400 and b"max_width" in body, (status, body)
    long_prompt = "%20".join(["word"] * 200)
    status, body = http_request("POST", server.url(f"/v1/transcribe?prompt={long_prompt}"), body=data)
    assert status == 400 and b"prompt_tokens" in body, (status, body)


async def stream_transcripts(server, pcm, query=""):
    async with websockets.connect(server.ws_url("sample_rate=16000&encoding=pcm_s16le&events=transcript" + query),
                                  max_size=None, open_timeout=10) as ws:
        ready = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert ready["type"] == "ready" and "transcript" in ready["config"]["events"], ready
        for i in range(0, len(pcm), 32000):
            await ws.send(pcm[i:i + 32000])
        await ws.send(json.dumps({"type": "close"}))
        messages = []
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                messages.append(json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic())))
        except websockets.exceptions.ConnectionClosed:
            pass
        return messages


def test_stream_transcripts(server, pcm, reference):
    messages = asyncio.run(stream_transcripts(server, pcm))
    transcripts = [m for m in messages if m["type"] == "transcript"]
    ends = [m for m in messages if m["type"] == "speech_end"]
    assert len(transcripts) == len(ends) == len(reference["segments"]), (len(transcripts), len(ends), messages)
    for t, want in zip(transcripts, reference["segments"]):
        assert t["text"].strip() == want["text"], (t, want)
        assert abs(t["start"] - want["start"]) < 1e-6 and abs(t["end"] - want["end"]) < 1e-6, (t, want)
        assert isinstance(t["avg_logprob"], float) and 0 <= t["no_speech_prob"] <= 1 and t["no_speech"] is False, t
    # The stream's end (the server's close 1000) waits for the last transcript: none is missing above.


def assert_same_words(got, want):
    # Times exactly; probabilities to float32 noise (this server's longer decoder lanes, for
    # prompts, change the last bits of a step's sums).
    assert [(w["start"], w["end"], w["word"]) for w in got] == [(w["start"], w["end"], w["word"]) for w in want]
    assert all(abs(a["probability"] - b["probability"]) < 1e-4 for a, b in zip(got, want))


def test_word_timestamps(server, args, pcm):
    # The CLI's words (--word-timestamps) in POST /v1/transcribe's document and in a stream's
    # transcript messages.
    want = cli_transcript(args, "--word-timestamps")
    words = [w for seg in want["segments"] for w in seg["words"]]
    assert len(words) > 20 and all(w["start"] <= w["end"] for w in words), want
    data = open(args.sample, "rb").read()
    status, body = http_request("POST", server.url("/v1/transcribe?word_timestamps=true&name=sample.wav"), body=data)
    assert status == 200, (status, body)
    got = json.loads(body)
    assert got["text"] == want["text"]
    assert_same_words([w for seg in got["segments"] for w in seg["words"]], words)
    messages = asyncio.run(stream_transcripts(server, pcm, "&word_timestamps=true"))
    transcripts = [m for m in messages if m["type"] == "transcript"]
    assert_same_words([w for t in transcripts for w in t["words"]], words)
    status, body = http_request("POST", server.url("/v1/transcribe?word_timestamps=maybe"), body=data)
    assert status == 400 and b"word_timestamps" in body, (status, body)


async def stream_with_partials(server, pcm, segments):
    """Sends the audio as fast as the server takes it, but at 1 s into each of `segments` (the
    sample's, as the CLI finds them; all are longer) waits (up to 30 s) for a partial of it, so that
    a loaded machine makes the test slower, never the partials late for their segment."""
    async with websockets.connect(server.ws_url("sample_rate=16000&encoding=pcm_s16le&events=transcript&partial_ms=500"),
                                  max_size=None, open_timeout=10) as ws:
        messages = []
        news = asyncio.Event()

        async def receive():
            try:
                async for raw in ws:
                    messages.append(json.loads(raw))
                    news.set()
            except websockets.exceptions.ConnectionClosed:
                pass

        def has_partial(start):
            return any(m["type"] == "transcript_partial" and abs(m["start"] - start) < 0.05 for m in messages)

        receiver = asyncio.create_task(receive())
        pauses = [seg["start"] + 1.0 for seg in segments]
        for i in range(0, len(pcm), 3200):
            now_s = i / 32000
            for seg, pause in zip(segments, pauses):
                if pause <= now_s < pause + 0.1:
                    deadline = time.monotonic() + 30
                    while not has_partial(seg["start"]) and time.monotonic() < deadline:
                        news.clear()
                        try:
                            await asyncio.wait_for(news.wait(), 1)
                        except asyncio.TimeoutError:
                            pass
            await ws.send(pcm[i:i + 3200])
        await ws.send(json.dumps({"type": "close"}))
        await asyncio.wait_for(receiver, 120)
        return messages


def test_partial_transcripts(server, pcm, reference):
    # partial_ms=500: transcript_partial messages between a segment's speech_start and its
    # transcript, their agreed text only growing; the transcripts as without.
    messages = asyncio.run(stream_with_partials(server, pcm, reference["segments"]))
    ready = [m for m in messages if m["type"] == "transcript"]
    assert [t["text"].strip() for t in ready] == [s["text"] for s in reference["segments"]]
    partials = [m for m in messages if m["type"] == "transcript_partial"]
    assert len({p["start"] for p in partials}) == len(reference["segments"]), messages
    agreed = {}
    for p in partials:
        assert set(p) == {"type", "start", "end", "text", "unstable", "language"}, p
        previous = agreed.get(p["start"], "")
        assert p["text"].startswith(previous), (previous, p)
        agreed[p["start"]] = p["text"]
        assert p["end"] > p["start"]
    finals = {t["start"]: t["text"] for t in ready}
    assert set(agreed) <= set(finals), (agreed, finals)
    print("  " + "\n  ".join(f'{p["start"]:.2f}-{p["end"]:.2f} [{p["text"]}] ~[{p["unstable"]}]' for p in partials))
    status, body = http_request("POST", server.url("/v1/transcribe?partial_ms=500"), body=pcm[:3200])
    assert status == 400 and b"partial_ms" in body, (status, body)


def test_metrics(server):
    status, body = http_request("GET", server.url("/metrics"))
    assert status == 200
    text = body.decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    assert values['brisvox_batches_total{model="stt"}'] > 0, text
    assert values['brisvox_model_inputs_total{model="stt"}'] > values['brisvox_batches_total{model="stt"}'], \
        "decoder steps batch several segments"
    assert values['brisvox_run_errors_total{model="stt"}'] == 0
    assert values['brisvox_model_workers{model="stt",family="whisper"}'] == 1


def test_without_stt_model(plain, args):
    status, body = http_request("POST", plain.url("/v1/transcribe"), body=open(args.sample, "rb").read())
    assert status == 400 and b"Whisper" in body and b"--stt-model" in body, (status, body)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisvox", required=True)
    ap.add_argument("--sample", required=True)
    args = ap.parse_args()
    with wave.open(args.sample, "rb") as w:
        assert w.getframerate() == 16000 and w.getsampwidth() == 2 and w.getnchannels() == 1
        pcm = w.readframes(w.getnframes())
    reference = cli_transcript(args)
    assert len(reference["segments"]) == 5, reference
    servers = []
    try:
        server = Server(args.brisvox, "--workers", "1", "--stt-model", "tiny.en", "--max-body-bytes", "4000000",
                        "--stt-max-width", "5", "--stt-prompt-tokens", "120")
        servers.append(server)
        plain = Server(args.brisvox, "--workers", "1")
        servers.append(plain)
        tests = [("post_transcribe", lambda: test_post_transcribe(server, args, reference)),
                 ("post_transcribe_decoding_and_prompt", lambda: test_post_transcribe_decoding_and_prompt(server, args)),
                 ("stream_transcripts", lambda: test_stream_transcripts(server, pcm, reference)),
                 # Numerics (three transcriptions of the sample with their alignment passes): the
                 # release phase's; the sanitizers' phases run the words' code in the C++ tests.
                 *([("word_timestamps", lambda: test_word_timestamps(server, args, pcm))]
                   if os.environ.get("BRISVOX_TEST_PRESET") not in ("asan", "tsan") else []),
                 ("partial_transcripts", lambda: test_partial_transcripts(server, pcm, reference)),
                 ("metrics", lambda: test_metrics(server)),
                 ("without_stt_model", lambda: test_without_stt_model(plain, args))]
    except BaseException:
        for s in servers:
            s.kill()
        raise
    failures = run_tests(tests, servers)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
