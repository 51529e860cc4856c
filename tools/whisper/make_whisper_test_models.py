#!/usr/bin/python3
"""Generates small Whisper model folders with the real contracts of brisvox's three layouts, for
the tests that need no real weights: python3-onnx (1.12) and python3-numpy from Debian, run by
the build (tests/CMakeLists.txt), or from the venv.

  make_whisper_test_models.py OUT_DIR [--quiet]

Every model has random weights (whisper_weights.random_weights, numpy default_rng): its tokens
mean nothing, but the same weights written in each layout must decode to the same tokens, which
is what the loader tests check. Two configurations, so that no dimension can be assumed:

  whisper-test-en     English-only style: width 64, 4 heads, 2 encoder + 2 decoder layers,
                      200 audio positions (a 4 s "full" window), 64 text positions, 1812 tokens
                      (256 byte tokens, 44 merges, specials, 1501 timestamps)
  whisper-test-multi  multilingual: width 48, 3 heads, 1 encoder + 3 decoder layers, 150 audio
                      positions, 48 text positions, 4 languages (en, de, fr, es)

Folders (each model in each layout):
  <name>/            brisvox layout: encoder.onnx, decoder.onnx, whisper.json, vocabulary.txt
  <name>-sherpa/     sherpa-onnx layout: test-encoder.onnx (configuration in metadata_props),
                     test-decoder.onnx, test-tokens.txt
  <name>-optimum/    Optimum layout: encoder_model.onnx, decoder_model_merged.onnx, config.json,
                     generation_config.json, tokenizer.json
and, from whisper-test-en's weights, models that must be refused or that misbehave on purpose:
  whisper-test-bad-decoder/   decoder.onnx built with 2 heads while whisper.json says 4: its
                              input self_k_0 is [batch, 2, cache, 32], not [batch, 4, cache, 16]
  whisper-test-bad-encoder/   encoder.onnx taking 64 mel bins (mel [batch, 64, frames])
  whisper-test-never-eot/     a decoder whose final LayerNorm has gain 0 and bias 4 x the
                              embedding of token 'a': every step's logits are embedding . bias,
                              whose maximum is 'a' (|e_a|^2 ~ 16 against e_a . e_j ~ N(0, 2^2)
                              for the other 1811 tokens), so it never emits <|endoftext|>
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import convert_ct2  # noqa: E402
import whisper_onnx  # noqa: E402
from whisper_weights import Dims, random_weights  # noqa: E402

MERGES_EN = ["\u0120the", "\u0120a", "\u0120hello", "\u0120world", "ing", "\u0120and", "\u0120to",
             "\u0120of", "\u0120is", "\u0120you", "er", "\u0120that", "\u0120it", "\u0120for",
             "\u0120please", "\u0120press", "\u0120one", "\u0120two", "\u0120call", "\u0120number",
             "\u0120enter", "\u0120your", "\u0120pound", "\u0120key", "\u0120followed", "\u0120by",
             "ed", "\u0120mess", "age", "\u0120time", "\u0120thank", "\u0120goodbye", "\u0120is",
             "\u0120not", "\u0120in", "\u0120on", "\u0120be", "\u0120with", "\u0120this", "\u0120has",
             "\u0120been", "\u0120will", "\u0120at", "\u0120or"]


def vocabulary(n_merges: int, languages: list, multilingual: bool):
    """GPT-2 spellings for every id: 256 byte tokens, merges, specials, 1501 timestamps."""
    table = convert_ct2.bytes_to_unicode()
    # GPT-2's first 256 ids are the byte characters, printable bytes first, then the others.
    tokens = list(dict.fromkeys([table[b] for b in list(range(ord("!"), ord("~") + 1))
                                 + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))]
                                + [table[b] for b in range(256)]))
    merges = []
    for m in MERGES_EN:
        if m not in tokens and m not in merges:
            merges.append(m)
    tokens += merges[:n_merges]
    specials = ["<|endoftext|>", "<|startoftranscript|>"] + [f"<|{c}|>" for c in languages]
    specials += ["<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>",
                 "<|nospeech|>" if multilingual else "<|nocaptions|>", "<|notimestamps|>"]
    tokens += specials
    tokens += [f"<|{i * 0.02:.2f}|>" for i in range(1501)]
    return tokens


def write_model(out_dir: str, name: str, w, vocab: list, multilingual: bool, quiet: bool):
    tokens = convert_ct2.special_tokens(vocab, w.dims.n_vocab)
    tokens["multilingual"] = multilingual  # (real vocabularies tell by their size)
    index = {t: i for i, t in enumerate(vocab)}
    non_speech = [index[c] for c in ['"', "#", "(", ")", "*", "+", "/", ":", ";", "<", "=", ">", "@"]]
    special = [tokens[k] for k in ("transcribe", "translate", "sot", "sot_prev", "sot_lm", "no_speech")]
    ct2_config = {"suppress_ids": sorted(set(non_speech + special)),
                  "suppress_ids_begin": [tokens["blank"], tokens["eot"]]}

    # brisvox
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    vocab_path = os.path.join(d, "vocabulary.txt")
    with open(vocab_path, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    whisper_onnx.save(whisper_onnx.brisvox_encoder(w), os.path.join(d, "encoder.onnx"))
    whisper_onnx.save(whisper_onnx.brisvox_decoder(w), os.path.join(d, "decoder.onnx"))
    cfg = convert_ct2.brisvox_config(w, tokens, ct2_config, len(vocab))
    with open(os.path.join(d, "whisper.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)

    # sherpa-onnx
    d = os.path.join(out_dir, name + "-sherpa")
    os.makedirs(d, exist_ok=True)
    meta = whisper_onnx.sherpa_metadata(w, dict(tokens, non_speech=non_speech))
    whisper_onnx.save(whisper_onnx.sherpa_encoder(w, meta), os.path.join(d, "test-encoder.onnx"))
    whisper_onnx.save(whisper_onnx.sherpa_decoder(w), os.path.join(d, "test-decoder.onnx"))
    convert_ct2.write_sherpa_tokens(vocab, tokens["eot"], os.path.join(d, "test-tokens.txt"))

    # Optimum
    d = os.path.join(out_dir, name + "-optimum")
    os.makedirs(d, exist_ok=True)
    whisper_onnx.save(whisper_onnx.optimum_encoder(w), os.path.join(d, "encoder_model.onnx"))
    whisper_onnx.save(whisper_onnx.optimum_decoder(w), os.path.join(d, "decoder_model_merged.onnx"))
    config, generation = convert_ct2.optimum_configs(w, tokens, ct2_config)
    generation["is_multilingual"] = tokens["multilingual"]
    for fname, obj in (("config.json", config), ("generation_config.json", generation)):
        with open(os.path.join(d, fname), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
    eot = tokens["eot"]
    tok_json = {"version": "1.0",
                "model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(vocab[:eot])},
                          "merges": []},
                "added_tokens": [{"id": i, "content": vocab[i], "special": True}
                                 for i in range(eot, tokens["timestamp_begin"])]}
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok_json, f, ensure_ascii=False)
    if not quiet:
        dm = w.dims
        print(f"{name}: d={dm.n_text_state} heads={dm.n_text_head} layers={dm.n_audio_layer}/"
              f"{dm.n_text_layer} audio={dm.n_audio_ctx} text={dm.n_text_ctx} vocab={dm.n_vocab}")
    return tokens, ct2_config


def write_variant(out_dir: str, base: str, name: str, encoder=None, decoder=None):
    """A copy of <base>/ (brisvox layout) with one graph replaced."""
    src = os.path.join(out_dir, base)
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    for f in ("whisper.json", "vocabulary.txt", "encoder.onnx", "decoder.onnx"):
        with open(os.path.join(src, f), "rb") as a, open(os.path.join(d, f), "wb") as b:
            b.write(a.read())
    if encoder is not None:
        whisper_onnx.save(encoder, os.path.join(d, "encoder.onnx"))
    if decoder is not None:
        whisper_onnx.save(decoder, os.path.join(d, "decoder.onnx"))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)

    vocab_en = vocabulary(44, ["en", "de", "fr"], multilingual=False)
    dims_en = Dims(n_mels=80, n_audio_ctx=200, n_audio_state=64, n_audio_head=4, n_audio_layer=2,
                   n_vocab=len(vocab_en), n_text_ctx=64, n_text_state=64, n_text_head=4,
                   n_text_layer=2)
    w_en = random_weights(dims_en, seed=1)
    write_model(args.out_dir, "whisper-test-en", w_en, vocab_en, False, args.quiet)

    vocab_multi = vocabulary(20, ["en", "de", "fr", "es"], multilingual=True)
    dims_multi = Dims(n_mels=80, n_audio_ctx=150, n_audio_state=48, n_audio_head=3,
                      n_audio_layer=1, n_vocab=len(vocab_multi), n_text_ctx=48, n_text_state=48,
                      n_text_head=3, n_text_layer=3)
    write_model(args.out_dir, "whisper-test-multi", random_weights(dims_multi, seed=2),
                vocab_multi, True, args.quiet)

    # Wrong contracts, from whisper-test-en's weights.
    w_bad = copy.deepcopy(w_en)
    w_bad.dims.n_text_head = 2
    write_variant(args.out_dir, "whisper-test-en", "whisper-test-bad-decoder",
                  decoder=whisper_onnx.brisvox_decoder(w_bad))
    w_bad = copy.deepcopy(w_en)
    w_bad.dims.n_mels = 64
    w_bad.conv1.w = np.ascontiguousarray(w_bad.conv1.w[:, :64, :])
    write_variant(args.out_dir, "whisper-test-en", "whisper-test-bad-encoder",
                  encoder=whisper_onnx.brisvox_encoder(w_bad))

    # A decoder that never ends: logits = embedding . (4 e_a).
    w_loop = copy.deepcopy(w_en)
    a = vocab_en.index("a")
    w_loop.dec_ln.g = np.zeros_like(w_loop.dec_ln.g)
    w_loop.dec_ln.b = (4.0 * w_loop.embed[a]).astype(np.float32)
    logits = w_loop.embed @ w_loop.dec_ln.b
    assert int(np.argmax(logits)) == a, "token 'a' must dominate"
    write_variant(args.out_dir, "whisper-test-en", "whisper-test-never-eot",
                  decoder=whisper_onnx.brisvox_decoder(w_loop))
    if not args.quiet:
        print(f"models in {args.out_dir}")


if __name__ == "__main__":
    main()
