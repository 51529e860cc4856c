#!/usr/bin/python3
"""Generates ONNX models with the contract (and, for benchmarks, the architecture) of Pipecat's
Smart Turn v3 end-of-turn model, with python3-onnx (1.12) and python3-numpy only. The real files
are not downloaded on the project's machines; see docs/MODELS.md for where they come from.

Contract of every real v3.x file (v3.0, v3.1, v3.2, -cpu int8 and -gpu fp32 alike):
  input  0  "input_features"  float32 [batch, 80, 800]  Whisper log-mel of the last 8 s at 16 kHz
  output 0  "logits"          float32 [batch, 1]        already a probability (Sigmoid in the graph)

Usage (any python3 with numpy and onnx >= 1.12: Debian's /usr/bin/python3 with python3-onnx, or
the project's venv, .venv/bin/python, with onnx 1.23 and numpy 2; checked with both):
  make_turn_models.py OUT_DIR [--int8] [--self-test]
  make_turn_models.py --reference-forward MODEL INPUT.npy OUT.npy [--float64] [--engine E]

Models written to OUT_DIR (all opset 17, IR 8, symbolic batch dimension, checked with
onnx.checker.check_model(full_check=True) and by shape inference):

  smart_turn_tiny.onnx          the exact contract, trivial arithmetic a test can predict:
                                  logits[b, 0] = sigmoid(A * mean(input_features[b]) + B)
                                  with A = 4 and B = -1 (TINY_A, TINY_B below); the mean is over
                                  all 80 x 800 values of row b. Silence (all-zero audio) gives
                                  features of -1.5 everywhere, so p = sigmoid(-7) = 0.000911.
  smart_turn_tiny_renamed.onnx  the same arithmetic, input "x" [N, 80, 800] and output "probs"
                                  [N, 1]: an adapter must bind by position, not by name.
  smart_turn_bad_shape.onnx     the same arithmetic, but input "input_features" [batch, 80, 400]:
                                  for the wrong-frame-count error message.
  smart_turn_v3_arch.onnx       the real architecture (below), fp32, random weights from
                                  numpy.random.default_rng(0); about 8.0 M parameters, 32 MB.
  smart_turn_v3_arch_int8.onnx  (--int8) the same weights as a static QDQ model, 8.6 MB:
                                  QuantizeLinear/DequantizeLinear pairs as onnxruntime's
                                  quantize_static(QDQ, ops Conv/MatMul/Gemm) writes them for the
                                  real -cpu files. Quantized: both Convs, every MatMul (the
                                  projections, the FFN, the two attention products, the pooling)
                                  and the three classifier Gemms. Weights int8 per-tensor
                                  symmetric, zero point 0, in [-63, 63] (quantize_static's
                                  reduce_range: x86 CPUs without VNNI multiply u8 x s8 pairs with
                                  an int16 sum that saturates for 8-bit weights, and ONNX Runtime's
                                  fused kernels then no longer compute what the QDQ graph says);
                                  Conv and Gemm biases int32 (scale s_input * s_weight).
                                  Activations uint8 per-tensor asymmetric: input_features fixed
                                  to [-1.5, 2.0] (the range of normalised Whisper log-mel), the
                                  rest calibrated on one fixed synthetic input
                                  (calibration_features()) and widened by 10 % of the span on
                                  each side; the last Gemm's output (the logit) stays float.
                                  The real -cpu files
                                  differ: per-channel weights, full 8-bit range, 1024 real
                                  calibration clips (entropy method).

Architecture of smart_turn_v3_arch.onnx (SmartTurnV3Model in pipecat-ai/smart-turn
smart_turn/train.py: transformers' WhisperEncoder with the openai/whisper-tiny config and
max_source_positions = 400, then attention pooling and an MLP head):
  conv1  Conv1d 80 -> 384, k 3, stride 1, pad 1, + GELU        [B, 384, 800]
  conv2  Conv1d 384 -> 384, k 3, stride 2, pad 1, + GELU       [B, 384, 400]
  transpose to [B, 400, 384], + positional table [400, 384] (Whisper's sinusoids, as the real
  files hold: the first 400 rows of whisper-tiny's table, frozen in training)
  4 x pre-LN encoder layer, d_model 384, 6 heads of 64, FFN 1536:
      h += out_proj(MHA(LN1(h)))      q, v, out with bias, k without; scores scaled by 64^-0.5
      h += fc2(GELU(fc1(LN2(h))))
  final LayerNorm                                              [B, 400, 384]
  attention pooling: s = Linear(256->1)(tanh(Linear(384->256)(h))), a = softmax over the 400
    positions, pooled = sum_t a_t h_t                          [B, 384]
  classifier: Linear 384->256, LayerNorm(256), GELU, (Dropout), Linear 256->64, GELU,
    Linear 64->1, Sigmoid                                      [B, 1] "logits"
  GELU is the exact erf form 0.5 x (1 + erf(x / sqrt 2)) from ONNX Erf ops; LayerNorm eps 1e-5.

Initializer names follow the PyTorch state dict (without the export's "inner." prefix):
  encoder.conv{1,2}.{weight [O, I, 3], bias}; encoder.embed_positions.weight [400, 384];
  encoder.layers.L.{self_attn_layer_norm, final_layer_norm}.{weight, bias};
  encoder.layers.L.self_attn.{q,k,v,out}_proj.weight, encoder.layers.L.fc{1,2}.weight and
  pool_attention.{0,2}.weight are MatMul operands stored [in, out] (the transpose of PyTorch's
  [out, in], as in the real fp32 export); their biases .bias (k_proj has none);
  encoder.layer_norm.{weight, bias}; classifier.{0,4,6}.weight are Gemm operands (transB = 1) in
  PyTorch's [out, in] layout; classifier.1.{weight, bias} is the head's LayerNorm.
  In the int8 file each quantized weight W is W_quantized (int8 or int32), W_scale, W_zero_point
  feeding a DequantizeLinear whose output is named W.

Weights (deterministic: default_rng(0), drawn in the order of the list above): Linear weights
and all encoder biases uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) as PyTorch's default init; the
two Conv weights CONV_GAIN (4) times that, as in trained Whisper the conv stem's output is not
drowned by the positional table (with the default init the output hardly depends on the input);
the head's Linear weights normal(0, 0.1) as the real source initialises them (the last one,
classifier.6, normal(0, 0.5) so that the probability spreads over roughly 0.1-0.6 instead of
0.36 +- 0.001), its biases uniform(-0.05, 0.05) instead of the source's zeros, and every
LayerNorm's weight 1 + normal(0, 0.05), bias normal(0, 0.02) instead of 1 and 0, so that a
wrongly bound bias or LayerNorm parameter changes the output. The numbers are not trained: only
speed and numerics matter.

--self-test       after writing, prints the tiny models' outputs as computed by a numpy
                  interpretation of their graphs next to the closed form, and compares, on a
                  random batch of 2, the arch model's hand-written numpy forward with the numpy
                  interpretation of its graph (and the int8 model against the fp32 one).
--reference-forward MODEL INPUT.npy OUT.npy
                  writes the numpy forward of MODEL on INPUT ([B, 80, T] float32, fed to the
                  model's first input) to OUT.npy ([B, 1] float32), from the model file's own
                  initializers, so that a C++ test can compare ONNX Runtime's output with it.
                  --engine arch (default for smart_turn_v3_arch-like fp32 files) runs the
                  hand-written forward of the architecture above from the named initializers;
                  --engine graph (default otherwise: tiny and int8 files) interprets the graph
                  node by node in numpy (QuantizeLinear rounds half to even, as ONNX specifies).
                  Computes in float32 (float64 with --float64). With the reference BLAS of a
                  plain Debian numpy (no OpenBLAS) one row of [B, 80, 800] takes 4-8 s in float32.
                  Measured agreement with ONNX Runtime 1.29's CPU provider (ORT_ENABLE_ALL,
                  AVX2): 1e-6 on the probability for the fp32 files. The int8 file is chaotic
                  at the 8-bit step: fp32 accumulation order flips a few requantizations and
                  the random head amplifies them, so ONNX Runtime, ONNX Runtime without graph
                  optimisation and this reference differ by up to about 0.02 (int8 against fp32:
                  up to about 0.15; the real v3.2 files differ by up to 0.11). Compare int8 runs
                  with a tolerance of about 0.05, or against the fp32 model only loosely.

Generation takes about 1 s (3-7 s more with --int8: the calibration forward in numpy).
"""
import argparse
import contextlib
import math
import os
import sys
import tempfile
import time

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    # A python3 without numpy and onnx (not Debian's, whose python3-onnx python3-numpy the build
    # uses, and not the project's venv): say how to run it instead of a traceback.
    sys.exit(f"make_turn_models.py: {e}: it needs numpy and onnx (1.12 or later). Run it with the "
             f"system python that has python3-onnx and python3-numpy (/usr/bin/python3 on Debian), or "
             f"with the project's venv that scripts/setup.sh makes: .venv/bin/python {' '.join(sys.argv)}")

