#!/usr/bin/python3
"""Arithmetic cost of one frame of the Silero VAD v5 / v6 ONNX models.

Walks the graph the way onnxruntime would for a concrete input: the top-level
If on `sr == 16000` (and the nested shape-dependent Ifs inside the branches)
is resolved by actually evaluating the graph with a small numpy interpreter,
so every tensor shape is concrete.  Counted per executed node:

  Conv          MACs = out_elems * (C_in / group) * prod(kernel)
  ConvTranspose MACs = in_elems  * (C_out / group) * prod(kernel)
  MatMul / Gemm MACs = prod(out_shape) * K
  LSTM          MACs = dirs * seq_len * batch * 4*H*(I+H)
  FLOPs = 2 * MACs.

"Other ops" is a separate count of elementwise arithmetic (one per output
element of Relu/Sigmoid/Add/Pow/Sqrt/..., conv/gemm bias adds, ReduceMean
adds, LSTM gate bias adds/activations/cell update).  Pure data movement
(Slice, Concat, Pad, Reshape, Transpose, Cast, Gather, ...) counts zero.

Usage: /usr/bin/python3 tools/model_flops.py [--json] [model.onnx ...]
Needs only onnx (>= 1.12) and numpy.
"""
import argparse
import collections
import json
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = [
    ("v5", os.path.join(ROOT, "third_party/models/silero_vad_v5.onnx")),
    ("v6", os.path.join(ROOT, "third_party/models/silero_vad_v6.onnx")),
]
CONFIGS = [  # (sample rate, input samples = context + chunk)
    (16000, 64 + 512),
    (8000, 32 + 256),
]

UNARY = {
    "Relu": lambda x: np.maximum(x, 0),
    "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "Tanh": np.tanh,
    "Sqrt": np.sqrt,
    "Exp": np.exp,
    "Log": np.log,
    "Abs": np.abs,
    "Neg": np.negative,
    "Reciprocal": lambda x: 1.0 / x,
}
BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
    "Div": lambda a, b: (a / b).astype(np.result_type(a, b)),
    "Pow": lambda a, b: np.power(a, b).astype(a.dtype),
    "Max": np.maximum, "Min": np.minimum,
}
# ops with no arithmetic worth counting (shape plumbing / data movement / logic)
FREE = {"Constant", "ConstantOfShape", "Concat", "Reshape", "Slice", "Transpose",
        "Cast", "Pad", "Unsqueeze", "Squeeze", "Shape", "Size", "Gather",
        "Equal", "Not", "Identity", "If", "Flatten", "Expand"}


def attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class Counter:
    def __init__(self):
        self.rows = collections.OrderedDict()  # op -> dict

    def add(self, op, macs=0, other=0, detail=None):
        r = self.rows.setdefault(op, {"count": 0, "macs": 0, "other_ops": 0, "nodes": []})
        r["count"] += 1
        r["macs"] += int(macs)
        r["other_ops"] += int(other)
        if detail:
            r["nodes"].append(detail)


