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
  silero_poison.onnx      silero_contract's arithmetic, but a Run fails when any row's mean is
                          below -0.75 (a frame of -1.0 samples): one batch fails, the others
                          run                                      (fault injection: failed Run)
  silero_slow.onnx        silero_contract's arithmetic, but a Run whose row mean exceeds 0.75 (a
                          frame of 1.0 samples) first runs a Loop of 200000 [256,256] MatMuls:
                          minutes unless cancelled                 (fault injection: Run deadline)
  smart_turn_slow.onnx    Smart Turn contract (input_features [B,80,800] -> logits [B,1]) whose
                          every Run loops over MatMuls for minutes (turn worker deadline)
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


def slow_branch_nodes(extreme, prob, out, prefix):
    """Nodes computing out = prob + 0 * min(x), x = extreme * ones[256, 256] multiplied by the
    identity 200000 times in a Loop: minutes of MatMuls, each a node boundary where ONNX Runtime
    checks its terminate flag. x depends on the input, so nothing can be constant-folded away."""
    n = 256
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("MatMul", ["x_in", prefix + "eye"], ["x_out"])], prefix + "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [n, n])])
    nodes = [
        helper.make_node("ConstantOfShape", [prefix + "square"], [prefix + "ones"],
                         value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])),
        helper.make_node("Mul", [prefix + "ones", extreme], [prefix + "x0"]),
        helper.make_node("EyeLike", [prefix + "x0"], [prefix + "eye"]),
        helper.make_node("Loop", [prefix + "trips", "", prefix + "x0"], [prefix + "x_final"], body=body),
        helper.make_node("ReduceMin", [prefix + "x_final"], [prefix + "x_min"], keepdims=0),
        helper.make_node("Mul", [prefix + "x_min", prefix + "zero"], [prefix + "nothing"]),
        helper.make_node("Add", [prob, prefix + "nothing"], [out]),
    ]
    inits = [helper.make_tensor(prefix + "square", TensorProto.INT64, [2], [n, n]),
             helper.make_tensor(prefix + "trips", TensorProto.INT64, [], [200000]),
             helper.make_tensor(prefix + "zero", TensorProto.FLOAT, [], [0.0])]
    return nodes, inits


def smart_turn_slow(out_dir):
    x = helper.make_tensor_value_info("input_features", TensorProto.FLOAT, ["batch", 80, 800])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    nodes = [
        helper.make_node("ReduceMean", ["input_features"], ["mean"], axes=[1, 2], keepdims=0),
        helper.make_node("Reshape", ["mean", "column"], ["mean_col"]),
        helper.make_node("Sigmoid", ["mean_col"], ["prob"]),
        helper.make_node("ReduceMax", ["mean"], ["extreme"], keepdims=0),
    ]
    slow_nodes, slow_inits = slow_branch_nodes("extreme", "prob", "logits", "slow_")
    inits = [helper.make_tensor("column", TensorProto.INT64, [2], [-1, 1])] + slow_inits
    graph = helper.make_graph(nodes + slow_nodes, "smart_turn_slow", [x], [y], inits)
    save(helper.make_model(graph, opset_imports=OPSET, producer_name="brisvox-tests"), out_dir,
         "smart_turn_slow.onnx")


def silero_trap(out_dir, name, trap):
    """silero_contract's arithmetic behind an If on the batch's row means: a trap frame sends the
    whole batch into the `then` branch, which fails ("fail") or is very slow ("slow")."""
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", "samples"])
    state = helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", 128])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    out = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1])
    state_n = helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, "batch", 128])
    inits = [helper.make_tensor("limit", TensorProto.FLOAT, [], [0.75 if trap == "slow" else -0.75])]
    nodes = [
        helper.make_node("ReduceMean", ["input"], ["mean"], axes=[1], keepdims=1),
        helper.make_node("Sigmoid", ["mean"], ["prob"]),
        helper.make_node("Add", ["state", "prob"], ["stateN"]),
    ]
    if trap == "slow":
        nodes += [helper.make_node("ReduceMax", ["mean"], ["extreme"], keepdims=0),
                  helper.make_node("Greater", ["extreme", "limit"], ["trapped"])]
    else:
        nodes += [helper.make_node("ReduceMin", ["mean"], ["extreme"], keepdims=0),
                  helper.make_node("Less", ["extreme", "limit"], ["trapped"])]
    then_out = helper.make_tensor_value_info("then_out", TensorProto.FLOAT, None)
    if trap == "fail":
        # A Reshape no batch can satisfy: the Run fails with ONNX Runtime's own error.
        bad = helper.make_tensor("bad_shape", TensorProto.INT64, [2], [-1, 1000003])
        then_graph = helper.make_graph([helper.make_node("Reshape", ["prob", "bad_shape"], ["then_out"])],
                                       "fail_branch", [], [then_out], [bad])
    else:
        then_nodes, then_inits = slow_branch_nodes("extreme", "prob", "then_out", "")
        then_graph = helper.make_graph(then_nodes, "slow_branch", [], [then_out], then_inits)
    else_out = helper.make_tensor_value_info("else_out", TensorProto.FLOAT, None)
    else_graph = helper.make_graph([helper.make_node("Identity", ["prob"], ["else_out"])], "plain_branch", [],
                                   [else_out])
    nodes.append(helper.make_node("If", ["trapped"], ["output"], then_branch=then_graph, else_branch=else_graph))
    graph = helper.make_graph(nodes, name, [sr, state, inp], [out, state_n], inits)
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
    silero_trap(out_dir, "silero_poison", "fail")
    silero_trap(out_dir, "silero_slow", "slow")
    smart_turn_slow(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