OPSET = 17
IR_VERSION = 8
PRODUCER = "brisvox-tests"

TINY_A = 4.0
TINY_B = -1.0

N_MELS = 80
N_FRAMES = 800
POSITIONS = 400
D_MODEL = 384
N_HEADS = 6
HEAD_DIM = D_MODEL // N_HEADS
FFN = 1536
N_LAYERS = 4
POOL_HIDDEN = 256
HEAD_1 = 256
HEAD_2 = 64
LN_EPS = 1e-5
SEED = 0
CONV_GAIN = 4.0
FEATURE_RANGE = (-1.5, 2.0)    # normalised Whisper log-mel: max - 2 <= value <= max, max ~ 1.5-2
CALIBRATION_MARGIN = 0.1        # calibrated ranges widened by 10 % of their span on each side
WEIGHT_QMAX = 63        # int8 weights in [-63, 63]: onnxruntime's reduce_range (see the docstring)
CALIBRATION_SEED = 1


# --------------------------------------------------------------------------------------------
# Saving and checking


def save(model, path):
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    out = inferred.graph.output[0].type.tensor_type.shape.dim
    inp = inferred.graph.input[0].type.tensor_type.shape.dim
    assert len(out) == 2 and out[1].dim_value == 1 and out[0].dim_param == inp[0].dim_param, \
        f"{path}: output shape is not [batch, 1]"
    onnx.save(model, path)


