"""Builds Whisper ONNX graphs (opset 17, IR 8, plain ONNX operators only) from WhisperWeights, in
the three layouts brisvox loads. Works with python3-onnx 1.12 (Debian, the build-time test model
generator) and the venv's onnx (the converter); the output bytes depend only on the weights and
the onnx version (no dict order, no timestamps), so scripts/setup.sh can check their sha256.

Shared arithmetic (openai/whisper model.py, as CTranslate2 computes it): GELU in its erf form
(x/2 (1 + erf(x/sqrt 2))), LayerNorm eps 1e-5, attention scores q.k scaled by head_dim^-0.5,
softmax, pre-LN residual blocks; decoder logits = ln(x) . embedding^T (tied output layer).

Layout "brisvox" (encoder.onnx, decoder.onnx; what tools/whisper/convert_ct2.py writes and the
brisvox decoder batches across sequences):
  encoder.onnx
    in   mel       float32 [batch, n_mels, frames]      frames even, 2 .. 2 n_audio_ctx
    out  cross_kv  float32 [batch, n_text_layer, 2, n_text_head, frames/2, head_dim]
         the decoder's cross-attention keys (index 0) and values (1) of every layer, computed
         once per segment; the positional table is cut to frames/2 rows, so a window shorter
         than 30 s (brisvox's "fit" window, whisper.cpp's audio_ctx) needs no padding.
  decoder.onnx: one token per sequence per Run, every sequence at its own position
    in   tokens     int64   [batch]                      the token each sequence feeds now
    in   positions  int64   [batch]                      its position (= cached tokens)
    in   cross_len  int64   [batch]                      valid rows of its cross_k/v (>= 1)
    in   self_k_L, self_v_L   float32 [batch, n_text_head, cache, head_dim]  for L in 0..layers-1
         the sequence's keys/values of positions 0 .. positions-1; rows >= positions are
         ignored (masked), so a fixed-capacity cache can be passed without repacking
    in   cross_k_L, cross_v_L float32 [batch, n_text_head, audio, head_dim]  rows >= cross_len
         ignored
    out  logits     float32 [batch, n_vocab]             for the next token
    out  new_kv     float32 [batch, n_text_layer, 2, n_text_state]  this token's key (0) and
         value (1) in every layer (head-major inside n_text_state), for the caller to store at
         row `positions` of its cache
    out  alignment  float32 [batch, alignment heads, audio]  the scaled, masked cross-attention
         scores (before the softmax) of the heads whisper.json's alignment_heads names, in that
         order: the rows word timestamps are computed from (src/models/stt/whisper/
         whisper_alignment.cpp, as CTranslate2's Whisper::align)
  The step reads the whole cache/audio capacity it is given (masked), so its cost does not grow
  with the prefix; nothing in it depends on another sequence of the batch.

Layout "sherpa" (<prefix>-encoder.onnx, <prefix>-decoder.onnx, <prefix>-tokens.txt), the
contract of k2-fsa/sherpa-onnx's scripts/whisper/export-onnx.py:
  encoder  in mel [n_audio, n_mels, T]; out n_layer_cross_k, n_layer_cross_v
           [n_text_layer, n_audio, T/2, n_text_state]; metadata_props n_mels, n_audio_ctx, ...,
           sot, eot, no_speech, non_speech_tokens, sot_sequence, ... (see sherpa_metadata)
  decoder  in tokens int64 [n_audio, n_tokens], in_n_layer_self_k_cache /
           in_n_layer_self_v_cache [n_text_layer, n_audio, n_text_ctx, n_text_state],
           n_layer_cross_k / n_layer_cross_v [n_text_layer, n_audio, T, n_text_state],
           offset int64 [1] (one position for the whole batch);
           out logits [n_audio, n_tokens, n_vocab], out_n_layer_self_k_cache /
           out_n_layer_self_v_cache (the whole caches, with the new rows written at offset)

Layout "optimum" (encoder_model.onnx, decoder_model_merged.onnx), the contract of Hugging Face
Optimum's Whisper export:
  encoder  in input_features [batch_size, n_mels, 3000] (fixed: the positional table is added
           whole); out last_hidden_state [batch_size, 1500, n_audio_state]
  decoder  in input_ids int64 [batch_size, decoder_sequence_length], encoder_hidden_states
           [batch_size, encoder_sequence_length, d], past_key_values.L.decoder.key/value
           [batch_size, heads, past_decoder_sequence_length, head_dim],
           past_key_values.L.encoder.key/value [batch_size, heads, encoder_sequence_length_out,
           head_dim], use_cache_branch bool [1];
           out logits [batch_size, decoder_sequence_length, n_vocab],
           present.L.decoder.key/value [.., past + decoder_sequence_length, ..],
           present.L.encoder.key/value: with use_cache_branch false computed from
           encoder_hidden_states (an If node, as the merged export has), else the past ones.
           This builder's graph takes the position from the past length in both branches, so
           the first call must pass past_decoder_sequence_length 0 (brisvox always does).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
LN_EPS = 1e-5
MASKED = -1e9  # added to masked attention scores; exp() of it is 0 in float32, never NaN
INT64_MAX = np.iinfo(np.int64).max


class Graph:
    """A small ONNX graph builder: unique node/value names, cached constants."""

    def __init__(self, name: str, prefix: str = ""):
        self.name = name
        self.prefix = prefix
        self.nodes = []
        self.initializers = []
        self.inputs = []
        self.outputs = []
        self._count = 0
        self._consts = {}
        self._init_names = set()

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{self.prefix}{hint}_{self._count}"

    def init(self, name: str, array: np.ndarray) -> str:
        if name in self._init_names:
            raise ValueError(f"duplicate initializer {name}")
        self._init_names.add(name)
        # (np.ascontiguousarray would turn a scalar into a 1-element vector)
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def const(self, values, dtype) -> str:
        arr = np.asarray(values, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.init(self.fresh("const"), arr)
        return self._consts[key]

    def i64(self, values) -> str:
        return self.const(values, np.int64)

    def f32(self, values) -> str:
        return self.const(values, np.float32)

    def op(self, op_type: str, inputs, n_out: int = 1, **attrs):
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=self.fresh("n_" + op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def add_input(self, name, elem_type, dims):
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, dims))
        return name

    def add_output(self, name, value, elem_type, dims):
        self.nodes.append(helper.make_node("Identity", [value], [name], name=self.fresh("n_out")))
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, dims))

    def graph(self):
        return helper.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                                 self.initializers)

    def model(self, metadata=None, doc=""):
        m = helper.make_model(self.graph(), opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="brisvox tools/whisper", producer_version="1")
        m.ir_version = IR_VERSION
        m.doc_string = doc
        for k, v in (metadata or {}).items():
            p = m.metadata_props.add()
            p.key = str(k)
            p.value = str(v)
        return m


# --- building blocks ----------------------------------------------------------------------------

def linear(g: Graph, x: str, lin, name: str) -> str:
    y = g.op("MatMul", [x, g.init(name + ".weight", lin.w.T)])
    if lin.b is not None:
        y = g.op("Add", [y, g.init(name + ".bias", lin.b)])
    return y


def layer_norm(g: Graph, x: str, norm, name: str, spelled_out: bool = False) -> str:
    """Layer normalisation over the last axis. spelled_out (the encoder's): as two MatMuls with a
    1/d column (the mean and the variance of each row) and elementwise ops, in place of the
    LayerNormalization op, whose CPU kernel in ONNX Runtime 1.29 is a scalar loop: ~4.7 ns per
    element, 2.7 ms for one [1500, 384] window, 11 % of a 30 s int8 encoder run; spelled out the
    encoder run is ~9 % faster (docs/PERFORMANCE.md, "The encoder's layer norms"). The same
    arithmetic up to float rounding; ONNX Runtime's LayerNormFusion does not match this form. Not
    for the decoder: a step normalises one row, where the op's cost is nothing and more nodes are
    more per-step overhead."""
    gamma, beta = g.init(name + ".weight", norm.g), g.init(name + ".bias", norm.b)
    if not spelled_out:
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=LN_EPS)
    d = norm.g.shape[0]
    column = g.f32(np.full((d, 1), 1.0 / d))  # one initializer, shared by every norm
    centred = g.op("Sub", [x, g.op("MatMul", [x, column])])
    variance = g.op("MatMul", [g.op("Mul", [centred, centred]), column])
    normalised = g.op("Div", [centred, g.op("Sqrt", [g.op("Add", [variance, g.f32(LN_EPS)])])])
    return g.op("Add", [g.op("Mul", [normalised, gamma]), beta])


def gelu(g: Graph, x: str) -> str:
    # The pattern ONNX Runtime fuses into its Gelu kernel: x * 0.5 * (1 + erf(x / sqrt 2)).
    e = g.op("Erf", [g.op("Div", [x, g.f32(np.sqrt(2.0))])])
    return g.op("Mul", [g.op("Mul", [x, g.op("Add", [e, g.f32(1.0)])]), g.f32(0.5)])


def mlp(g: Graph, x: str, layer, name: str, spelled_out_norm: bool = False) -> str:
    h = layer_norm(g, x, layer.mlp_ln, name + ".mlp_ln", spelled_out_norm)
    h = linear(g, gelu(g, linear(g, h, layer.fc1, name + ".fc1")), layer.fc2, name + ".fc2")
    return g.op("Add", [x, h])


def heads_first(g: Graph, x: str, n_head: int, head_dim: int, transpose_k: bool = False) -> str:
    """[B, T, d] -> [B, H, T, hd] (or [B, H, hd, T] for keys)."""
    x = g.op("Reshape", [x, g.i64([0, 0, n_head, head_dim])])
    return g.op("Transpose", [x], perm=[0, 2, 3, 1] if transpose_k else [0, 2, 1, 3])


def merge_heads(g: Graph, x: str, d: int) -> str:
    """[B, H, T, hd] -> [B, T, d]."""
    return g.op("Reshape", [g.op("Transpose", [x], perm=[0, 2, 1, 3]), g.i64([0, 0, d])])


def attention(g: Graph, q: str, kt: str, v: str, scale: float, mask: str | None = None) -> str:
    """q [B,H,N,hd], kt [B,H,hd,P], v [B,H,P,hd] -> [B,H,N,hd]."""
    s = g.op("Mul", [g.op("MatMul", [q, kt]), g.f32(scale)])
    if mask is not None:
        s = g.op("Add", [s, mask])
    return g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])


def encoder_body(g: Graph, w, mel: str, slice_positions: bool) -> str:
    """mel [B, n_mels, T] -> ln_post(x) [B, T/2, d]."""
    d = w.dims.n_audio_state
    H = w.dims.n_audio_head
    hd = d // H
    x = g.op("Conv", [mel, g.init("encoder.conv1.weight", w.conv1.w),
                      g.init("encoder.conv1.bias", w.conv1.b)],
             kernel_shape=[3], pads=[1, 1], strides=[1])
    x = gelu(g, x)
    x = g.op("Conv", [x, g.init("encoder.conv2.weight", w.conv2.w),
                      g.init("encoder.conv2.bias", w.conv2.b)],
             kernel_shape=[3], pads=[1, 1], strides=[2])
    x = g.op("Transpose", [gelu(g, x)], perm=[0, 2, 1])  # [B, T2, d]
    pos = g.init("encoder.positional_embedding", w.enc_pos)
    if slice_positions:
        t2 = g.op("Slice", [g.op("Shape", [x]), g.i64([1]), g.i64([2])])
        pos = g.op("Slice", [pos, g.i64([0]), t2, g.i64([0])])
    x = g.op("Add", [x, pos])
    scale = float(hd) ** -0.5
    for i, layer in enumerate(w.enc_layers):
        n = f"encoder.blocks.{i}"
        h = layer_norm(g, x, layer.attn_ln, n + ".attn_ln", spelled_out=True)
        q = heads_first(g, linear(g, h, layer.q, n + ".attn.query"), H, hd)
        kt = heads_first(g, linear(g, h, layer.k, n + ".attn.key"), H, hd, transpose_k=True)
        v = heads_first(g, linear(g, h, layer.v, n + ".attn.value"), H, hd)
        o = merge_heads(g, attention(g, q, kt, v, scale), d)
        x = g.op("Add", [x, linear(g, o, layer.out, n + ".attn.out")])
        x = mlp(g, x, layer, n, spelled_out_norm=True)
    return layer_norm(g, x, w.enc_ln, "encoder.ln_post", spelled_out=True)


def cross_kv_projection(g: Graph, w, x: str) -> str:
    """[B, T2, d] -> [B, T2, L*2*d]: every decoder layer's cross key and value in one MatMul."""
    d = w.dims.n_text_state
    ws, bs = [], []
    for layer in w.dec_layers:
        ws += [layer.cross_k.w, layer.cross_v.w]
        bs += [np.zeros(d, np.float32), layer.cross_v.b]
    y = g.op("MatMul", [x, g.init("decoder.cross_kv.weight", np.concatenate(ws, axis=0).T)])
    return g.op("Add", [y, g.init("decoder.cross_kv.bias", np.concatenate(bs))])


def check_dims(w):
    d = w.dims
    if d.n_audio_state != d.n_text_state:
        raise ValueError("encoder and decoder widths differ")
    if d.n_text_state % d.n_text_head or d.n_audio_state % d.n_audio_head:
        raise ValueError("width is not a multiple of the head count")


# --- layout "brisvox" ---------------------------------------------------------------------------

def brisvox_encoder(w) -> onnx.ModelProto:
    check_dims(w)
    g = Graph("whisper_encoder")
    dm = w.dims
    mel = g.add_input("mel", TensorProto.FLOAT, ["batch", dm.n_mels, "frames"])
    x = encoder_body(g, w, mel, slice_positions=True)
    L, H, hd = dm.n_text_layer, dm.n_text_head, dm.n_text_state // dm.n_text_head
    kv = g.op("Reshape", [cross_kv_projection(g, w, x), g.i64([0, 0, L, 2, H, hd])])
    kv = g.op("Transpose", [kv], perm=[0, 2, 3, 4, 1, 5])  # [B, L, 2, H, T2, hd]
    g.add_output("cross_kv", kv, TensorProto.FLOAT, ["batch", L, 2, H, "positions", hd])
    return g.model(doc="brisvox Whisper encoder: log-mel -> cross-attention K/V of every layer")


def default_alignment_heads(dims) -> list:
    """CTranslate2's converter's choice when a model names none: every head of the decoder's
    second half."""
    L, H = dims.n_text_layer, dims.n_text_head
    return [[l, h] for l in range(L // 2, L) for h in range(H)]


def brisvox_decoder(w, alignment_heads=None) -> onnx.ModelProto:
    """alignment_heads: [[layer, head], ...] (config.json's, which word timestamps use); their
    cross-attention scores are the output `alignment` [batch, heads, audio]."""
    check_dims(w)
    dm = w.dims
    d, L, H = dm.n_text_state, dm.n_text_layer, dm.n_text_head
    hd = d // H
    heads = [list(map(int, p)) for p in (alignment_heads or default_alignment_heads(dm))]
    for layer, head in heads:
        if not (0 <= layer < L and 0 <= head < H):
            raise ValueError(f"alignment head {[layer, head]} is outside {L} layers x {H} heads")
    heads_of = {i: [h for (l, h) in heads if l == i] for i in range(L)}
    alignment = []
    g = Graph("whisper_decoder_step")
    tokens = g.add_input("tokens", TensorProto.INT64, ["batch"])
    positions = g.add_input("positions", TensorProto.INT64, ["batch"])
    cross_len = g.add_input("cross_len", TensorProto.INT64, ["batch"])
    self_k, self_v, cross_k, cross_v = [], [], [], []
    for i in range(L):
        self_k.append(g.add_input(f"self_k_{i}", TensorProto.FLOAT, ["batch", H, "cache", hd]))
        self_v.append(g.add_input(f"self_v_{i}", TensorProto.FLOAT, ["batch", H, "cache", hd]))
    for i in range(L):
        cross_k.append(g.add_input(f"cross_k_{i}", TensorProto.FLOAT, ["batch", H, "audio", hd]))
        cross_v.append(g.add_input(f"cross_v_{i}", TensorProto.FLOAT, ["batch", H, "audio", hd]))

    embed = g.init("decoder.token_embedding", w.embed)
    x = g.op("Add", [g.op("Gather", [embed, tokens], axis=0),
                     g.op("Gather", [g.init("decoder.positional_embedding", w.dec_pos), positions],
                          axis=0)])  # [B, d]

    def length_mask(reference: str, valid: str) -> str:
        """[B, 1, 1, N] of 0 where index < valid[b], MASKED elsewhere; N = dim 2 of reference."""
        n = g.op("Gather", [g.op("Shape", [reference]), g.i64(2)], axis=0)
        idx = g.op("Unsqueeze", [g.op("Range", [g.i64(0), n, g.i64(1)]), g.i64([0])])  # [1, N]
        ok = g.op("Less", [idx, g.op("Unsqueeze", [valid, g.i64([1])])])  # [B, N]
        m = g.op("Where", [ok, g.f32(0.0), g.f32(MASKED)])
        return g.op("Unsqueeze", [m, g.i64([1, 2])])

    self_mask = length_mask(self_k[0], positions)
    cross_mask = length_mask(cross_k[0], cross_len)
    n_cache_1d = g.op("Slice", [g.op("Shape", [self_k[0]]), g.i64([2]), g.i64([3])])
    scale = g.f32(float(hd) ** -0.5)
    as_column = g.i64([0, H, hd, 1])
    as_row = g.i64([0, H, 1, -1])
    per_head = g.i64([0, H, 1, hd])
    flat = g.i64([0, d])
    new_kv = []
    for i, layer in enumerate(w.dec_layers):
        n = f"decoder.blocks.{i}"
        h = layer_norm(g, x, layer.attn_ln, n + ".attn_ln")
        q = linear(g, h, layer.q, n + ".attn.query")
        k = linear(g, h, layer.k, n + ".attn.key")
        v = linear(g, h, layer.v, n + ".attn.value")
        new_kv += [k, v]
        # Scores against the cache: K [B,H,C,hd] x q [B,H,hd,1] -> [B,H,C,1] -> [B,H,1,C]
        # (a reshape, no copy); the token's own score q.k is appended as column C.
        s_cache = g.op("MatMul", [self_k[i], g.op("Reshape", [q, as_column])])
        s_cache = g.op("Add", [g.op("Mul", [g.op("Reshape", [s_cache, as_row]), scale]), self_mask])
        q4 = g.op("Reshape", [q, per_head])
        v4 = g.op("Reshape", [v, per_head])
        s_self = g.op("ReduceSum", [g.op("Mul", [q4, g.op("Reshape", [k, per_head])]),
                                    g.i64([3])], keepdims=1)
        s_self = g.op("Mul", [s_self, scale])  # [B,H,1,1]
        p = g.op("Softmax", [g.op("Concat", [s_cache, s_self], axis=3)], axis=-1)
        p_cache = g.op("Slice", [p, g.i64([0]), n_cache_1d, g.i64([3])])
        p_self = g.op("Slice", [p, n_cache_1d, g.i64([INT64_MAX]), g.i64([3])])
        o = g.op("Add", [g.op("MatMul", [p_cache, self_v[i]]), g.op("Mul", [p_self, v4])])
        x = g.op("Add", [x, linear(g, g.op("Reshape", [o, flat]), layer.out, n + ".attn.out")])

        h = layer_norm(g, x, layer.cross_ln, n + ".cross_attn_ln")
        q = linear(g, h, layer.cross_q, n + ".cross_attn.query")
        s = g.op("MatMul", [cross_k[i], g.op("Reshape", [q, as_column])])  # [B,H,T,1]
        s = g.op("Add", [g.op("Mul", [g.op("Reshape", [s, as_row]), scale]), cross_mask])
        if heads_of[i]:  # the scores before the softmax, as CTranslate2's align() takes them
            picked = g.op("Gather", [s, g.i64(heads_of[i])], axis=1)  # [B,a,1,T]
            alignment.append(g.op("Squeeze", [picked, g.i64([2])]))
        o = g.op("MatMul", [g.op("Softmax", [s], axis=-1), cross_v[i]])  # [B,H,1,hd]
        x = g.op("Add", [x, linear(g, g.op("Reshape", [o, flat]), layer.cross_out,
                                   n + ".cross_attn.out")])
        x = mlp(g, x, layer, n)

    x = layer_norm(g, x, w.dec_ln, "decoder.ln")
    logits = g.op("Gemm", [x, embed], transB=1)
    kv = g.op("Concat", [g.op("Unsqueeze", [t, g.i64([1])]) for t in new_kv], axis=1)
    kv = g.op("Reshape", [kv, g.i64([0, L, 2, d])])
    g.add_output("logits", logits, TensorProto.FLOAT, ["batch", dm.n_vocab])
    g.add_output("new_kv", kv, TensorProto.FLOAT, ["batch", L, 2, d])
    scores = alignment[0] if len(alignment) == 1 else g.op("Concat", alignment, axis=1)
    g.add_output("alignment", scores, TensorProto.FLOAT, ["batch", len(heads), "audio"])
    return g.model(doc="brisvox Whisper decoder step: one token per sequence, KV cache in/out")


# --- layout "sherpa" ----------------------------------------------------------------------------

def sherpa_encoder(w, metadata: dict) -> onnx.ModelProto:
    check_dims(w)
    dm = w.dims
    L, d = dm.n_text_layer, dm.n_text_state
    g = Graph("sherpa_whisper_encoder")
    mel = g.add_input("mel", TensorProto.FLOAT, ["n_audio", dm.n_mels, "T"])
    x = encoder_body(g, w, mel, slice_positions=True)
    kv = g.op("Reshape", [cross_kv_projection(g, w, x), g.i64([0, 0, L, 2, d])])
    kv = g.op("Transpose", [kv], perm=[3, 2, 0, 1, 4])  # [2, L, B, T2, d]
    k, v = g.op("Split", [kv], n_out=2, axis=0)
    g.add_output("n_layer_cross_k", g.op("Squeeze", [k, g.i64([0])]), TensorProto.FLOAT,
                 [L, "n_audio", "T", d])
    g.add_output("n_layer_cross_v", g.op("Squeeze", [v, g.i64([0])]), TensorProto.FLOAT,
                 [L, "n_audio", "T", d])
    return g.model(metadata=metadata)


def sherpa_decoder(w) -> onnx.ModelProto:
    check_dims(w)
    dm = w.dims
    d, L, H = dm.n_text_state, dm.n_text_layer, dm.n_text_head
    hd = d // H
    g = Graph("sherpa_whisper_decoder")
    tokens = g.add_input("tokens", TensorProto.INT64, ["n_audio", "n_tokens"])
    in_k = g.add_input("in_n_layer_self_k_cache", TensorProto.FLOAT, [L, "n_audio", dm.n_text_ctx, d])
    in_v = g.add_input("in_n_layer_self_v_cache", TensorProto.FLOAT, [L, "n_audio", dm.n_text_ctx, d])
    ck = g.add_input("n_layer_cross_k", TensorProto.FLOAT, [L, "n_audio", "T", d])
    cv = g.add_input("n_layer_cross_v", TensorProto.FLOAT, [L, "n_audio", "T", d])
    offset = g.add_input("offset", TensorProto.INT64, [1])

    n_tok_1d = g.op("Slice", [g.op("Shape", [tokens]), g.i64([1]), g.i64([2])])
    end_1d = g.op("Add", [offset, n_tok_1d])  # offset + n_tokens
    embed = g.init("decoder.token_embedding", w.embed)
    pos = g.op("Slice", [g.init("decoder.positional_embedding", w.dec_pos), offset, end_1d,
                         g.i64([0])])
    x = g.op("Add", [g.op("Gather", [embed, tokens], axis=0), pos])  # [B, N, d]
    # Causal mask [N, P] (P = offset + N): token i sees cache rows j <= offset + i.
    off = g.op("Squeeze", [offset, g.i64([0])])
    n_tok = g.op("Squeeze", [n_tok_1d, g.i64([0])])
    rows = g.op("Unsqueeze", [g.op("Add", [g.op("Range", [g.i64(0), n_tok, g.i64(1)]), off]),
                              g.i64([1])])
    cols = g.op("Unsqueeze", [g.op("Range", [g.i64(0), g.op("Add", [off, n_tok]), g.i64(1)]),
                              g.i64([0])])
    mask = g.op("Where", [g.op("LessOrEqual", [cols, rows]), g.f32(0.0), g.f32(MASKED)])
    scale = float(hd) ** -0.5
    out_k, out_v = [], []
    for i, layer in enumerate(w.dec_layers):
        n = f"decoder.blocks.{i}"
        li = g.i64(i)
        h = layer_norm(g, x, layer.attn_ln, n + ".attn_ln")
        q = linear(g, h, layer.q, n + ".attn.query")
        k = linear(g, h, layer.k, n + ".attn.key")
        v = linear(g, h, layer.v, n + ".attn.value")
        caches = []
        for cache_in, new in ((in_k, k), (in_v, v)):
            c = g.op("Gather", [cache_in, li], axis=0)  # [B, n_ctx, d]
            c = g.op("Concat", [g.op("Slice", [c, g.i64([0]), offset, g.i64([1])]), new,
                                g.op("Slice", [c, end_1d, g.i64([INT64_MAX]), g.i64([1])])], axis=1)
            caches.append(c)
        out_k.append(caches[0])
        out_v.append(caches[1])
        kk = g.op("Slice", [caches[0], g.i64([0]), end_1d, g.i64([1])])
        vv = g.op("Slice", [caches[1], g.i64([0]), end_1d, g.i64([1])])
        o = attention(g, heads_first(g, q, H, hd), heads_first(g, kk, H, hd, True),
                      heads_first(g, vv, H, hd), scale, mask)
        x = g.op("Add", [x, linear(g, merge_heads(g, o, d), layer.out, n + ".attn.out")])
        h = layer_norm(g, x, layer.cross_ln, n + ".cross_attn_ln")
        q = linear(g, h, layer.cross_q, n + ".cross_attn.query")
        kx = g.op("Gather", [ck, li], axis=0)
        vx = g.op("Gather", [cv, li], axis=0)
        o = attention(g, heads_first(g, q, H, hd), heads_first(g, kx, H, hd, True),
                      heads_first(g, vx, H, hd), scale)
        x = g.op("Add", [x, linear(g, merge_heads(g, o, d), layer.cross_out, n + ".cross_attn.out")])
        x = mlp(g, x, layer, n)
    x = layer_norm(g, x, w.dec_ln, "decoder.ln")
    flat = g.op("Reshape", [x, g.i64([-1, d])])
    logits = g.op("Gemm", [flat, embed], transB=1)
    shape_bn = g.op("Slice", [g.op("Shape", [tokens]), g.i64([0]), g.i64([2])])
    logits = g.op("Reshape", [logits, g.op("Concat", [shape_bn, g.i64([dm.n_vocab])], axis=0)])
    g.add_output("logits", logits, TensorProto.FLOAT, ["n_audio", "n_tokens", dm.n_vocab])
    stack = lambda ts: g.op("Concat", [g.op("Unsqueeze", [t, g.i64([0])]) for t in ts], axis=0)
    g.add_output("out_n_layer_self_k_cache", stack(out_k), TensorProto.FLOAT,
                 [L, "n_audio", dm.n_text_ctx, d])
    g.add_output("out_n_layer_self_v_cache", stack(out_v), TensorProto.FLOAT,
                 [L, "n_audio", dm.n_text_ctx, d])
    return g.model()


def sherpa_metadata(w, tokens: dict) -> dict:
    """The metadata_props sherpa-onnx's export writes into the encoder. tokens: the special ids
    (eot, sot, translate, transcribe, sot_lm, sot_prev, no_speech, no_timestamps), 'languages'
    [(code, id)], 'non_speech' [ids], 'blank' id, 'multilingual' bool."""
    dm = w.dims
    langs = tokens["languages"]
    sot_sequence = [tokens["sot"]]
    if tokens["multilingual"]:
        sot_sequence += [dict(langs)["en"], tokens["transcribe"]]
    return {
        "model_type": "whisper-brisvox-generated", "version": "1", "maintainer": "brisvox",
        "n_mels": dm.n_mels, "n_audio_ctx": dm.n_audio_ctx, "n_audio_state": dm.n_audio_state,
        "n_audio_head": dm.n_audio_head, "n_audio_layer": dm.n_audio_layer,
        "n_vocab": dm.n_vocab, "n_text_ctx": dm.n_text_ctx, "n_text_state": dm.n_text_state,
        "n_text_head": dm.n_text_head, "n_text_layer": dm.n_text_layer,
        "sot_sequence": ",".join(map(str, sot_sequence)),
        "all_language_tokens": ",".join(str(i) for _, i in langs),
        "all_language_codes": ",".join(c for c, _ in langs),
        "sot": tokens["sot"], "sot_index": 0, "eot": tokens["eot"], "blank_id": tokens["blank"],
        "is_multilingual": int(tokens["multilingual"]), "no_speech": tokens["no_speech"],
        "non_speech_tokens": ",".join(map(str, tokens["non_speech"])),
        "transcribe": tokens["transcribe"], "translate": tokens["translate"],
        "sot_prev": tokens["sot_prev"], "sot_lm": tokens["sot_lm"],
        "no_timestamps": tokens["no_timestamps"],
    }


# --- layout "optimum" ---------------------------------------------------------------------------

def optimum_encoder(w) -> onnx.ModelProto:
    check_dims(w)
    dm = w.dims
    g = Graph("optimum_whisper_encoder")
    x_in = g.add_input("input_features", TensorProto.FLOAT,
                       ["batch_size", dm.n_mels, 2 * dm.n_audio_ctx])
    x = encoder_body(g, w, x_in, slice_positions=False)
    g.add_output("last_hidden_state", x, TensorProto.FLOAT,
                 ["batch_size", dm.n_audio_ctx, dm.n_audio_state])
    return g.model()


def optimum_decoder(w) -> onnx.ModelProto:
    check_dims(w)
    dm = w.dims
    d, L, H = dm.n_text_state, dm.n_text_layer, dm.n_text_head
    hd = d // H
    g = Graph("optimum_whisper_decoder_merged")
    ids = g.add_input("input_ids", TensorProto.INT64, ["batch_size", "decoder_sequence_length"])
    enc = g.add_input("encoder_hidden_states", TensorProto.FLOAT,
                      ["batch_size", "encoder_sequence_length", d])
    past = []
    for i in range(L):
        past.append([g.add_input(f"past_key_values.{i}.{part}.{kv}", TensorProto.FLOAT,
                                 ["batch_size", H, length, hd])
                     for part, length in (("decoder", "past_decoder_sequence_length"),
                                          ("encoder", "encoder_sequence_length_out"))
                     for kv in ("key", "value")])
    use_cache = g.add_input("use_cache_branch", TensorProto.BOOL, [1])

    # Cross K/V: the past ones (cache branch) or computed from the encoder states (first step).
    then_g = Graph("cache_branch", prefix="then_")
    else_g = Graph("no_cache_branch", prefix="else_")
    branch_outs = []
    for i, layer in enumerate(w.dec_layers):
        for j, (kv, lin) in enumerate((("key", layer.cross_k), ("value", layer.cross_v))):
            name_t = then_g.fresh(f"enc_{kv}_{i}")
            then_g.nodes.append(helper.make_node("Identity", [past[i][2 + j]], [name_t]))
            then_g.outputs.append(helper.make_tensor_value_info(name_t, TensorProto.FLOAT, None))
            y = linear(else_g, enc, lin, f"decoder.blocks.{i}.cross_attn.{kv}")
            y = heads_first(else_g, y, H, hd)
            name_e = else_g.fresh(f"enc_{kv}_{i}")
            else_g.nodes.append(helper.make_node("Identity", [y], [name_e]))
            else_g.outputs.append(helper.make_tensor_value_info(name_e, TensorProto.FLOAT, None))
    cond = g.op("Squeeze", [use_cache, g.i64([0])])
    cross = g.op("If", [cond], n_out=2 * L, then_branch=then_g.graph(), else_branch=else_g.graph())
    if L == 1:
        cross = [cross]

    past_len = g.op("Gather", [g.op("Shape", [past[0][0]]), g.i64(2)], axis=0)
    n_tok = g.op("Gather", [g.op("Shape", [ids]), g.i64(1)], axis=0)
    total = g.op("Add", [past_len, n_tok])
    positions = g.op("Range", [past_len, total, g.i64(1)])
    embed = g.init("decoder.token_embedding", w.embed)
    x = g.op("Add", [g.op("Gather", [embed, ids], axis=0),
                     g.op("Gather", [g.init("decoder.positional_embedding", w.dec_pos), positions],
                          axis=0)])
    rows = g.op("Unsqueeze", [positions, g.i64([1])])
    cols = g.op("Unsqueeze", [g.op("Range", [g.i64(0), total, g.i64(1)]), g.i64([0])])
    mask = g.op("Where", [g.op("LessOrEqual", [cols, rows]), g.f32(0.0), g.f32(MASKED)])
    scale = float(hd) ** -0.5
    for i, layer in enumerate(w.dec_layers):
        n = f"decoder.blocks.{i}"
        h = layer_norm(g, x, layer.attn_ln, n + ".attn_ln")
        q = heads_first(g, linear(g, h, layer.q, n + ".attn.query"), H, hd)
        k = heads_first(g, linear(g, h, layer.k, n + ".attn.key"), H, hd)
        v = heads_first(g, linear(g, h, layer.v, n + ".attn.value"), H, hd)
        k_all = g.op("Concat", [past[i][0], k], axis=2)
        v_all = g.op("Concat", [past[i][1], v], axis=2)
        g.add_output(f"present.{i}.decoder.key", k_all, TensorProto.FLOAT,
                     ["batch_size", H, "past_decoder_sequence_length + 1", hd])
        g.add_output(f"present.{i}.decoder.value", v_all, TensorProto.FLOAT,
                     ["batch_size", H, "past_decoder_sequence_length + 1", hd])
        o = attention(g, q, g.op("Transpose", [k_all], perm=[0, 1, 3, 2]), v_all, scale, mask)
        x = g.op("Add", [x, linear(g, merge_heads(g, o, d), layer.out, n + ".attn.out")])
        h = layer_norm(g, x, layer.cross_ln, n + ".cross_attn_ln")
        q = heads_first(g, linear(g, h, layer.cross_q, n + ".cross_attn.query"), H, hd)
        ek, ev = cross[2 * i], cross[2 * i + 1]
        o = attention(g, q, g.op("Transpose", [ek], perm=[0, 1, 3, 2]), ev, scale)
        x = g.op("Add", [x, linear(g, merge_heads(g, o, d), layer.cross_out, n + ".cross_attn.out")])
        x = mlp(g, x, layer, n)
        g.add_output(f"present.{i}.encoder.key", ek, TensorProto.FLOAT,
                     ["batch_size", H, "encoder_sequence_length_out", hd])
        g.add_output(f"present.{i}.encoder.value", ev, TensorProto.FLOAT,
                     ["batch_size", H, "encoder_sequence_length_out", hd])
    x = layer_norm(g, x, w.dec_ln, "decoder.ln")
    flat = g.op("Reshape", [x, g.i64([-1, d])])
    logits = g.op("Gemm", [flat, embed], transB=1)
    shape_bn = g.op("Slice", [g.op("Shape", [ids]), g.i64([0]), g.i64([2])])
    logits = g.op("Reshape", [logits, g.op("Concat", [shape_bn, g.i64([dm.n_vocab])], axis=0)])
    # Optimum lists logits first.
    g.outputs.insert(0, helper.make_tensor_value_info(
        "logits", TensorProto.FLOAT, ["batch_size", "decoder_sequence_length", dm.n_vocab]))
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name=g.fresh("n_out")))
    return g.model()


def save(model: onnx.ModelProto, path: str) -> None:
    onnx.checker.check_model(model)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
