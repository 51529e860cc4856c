#!/usr/bin/env python3
"""Test models for brisvox's WinogradConv operator and pass 6 of tools/piper/conv2d_rewrite.py
(tests/tts/piper_winograd_op_test.cpp), random weights with HiFi-GAN's contracts:

    /usr/bin/python3 tools/piper/make_resblock_models.py OUT_DIR

  resblock_stage.onnx          one decoder stage as Piper exports it: x [N, 32, T] -> a 1x1
                               convolution (as conv_pre: the rewrite keeps what follows 4-D) ->
                               three ResBlock2 (3, 5, 7 taps; dilations 1/2, 2/6, 3/12) of
                               s = s + Conv1d(LeakyRelu(s)), summed, divided by 3 -> a 1x1
                               convolution (as conv_post)
  resblock_stage.conv2d.onnx   the same after conv2d_rewrite.py (pass 6 fuses all six convolutions
                               into WinogradConv nodes; the script says how many)
  resblock_stage.portable.onnx the same after conv2d_rewrite.py --portable (passes 1-5: ONNX
                               Runtime's NCHWc convolutions; what pass 6 is measured against)
  winograd_weight_input.onnx   a WinogradConv whose weight is a graph input, not an initializer
  winograd_four_taps.onnx      a WinogradConv with a 4-tap weight (no F(4, 4) form)

Uses Debian's python3-onnx.
"""
import pathlib
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CHANNELS = 32
BLOCKS = [(3, [1, 2]), (5, [2, 6]), (7, [3, 12])]


def stage(path):
    rng = np.random.default_rng(7)
    pre = (rng.standard_normal((CHANNELS, CHANNELS, 1)) / np.sqrt(CHANNELS)).astype(np.float32)
    inits = [numpy_helper.from_array(pre, "pre_w"), numpy_helper.from_array(np.zeros(CHANNELS, np.float32), "pre_b")]
    nodes = [helper.make_node("Conv", ["x", "pre_w", "pre_b"], ["h"], name="pre", kernel_shape=[1])]
    outs = []
    for b, (taps, dilations) in enumerate(BLOCKS):
        s = "h"
        for k, d in enumerate(dilations):
            name = f"rb{b}_c{k}"
            w = (rng.standard_normal((CHANNELS, CHANNELS, taps)) / np.sqrt(CHANNELS * taps)).astype(np.float32)
            inits += [numpy_helper.from_array(w, name + "_w"),
                      numpy_helper.from_array((0.1 * rng.standard_normal(CHANNELS)).astype(np.float32), name + "_b")]
            nodes += [helper.make_node("LeakyRelu", [s], [name + "_act"], name=name + "_act", alpha=0.1),
                      helper.make_node("Conv", [name + "_act", name + "_w", name + "_b"], [name + "_conv"], name=name,
                                       kernel_shape=[taps], dilations=[d], pads=[d * (taps // 2)] * 2),
                      helper.make_node("Add", [name + "_conv", s], [name + "_sum"], name=name + "_sum")]
            s = name + "_sum"
        outs.append(s)
    inits.append(numpy_helper.from_array(np.array(3.0, np.float32), "three"))
    nodes += [helper.make_node("Add", outs[:2], ["sum01"], name="sum01"),
              helper.make_node("Add", ["sum01", outs[2]], ["sum"], name="sum"),
              helper.make_node("Div", ["sum", "three"], ["mean"], name="mean"),
              helper.make_node("Conv", ["mean", "post_w", "pre_b"], ["y"], name="post", kernel_shape=[1])]
    post = (rng.standard_normal((CHANNELS, CHANNELS, 1)) / np.sqrt(CHANNELS)).astype(np.float32)
    inits.append(numpy_helper.from_array(post, "post_w"))
    graph = helper.make_graph(nodes, "resblock_stage",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", CHANNELS, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", CHANNELS, "T"])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def single_op(path, taps, weight_as_input):
    w = np.zeros((CHANNELS, CHANNELS, 1, taps), np.float32)
    b = np.zeros(CHANNELS, np.float32)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHANNELS, 1, "T"])]
    inits = [numpy_helper.from_array(b, "b")]
    if weight_as_input:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, list(w.shape)))
    else:
        inits.append(numpy_helper.from_array(w, "w"))
    node = helper.make_node("WinogradConv", ["x", "w", "b"], ["y"], domain="ai.brisvox", dilation=1, alpha=0.1)
    graph = helper.make_graph([node], "winograd", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, CHANNELS, 1, "T"])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.brisvox", 1)]),
              path)


def main() -> int:
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    stage(out / "resblock_stage.onnx")
    rewrite = pathlib.Path(__file__).with_name("conv2d_rewrite.py")
    done = subprocess.run([sys.executable, str(rewrite), str(out / "resblock_stage.onnx"),
                           str(out / "resblock_stage.conv2d.onnx")], capture_output=True, text=True, check=True)
    if "6 as brisvox WinogradConv" not in done.stderr:
        print(f"pass 6 did not fuse the six convolutions: {done.stderr}", file=sys.stderr)
        return 1
    subprocess.run([sys.executable, str(rewrite), "--portable", str(out / "resblock_stage.onnx"),
                    str(out / "resblock_stage.portable.onnx")], capture_output=True, check=True)
    single_op(out / "winograd_weight_input.onnx", 3, True)
    single_op(out / "winograd_four_taps.onnx", 4, False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