def make_model(nodes, name, inputs, outputs, inits, doc):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits, doc_string=doc)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name=PRODUCER, doc_string=doc)


# --------------------------------------------------------------------------------------------
# Tiny contract models


def tiny_model(input_name="input_features", output_name="logits", batch="batch", frames=N_FRAMES):
    x = helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [batch, N_MELS, frames])
    y = helper.make_tensor_value_info(output_name, TensorProto.FLOAT, [batch, 1])
    inits = [
        numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "flat_shape"),
        numpy_helper.from_array(np.array(TINY_A, dtype=np.float32), "a"),
        numpy_helper.from_array(np.array(TINY_B, dtype=np.float32), "b"),
    ]
    nodes = [
        helper.make_node("Reshape", [input_name, "flat_shape"], ["flat"]),            # [B, 80*T]
        helper.make_node("ReduceMean", ["flat"], ["mean"], axes=[1], keepdims=1),      # [B, 1]
        helper.make_node("Mul", ["mean", "a"], ["scaled"]),
        helper.make_node("Add", ["scaled", "b"], ["z"]),
        helper.make_node("Sigmoid", ["z"], [output_name]),
    ]
    doc = f"sigmoid({TINY_A:g} * mean({input_name}[b]) + {TINY_B:g}); brisvox test model"
    return make_model(nodes, "smart_turn_tiny", [x], [y], inits, doc)


def tiny_closed_form(x):
    x = np.asarray(x, dtype=np.float64)
    z = TINY_A * x.reshape(x.shape[0], -1).mean(axis=1, keepdims=True) + TINY_B
    return 1.0 / (1.0 + np.exp(-z))


# --------------------------------------------------------------------------------------------
# Architecture weights


def sinusoids(length, channels):
    """Whisper's fixed positional table: [sin | cos] of position * 10000^(-i / (channels/2 - 1))."""
    half = channels // 2
    inv = np.exp(-math.log(10000.0) / (half - 1) * np.arange(half))
    t = np.arange(length)[:, None] * inv[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1).astype(np.float32)


def arch_weights(seed=SEED):
    """name -> float32 array, in the layouts the graph uses (see the module docstring)."""
    rng = np.random.default_rng(seed)
    w = {}

    def uniform(shape, fan_in):
        bound = 1.0 / math.sqrt(fan_in)
        return rng.uniform(-bound, bound, size=shape).astype(np.float32)

    def linear_io(name, n_in, n_out, bias=True):          # MatMul operand [in, out]
        w[name + ".weight"] = uniform((n_in, n_out), n_in)
        if bias:
            w[name + ".bias"] = uniform((n_out,), n_in)

    def layer_norm(name, n):
        w[name + ".weight"] = (1.0 + 0.05 * rng.standard_normal(n)).astype(np.float32)
        w[name + ".bias"] = (0.02 * rng.standard_normal(n)).astype(np.float32)

    def head_io(name, n_in, n_out):                        # MatMul operand [in, out]
        w[name + ".weight"] = (0.1 * rng.standard_normal((n_in, n_out))).astype(np.float32)
        w[name + ".bias"] = rng.uniform(-0.05, 0.05, size=n_out).astype(np.float32)

    def head_gemm(name, n_in, n_out, std=0.1):             # Gemm operand [out, in], transB = 1
        w[name + ".weight"] = (std * rng.standard_normal((n_out, n_in))).astype(np.float32)
        w[name + ".bias"] = rng.uniform(-0.05, 0.05, size=n_out).astype(np.float32)

    w["encoder.conv1.weight"] = CONV_GAIN * uniform((D_MODEL, N_MELS, 3), N_MELS * 3)
    w["encoder.conv1.bias"] = uniform((D_MODEL,), N_MELS * 3)
    w["encoder.conv2.weight"] = CONV_GAIN * uniform((D_MODEL, D_MODEL, 3), D_MODEL * 3)
    w["encoder.conv2.bias"] = uniform((D_MODEL,), D_MODEL * 3)
    w["encoder.embed_positions.weight"] = sinusoids(POSITIONS, D_MODEL)
    for layer in range(N_LAYERS):
        p = f"encoder.layers.{layer}."
        layer_norm(p + "self_attn_layer_norm", D_MODEL)
        linear_io(p + "self_attn.q_proj", D_MODEL, D_MODEL)
        linear_io(p + "self_attn.k_proj", D_MODEL, D_MODEL, bias=False)
        linear_io(p + "self_attn.v_proj", D_MODEL, D_MODEL)
        linear_io(p + "self_attn.out_proj", D_MODEL, D_MODEL)
        layer_norm(p + "final_layer_norm", D_MODEL)
        linear_io(p + "fc1", D_MODEL, FFN)
        linear_io(p + "fc2", FFN, D_MODEL)
    layer_norm("encoder.layer_norm", D_MODEL)
    head_io("pool_attention.0", D_MODEL, POOL_HIDDEN)
    head_io("pool_attention.2", POOL_HIDDEN, 1)
    head_gemm("classifier.0", D_MODEL, HEAD_1)
    layer_norm("classifier.1", HEAD_1)
    head_gemm("classifier.4", HEAD_1, HEAD_2)
    head_gemm("classifier.6", HEAD_2, 1, std=0.5)
    return w


