"""Pass 5 of tools/piper/conv2d_rewrite.py (Winograd F(4, 5)) and its matrices (tools/piper/winograd.py).

Run by CTest (tts.winograd) in the project's venv with ONNX Runtime 1.29's wheel on PYTHONPATH; the
rewrite itself runs under Debian's python3, as scripts/setup_piper.sh runs it.
"""
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools/piper"))
from winograd import correlate, toom_cook  # noqa: E402

HALF = Fraction(1, 2)


@pytest.mark.parametrize("m,r,points", [(4, 5, [0, 1, -1, 2, -2, HALF, -HALF]), (4, 3, [0, 1, -1, 2, -2]),
                                        (2, 3, [0, 1, -1])])
def test_matrices_compute_the_correlation_exactly(m, r, points):
    at, g, bt = toom_cook(m, r, points)
    rng = random.Random(m * 10 + r)
    for _ in range(20):
        filt = [Fraction(rng.randint(-50, 50), rng.randint(1, 9)) for _ in range(r)]
        data = [Fraction(rng.randint(-50, 50), rng.randint(1, 9)) for _ in range(m + r - 1)]
        assert correlate(at, g, bt, filt, data) == [sum(data[j + i] * filt[i] for i in range(r)) for j in range(m)]


def test_bad_points_are_refused():
    with pytest.raises(ValueError, match="distinct"):
        toom_cook(4, 5, [0, 1, -1, 2, -2, 2, HALF])
    with pytest.raises(ValueError, match="needs 7"):
        toom_cook(4, 5, [0, 1, -1])


def conv_model(path):
    """x [N, 16, T] -> a 5-tap conv (pass 5's case) -> a dilated 5-tap conv (not its case) -> y."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((32, 16, 5)) / 9).astype(np.float32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((16, 32, 5)) / 13).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["h"], name="/flow/in_layer/Conv", kernel_shape=[5],
                              pads=[2, 2]),
             helper.make_node("Tanh", ["h"], ["t"], name="/flow/Tanh"),
             helper.make_node("Conv", ["t", "w2"], ["y"], name="/flow/dilated/Conv", kernel_shape=[5], pads=[4, 4],
                              dilations=[2])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16, "T"])],
                              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
                               numpy_helper.from_array(w2, "w2")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], ir_version=8), path)


def test_the_pass_gives_the_convolution_for_every_length_and_batch(tmp_path):
    src, dst = tmp_path / "v.onnx", tmp_path / "v.conv2d.onnx"
    conv_model(src)
    done = subprocess.run(["/usr/bin/python3", str(ROOT / "tools/piper/conv2d_rewrite.py"), str(src), str(dst)],
                          capture_output=True, text=True, check=True)
    assert "1 in Winograd form" in done.stderr, done.stderr
    ops = [n.op_type for n in onnx.load(dst).graph.node]
    assert ops.count("Conv") == 2 and ops.count("MatMul") == 2  # the transform, the dilated conv; the products
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    direct = ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
    rewritten = ort.InferenceSession(str(dst), so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for n, t in [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 37), (1, 211), (2, 64), (3, 9)]:
        x = rng.standard_normal((n, 16, t)).astype(np.float32)
        want = direct.run(None, {"x": x})[0]
        got = rewritten.run(None, {"x": x})[0]
        assert got.shape == want.shape, (n, t)
        assert np.abs(got - want).max() < 1e-5 * max(1.0, np.abs(want).max()), (n, t)
