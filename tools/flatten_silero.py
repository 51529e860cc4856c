#!/usr/bin/env python3
"""Rewrites a Silero VAD v5/v6 ONNX model into an equivalent graph that batches well.

    flatten_silero.py IN.onnx OUT.onnx

Why: the exported Silero graph runs each rate as a branch of an `If`, with eight more nested
`If`s around squeezes and the LSTM's state, and computes its STFT and encoder as 1-D
convolutions over 4 time steps. ONNX Runtime's CPU Conv runs an im2col + GEMM per batch row, so
a batch of 32 streams becomes 32 GEMMs with N = 4 columns, a quarter of what its SGEMM kernels
fill; every nested `If` is a subgraph execution with its own allocations. This tool keeps the
weights and the arithmetic and changes the layout: time-major rows [B*T, C], each convolution
an im2col by Slice + Concat followed by one Gemm over the whole batch, the STFT a Gemm over
framed audio, the LSTM one LSTM node, and a single top-level `If` on `sr` that picks the rate.

The contract is unchanged: inputs `input` [B, context + chunk] float32 (576 = 64 + 512 at 16 kHz,
288 = 32 + 256 at 8 kHz), `state` [2, B, 128], `sr` int64 scalar; outputs `output` [B, 1] and
`stateN` [2, B, 128]. Other input lengths fail in a Reshape instead of producing a number (the
engine only ever sends these). The result matches the original within float rounding
(tests/vad/flat_silero_test.cpp checks <= 1e-4 on every probability of a real recording).

Needs python3-onnx and python3-numpy (Debian); run by scripts/setup.sh for the bundled models.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 16


def branch_weights(branch):
    """The Constant tensors of one rate branch, by their PyTorch names."""
    weights = {}
    for node in branch.node:
        if node.op_type != "Constant":
            continue
        name = node.output[0].split("__Inline_0_")[-1].lstrip("_")
        weights[name] = numpy_helper.to_array(node.attribute[0].t)
    return weights


def find_stft_geometry(branch):
    """(kernel, stride) of the STFT convolution and the reflect-pad length, read from the graph."""
    for node in branch.node:
        if node.op_type == "Conv" and "stft" in node.output[0]:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            kernel, stride = attrs["kernel_shape"][0], attrs["strides"][0]
            return kernel, stride
    raise ValueError("no STFT Conv in the branch: not a Silero v5/v6 model")


class Builder:
    """Appends nodes and initializers with unique names under one prefix."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.nodes = []
        self.inits = []
        self.count = 0

    def name(self, what):
        self.count += 1
        return f"{self.prefix}/{what}_{self.count}"

    def const(self, array, what="c"):
        name = self.name(what)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, what=None, n_out=1, **attrs):
        outs = [self.name(what or op_type) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=outs[0], **attrs))
        return outs[0] if n_out == 1 else outs

    def slice(self, x, start, end, axis, step=1):
        return self.op("Slice", [x, self.const(np.array([start], np.int64)),
                                 self.const(np.array([end], np.int64)),
                                 self.const(np.array([axis], np.int64)),
                                 self.const(np.array([step], np.int64))])

    def reshape(self, x, shape):
        return self.op("Reshape", [x, self.const(np.array(shape, np.int64))])


def conv_as_gemm(b, x, t_in, weight, bias, stride):
    """Conv1d(kernel 3, padding 1) + ReLU on time-major rows: x [B*t_in, C] -> [B*t_out, O].

    im2col by three strided time slices of the zero-padded [B, t_in + 2, C] view, concatenated
    along channels; the weight [O, C, 3] becomes [3*C, O] in the same tap-major order.
    """
    out_ch, in_ch, kernel = weight.shape
    assert kernel == 3, "Silero encoder convolutions have kernel 3"
    t_out = (t_in + 2 - 3) // stride + 1
    seq = b.reshape(x, [-1, t_in, in_ch])
    padded = b.op("Pad", [seq, b.const(np.array([0, 1, 0, 0, 1, 0], np.int64))], mode="constant")
    taps = [b.slice(padded, k, k + stride * (t_out - 1) + 1, axis=1, step=stride) for k in range(3)]
    cols = b.op("Concat", taps, axis=2)
    rows = b.reshape(cols, [-1, 3 * in_ch])
    w = np.ascontiguousarray(weight.transpose(2, 1, 0).reshape(3 * in_ch, out_ch), np.float32)
    y = b.op("Gemm", [rows, b.const(w, "w"), b.const(bias.astype(np.float32), "b")])
    return b.op("Relu", [y]), t_out