# --------------------------------------------------------------------------------------------
# Architecture graph (fp32, or QDQ int8 given calibration ranges)


QUANTIZED_KINDS = ("conv", "linear", "attention", "gemm")


class Builder:
    def __init__(self, weights, ranges=None, kinds=QUANTIZED_KINDS):
        self.weights = weights
        self.ranges = ranges            # tensor name -> (min, max); None: fp32 model
        self.kinds = set(kinds) if ranges is not None else set()
        self.nodes = []
        self.inits = []
        self.have = set()
        self.qdq_done = {}
        self.n = 0                      # outputs: the same names with and without QDQ
        self.m = 0                      # node names

    @property
    def int8(self):
        return bool(self.kinds)

    @contextlib.contextmanager
    def quantizing(self, kind):
        """Within it act(), weight() and the int32 biases quantize only if kind is in self.kinds."""
        saved = self.kinds
        self.kinds = saved if kind in saved else set()
        try:
            yield
        finally:
            self.kinds = saved

    def fresh(self, stem):
        self.n += 1
        return f"{stem}_{self.n}"

    def init(self, name, array):
        if name not in self.have:
            self.have.add(name)
            self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, out=None, **attrs):
        out = out or self.fresh(op.lower())
        self.m += 1
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{self.m}", **attrs))
        return out

    def const(self, name, value, dtype=np.float32):
        return self.init("const." + name, np.array(value, dtype=dtype))

    # -- quantization helpers ---------------------------------------------------------------

    def act_params(self, x):
        if x == "input_features":
            lo, hi = FEATURE_RANGE
        else:
            lo, hi = self.ranges[x]
            margin = CALIBRATION_MARGIN * (hi - lo)
            lo, hi = lo - margin, hi + margin
        lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
        scale = (hi - lo) / 255.0 if hi > lo else 1.0
        zp = int(np.clip(np.rint(-lo / scale), 0, 255))
        return np.float32(scale), zp

    def act(self, x):
        """The activation x as the input of a quantized op: QuantizeLinear -> DequantizeLinear."""
        if not self.int8:
            return x
        if x not in self.qdq_done:
            scale, zp = self.act_params(x)
            s = self.init(x + "_scale", np.array(scale, dtype=np.float32))
            z = self.init(x + "_zero_point", np.array(zp, dtype=np.uint8))
            q = self.node("QuantizeLinear", [x, s, z], x + "_quantized")
            self.qdq_done[x] = self.node("DequantizeLinear", [q, s, z], x + "_dequantized")
        return self.qdq_done[x]

    def weight_scale(self, name):
        return np.float32(max(float(np.abs(self.weights[name]).max()), 1e-12) / WEIGHT_QMAX)

    def weight(self, name):
        w = self.weights[name]
        if not self.int8:
            return self.init(name, w)
        scale = self.weight_scale(name)
        q = np.clip(np.rint(w / scale), -WEIGHT_QMAX, WEIGHT_QMAX).astype(np.int8)
        self.init(name + "_quantized", q)
        self.init(name + "_scale", np.array(scale, dtype=np.float32))
        self.init(name + "_zero_point", np.array(0, dtype=np.int8))
        return self.node("DequantizeLinear", [name + "_quantized", name + "_scale",
                                              name + "_zero_point"], name)

    def bias_int32(self, name, x_dq, w_name):
        """Conv/Gemm bias as int32 with scale s_x * s_w (int8 only)."""
        x = x_dq[: -len("_dequantized")]
        s_x, _ = self.act_params(x)
        scale = np.float32(s_x * self.weight_scale(w_name))
        q = np.rint(self.weights[name] / scale).astype(np.int32)
        self.init(name + "_quantized", q)
        self.init(name + "_scale", np.array(scale, dtype=np.float32))
        self.init(name + "_zero_point", np.array(0, dtype=np.int32))
        return self.node("DequantizeLinear", [name + "_quantized", name + "_scale",
                                              name + "_zero_point"], name)

    # -- layers -----------------------------------------------------------------------------

    def gelu(self, x):
        t = self.node("Div", [x, self.const("sqrt2", math.sqrt(2.0))])
        t = self.node("Erf", [t])
        t = self.node("Add", [t, self.const("one", 1.0)])
        t = self.node("Mul", [x, t])
        return self.node("Mul", [t, self.const("half", 0.5)])

    def layer_norm(self, x, name):
        return self.node("LayerNormalization",
                         [x, self.init(name + ".weight", self.weights[name + ".weight"]),
                          self.init(name + ".bias", self.weights[name + ".bias"])],
                         axis=-1, epsilon=LN_EPS)

    def conv(self, x, name, stride, out):
        with self.quantizing("conv"):
            return self._conv(x, name, stride, out)

    def _conv(self, x, name, stride, out):
        xq = self.act(x)
        w = self.weight(name + ".weight")
        if self.int8:
            b = self.bias_int32(name + ".bias", xq, name + ".weight")
        else:
            b = self.init(name + ".bias", self.weights[name + ".bias"])
        y = self.node("Conv", [xq, w, b], out, kernel_shape=[3], pads=[1, 1], strides=[stride])
        return self.act(y)          # quantize_static puts QDQ on Conv outputs too

    def linear(self, x, name, out=None):
        """MatMul with a [in, out] weight, then + bias if the module has one."""
        with self.quantizing("linear"):
            return self._linear(x, name, out)

    def _linear(self, x, name, out=None):
        y = self.node("MatMul", [self.act(x), self.weight(name + ".weight")],
                      None if name + ".bias" in self.weights else out)
        if name + ".bias" in self.weights:
            y = self.node("Add", [y, self.init(name + ".bias", self.weights[name + ".bias"])], out)
        return y

    def gemm(self, x, name, out=None, quantize_output=True):
        with self.quantizing("gemm"):
            return self._gemm(x, name, out, quantize_output)

    def _gemm(self, x, name, out, quantize_output):
        xq = self.act(x)
        w = self.weight(name + ".weight")
        if self.int8:
            b = self.bias_int32(name + ".bias", xq, name + ".weight")
        else:
            b = self.init(name + ".bias", self.weights[name + ".bias"])
        y = self.node("Gemm", [xq, w, b], out, transB=1)
        return self.act(y) if quantize_output else y

    def attention(self, x, p):
        q = self.linear(x, p + "q_proj")
        q = self.node("Mul", [q, self.const("attn_scale", HEAD_DIM ** -0.5)])
        k = self.linear(x, p + "k_proj")
        v = self.linear(x, p + "v_proj")
        heads = self.const("heads_shape", [0, -1, N_HEADS, HEAD_DIM], np.int64)
        q = self.node("Transpose", [self.node("Reshape", [q, heads])], perm=[0, 2, 1, 3])
        k = self.node("Transpose", [self.node("Reshape", [k, heads])], perm=[0, 2, 3, 1])
        v = self.node("Transpose", [self.node("Reshape", [v, heads])], perm=[0, 2, 1, 3])
        with self.quantizing("attention"):
            scores = self.node("MatMul", [self.act(q), self.act(k)])        # [B, 6, T, T]
            probs = self.node("Softmax", [scores], axis=-1)
            ctx = self.node("MatMul", [self.act(probs), self.act(v)])       # [B, 6, T, 64]
        ctx = self.node("Transpose", [ctx], perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, self.const("merge_shape", [0, -1, D_MODEL], np.int64)])
        return self.linear(ctx, p + "out_proj")

    def build(self):
        x = self.conv("input_features", "encoder.conv1", 1, "conv1_out")
        x = self.gelu(x)
        x = self.conv(x, "encoder.conv2", 2, "conv2_out")
        x = self.gelu(x)
        x = self.node("Transpose", [x], perm=[0, 2, 1])                    # [B, 400, 384]
        h = self.node("Add", [x, self.init("encoder.embed_positions.weight",
                                           self.weights["encoder.embed_positions.weight"])])
        for layer in range(N_LAYERS):
            p = f"encoder.layers.{layer}."
            a = self.attention(self.layer_norm(h, p + "self_attn_layer_norm"), p + "self_attn.")
            h = self.node("Add", [h, a])
            f = self.linear(self.layer_norm(h, p + "final_layer_norm"), p + "fc1")
            f = self.linear(self.gelu(f), p + "fc2")
            h = self.node("Add", [h, f])
        h = self.layer_norm(h, "encoder.layer_norm", )
        s = self.node("Tanh", [self.linear(h, "pool_attention.0")])
        s = self.linear(s, "pool_attention.2")                              # [B, 400, 1]
        a = self.node("Softmax", [s], axis=1)
        pooled = self.node("ReduceSum", [self.node("Mul", [h, a]),
                                         self.const("time_axis", [1], np.int64)], keepdims=0)
        z = self.gemm(pooled, "classifier.0")
        z = self.gelu(self.layer_norm(z, "classifier.1"))
        z = self.gelu(self.gemm(z, "classifier.4"))
        z = self.gemm(z, "classifier.6", quantize_output=False)   # the logit stays float
        self.node("Sigmoid", [z], "logits")
        x_info = helper.make_tensor_value_info("input_features", TensorProto.FLOAT,
                                               ["batch", N_MELS, N_FRAMES])
        y_info = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
        kind = "int8 QDQ" if self.int8 else "fp32"
        doc = (f"Smart Turn v3-shaped model ({kind}, untrained random weights, seed {SEED}): "
               "Whisper-tiny encoder cut to 400 positions, attention pooling, MLP head, sigmoid. "
               "Generated by brisvox tools/make_turn_models.py")
        return make_model(self.nodes, "smart_turn_v3_arch", [x_info], [y_info], self.inits, doc)


