"""int8 quantisation of an ONNX graph's linear layers for ONNX Runtime's CPU kernels
(com.microsoft domain), in two forms:

- quantize_linear_layers: MatMulNBits, weights in 8-bit blocks (the decoder, below);
- quantize_linear_layers_dynamic: DynamicQuantizeMatMul, one scale per output channel and the
  activations quantised per run (the encoder, at the end of this docstring).

Why: a Whisper decoder step is memory-bound. Each step reads every weight once whatever the
batch (tiny.en: 113 MB of fp32, 80 MB of it the 51864 x 384 output layer), so storing the linear
layers' weights as 8-bit integers (a quarter of the bytes) makes a step about 3x faster; the
encoder's linear layers run on ONNX Runtime's int8 GEMM. Accuracy: blocks of 32 weights along the
input dimension share one fp32 scale (symmetric, zero point 128), so a weight is off by at most
half a step of its own block's range; with accuracy_level 4 the activations are quantised to int8
per block as well (the fast kernels). On tiny.en this changes the transcript of 3 of the 79
parity recordings, by punctuation, and not the WER (docs/MODELS.md).

What is quantised: every MatMul whose second input is a 2-D initializer [K, N], and every Gemm
with transB=1, no bias and a 2-D initializer [N, K] (Whisper's output layer, which shares its
weights with the token embedding: the embedding stays fp32 for the Gather, only the logits read
the int8 copy). K must be a multiple of the block size. Attention's activation x activation
MatMuls, convolutions and layer norms stay fp32. Deterministic: the same graph gives the same
bytes.

The encoder's linear layers multiply 1500 rows (3000 frames) at once: compute-bound, where
MatMulNBits' per-block scales cost more than they save. DynamicQuantizeMatMul (int8 weights with
one symmetric scale per output column, the activations quantised to uint8 with one scale and
zero point per run, then MLAS's u8s8 GEMM) ran them in 93 ms per 30 s window against 219 ms
(ONNX Runtime 1.29's profiler, one thread; the whole encoder 405 ms against 513 ms;
docs/PERFORMANCE.md).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

BLOCK = 32
BITS = 8
# MatMulNBits' accuracy_level 4: int8 activations (the int8 kernels); 0/1 would dequantise
# the weights to fp32 on every run (measured ~50x slower than fp32 here).
ACCURACY_LEVEL = 4


def quantize_blocks(w_nk: np.ndarray):
    """w_nk: [N, K] float32 -> (uint8 [N, K/BLOCK, BLOCK], float32 scales [N * K/BLOCK])."""
    n, k = w_nk.shape
    blocks = w_nk.astype(np.float32).reshape(n, k // BLOCK, BLOCK)
    qmax = 2 ** (BITS - 1) - 1
    amax = np.abs(blocks).max(axis=2)
    scales = np.where(amax > 0, amax / qmax, 1.0).astype(np.float32)
    q = np.clip(np.rint(blocks / scales[..., None]), -qmax - 1, qmax) + 2 ** (BITS - 1)
    return q.astype(np.uint8), scales.reshape(-1)


def dequantize_blocks(q: np.ndarray, scales: np.ndarray) -> np.ndarray:
    n, nb, _ = q.shape
    return ((q.astype(np.float32) - 2 ** (BITS - 1)) * scales.reshape(n, nb, 1)).reshape(n, nb * BLOCK)


def _is_row_mean(dims) -> bool:
    """A [K, 1] weight is a reduction, not a linear layer (the encoder's layer norms take their row
    means as a MatMul with a 1/d column): it stays float."""
    return len(dims) == 2 and dims[1] == 1


def _weight_nk(node, inits):
    """The node's constant weight as [N, K], or None when the node is not a plain linear layer."""
    if len(node.input) < 2 or node.input[1] not in inits:
        return None
    w = inits[node.input[1]]
    if len(w.dims) != 2:
        return None
    if node.op_type == "MatMul":
        return numpy_helper.to_array(w).T
    if node.op_type == "Gemm" and len(node.input) == 2:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if attrs.get("transB", 0) == 1 and attrs.get("transA", 0) == 0 and attrs.get("alpha", 1.0) == 1.0:
            return numpy_helper.to_array(w)
    return None


def quantize_linear_layers(model: onnx.ModelProto) -> int:
    """Rewrites the model's linear layers in place; returns how many were rewritten."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    rewritten = 0
    nodes = list(graph.node)
    for node in nodes:
        w = _weight_nk(node, inits)
        if w is None or w.shape[1] % BLOCK != 0 or _is_row_mean(w.T.shape):
            continue
        n, k = w.shape
        q, scales = quantize_blocks(w)
        base = f"{node.output[0]}_int8"
        graph.initializer.extend([numpy_helper.from_array(q, base + "_weight"),
                                  numpy_helper.from_array(scales, base + "_scales")])
        _replace_node(graph, node, helper.make_node(
            "MatMulNBits", [node.input[0], base + "_weight", base + "_scales"], list(node.output),
            name=base, domain="com.microsoft", K=k, N=n, bits=BITS, block_size=BLOCK,
            accuracy_level=ACCURACY_LEVEL))
        rewritten += 1
    _finish(model)
    return rewritten


def _replace_node(graph, node, replacement) -> None:
    """Puts `replacement` where `node` was (the graph stays in topological order)."""
    index = list(graph.node).index(node)
    graph.node.remove(node)
    graph.node.insert(index, replacement)


def _finish(model: onnx.ModelProto) -> None:
    """Drops the initializers no node reads any more (the fp32 weights) and declares the
    com.microsoft domain the new nodes are in."""
    graph = model.graph
    used = {name for node in graph.node for name in node.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(op.domain == "com.microsoft" for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def quantize_columns(w_kn: np.ndarray):
    """w_kn: [K, N] float32 -> (int8 [K, N], float32 scales [N]): symmetric, one scale per column."""
    amax = np.abs(w_kn.astype(np.float32)).max(axis=0)
    scales = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w_kn / scales[None, :]), -127, 127).astype(np.int8)
    return q, scales


def quantize_linear_layers_dynamic(model: onnx.ModelProto) -> int:
    """Rewrites every MatMul with a 2-D initializer [K, N] as DynamicQuantizeMatMul (in place);
    returns how many. Gemm output layers are left as they are (the encoder has none)."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    rewritten = 0
    for node in list(graph.node):
        if node.op_type != "MatMul" or node.input[1] not in inits or len(inits[node.input[1]].dims) != 2:
            continue
        if _is_row_mean(inits[node.input[1]].dims):
            continue
        q, scales = quantize_columns(numpy_helper.to_array(inits[node.input[1]]))
        base = f"{node.output[0]}_dq8"
        graph.initializer.extend([numpy_helper.from_array(q, base + "_weight"),
                                  numpy_helper.from_array(scales, base + "_scales"),
                                  numpy_helper.from_array(np.zeros(q.shape[1], np.int8), base + "_zero")])
        _replace_node(graph, node, helper.make_node(
            "DynamicQuantizeMatMul", [node.input[0], base + "_weight", base + "_scales", base + "_zero"],
            list(node.output), name=base, domain="com.microsoft"))
        rewritten += 1
    _finish(model)
    return rewritten