def flat_branch(weights, kernel, stride, prefix):
    """One rate's computation as a flat subgraph reading the outer `input` and `state`."""
    b = Builder(prefix)
    pad = kernel // 4           # the model reflect-pads the right edge by a quarter window
    assert kernel == 2 * stride, "Silero's STFT hop is half its window"

    # STFT: reflect-pad, cut into hop-sized chunks, frame = two neighbouring chunks, one Gemm.
    padded = b.op("Pad", ["input", b.const(np.array([0, 0, 0, pad], np.int64))], mode="reflect")
    chunks = b.reshape(padded, [0, -1, stride])                        # [B, n, hop]
    frames = b.op("Concat", [b.slice(chunks, 0, -1, axis=1), b.slice(chunks, 1, 2**62, axis=1)],
                  axis=2)                                               # [B, n-1, window]
    basis = weights["stft.forward_basis_buffer"][:, 0, :]               # [2*bins, window]
    bins = basis.shape[0] // 2
    rows = b.reshape(frames, [-1, kernel])
    spec = b.op("Gemm", [rows, b.const(np.ascontiguousarray(basis.T, np.float32), "basis")])
    power = b.op("Mul", [spec, spec])
    power = b.op("ReduceSum", [b.reshape(power, [-1, 2, bins]), b.const(np.array([1], np.int64))],
                 keepdims=0)                                            # re^2 + im^2
    x = b.op("Sqrt", [power])                                           # [B*T, bins]

    # Encoder: four conv(3) + ReLU, time-major; T = 4 frames of one chunk: 4 -> 4 -> 2 -> 1 -> 1.
    t = 4
    for layer, conv_stride in enumerate([1, 2, 2, 1]):
        x, t = conv_as_gemm(b, x, t, weights[f"encoder.{layer}.reparam_conv.weight"],
                            weights[f"encoder.{layer}.reparam_conv.bias"], conv_stride)
    features = b.reshape(x, [1, -1, weights["encoder.3.reparam_conv.weight"].shape[0]])
    # A wrong input length leaves t != 1 and the shapes above disagree: a Run error, not noise.

    # LSTM cell, one step. PyTorch's gate order is (i, f, g, o); ONNX's is (i, o, f, c).
    def onnx_gates(m):
        i, f, g, o = np.split(m, 4, axis=0)
        return np.concatenate([i, o, f, g], axis=0)

    w_ih = onnx_gates(weights["decoder.rnn.weight_ih"])[None].astype(np.float32)
    w_hh = onnx_gates(weights["decoder.rnn.weight_hh"])[None].astype(np.float32)
    bias = np.concatenate([onnx_gates(weights["decoder.rnn.bias_ih"]),
                           onnx_gates(weights["decoder.rnn.bias_hh"])])[None].astype(np.float32)
    hidden = w_hh.shape[2]
    h0 = b.slice("state", 0, 1, axis=0)
    c0 = b.slice("state", 1, 2, axis=0)
    _, h1, c1 = b.op("LSTM", [features, b.const(w_ih, "W"), b.const(w_hh, "R"), b.const(bias, "B"),
                              "", h0, c0], n_out=3, hidden_size=hidden)
    state_out = b.op("Concat", [h1, c1], axis=0)                        # [2, B, hidden]

    # Decoder: ReLU, 1x1 conv to one channel, sigmoid; the mean over one time step is itself.
    h = b.op("Relu", [b.reshape(h1, [-1, hidden])])
    w_dec = weights["decoder.decoder.2.weight"][:, :, 0].T.astype(np.float32)   # [hidden, 1]
    logit = b.op("Gemm", [h, b.const(w_dec, "w"), b.const(weights["decoder.decoder.2.bias"]
                                                          .astype(np.float32), "b")])
    prob = b.op("Sigmoid", [logit])                                     # [B, 1]

    outputs = [helper.make_tensor_value_info(prob, TensorProto.FLOAT, None),
               helper.make_tensor_value_info(state_out, TensorProto.FLOAT, None)]
    # Subgraph constants must be nodes, not initializers, for ONNX Runtime's If.
    const_nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in b.inits]
    return helper.make_graph(const_nodes + b.nodes, prefix, [], outputs)


def flatten(model):
    graph = model.graph
    top_if = next((n for n in graph.node if n.op_type == "If"), None)
    if top_if is None or [i.name for i in graph.input] != ["input", "state", "sr"]:
        raise ValueError("expected a Silero v5/v6 model: inputs (input, state, sr) and an If on sr")
    branches = {a.name: a.g for a in top_if.attribute}
    rate_const = next(n for n in graph.node if n.op_type == "Constant")
    switch_rate = int(numpy_helper.to_array(rate_const.attribute[0].t))    # then-branch rate

    flat = {}
    for which, sub in branches.items():
        kernel, stride = find_stft_geometry(sub)
        flat[which] = flat_branch(branch_weights(sub), kernel, stride, f"{which}_flat")

    nodes = [
        helper.make_node("Constant", [], ["switch_rate"],
                         value=numpy_helper.from_array(np.array(switch_rate, np.int64))),
        helper.make_node("Equal", ["sr", "switch_rate"], ["is_switch_rate"]),
        helper.make_node("If", ["is_switch_rate"], ["output", "stateN"],
                         then_branch=flat["then_branch"], else_branch=flat["else_branch"]),
    ]
    inputs = [
        helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", "samples"]),
        helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", 128]),
        helper.make_tensor_value_info("sr", TensorProto.INT64, []),
    ]
    outputs = [
        helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1]),
        helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, "batch", 128]),
    ]
    out = helper.make_model(helper.make_graph(nodes, "silero_vad_flat", inputs, outputs),
                            opset_imports=[helper.make_opsetid("", OPSET)],
                            producer_name="brisvox tools/flatten_silero.py")
    out.ir_version = 8
    out.doc_string = ("Silero VAD, rewritten for batched inference by brisvox "
                      "tools/flatten_silero.py; weights unchanged. " + (model.doc_string or ""))
    onnx.checker.check_model(out)
    return out


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    onnx.save(flatten(onnx.load(argv[1])), argv[2])


if __name__ == "__main__":
    main(sys.argv)