# --------------------------------------------------------------------------------------------
# numpy: a small ONNX interpreter (for the ops this file uses) and the hand-written forward


_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    return _erf(x).astype(x.dtype)


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / x.dtype.type(math.sqrt(2.0))))


def layer_norm(x, g, b, eps=LN_EPS):
    mean = x.mean(axis=-1, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=-1, keepdims=True)
    return d / np.sqrt(var + x.dtype.type(eps)) * g + b


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def conv1d(x, w, b, stride, pad):
    """x [B, C, T], w [O, C, K] -> [B, O, L]."""
    B, C, T = x.shape
    O, _, K = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    L = (T + 2 * pad - K) // stride + 1
    cols = np.stack([xp[:, :, k: k + stride * (L - 1) + 1: stride] for k in range(K)], axis=-1)
    cols = cols.transpose(0, 2, 1, 3).reshape(B, L, C * K)                 # [B, L, C*K]
    y = cols @ w.reshape(O, C * K).T                                        # [B, L, O]
    return y.transpose(0, 2, 1) + b[None, :, None]


def _reshape(x, shape):
    shape = [x.shape[i] if s == 0 else int(s) for i, s in enumerate(shape)]
    return x.reshape(shape)


def run_graph(model, x, dtype=np.float32, record=None):
    """Interprets model's graph on x (bound to the first input). record: dict that receives
    name -> (min, max) of every float tensor. Returns the first output."""
    g = model.graph
    env = {}
    for t in g.initializer:
        a = numpy_helper.to_array(t)
        env[t.name] = a.astype(dtype) if a.dtype.kind == "f" else a
    env[g.input[0].name] = np.asarray(x).astype(dtype)
    for n in g.node:
        i = [env[name] if name else None for name in n.input]
        at = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        op = n.op_type
        if op == "Add":
            y = i[0] + i[1]
        elif op == "Mul":
            y = i[0] * i[1]
        elif op == "Div":
            y = i[0] / i[1]
        elif op == "Erf":
            y = erf(i[0])
        elif op == "Tanh":
            y = np.tanh(i[0])
        elif op == "Sigmoid":
            y = sigmoid(i[0])
        elif op == "Identity":
            y = i[0]
        elif op == "Reshape":
            y = _reshape(i[0], i[1])
        elif op == "Transpose":
            y = i[0].transpose(at["perm"])
        elif op == "MatMul":
            y = np.matmul(i[0], i[1])
        elif op == "Gemm":
            a_, b_ = i[0], i[1]
            if at.get("transA", 0):
                a_ = a_.T
            if at.get("transB", 0):
                b_ = b_.T
            y = at.get("alpha", 1.0) * (a_ @ b_)
            if len(i) > 2 and i[2] is not None:
                y = y + at.get("beta", 1.0) * i[2]
            y = y.astype(dtype)
        elif op == "Softmax":
            y = softmax(i[0], at.get("axis", -1))
        elif op == "ReduceMean":
            y = i[0].mean(axis=tuple(at["axes"]), keepdims=bool(at.get("keepdims", 1)))
        elif op == "ReduceSum":
            y = i[0].sum(axis=tuple(int(a) for a in i[1]), keepdims=bool(at.get("keepdims", 1)))
        elif op == "LayerNormalization":
            assert at.get("axis", -1) in (-1, i[0].ndim - 1)
            y = layer_norm(i[0], i[1], i[2], at.get("epsilon", 1e-5))
        elif op == "Conv":
            assert at.get("group", 1) == 1 and len(at["kernel_shape"]) == 1
            pads = at.get("pads", [0, 0])
            assert pads[0] == pads[1]
            y = conv1d(i[0], i[1], i[2], at.get("strides", [1])[0], pads[0])
        elif op == "QuantizeLinear":
            zp = i[2]
            info = np.iinfo(zp.dtype)
            q = np.rint(i[0] / i[1]) + zp.astype(np.int64)
            y = np.clip(q, info.min, info.max).astype(zp.dtype)
        elif op == "DequantizeLinear":
            y = ((i[0].astype(np.int64) - i[2].astype(np.int64)).astype(dtype) * i[1]).astype(dtype)
        else:
            raise NotImplementedError(f"op {op} is not in the numpy interpreter")
        env[n.output[0]] = y
        if record is not None and y.dtype.kind == "f":
            lo, hi = record.get(n.output[0], (np.inf, -np.inf))
            record[n.output[0]] = (min(lo, float(y.min())), max(hi, float(y.max())))
    if record is not None:
        record[g.input[0].name] = (float(env[g.input[0].name].min()),
                                   float(env[g.input[0].name].max()))
    return env[g.output[0].name]


