#!/usr/bin/env python3
"""Converts a faster-whisper (CTranslate2) Whisper model folder into ONNX files brisvox loads.

  convert_ct2.py CT2_DIR OUT_DIR [--layout brisvox|sherpa|optimum] [--weights float32|int8] [--check]

CT2_DIR holds model.bin (CTranslate2 binary version 6, WhisperSpec, float16/float32/bfloat16
weights: the format is described in ct2_format.py), config.json (suppress_ids,
suppress_ids_begin, alignment_heads, lang_ids) and vocabulary.txt (one token per line, line i =
token id i, in GPT-2's byte-to-unicode spelling, special and timestamp tokens included) or
vocabulary.json (the same tokens as a JSON list, newer CTranslate2 converters).
Runs with numpy + onnx (the project's venv); no torch, no CTranslate2.

--layout brisvox (the default) writes OUT_DIR/
  encoder.onnx     log-mel [batch, n_mels, frames] -> cross_kv [batch, layers, 2, heads,
                   frames/2, head_dim]; any even frames up to 2 n_audio_ctx (full 30 s window
                   or brisvox's "fit" window cut to the audio)
  decoder.onnx     one token per sequence and step, per-sequence positions, KV caches in/out
                   (contracts in whisper_onnx.py)
  whisper.json     dims, special token ids, suppress lists, languages: what brisvox needs
  vocabulary.txt   CT2_DIR's vocabulary, one token per line
--layout sherpa / optimum write the same weights with the contracts of sherpa-onnx's and
Hugging Face Optimum's Whisper exports (for brisvox's loader tests on real weights; they are
brisvox's rendition of those contracts, not files made by those projects).

The weights are widened to float32 unchanged (float16 -> float32 is exact); --weights int8
then stores the linear layers' weights as 8-bit blocks (weight_quant.py: ~3x faster decoder
steps, the same WER on the parity set). Output is
deterministic: the same input and onnx version give the same bytes (scripts/setup.sh checks
their sha256). --check runs both ONNX files once with onnxruntime (if importable) on a short
input and prints the shapes.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ct2_format  # noqa: E402
import whisper_onnx  # noqa: E402
import weight_quant  # noqa: E402
import whisper_weights  # noqa: E402

FORMAT_VERSION = 1


def bytes_to_unicode() -> dict:
    """GPT-2's reversible byte -> printable character table (openai/gpt-2 encoder.py)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1))
          + list(range(ord("\xae"), ord("\xff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def read_vocabulary(path: str) -> list:
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            tokens = json.load(f)
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ValueError(f"{path} is not a JSON list of tokens")
        return tokens
    with open(path, encoding="utf-8") as f:
        tokens = f.read().split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    return tokens


def vocabulary_path(ct2_dir: str) -> str:
    for name in ("vocabulary.txt", "vocabulary.json"):
        path = os.path.join(ct2_dir, name)
        if os.path.isfile(path):
            return path
    raise ValueError(f"{ct2_dir} has neither vocabulary.txt nor vocabulary.json")


def special_tokens(vocab: list, n_vocab: int) -> dict:
    """Ids of Whisper's special tokens, looked up by name (never by number: .en and
    multilingual vocabularies differ by one, large-v3 adds a language)."""
    index = {t: i for i, t in enumerate(vocab)}

    def need(name):
        if name not in index:
            raise ValueError(f"vocabulary has no token '{name}'")
        return index[name]

    sot = need("<|startoftranscript|>")
    translate = need("<|translate|>")
    no_speech = index.get("<|nospeech|>", index.get("<|nocaptions|>"))
    if no_speech is None:
        raise ValueError("vocabulary has neither <|nospeech|> nor <|nocaptions|>")
    languages = [(vocab[i][2:-2], i) for i in range(sot + 1, translate)]
    no_timestamps = need("<|notimestamps|>")
    return {
        "eot": need("<|endoftext|>"), "sot": sot, "translate": translate,
        "transcribe": need("<|transcribe|>"), "sot_lm": need("<|startoflm|>"),
        "sot_prev": need("<|startofprev|>"), "no_speech": no_speech,
        "no_timestamps": no_timestamps, "timestamp_begin": no_timestamps + 1,
        "blank": need("\u0120"),  # " " in GPT-2's spelling
        "languages": languages,
        # openai/whisper: ModelDimensions.n_vocab >= 51865 <=> multilingual.
        "multilingual": n_vocab >= 51865,
    }


def brisvox_config(w, tokens: dict, ct2_config: dict, vocab_size: int) -> dict:
    t = {k: tokens[k] for k in ("eot", "sot", "translate", "transcribe", "sot_lm", "sot_prev",
                                "no_speech", "no_timestamps", "timestamp_begin", "blank")}
    return {
        "format": "brisvox-whisper",
        "format_version": FORMAT_VERSION,
        "dims": w.dims.as_dict(),
        "multilingual": tokens["multilingual"],
        "tokens": t,
        "languages": [[c, i] for c, i in tokens["languages"]],
        # faster-whisper's suppress_tokens=[-1] list (non-speech symbols + the task and start
        # tokens), which CTranslate2's converter stores as suppress_ids, and its suppress_blank
        # list (suppress_ids_begin: " " and <|endoftext|>) for the first sampled token.
        "suppress_tokens": [int(i) for i in ct2_config["suppress_ids"]],
        "suppress_blank": [int(i) for i in ct2_config["suppress_ids_begin"]],
        "alignment_heads": ct2_config.get("alignment_heads")
        or whisper_onnx.default_alignment_heads(w.dims),
        "vocabulary_size": vocab_size,
        "files": {"encoder": "encoder.onnx", "decoder": "decoder.onnx",
                  "vocabulary": "vocabulary.txt"},
    }


def write_brisvox(w, tokens, ct2_config, vocab_path, out_dir, weights="float32"):
    heads = ct2_config.get("alignment_heads") or whisper_onnx.default_alignment_heads(w.dims)
    for name, model in (("encoder.onnx", whisper_onnx.brisvox_encoder(w)),
                        ("decoder.onnx", whisper_onnx.brisvox_decoder(w, heads))):
        if weights == "int8":
            # The encoder's 1500-row products are compute-bound (per-column int8, dynamic
            # activations); a decoder step is memory-bound (8-bit blocks): weight_quant.py.
            if name == "encoder.onnx":
                weight_quant.quantize_linear_layers_dynamic(model)
            else:
                weight_quant.quantize_linear_layers(model)
        whisper_onnx.save(model, os.path.join(out_dir, name))
    vocab = read_vocabulary(vocab_path)
    cfg = brisvox_config(w, tokens, ct2_config, len(vocab))
    with open(os.path.join(out_dir, "whisper.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
        f.write("\n")
    if vocab_path.endswith(".txt"):
        shutil.copyfile(vocab_path, os.path.join(out_dir, "vocabulary.txt"))
    else:
        if any("\n" in t for t in vocab):  # GPT-2's spelling has no raw newline
            raise ValueError(f"{vocab_path} has a token with a newline")
        with open(os.path.join(out_dir, "vocabulary.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(vocab) + "\n")


def write_sherpa_tokens(vocab: list, eot: int, path: str):
    """sherpa-onnx's <prefix>-tokens.txt: 'base64(token bytes) id' for the regular tokens
    (tiktoken's mergeable ranks; the special tokens are not listed)."""
    decoder = {c: b for b, c in bytes_to_unicode().items()}
    with open(path, "w", encoding="ascii") as f:
        for i in range(eot):
            raw = bytes(decoder[c] for c in vocab[i])
            f.write(f"{base64.b64encode(raw).decode()} {i}\n")


def write_sherpa(w, tokens, ct2_config, vocab_path, out_dir, prefix):
    vocab = read_vocabulary(vocab_path)
    meta = whisper_onnx.sherpa_metadata(w, dict(tokens, non_speech=non_speech(tokens, ct2_config)))
    whisper_onnx.save(whisper_onnx.sherpa_encoder(w, meta),
                      os.path.join(out_dir, f"{prefix}-encoder.onnx"))
    whisper_onnx.save(whisper_onnx.sherpa_decoder(w),
                      os.path.join(out_dir, f"{prefix}-decoder.onnx"))
    write_sherpa_tokens(vocab, tokens["eot"], os.path.join(out_dir, f"{prefix}-tokens.txt"))


def non_speech(tokens, ct2_config):
    """openai/whisper's Tokenizer.non_speech_tokens: the suppress list without the specials."""
    special = {tokens[k] for k in ("eot", "sot", "translate", "transcribe", "sot_lm", "sot_prev",
                                   "no_speech", "no_timestamps")}
    return [i for i in ct2_config["suppress_ids"] if i not in special]


def optimum_configs(w, tokens, ct2_config):
    dm = w.dims
    config = {
        "architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper",
        "d_model": dm.n_text_state, "encoder_layers": dm.n_audio_layer,
        "decoder_layers": dm.n_text_layer, "encoder_attention_heads": dm.n_audio_head,
        "decoder_attention_heads": dm.n_text_head, "encoder_ffn_dim": 4 * dm.n_audio_state,
        "decoder_ffn_dim": 4 * dm.n_text_state, "vocab_size": dm.n_vocab,
        "num_mel_bins": dm.n_mels, "max_source_positions": dm.n_audio_ctx,
        "max_target_positions": dm.n_text_ctx, "decoder_start_token_id": tokens["sot"],
        "eos_token_id": tokens["eot"], "bos_token_id": tokens["eot"], "pad_token_id": tokens["eot"],
        "begin_suppress_tokens": [int(i) for i in ct2_config["suppress_ids_begin"]],
        "suppress_tokens": non_speech(tokens, ct2_config),
    }
    generation = {
        "decoder_start_token_id": tokens["sot"], "eos_token_id": tokens["eot"],
        "begin_suppress_tokens": config["begin_suppress_tokens"],
        "suppress_tokens": config["suppress_tokens"],
        "no_timestamps_token_id": tokens["no_timestamps"], "is_multilingual": tokens["multilingual"],
        "max_length": dm.n_text_ctx,
    }
    if tokens["multilingual"]:
        generation["lang_to_id"] = {f"<|{c}|>": i for c, i in tokens["languages"]}
        generation["task_to_id"] = {"transcribe": tokens["transcribe"],
                                    "translate": tokens["translate"]}
    return config, generation


def write_optimum(w, tokens, ct2_config, ct2_dir, out_dir):
    whisper_onnx.save(whisper_onnx.optimum_encoder(w), os.path.join(out_dir, "encoder_model.onnx"))
    whisper_onnx.save(whisper_onnx.optimum_decoder(w),
                      os.path.join(out_dir, "decoder_model_merged.onnx"))
    config, generation = optimum_configs(w, tokens, ct2_config)
    for name, obj in (("config.json", config), ("generation_config.json", generation)):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
            f.write("\n")
    src = os.path.join(ct2_dir, "tokenizer.json")
    if not os.path.isfile(src):
        raise ValueError(f"{ct2_dir} has no tokenizer.json (the optimum layout needs one)")
    shutil.copyfile(src, os.path.join(out_dir, "tokenizer.json"))


def check(out_dir, layout):
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime not importable: --check skipped")
        return
    if layout != "brisvox":
        print("--check runs the brisvox layout only")
        return
    enc = ort.InferenceSession(os.path.join(out_dir, "encoder.onnx"))
    dec = ort.InferenceSession(os.path.join(out_dir, "decoder.onnx"))
    cfg = json.load(open(os.path.join(out_dir, "whisper.json")))
    dm = cfg["dims"]
    mel = np.zeros((1, dm["n_mels"], 200), np.float32)
    (kv,) = enc.run(None, {"mel": mel})
    L, H = dm["n_text_layer"], dm["n_text_head"]
    hd = dm["n_text_state"] // H
    feeds = {"tokens": np.array([cfg["tokens"]["sot"]], np.int64),
             "positions": np.zeros(1, np.int64), "cross_len": np.array([100], np.int64)}
    for i in range(L):
        feeds[f"self_k_{i}"] = np.zeros((1, H, 8, hd), np.float32)
        feeds[f"self_v_{i}"] = np.zeros((1, H, 8, hd), np.float32)
        feeds[f"cross_k_{i}"] = np.ascontiguousarray(kv[:, i, 0])
        feeds[f"cross_v_{i}"] = np.ascontiguousarray(kv[:, i, 1])
    logits, new_kv = dec.run(None, feeds)
    print(f"encoder: cross_kv {list(kv.shape)}; decoder: logits {list(logits.shape)}, "
          f"new_kv {list(new_kv.shape)}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ct2_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--layout", choices=["brisvox", "sherpa", "optimum"], default="brisvox")
    ap.add_argument("--sherpa-prefix", default="whisper",
                    help="file name prefix of the sherpa layout (<prefix>-encoder.onnx ...)")
    ap.add_argument("--weights", choices=["float32", "int8"], default="float32",
                    help="int8: the linear layers' weights as 8-bit blocks for ONNX Runtime's "
                         "MatMulNBits (brisvox layout only; weight_quant.py)")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    if args.weights != "float32" and args.layout != "brisvox":
        ap.error("--weights int8 writes the brisvox layout only")

    model_bin = os.path.join(args.ct2_dir, "model.bin")
    vocab_path = vocabulary_path(args.ct2_dir)
    with open(os.path.join(args.ct2_dir, "config.json"), encoding="utf-8") as f:
        ct2_config = json.load(f)
    w = whisper_weights.from_ct2(ct2_format.read_model_bin(model_bin))
    tokens = special_tokens(read_vocabulary(vocab_path), w.dims.n_vocab)
    os.makedirs(args.out_dir, exist_ok=True)
    if args.layout == "brisvox":
        write_brisvox(w, tokens, ct2_config, vocab_path, args.out_dir, args.weights)
    elif args.layout == "sherpa":
        write_sherpa(w, tokens, ct2_config, vocab_path, args.out_dir, args.sherpa_prefix)
    else:
        write_optimum(w, tokens, ct2_config, args.ct2_dir, args.out_dir)
    dm = w.dims
    print(f"{model_bin}: Whisper d={dm.n_text_state} heads={dm.n_text_head} "
          f"layers={dm.n_audio_layer}/{dm.n_text_layer} vocab={dm.n_vocab} "
          f"{'multilingual' if tokens['multilingual'] else 'English-only'} -> {args.out_dir} "
          f"({args.layout}, {args.weights} weights)")
    if args.check:
        check(args.out_dir, args.layout)


if __name__ == "__main__":
    main()
