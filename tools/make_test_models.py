#!/usr/bin/env python3
"""Generates the small ONNX models the test suite uses (python3-onnx from Debian; no weights).

    make_test_models.py OUT_DIR

Each model has a contract (inputs/outputs) that a test needs and arithmetic simple enough that
the test can predict the output exactly:

  add_one.onnx            x float32 [1,4] -> y = x + 1                    (session basics)
  silero_contract.onnx    Silero v5/v6 contract, inputs declared in the order (sr, state, input):
                          output[b] = sigmoid(mean(input[b, :])), stateN = state + output[b]
                          (binding by name, batch packing, context handling)
  silero_narrow_state.onnx  Silero-like but state [2,?,64]         (signature mismatch message)
  silero_int_sr_missing.onnx  input + state only, no 'sr'          (missing input message)
  silero_failing.onnx     Silero contract whose Run fails unless the batch has exactly 4 rows
                          (a Reshape to a fixed [4, 1] shape)       (runtime error handling)
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

OPSET = [helper.make_opsetid("", 16)]


def save(model, out_dir, name):
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name))


def add_one(out_dir):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    graph = helper.make_graph([helper.make_node("Add", ["x", "one"], ["y"])], "add_one", [x], [y], [one])
    save(helper.make_model(graph, opset_imports=OPSET, producer_name="brisvox-tests"), out_dir, "add_one.onnx")


def silero_like(out_dir, name, state_width=128, with_sr=True, fixed_batch=None):
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", "samples"])
    state = helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", state_width])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    out = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1])
    state_n = helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, "batch", state_width])
    nodes = [
        helper.make_node("ReduceMean", ["input"], ["mean"], axes=[1], keepdims=1),
        helper.make_node("Sigmoid", ["mean"], ["prob"]),
    ]
    inits = []
    if fixed_batch is not None:
        # Fails at run time for any other batch size: a deliberate runtime error.
        shape = helper.make_tensor("fixed_shape", TensorProto.INT64, [2], [fixed_batch, 1])
        inits.append(shape)
        nodes.append(helper.make_node("Reshape", ["prob", "fixed_shape"], ["output"]))
    else:
        nodes.append(helper.make_node("Identity", ["prob"], ["output"]))
    # stateN[l, b, :] = state[l, b, :] + prob[b]: prob [B,1] broadcasts over [2,B,W].
    nodes.append(helper.make_node("Add", ["state", "prob"], ["stateN"]))
    inputs = ([sr] if with_sr else []) + [state, inp]
    graph = helper.make_graph(nodes, name, inputs, [out, state_n], inits)
    save(helper.make_model(graph, opset_imports=OPSET, producer_name="brisvox-tests"), out_dir, name + ".onnx")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    add_one(out_dir)
    silero_like(out_dir, "silero_contract")
    silero_like(out_dir, "silero_narrow_state", state_width=64)
    silero_like(out_dir, "silero_int_sr_missing", with_sr=False)
    silero_like(out_dir, "silero_failing", fixed_batch=4)
    return 0


if __name__ == "__main__":
    sys.exit(main())