def arch_forward(w, x, dtype=np.float32):
    """The hand-written forward of the architecture from named fp32 weights; x [B, 80, 800]."""
    w = {k: v.astype(dtype) for k, v in w.items()}
    x = np.asarray(x).astype(dtype)
    B = x.shape[0]
    h = gelu(conv1d(x, w["encoder.conv1.weight"], w["encoder.conv1.bias"], 1, 1))
    h = gelu(conv1d(h, w["encoder.conv2.weight"], w["encoder.conv2.bias"], 2, 1))
    h = h.transpose(0, 2, 1) + w["encoder.embed_positions.weight"]           # [B, T, D]
    T = h.shape[1]
    for layer in range(N_LAYERS):
        p = f"encoder.layers.{layer}."
        y = layer_norm(h, w[p + "self_attn_layer_norm.weight"], w[p + "self_attn_layer_norm.bias"])
        q = (y @ w[p + "self_attn.q_proj.weight"] + w[p + "self_attn.q_proj.bias"]) \
            * dtype(HEAD_DIM ** -0.5)
        k = y @ w[p + "self_attn.k_proj.weight"]
        v = y @ w[p + "self_attn.v_proj.weight"] + w[p + "self_attn.v_proj.bias"]
        q, k, v = (t.reshape(B, T, N_HEADS, HEAD_DIM).transpose(0, 2, 1, 3) for t in (q, k, v))
        att = softmax(q @ k.transpose(0, 1, 3, 2), axis=-1) @ v                # [B, H, T, 64]
        att = att.transpose(0, 2, 1, 3).reshape(B, T, D_MODEL)
        h = h + att @ w[p + "self_attn.out_proj.weight"] + w[p + "self_attn.out_proj.bias"]
        y = layer_norm(h, w[p + "final_layer_norm.weight"], w[p + "final_layer_norm.bias"])
        y = gelu(y @ w[p + "fc1.weight"] + w[p + "fc1.bias"])
        h = h + y @ w[p + "fc2.weight"] + w[p + "fc2.bias"]
    h = layer_norm(h, w["encoder.layer_norm.weight"], w["encoder.layer_norm.bias"])
    s = np.tanh(h @ w["pool_attention.0.weight"] + w["pool_attention.0.bias"])
    s = s @ w["pool_attention.2.weight"] + w["pool_attention.2.bias"]          # [B, T, 1]
    pooled = (h * softmax(s, axis=1)).sum(axis=1)                               # [B, D]
    z = pooled @ w["classifier.0.weight"].T + w["classifier.0.bias"]
    z = gelu(layer_norm(z, w["classifier.1.weight"], w["classifier.1.bias"]))
    z = gelu(z @ w["classifier.4.weight"].T + w["classifier.4.bias"])
    z = z @ w["classifier.6.weight"].T + w["classifier.6.bias"]
    return sigmoid(z)                                                           # [B, 1]


