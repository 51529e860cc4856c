#!/usr/bin/env python3
"""Rewrites a Piper (VITS) voice's 1-D convolutions as 2-D ones of height 1.

    /usr/bin/python3 tools/piper/conv2d_rewrite.py VOICE.onnx VOICE.conv2d.onnx

Why: ONNX Runtime's CPU provider runs a 2-D Conv through its NCHWc kernels (blocked channels,
AVX-512 here: the layout transformer at the default graph optimisation level), while a 1-D Conv
goes through im2col and SGEMM. VITS spends ~70 % of a run in the HiFi-GAN decoder's Conv nodes,
so the same arithmetic in the other layout makes a sentence ~15 % cheaper on this CPU
(docs/PERFORMANCE.md, "Text-to-speech").

What changes: every Conv / ConvTranspose whose weight is a 3-D initializer [O, I, K] gets the
weight [O, I, 1, K], the attributes kernel_shape/strides/dilations/output_padding [1, x] and pads
[0, b, 0, e]; an Unsqueeze (axis 2) before it and a Squeeze (axis 2) after it keep every other
node and tensor as it was. Nothing else is touched: the audio differs from the original's only by
float rounding (max |diff| ~1e-5 on a sentence; tests/tts compare the two within 1e-4).
brisvox's PiperTts loads VOICE.conv2d.onnx instead of VOICE.onnx when it is beside it and newer.

Uses Debian's python3-onnx. Refuses a graph without any 1-D convolution.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

AXIS = "brisvox_conv2d_axis"


def conv_2d_attributes(node, kernel_width):
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if a.name == "kernel_shape":
            out[a.name] = [1] + list(v)
        elif a.name in ("strides", "dilations", "output_padding"):
            out[a.name] = [1] + list(v)
        elif a.name == "pads":
            out[a.name] = [0, v[0], 0, v[1]]
        elif a.name == "output_shape":
            raise ValueError(f"node {node.name}: output_shape is not supported")
        else:
            out[a.name] = v
    out.setdefault("kernel_shape", [1, kernel_width])
    return out


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    src, dst = sys.argv[1], sys.argv[2]
    model = onnx.load(src)
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    if AXIS in initializers:
        print(f"{src}: already rewritten", file=sys.stderr)
        return 1
    nodes = []
    rewritten = 0
    for node in graph.node:
        weight = initializers.get(node.input[1]) if len(node.input) > 1 else None
        if node.op_type not in ("Conv", "ConvTranspose") or weight is None or len(weight.dims) != 3:
            nodes.append(node)
            continue
        rewritten += 1
        w = numpy_helper.to_array(weight)
        weight.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(w[:, :, None, :]), weight.name))
        x4, y4 = node.output[0] + "_brisvox_in4d", node.output[0] + "_brisvox_out4d"
        nodes.append(helper.make_node("Unsqueeze", [node.input[0], AXIS], [x4], name=node.name + "_brisvox_unsqueeze"))
        nodes.append(helper.make_node(node.op_type, [x4] + list(node.input[1:]), [y4], name=node.name,
                                      **conv_2d_attributes(node, w.shape[2])))
        nodes.append(helper.make_node("Squeeze", [y4, AXIS], [node.output[0]], name=node.name + "_brisvox_squeeze"))
    if rewritten == 0:
        print(f"{src}: no 1-D Conv or ConvTranspose with a constant weight", file=sys.stderr)
        return 1
    graph.initializer.append(numpy_helper.from_array(np.array([2], dtype=np.int64), AXIS))
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.value_info[:]  # the rewritten tensors' shapes changed; ONNX Runtime infers them again
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    print(f"{dst}: {rewritten} convolutions rewritten as 2-D", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
