#!/usr/bin/env python3
"""Writes a copy of an ONNX model whose LayerNormalization nodes are spelled out as two MatMuls
with a 1/d column (the rows' mean and variance) and elementwise ops: the form the Whisper encoder
uses (tools/whisper/whisper_onnx.py, layer_norm(spelled_out=True)), because ONNX Runtime 1.29's CPU
LayerNormalization kernel is a scalar loop. An experiment for Smart Turn v3.2 (docs/PERFORMANCE.md,
"Smart Turn v3.2, real weights"): faster, but its int8 graph quantizes each norm's output, so the
float rounding of this form moves the probability by more than the 1e-4 of Pipecat parity. Not
what brisvox ships.

    /usr/bin/python3 tools/turn/layer_norms_spelled_out.py IN.onnx OUT.onnx
"""

import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def spell_out(model: onnx.ModelProto) -> int:
    g = model.graph
    weights = {i.name: i for i in g.initializer}
    columns: dict[int, str] = {}
    nodes = []
    count = 0
    for n in g.node:
        if n.op_type != "LayerNormalization":
            nodes.append(n)
            continue
        axis = next((a.i for a in n.attribute if a.name == "axis"), -1)
        if axis != -1 or len(n.input) < 3 or n.input[1] not in weights:
            nodes.append(n)  # only the last-axis norms with constant scale and bias
            continue
        eps = next((a.f for a in n.attribute if a.name == "epsilon"), 1e-5)
        x, gamma, beta = n.input[:3]
        d = numpy_helper.to_array(weights[gamma]).shape[0]
        if d not in columns:
            columns[d] = f"spelled_ln.column{d}"
            g.initializer.append(numpy_helper.from_array(np.full((d, 1), 1.0 / d, np.float32), columns[d]))
        p = f"spelled_ln{count}."
        g.initializer.append(numpy_helper.from_array(np.array(eps, np.float32), p + "eps"))
        nodes += [
            helper.make_node("MatMul", [x, columns[d]], [p + "mean"]),
            helper.make_node("Sub", [x, p + "mean"], [p + "centred"]),
            helper.make_node("Mul", [p + "centred", p + "centred"], [p + "squares"]),
            helper.make_node("MatMul", [p + "squares", columns[d]], [p + "variance"]),
            helper.make_node("Add", [p + "variance", p + "eps"], [p + "variance_eps"]),
            helper.make_node("Sqrt", [p + "variance_eps"], [p + "deviation"]),
            helper.make_node("Div", [p + "centred", p + "deviation"], [p + "normalised"]),
            helper.make_node("Mul", [p + "normalised", gamma], [p + "scaled"]),
            helper.make_node("Add", [p + "scaled", beta], [n.output[0]]),
        ]
        count += 1
    del g.node[:]
    g.node.extend(nodes)
    return count


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    model = onnx.load(sys.argv[1])
    n = spell_out(model)
    onnx.save(model, sys.argv[2])
    print(f"{n} LayerNormalization nodes spelled out -> {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
