#!/usr/bin/env python3
"""Arithmetic cost of brisvox's Whisper graphs (the brisvox layout written by convert_ct2.py) for
concrete input sizes. The encoder is counted from the graph itself: the dynamic input dims are
fixed, ONNX shape inference gives every tensor its shape, and each node is counted as

  Conv          MACs = out_elems * (C_in / group) * prod(kernel)
  MatMul / Gemm MACs = prod(out_shape) * K
  FLOPs = 2 * MACs (multiply-adds only; softmax, GELU, LayerNorm and adds are left out: they
  are a few percent here, listed separately as "elementwise outputs").

The decoder step's shapes depend on data (the cache length is read from a tensor), which shape
inference cannot follow, so it is counted from whisper.json's dimensions with the formula of the
graph whisper_onnx.brisvox_decoder builds, per sequence (d = width, L = layers, C = cache rows,
T = audio rows, V = vocabulary):
  MACs = L (4 d^2 + 2 d^2 + 8 d^2 + 2 C d + 2 T d) + d V
         (self q/k/v/out, cross q/out, the MLP, self and cross attention, the output layer);
the encoder is also given by its formula as a cross-check of the graph count:
  MACs = 3 F n_mels d + 3 P d^2 (the two convolutions, F frames, P = F/2 positions)
         + L_enc (4 P d^2 + 2 P^2 d + 8 P d^2) + 2 L_dec P d^2 (cross-attention keys and values).

  whisper_flops.py MODEL_DIR [--frames 3000 1000 ...] [--batch 1] [--cache 228] [--audio 1500]

Needs onnx and numpy (the venv, or Debian's python3-onnx).
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import onnx
from onnx import shape_inference

ELEMENTWISE = {"Add", "Mul", "Div", "Erf", "Softmax", "LayerNormalization", "Where", "Sub"}


def fix_inputs(model: onnx.ModelProto, dims: dict) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for inp in m.graph.input:
        shape = inp.type.tensor_type.shape
        for i, d in enumerate(shape.dim):
            if d.dim_param:
                key = (inp.name, i) if (inp.name, i) in dims else d.dim_param
                if key not in dims:
                    raise ValueError(f"no size for {inp.name} dim {i} ({d.dim_param})")
                d.ClearField("dim_param")
                d.dim_value = dims[key]
    return shape_inference.infer_shapes(m, strict_mode=True)


def shapes_of(model: onnx.ModelProto) -> dict:
    out = {}
    for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        out[vi.name] = dims
    for init in model.graph.initializer:
        out[init.name] = list(init.dims)
    return out


def count(model: onnx.ModelProto) -> tuple[int, int]:
    shapes = shapes_of(model)
    macs = 0
    elementwise = 0
    for node in model.graph.node:
        if node.op_type == "Conv":
            out = shapes[node.output[0]]
            w = shapes[node.input[1]]  # [C_out, C_in / group, kernel...]
            macs += int(np.prod(out)) * w[1] * int(np.prod(w[2:]))
        elif node.op_type == "MatMul":
            a = shapes[node.input[0]]
            out = shapes[node.output[0]]
            macs += int(np.prod(out)) * a[-1]
        elif node.op_type == "Gemm":
            a = shapes[node.input[0]]
            trans_a = next((x.i for x in node.attribute if x.name == "transA"), 0)
            k = a[0] if trans_a else a[-1]
            macs += int(np.prod(shapes[node.output[0]])) * k
        elif node.op_type in ELEMENTWISE:
            elementwise += int(np.prod(shapes[node.output[0]]))
    return macs, elementwise


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--frames", type=int, nargs="+", default=[3000, 1000])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--cache", type=int, default=228)
    ap.add_argument("--audio", type=int, nargs="+", default=[1500, 500])
    args = ap.parse_args()
    enc = onnx.load(os.path.join(args.model_dir, "encoder.onnx"))
    with open(os.path.join(args.model_dir, "whisper.json"), encoding="utf-8") as f:
        dm = json.load(f)["dims"]
    d, V = dm["n_text_state"], dm["n_vocab"]
    for frames in args.frames:
        m = fix_inputs(enc, {"batch": args.batch, "frames": frames})
        macs, ew = count(m)
        p = frames // 2
        formula = (3 * frames * dm["n_mels"] * d + 3 * p * d * d
                   + dm["n_audio_layer"] * (4 * p * d * d + 2 * p * p * d + 8 * p * d * d)
                   + p * d * 2 * d * dm["n_text_layer"])
        print(json.dumps({"graph": "encoder", "batch": args.batch, "frames": frames,
                          "positions": p, "GFLOPs_per_segment": round(2 * macs / 1e9 / args.batch, 3),
                          "formula_GFLOPs": round(2 * formula / 1e9, 3),
                          "elementwise_outputs_M_per_segment": round(ew / 1e6 / args.batch, 1)}))
    for audio in args.audio:
        macs = dm["n_text_layer"] * (14 * d * d + 2 * args.cache * d + 2 * audio * d) + d * V
        print(json.dumps({"graph": "decoder step", "cache": args.cache, "audio": audio,
                          "MFLOPs_per_sequence": round(2 * macs / 1e6, 1),
                          "of_which_output_layer": round(2 * d * V / 1e6, 1)}))


if __name__ == "__main__":
    main()