def weights_of(model):
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def is_fp32_arch(model):
    names = {t.name for t in model.graph.initializer}
    return "encoder.layers.0.self_attn.q_proj.weight" in names and \
        "encoder.conv1.weight_quantized" not in names


# --------------------------------------------------------------------------------------------
# Calibration input and generation


def calibration_features(batch=1, seed=CALIBRATION_SEED):
    """Synthetic features in the range of real normalised log-mel ([-1.5, ~2]): a smooth
    spectral envelope per row plus noise, with a quiet (floor) stretch at the start as when
    short audio is left-padded."""
    rng = np.random.default_rng(seed)
    mel = np.linspace(0.0, 1.0, N_MELS)[None, :, None]
    t = np.linspace(0.0, 1.0, N_FRAMES)[None, None, :]
    env = 0.6 - 0.5 * mel + 0.3 * np.sin(2 * np.pi * (3 * t + mel))
    x = env + 0.25 * rng.standard_normal((batch, N_MELS, N_FRAMES))
    x[:, :, : N_FRAMES // 4] = -0.6 + 0.05 * rng.standard_normal((batch, N_MELS, N_FRAMES // 4))
    return np.clip(x, -1.5, 2.0).astype(np.float32)


def generate(out_dir, int8=False, verbose=True):
    os.makedirs(out_dir, exist_ok=True)
    written = {}

    def put(model, name):
        t = time.time()
        path = os.path.join(out_dir, name)
        save(model, path)
        written[name] = path
        if verbose:
            print(f"wrote {path} ({os.path.getsize(path):,} bytes, {time.time() - t:.2f} s)")

    put(tiny_model(), "smart_turn_tiny.onnx")
    put(tiny_model("x", "probs", batch="N"), "smart_turn_tiny_renamed.onnx")
    put(tiny_model(frames=400), "smart_turn_bad_shape.onnx")
    weights = arch_weights()
    fp32 = Builder(weights).build()
    put(fp32, "smart_turn_v3_arch.onnx")
    if int8:
        t = time.time()
        ranges = {}
        run_graph(fp32, calibration_features(), np.float32, record=ranges)
        if verbose:
            print(f"calibrated {len(ranges)} tensors in {time.time() - t:.2f} s")
        put(Builder(weights, ranges).build(), "smart_turn_v3_arch_int8.onnx")
    return written


def self_test(paths):
    rng = np.random.default_rng(123)
    ok = True
    for name in ("smart_turn_tiny.onnx", "smart_turn_tiny_renamed.onnx"):
        model = onnx.load(paths[name])
        x = rng.normal(0.3, 0.5, size=(3, N_MELS, N_FRAMES)).astype(np.float32)
        got = run_graph(model, x, np.float64)
        want = tiny_closed_form(x)
        diff = float(np.abs(got - want).max())
        ok &= diff < 1e-12
        print(f"{name}: graph {got.ravel()} closed form {want.ravel()} max diff {diff:.2e}")
    silence = np.full((1, N_MELS, N_FRAMES), -1.5, dtype=np.float32)
    print(f"silence features (-1.5): p = {tiny_closed_form(silence).item():.6f}")

    model = onnx.load(paths["smart_turn_v3_arch.onnx"])
    x = np.concatenate([calibration_features(1, 7), rng.uniform(-1.5, 1.5, (1, N_MELS, N_FRAMES))
                        .astype(np.float32)])
    t = time.time()
    hand = arch_forward(weights_of(model), x, np.float64)
    t_hand = time.time() - t
    t = time.time()
    graph = run_graph(model, x, np.float32)
    t_graph = time.time() - t
    diff = float(np.abs(hand - graph).max())
    ok &= diff < 1e-5
    print(f"arch fp32: hand (float64) {hand.ravel()} graph (float32) {graph.ravel()} "
          f"max diff {diff:.2e} ({t_hand:.1f} s, {t_graph:.1f} s)")
    if "smart_turn_v3_arch_int8.onnx" in paths:
        q = run_graph(onnx.load(paths["smart_turn_v3_arch_int8.onnx"]), x, np.float32)
        print(f"arch int8 graph {q.ravel()} vs fp32: max diff {float(np.abs(q - hand).max()):.2e}")
    print("self-test", "passed" if ok else "FAILED")
    return ok


def reference_forward(model_path, in_path, out_path, dtype, engine):
    model = onnx.load(model_path)
    x = np.load(in_path)
    if engine == "auto":
        engine = "arch" if is_fp32_arch(model) else "graph"
    if engine == "arch":
        y = arch_forward(weights_of(model), x, dtype)
    else:
        y = run_graph(model, x, dtype)
    np.save(out_path, np.asarray(y, dtype=np.float32))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--int8", action="store_true", help="also write smart_turn_v3_arch_int8.onnx")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--reference-forward", nargs=3, metavar=("MODEL", "INPUT_NPY", "OUT_NPY"))
    ap.add_argument("--float64", action="store_true", help="reference forward in float64")
    ap.add_argument("--engine", choices=["auto", "arch", "graph"], default="auto")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    if args.reference_forward:
        return reference_forward(*args.reference_forward,
                                 np.float64 if args.float64 else np.float32, args.engine)
    if args.out_dir is None and not args.self_test:
        ap.print_usage(sys.stderr)
        return 2
    t = time.time()
    if args.out_dir is None:
        with tempfile.TemporaryDirectory() as d:
            paths = generate(d, args.int8, not args.quiet)
            return 0 if self_test(paths) else 1
    paths = generate(args.out_dir, args.int8, not args.quiet)
    if not args.quiet:
        print(f"generated in {time.time() - t:.2f} s")
    if args.self_test:
        return 0 if self_test(paths) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