def conv1d_nd(x, w, b, a):
    """Plain numpy Conv (any spatial rank via im2col over flattened windows)."""
    nsp = x.ndim - 2
    strides = a.get("strides", [1] * nsp)
    dil = a.get("dilations", [1] * nsp)
    pads = a.get("pads", [0] * (2 * nsp))
    group = a.get("group", 1)
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("auto_pad")
    x = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nsp]) for i in range(nsp)])
    N, C = x.shape[:2]
    M = w.shape[0]
    ks = w.shape[2:]
    out_sp = [(x.shape[2 + i] - (dil[i] * (ks[i] - 1) + 1)) // strides[i] + 1 for i in range(nsp)]
    cg, mg = C // group, M // group
    y = np.zeros((N, M) + tuple(out_sp), dtype=np.float32)
    for g in range(group):
        xs = x[:, g * cg:(g + 1) * cg]
        wg = w[g * mg:(g + 1) * mg].reshape(mg, -1)
        cols = []
        for idx in np.ndindex(*out_sp):
            sl = tuple(slice(idx[i] * strides[i], idx[i] * strides[i] + dil[i] * (ks[i] - 1) + 1, dil[i])
                       for i in range(nsp))
            cols.append(xs[(slice(None), slice(None)) + sl].reshape(N, -1))
        cols = np.stack(cols, axis=-1)  # N, cg*k, L
        y[:, g * mg:(g + 1) * mg] = np.einsum("mk,nkl->nml", wg, cols).reshape((N, mg) + tuple(out_sp))
    if b is not None:
        y += b.reshape((1, M) + (1,) * nsp)
    return y


def lstm(X, W, R, B, h0, c0, a):
    if a.get("direction", b"forward") not in (b"forward", "forward"):
        raise NotImplementedError("only forward LSTM")
    H = a["hidden_size"]
    sig = UNARY["Sigmoid"]
    seq, batch, _ = X.shape
    h = h0[0] if h0 is not None else np.zeros((batch, H), np.float32)
    c = c0[0] if c0 is not None else np.zeros((batch, H), np.float32)
    Wb = B[0, :4 * H] + B[0, 4 * H:] if B is not None else 0
    Y = []
    for t in range(seq):
        z = X[t] @ W[0].T + h @ R[0].T + Wb  # gate order i, o, f, c
        i, o, f, g = sig(z[:, :H]), sig(z[:, H:2 * H]), sig(z[:, 2 * H:3 * H]), np.tanh(z[:, 3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
        Y.append(h)
    Y = np.stack(Y)[:, None]
    return Y.astype(np.float32), h[None].astype(np.float32), c[None].astype(np.float32)


def run_graph(graph, env, cnt, depth=0):
    """Execute `graph` with name->array env (outer scope visible); return outputs."""
    env = dict(env)
    for init in graph.initializer:
        env[init.name] = numpy_helper.to_array(init)
    for node in graph.node:
        op, a = node.op_type, attrs(node)
        ins = [env[n] if n else None for n in node.input]
        out = None
        if op == "Constant":
            key = [k for k in a][0]
            v = a[key]
            out = numpy_helper.to_array(v) if key == "value" else np.array(v)
        elif op == "ConstantOfShape":
            v = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
            out = np.full(tuple(int(d) for d in ins[0]), v.reshape(-1)[0], dtype=v.dtype)
        elif op == "Identity":
            out = ins[0]
        elif op == "Shape":
            out = np.array(ins[0].shape, dtype=np.int64)
        elif op == "Size":
            out = np.array(ins[0].size, dtype=np.int64)
        elif op == "Gather":
            out = np.take(ins[0], ins[1], axis=a.get("axis", 0))
        elif op == "Equal":
            out = np.equal(ins[0], ins[1])
        elif op == "Not":
            out = np.logical_not(ins[0])
        elif op == "Cast":
            out = ins[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])
        elif op == "Concat":
            out = np.concatenate(ins, axis=a["axis"])
        elif op == "Reshape":
            shape = [int(s) for s in ins[1]]
            shape = [ins[0].shape[i] if s == 0 and not a.get("allowzero", 0) else s for i, s in enumerate(shape)]
            out = ins[0].reshape(shape)
        elif op == "Transpose":
            out = np.transpose(ins[0], a.get("perm"))
        elif op == "Unsqueeze":
            axes = [int(x) for x in (ins[1] if len(ins) > 1 else a["axes"])]
            out = ins[0]
            r = out.ndim + len(axes)
            for ax in sorted(x % r for x in axes):
                out = np.expand_dims(out, ax)
        elif op == "Squeeze":
            axes = ins[1] if len(ins) > 1 and ins[1] is not None else a.get("axes")
            out = np.squeeze(ins[0], axis=None if axes is None else tuple(int(x) for x in np.ravel(axes)))
        elif op == "Slice":
            x = ins[0]
            starts, ends = ins[1], ins[2]
            axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(len(starts))
            steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
            sl = [slice(None)] * x.ndim
            for s, e, ax, st in zip(starts, ends, axes, steps):
                s, e, st = int(s), int(e), int(st)
                big = 2 ** 62
                sl[int(ax)] = slice(None if (st < 0 and s >= big) else s,
                                    None if abs(e) >= big else e, st)
            out = x[tuple(sl)]
        elif op == "Pad":
            p = [int(v) for v in ins[1]]
            n = ins[0].ndim
            mode = a.get("mode", b"constant")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            pw = [(p[i], p[i + n]) for i in range(n)]
            out = np.pad(ins[0], pw, mode="reflect" if mode == "reflect" else ("edge" if mode == "edge" else "constant"))
        elif op in UNARY:
            out = UNARY[op](ins[0]).astype(ins[0].dtype)
            cnt.add(op, other=out.size)
        elif op in BINARY:
            out = BINARY[op](ins[0], ins[1])
            cnt.add(op, other=out.size)
        elif op == "ReduceMean":
            axes = a.get("axes")
            if axes is None and len(ins) > 1:
                axes = [int(v) for v in ins[1]]
            out = np.mean(ins[0], axis=None if axes is None else tuple(axes), keepdims=bool(a.get("keepdims", 1)))
            cnt.add(op, other=ins[0].size)
        elif op == "Conv":
            x, w = ins[0], ins[1]
            b = ins[2] if len(ins) > 2 else None
            out = conv1d_nd(x, w, b, a)
            g = a.get("group", 1)
            macs = out.size * (x.shape[1] // g) * int(np.prod(w.shape[2:]))
            cnt.add(op, macs=macs, other=out.size if b is not None else 0,
                    detail="%s x%s w%s -> %s" % (node.name or node.output[0].split("/")[-2:], list(x.shape),
                                                  list(w.shape), list(out.shape)))
        elif op == "ConvTranspose":
            raise NotImplementedError("ConvTranspose evaluation (not present in Silero VAD)")
        elif op == "MatMul":
            out = np.matmul(ins[0], ins[1])
            cnt.add(op, macs=out.size * ins[0].shape[-1])
        elif op == "Gemm":
            A, B = ins[0], ins[1]
            A = A.T if a.get("transA", 0) else A
            B = B.T if a.get("transB", 0) else B
            out = a.get("alpha", 1.0) * (A @ B)
            if len(ins) > 2 and ins[2] is not None:
                out = out + a.get("beta", 1.0) * ins[2]
            cnt.add(op, macs=out.size * A.shape[-1], other=out.size if len(ins) > 2 else 0)
        elif op == "LSTM":
            X, W, R = ins[0], ins[1], ins[2]
            B = ins[3] if len(ins) > 3 else None
            h0 = ins[5] if len(ins) > 5 else None
            c0 = ins[6] if len(ins) > 6 else None
            H = a["hidden_size"]
            seq, batch, I = X.shape
            dirs = W.shape[0]
            res = lstm(X, W, R, B, h0, c0, a)
            steps = dirs * seq * batch
            macs = steps * 4 * H * (I + H)
            # per step: 4H (x-part + h-part sum) + 2*4H bias adds, 3H sigmoid, 2H tanh,
            # c = f*c + i*g (3H), h = o*tanh(c) (1H)
            other = steps * (4 * H + (8 * H if B is not None else 0) + 3 * H + 2 * H + 3 * H + H)
            cnt.add(op, macs=macs, other=other,
                    detail="seq=%d batch=%d I=%d H=%d" % (seq, batch, I, H))
            out = list(res)
        elif op == "If":
            cond = bool(np.asarray(ins[0]).reshape(-1)[0])
            branch = a["then_branch" if cond else "else_branch"]
            out = run_graph(branch, env, cnt, depth + 1)
        else:
            raise NotImplementedError("op %s" % op)
        if op not in UNARY and op not in BINARY and op not in FREE and op not in (
                "Conv", "MatMul", "Gemm", "LSTM", "ReduceMean"):
            raise NotImplementedError(op)
        outs = out if isinstance(out, list) else [out]
        for name, v in zip(node.output, outs):
            if name:
                env[name] = np.asarray(v)
    return [env[o.name] for o in graph.output]


def analyse(path, sr, n):
    model = onnx.load(path)
    g = model.graph
    # Report which branch of the top-level If the sample rate selects.
    branch_info = None
    for node in g.node:
        if node.op_type == "Equal" and "sr" in node.input:
            const = [nd for nd in g.node if nd.output and nd.output[0] in node.input and nd.op_type == "Constant"]
            ref = int(numpy_helper.to_array(const[0].attribute[0].t)) if const else None
            branch_info = "sr==%s -> %s" % (ref, "then_branch" if sr == ref else "else_branch")
    rng = np.random.default_rng(0)
    env = {
        "input": (rng.standard_normal((1, n)) * 0.1).astype(np.float32),
        "state": np.zeros((2, 1, 128), np.float32),
        "sr": np.array(sr, dtype=np.int64),
    }
    cnt = Counter()
    outs = run_graph(g, env, cnt)
    macs = sum(r["macs"] for r in cnt.rows.values())
    other = sum(r["other_ops"] for r in cnt.rows.values())
    return {
        "sample_rate": sr,
        "input_shape": [1, n],
        "branch": branch_info,
        "output_shapes": [list(o.shape) for o in outs],
        "per_op": cnt.rows,
        "macs": macs,
        "flops": 2 * macs,
        "other_ops": other,
        "total_flops_incl_other": 2 * macs + other,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print a JSON object instead of tables")
    ap.add_argument("models", nargs="*", help="model paths (default: Silero VAD v5 and v6)")
    args = ap.parse_args()
    models = [(os.path.basename(p), p) for p in args.models] or DEFAULT_MODELS
    result = {}
    for tag, path in models:
        result[tag] = {}
        for sr, n in CONFIGS:
            result[tag][str(sr)] = analyse(path, sr, n)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return
    for tag, per_sr in result.items():
        for sr, r in per_sr.items():
            print("== %s  sr=%s  input=%s  (%s)" % (tag, sr, r["input_shape"], r["branch"]))
            print("  %-12s %5s %12s %12s %12s" % ("op", "nodes", "MACs", "FLOPs", "other ops"))
            for op, row in sorted(r["per_op"].items(), key=lambda kv: -kv[1]["macs"] * 2 - kv[1]["other_ops"]):
                print("  %-12s %5d %12d %12d %12d" % (op, row["count"], row["macs"], 2 * row["macs"], row["other_ops"]))
                for d in row["nodes"]:
                    print("      %s" % d)
            print("  %-12s %5s %12d %12d %12d" % ("TOTAL", "", r["macs"], r["flops"], r["other_ops"]))
            print("  FLOPs incl. other elementwise ops: %d" % r["total_flops_incl_other"])
            print()


if __name__ == "__main__":
    main()
