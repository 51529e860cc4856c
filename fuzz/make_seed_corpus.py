#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/ (deterministic: the same
files on every run; Python's standard library only). Small valid inputs, so that libFuzzer starts
from the shapes the parsers accept and mutates from there. Inputs that once found a bug
(regression-*) are kept in the corpus folders by hand and not touched here.

    fuzz/make_seed_corpus.py [OUT_DIR]     # default: fuzz/corpus next to this script
"""
import math
import pathlib
import random
import struct
import sys


def sine_s16(n, rate=8000, freq=440.0, amp=0.5):
    return [int(amp * 32767 * math.sin(2 * math.pi * freq * i / rate)) for i in range(n)]


def riff(chunks):
    body = b"WAVE" + b"".join(chunks)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def chunk(tag, payload):
    return tag + struct.pack("<I", len(payload)) + payload + (b"\0" if len(payload) % 2 else b"")


def fmt_chunk(tag, channels, rate, bits, extensible=False):
    block = channels * bits // 8
    payload = struct.pack("<HHIIHH", 0xFFFE if extensible else tag, channels, rate, rate * block, block, bits)
    if extensible:  # cbSize, valid bits, channel mask, sub-format GUID (tag + the standard tail)
        payload += struct.pack("<HHI", 22, bits, 0) + struct.pack("<H", tag) + bytes.fromhex("000000001000800000aa00389b71")
    elif tag != 1:
        payload += struct.pack("<H", 0)
    return chunk(b"fmt ", payload)


def wav(tag, channels, rate, bits, data, extra=(), extensible=False):
    return riff([fmt_chunk(tag, channels, rate, bits, extensible), *extra, chunk(b"data", data)])


def rf64(tag, channels, rate, bits, data):
    # RF64: the 32-bit sizes say 0xFFFFFFFF and the 'ds64' chunk holds the real ones.
    fmt = fmt_chunk(tag, channels, rate, bits)
    riff_size = 4 + (8 + 28) + len(fmt) + 8 + len(data)
    ds64 = chunk(b"ds64", struct.pack("<QQQI", riff_size, len(data), len(data) * 8 // bits // channels, 0))
    return b"RF64\xff\xff\xff\xffWAVE" + ds64 + fmt + b"data\xff\xff\xff\xff" + data


def mulaw(sample):
    sign = 0x80 if sample < 0 else 0
    magnitude = min(abs(sample), 32635) + 0x84
    exponent = max(0, magnitude.bit_length() - 8)
    return ~(sign | (exponent << 4) | ((magnitude >> (exponent + 3)) & 0x0F)) & 0xFF


def aiff(samples, rate):
    data = struct.pack(">%dh" % len(samples), *samples)
    exponent = 16383 + 15  # the 80-bit extended rate, for integer rates below 65536
    mantissa = rate << (63 - (rate.bit_length() - 1))
    rate80 = struct.pack(">HQ", exponent - 15 + rate.bit_length() - 1, mantissa)
    comm = struct.pack(">hIh", 1, len(samples), 16) + rate80
    ssnd = struct.pack(">II", 0, 0) + data
    body = b"AIFF" + b"COMM" + struct.pack(">I", len(comm)) + comm + b"SSND" + struct.pack(">I", len(ssnd)) + ssnd
    return b"FORM" + struct.pack(">I", len(body)) + body


def aiff_with_metadata(samples, rate, aifc=False):
    # AIFF's metadata chunks (NAME, ANNO, MARK, COMT, INST) and AIFC's FVER: the parsers with loops.
    def ch(tag, body):
        return tag + struct.pack(">I", len(body)) + body + (b"\0" if len(body) % 2 else b"")
    rate80 = struct.pack(">HQ", 16383 + rate.bit_length() - 1, rate << (63 - (rate.bit_length() - 1)))
    comm = struct.pack(">hIh", 1, len(samples), 16) + rate80 + (b"NONE\x0enot compressed\0" if aifc else b"")
    meta = (ch(b"NAME", b"fuzz") + ch(b"ANNO", b"note") + ch(b"MARK", struct.pack(">HHI", 1, 1, 0) + b"\x01a")
            + ch(b"COMT", struct.pack(">HIHH", 1, 0, 0, 1) + b"c") + ch(b"INST", bytes(20)))
    ssnd = struct.pack(">II", 0, 0) + struct.pack(">%dh" % len(samples), *samples)
    body = (b"AIFC" + ch(b"FVER", struct.pack(">I", 0xA2805140)) if aifc else b"AIFF") + ch(b"COMM", comm) + meta + ch(b"SSND", ssnd)
    return b"FORM" + struct.pack(">I", len(body)) + body


def au(samples, rate):
    data = struct.pack(">%dh" % len(samples), *samples)
    return b".snd" + struct.pack(">IIIII", 24, len(data), 3, rate, 1) + data  # 3: 16-bit linear


def audio_file_seeds():
    s = sine_s16(200)
    s16 = struct.pack("<%dh" % len(s), *s)
    stereo = struct.pack("<%dh" % (2 * len(s)), *[v for x in s for v in (x, -x)])
    floats = struct.pack("<%df" % len(s), *[x / 32768 for x in s])
    yield "wav_s16_8k.wav", wav(1, 1, 8000, 16, s16)
    yield "wav_s16_16k_stereo.wav", wav(1, 2, 16000, 16, stereo)
    yield "wav_u8.wav", wav(1, 1, 8000, 8, bytes((x >> 8) + 128 for x in s))
    yield "wav_s24.wav", wav(1, 1, 44100, 24, b"".join(struct.pack("<i", x << 8)[:3] for x in s))
    yield "wav_s32.wav", wav(1, 1, 48000, 32, struct.pack("<%di" % len(s), *[x << 16 for x in s]))
    yield "wav_f32.wav", wav(3, 1, 16000, 32, floats)
    yield "wav_f32_nan.wav", wav(3, 1, 16000, 32, floats[:40] + struct.pack("<f", float("nan")) + floats[44:])
    yield "wav_f64.wav", wav(3, 1, 16000, 64, struct.pack("<%dd" % len(s), *[x / 32768 for x in s]))
    yield "wav_mulaw.wav", wav(7, 1, 8000, 8, bytes(mulaw(x) for x in s))
    yield "wav_alaw.wav", wav(6, 1, 8000, 8, bytes(mulaw(x) ^ 0x55 for x in s))
    yield "wav_extensible.wav", wav(1, 1, 16000, 16, s16, extensible=True)
    yield "wav_list_chunk.wav", wav(1, 1, 8000, 16, s16, extra=[chunk(b"LIST", b"INFOISFT\x05\0\0\0fuzz\0")])
    yield "wav_truncated.wav", wav(1, 1, 8000, 16, s16)[:200]
    streamed = bytearray(wav(1, 1, 8000, 16, s16))
    streamed[40:44] = b"\xff\xff\xff\xff"  # a streaming writer's unpatched size
    yield "wav_unpatched_size.wav", bytes(streamed)
    yield "wav_no_samples.wav", wav(1, 1, 8000, 16, b"")
    yield "rf64_s16.wav", rf64(1, 1, 8000, 16, s16)
    yield "aiff_s16.aiff", aiff(s, 8000)
    yield "aiff_metadata.aiff", aiff_with_metadata(s[:100], 8000)
    yield "aifc_metadata.aiff", aiff_with_metadata(s[:100], 8000, aifc=True)
    yield "au_s16.au", au(s, 8000)


def pcm_decoder_seeds():
    rng = random.Random(1)
    for n in (1, 7, 64, 513):
        yield f"random_{n}", bytes(rng.randrange(256) for _ in range(n))
    # Finite floats, then NaN and -Inf among them, with chunk sizes at the end.
    floats = struct.pack("<8f", 0.5, -0.25, 1.5, 0.0, -1.0, 0.125, 3.0, -0.75)
    yield "f32_finite", floats + bytes([3, 1, 2, 5, 16])
    yield "f32_nan", floats[:12] + b"\0\0\xc0\x7f" + floats[16:] + bytes([5, 2, 1])
    yield "f32_inf", floats[:4] + b"\0\0\x80\xff" + floats[8:] + bytes([1, 1, 1])


def resampler_seeds():
    for rate, name in ((8000, "tone_8k"), (44100, "tone_44k"), (48000, "tone_48k")):
        s = sine_s16(400, rate=rate, freq=300.0)
        yield name, struct.pack("<%dh" % len(s), *s) + struct.pack("<I", rate) + bytes([0, 1, 200, 3])
    yield "silence", bytes(1000) + bytes([1, 0, 255])


def query_params_seeds():
    queries = [
        "sample_rate=8000&encoding=mulaw",
        "sample_rate=16000&encoding=pcm_s16le&threshold=0.6&min_silence_ms=300",
        "/v1/stream?sample_rate=48000&encoding=pcm_f32le&events=vad,turn&stop_ms=300",
        "/v1/vad?name=call%20one.wav&encoding=alaw&model_rate=8000",
        "encoding=pcm_s16le&sample_rate=44100&max_speech_s=15&speech_pad_ms=30&neg_threshold=0.35",
        "min_speech_ms=250&min_silence_at_max_speech_ms=98&use_max_poss_sil_at_max_speech=false",
        "events=turn&pre_speech_ms=500&max_silence_ms=3000&turn_threshold=0.5&token=abc",
        "threshold=1e-3&name=a+b&&model_rate=16000",
    ]
    for i, q in enumerate(queries):
        yield f"query_{i}", q.encode()


def control_message_seeds():
    messages = ['{"type":"flush"}', '{"type":"reset","id":7}', '{"type": "close"}',
                '{"type":"pause"}', '{"id":1}', '["flush"]', '{"type":"\\u00e9\\ud83d\\ude00"}']
    for i, m in enumerate(messages):
        yield f"control_{i}.json", m.encode()


def call_params_seeds():
    # The first byte picks the parser: even, a client's message; odd, the upgrade's query.
    messages = ['{"type":"speak","text":"Hello there.","id":"r1"}', '{"type":"speak","text":"Hi.","id":7}',
                '{"type":"cancel"}', '{"type":"mark","name":"after r1"}', '{"type":"close"}',
                '{"type":"speak"}', '{"type":"speak","text":"x","id":{"a":1}}', '{"type":"speak","text":"\\udc80"}']
    for i, m in enumerate(messages):
        yield f"message_{i}.json", b"\x00" + m.encode()
    queries = ["sample_rate=8000&encoding=mulaw&events=turn,transcript&barge_in_on=turn_end",
               "barge_in=false&playout_lead_ms=0&voice=en_US-joe-medium&noise_scale=0&speaker_id=1",
               "barge_in_min_ms=600&volume=0.5&fast_start=0&tag=call-42&token=t",
               "barge_in_on=turn_end", "playout_lead_ms=99999", "sample_rate=44100&length_scale=1.2"]
    for i, q in enumerate(queries):
        yield f"query_{i}", b"\x01" + q.encode()


def twilio_messages_seeds():
    # As Twilio's "Media Streams - WebSocket Messages" shows them.
    sid = '"streamSid":"MZ18ad3ab5a668481ce02b83e7395059f0"'
    messages = ['{"event":"connected","protocol":"Call","version":"1.0.0"}',
                '{"event":"start","sequenceNumber":"1","start":{"accountSid":"AC1","streamSid":"MZ18ad3ab5a668481ce02b83e7395059f0",'
                '"callSid":"CA1","tracks":["inbound"],"customParameters":{"token":"t","FirstName":"Jane"},'
                '"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}},' + sid + '}',
                '{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"5",'
                '"payload":"/////w=="},' + sid + '}',
                '{"event":"dtmf",' + sid + ',"sequenceNumber":"5","dtmf":{"track":"inbound_track","digit":"1"}}',
                '{"event":"mark","sequenceNumber":"4",' + sid + ',"mark":{"name":"bv-1"}}',
                '{"event":"stop","sequenceNumber":"5",' + sid + ',"stop":{"accountSid":"AC1","callSid":"CA1"}}',
                '{"event":"media","media":{"payload":"a=b="}}']
    for i, m in enumerate(messages):
        yield f"twilio_{i}.json", m.encode()


def telnyx_messages_seeds():
    # As Telnyx's "Media Streaming over Websockets" guide and its AsyncAPI page show them.
    sid = '"stream_id":"32de0dea-53cb-4b21-89a4-9e1819c043bc"'
    messages = ['{"event":"connected","version":"1.0.0","x-telnyx-streaming-auth-token":"t"}',
                '{"event":"start","sequence_number":"1","start":{"user_id":"3e6f995f-85f7-4705-9741-53b116d28237",'
                '"call_control_id":"v3:MdI91X4lWFEs7IgbBEOT9M4AigoY08M0WWZFISt1Yw2axZ_IiE4pqg",'
                '"client_state":"aGF2ZSBhIG5pY2UgZGF5ID1d","custom_parameters":{"token":"t"},'
                '"media_format":{"encoding":"PCMU","sample_rate":8000,"channels":1}},' + sid + '}',
                '{"event":"media","sequence_number":"4","media":{"track":"inbound","chunk":"2","timestamp":"5",'
                '"payload":"/38="},' + sid + '}',
                '{"event":"dtmf",' + sid + ',"occurred_at":"2022-12-20T15:00:00Z","sequence_number":"5",'
                '"dtmf":{"digit":"1"}}',
                '{"event":"mark","sequence_number":"6",' + sid + ',"mark":{"name":"bv-3"}}',
                '{"event":"error",' + sid + ',"payload":{"code":100002,"title":"Unknown Error","detail":"x"}}',
                '{"event":"stop","sequence_number":"7","stop":{"user_id":"u","call_control_id":"c"},' + sid + '}']
    for i, m in enumerate(messages):
        yield f"telnyx_{i}.json", m.encode()


def vonage_messages_seeds():
    # As Vonage's "WebSockets" guide of the Voice API shows them.
    messages = ['{"event":"websocket:connected","content-type":"audio/l16;rate=16000","prop1":"value1",'
                '"token":"t"}',
                '{"event":"websocket:connected","content-type":"audio/l16;rate=8000"}',
                '{"event":"websocket:dtmf","digit":"5","duration":260}',
                '{"event":"websocket:notify","payload":{"name":"bv-3"}}',
                '{"event":"websocket:cleared"}']
    for i, m in enumerate(messages):
        yield f"vonage_{i}.json", m.encode()


def asterisk_messages_seeds():
    # As Asterisk's "WebSocket" channel driver page and chan_websocket.c write them, in both formats.
    messages = ["MEDIA_START connection_id:e226e283-c90a-4ea9-9e37-389000b9ef47 channel:WebSocket/c1-00000001 "
                "channel_id:1733400000.12 format:ulaw optimal_frame_size:160 ptime:20",
                '{"event":"MEDIA_START","connection_id":"c1","channel":"WebSocket/c1-00000002",'
                '"channel_id":"1733400000.13","format":"slin16","optimal_frame_size":640,"ptime":20,'
                '"channel_variables":{"CUSTOMER":"42"}}',
                "DTMF_END digit:5 channel_id:1733400000.12",
                '{"event":"DTMF_END","channel_id":"x","digit":"#"}',
                "MEDIA_BUFFERING_COMPLETED bv-3",
                '{"event":"MEDIA_BUFFERING_COMPLETED","channel_id":"x","correlation_id":"bv-3"}',
                "MEDIA_XOFF",
                "ERROR channel_id:x error_text:Unable to parse JSON command"]
    for i, m in enumerate(messages):
        yield f"asterisk_{i}.txt", m.encode()


def segmenter_seeds():
    # Probabilities (one byte per window) from the front; the parameters come from the end.
    speech, silence = bytes([230]) * 20, bytes([10]) * 12
    yield "two_utterances", silence + speech + silence + speech + silence + bytes([0, 120, 60, 9, 1])
    yield "long_speech_cut", bytes([240]) * 120 + bytes([40, 128, 30, 80, 1, 0])
    yield "near_thresholds", bytes(range(248, 256)) * 8 + bytes([200, 7, 3])
    yield "pauses_in_speech", (speech + bytes([5]) * 4) * 5 + bytes([15, 90, 200, 0])


def turn_detector_seeds():
    push = lambda p: bytes([0, p])  # op < 200: a frame of probability p / 247
    verdict = lambda p: bytes([210, p])  # 200 <= op < 240: a verdict for the pending request
    turn = push(240) * 15 + push(5) * 12
    yield "turn_then_verdict_complete", push(5) * 5 + turn + verdict(255) + push(5) * 4 + bytes([1, 50, 40, 30])
    yield "turn_incomplete_then_more", turn + verdict(10) + push(240) * 6 + push(5) * 40 + bytes([0, 90])
    yield "speech_to_the_end", push(5) * 3 + push(240) * 30 + bytes([1, 20])
    yield "stale_verdicts", turn + bytes([250, 3, 120]) + push(240) * 4 + verdict(200) + push(5) * 10


TARGETS = {
    "audio_file_fuzzer": audio_file_seeds,
    "pcm_decoder_fuzzer": pcm_decoder_seeds,
    "resampler_fuzzer": resampler_seeds,
    "query_params_fuzzer": query_params_seeds,
    "control_message_fuzzer": control_message_seeds,
    "call_params_fuzzer": call_params_seeds,
    "twilio_messages_fuzzer": twilio_messages_seeds,
    "telnyx_messages_fuzzer": telnyx_messages_seeds,
    "vonage_messages_fuzzer": vonage_messages_seeds,
    "asterisk_messages_fuzzer": asterisk_messages_seeds,
    "streaming_segmenter_fuzzer": segmenter_seeds,
    "turn_detector_fuzzer": turn_detector_seeds,
}


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "corpus"
    for target, seeds in TARGETS.items():
        folder = out / target
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in seeds():
            (folder / name).write_bytes(data)


if __name__ == "__main__":
    main()
