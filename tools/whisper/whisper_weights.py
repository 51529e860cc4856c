"""Whisper's dimensions and weights in one neutral form (numpy float32), whatever they came from:
a CTranslate2 model.bin (from_ct2) or random numbers for the test models (random_weights).
whisper_onnx.py builds ONNX graphs from this form in each layout brisvox loads.

Naming follows openai/whisper (model.py): an encoder (conv stem, positional table, pre-LN
self-attention blocks, ln_post) and a decoder (token embedding tied with the output layer,
learned positional table, blocks with self-attention, cross-attention and an MLP, final ln).
Linear weights are [out, in] as in PyTorch; Whisper's key projections have no bias (None here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np


@dataclass
class Dims:
    n_mels: int
    n_audio_ctx: int
    n_audio_state: int
    n_audio_head: int
    n_audio_layer: int
    n_vocab: int
    n_text_ctx: int
    n_text_state: int
    n_text_head: int
    n_text_layer: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Linear:
    w: np.ndarray                 # [out, in]
    b: Optional[np.ndarray]       # [out] or None


@dataclass
class Norm:
    g: np.ndarray
    b: np.ndarray


@dataclass
class EncoderLayer:
    attn_ln: Norm
    q: Linear
    k: Linear
    v: Linear
    out: Linear
    mlp_ln: Norm
    fc1: Linear
    fc2: Linear


@dataclass
class DecoderLayer:
    attn_ln: Norm
    q: Linear
    k: Linear
    v: Linear
    out: Linear
    cross_ln: Norm
    cross_q: Linear
    cross_k: Linear
    cross_v: Linear
    cross_out: Linear
    mlp_ln: Norm
    fc1: Linear
    fc2: Linear


@dataclass
class WhisperWeights:
    dims: Dims
    conv1: Linear                 # w [d, n_mels, 3]
    conv2: Linear                 # w [d, d, 3]
    enc_pos: np.ndarray           # [n_audio_ctx, d]
    enc_layers: list = field(default_factory=list)
    enc_ln: Optional[Norm] = None
    embed: Optional[np.ndarray] = None    # [n_vocab, d], also the output projection
    dec_pos: Optional[np.ndarray] = None  # [n_text_ctx, d]
    dec_layers: list = field(default_factory=list)
    dec_ln: Optional[Norm] = None


def _f32(a: np.ndarray) -> np.ndarray:
    # float16 -> float32 is exact, so the converted model computes with the published weights.
    return np.ascontiguousarray(np.asarray(a, dtype=np.float32))


def from_ct2(model) -> WhisperWeights:
    """model: ct2_format.Ct2Model of a WhisperSpec (revision 3). CTranslate2 fuses projections:
    self-attention linear_0 is [q; k; v] (k's bias stored as zeros), cross-attention linear_0 is
    q and linear_1 is [k; v]."""
    if model.spec_name != "WhisperSpec":
        raise ValueError(f"model.bin holds a '{model.spec_name}', not a WhisperSpec")
    for name, dtype in model.dtypes.items():
        if name.endswith("_scale"):
            raise ValueError(
                f"model.bin is quantized ('{name}', {dtype}); convert a float16 or float32 "
                "CTranslate2 model (ct2-transformers-converter --quantization float16)")

    def get(name):
        return model.get(name)

    def lin(scope, bias=True):
        return Linear(_f32(get(scope + "/weight")), _f32(get(scope + "/bias")) if bias else None)

    def norm(scope):
        return Norm(_f32(get(scope + "/gamma")), _f32(get(scope + "/beta")))

    def split(linear: Linear, parts: int):
        ws = np.split(linear.w, parts, axis=0)
        bs = np.split(linear.b, parts, axis=0) if linear.b is not None else [None] * parts
        return [Linear(np.ascontiguousarray(w), None if b is None else np.ascontiguousarray(b))
                for w, b in zip(ws, bs)]

    def count_layers(prefix):
        n = 0
        while model.has(f"{prefix}/layer_{n}/ffn/linear_0/weight"):
            n += 1
        return n

    n_enc = count_layers("encoder")
    n_dec = count_layers("decoder")
    conv1 = lin("encoder/conv1")
    embed = _f32(get("decoder/embeddings/weight"))
    enc_pos = _f32(get("encoder/position_encodings/encodings"))
    dec_pos = _f32(get("decoder/position_encodings/encodings"))
    d = conv1.w.shape[0]
    if model.scalar("decoder/activation") != 3:  # ctranslate2 Activation.GELU (erf form)
        raise ValueError("decoder activation is not GELU: not a Whisper model")
    if not model.scalar("decoder/pre_norm"):
        raise ValueError("decoder is post-norm: not a Whisper model")
    dims = Dims(
        n_mels=int(conv1.w.shape[1]), n_audio_ctx=int(enc_pos.shape[0]), n_audio_state=int(d),
        n_audio_head=model.scalar("encoder/num_heads"), n_audio_layer=n_enc,
        n_vocab=int(embed.shape[0]), n_text_ctx=int(dec_pos.shape[0]),
        n_text_state=int(embed.shape[1]), n_text_head=model.scalar("decoder/num_heads"),
        n_text_layer=n_dec)
    w = WhisperWeights(dims=dims, conv1=conv1, conv2=lin("encoder/conv2"), enc_pos=enc_pos,
                       embed=embed, dec_pos=dec_pos)
    for i in range(n_enc):
        s = f"encoder/layer_{i}"
        q, k, v = split(lin(s + "/self_attention/linear_0"), 3)
        w.enc_layers.append(EncoderLayer(
            attn_ln=norm(s + "/self_attention/layer_norm"), q=q, k=Linear(k.w, None), v=v,
            out=lin(s + "/self_attention/linear_1"), mlp_ln=norm(s + "/ffn/layer_norm"),
            fc1=lin(s + "/ffn/linear_0"), fc2=lin(s + "/ffn/linear_1")))
    w.enc_ln = norm("encoder/layer_norm")
    for i in range(n_dec):
        s = f"decoder/layer_{i}"
        q, k, v = split(lin(s + "/self_attention/linear_0"), 3)
        ck, cv = split(lin(s + "/attention/linear_1"), 2)
        w.dec_layers.append(DecoderLayer(
            attn_ln=norm(s + "/self_attention/layer_norm"), q=q, k=Linear(k.w, None), v=v,
            out=lin(s + "/self_attention/linear_1"), cross_ln=norm(s + "/attention/layer_norm"),
            cross_q=lin(s + "/attention/linear_0"), cross_k=Linear(ck.w, None), cross_v=cv,
            cross_out=lin(s + "/attention/linear_2"), mlp_ln=norm(s + "/ffn/layer_norm"),
            fc1=lin(s + "/ffn/linear_0"), fc2=lin(s + "/ffn/linear_1")))
    w.dec_ln = norm("decoder/layer_norm")
    # CTranslate2 stores Whisper's absent key biases as zeros; make sure nothing is dropped.
    for i in range(n_enc):
        kb = np.split(_f32(get(f"encoder/layer_{i}/self_attention/linear_0/bias")), 3)[1]
        if np.any(kb != 0):
            raise ValueError(f"encoder layer {i} has a non-zero key bias: not a Whisper model")
    return w


def random_weights(dims: Dims, seed: int = 0, conv_gain: float = 4.0) -> WhisperWeights:
    """Deterministic random weights (numpy default_rng(seed)) for the generated test models:
    uniform(+-1/sqrt(fan_in)) as PyTorch initialises Linear layers, norms at gain 1 with small
    random offsets, sinusoid-free random positional tables. Not a trained model: its tokens are
    arbitrary, but every layout built from the same weights must compute the same numbers."""
    rng = np.random.default_rng(seed)
    d = dims.n_audio_state
    if dims.n_text_state != d:
        raise ValueError("Whisper has one width for encoder and decoder")

    def uni(shape, fan_in, gain=1.0):
        bound = gain / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, size=shape).astype(np.float32)

    def lin(n_out, n_in, bias=True):
        return Linear(uni((n_out, n_in), n_in), uni((n_out,), n_in) if bias else None)

    def norm(n):
        return Norm((1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32),
                    (0.1 * rng.standard_normal(n)).astype(np.float32))

    ff = 4 * d
    w = WhisperWeights(
        dims=dims,
        conv1=Linear(uni((d, dims.n_mels, 3), 3 * dims.n_mels, conv_gain),
                     uni((d,), 3 * dims.n_mels)),
        conv2=Linear(uni((d, d, 3), 3 * d, conv_gain), uni((d,), 3 * d)),
        enc_pos=(0.5 * rng.standard_normal((dims.n_audio_ctx, d))).astype(np.float32))
    for _ in range(dims.n_audio_layer):
        w.enc_layers.append(EncoderLayer(
            attn_ln=norm(d), q=lin(d, d), k=lin(d, d, bias=False), v=lin(d, d), out=lin(d, d),
            mlp_ln=norm(d), fc1=lin(ff, d), fc2=lin(d, ff)))
    w.enc_ln = norm(d)
    w.embed = (0.5 * rng.standard_normal((dims.n_vocab, d))).astype(np.float32)
    w.dec_pos = (0.5 * rng.standard_normal((dims.n_text_ctx, d))).astype(np.float32)
    for _ in range(dims.n_text_layer):
        w.dec_layers.append(DecoderLayer(
            attn_ln=norm(d), q=lin(d, d), k=lin(d, d, bias=False), v=lin(d, d), out=lin(d, d),
            cross_ln=norm(d), cross_q=lin(d, d), cross_k=lin(d, d, bias=False), cross_v=lin(d, d),
            cross_out=lin(d, d), mlp_ln=norm(d), fc1=lin(ff, d), fc2=lin(d, ff)))
    w.dec_ln = norm(d)
    return w
