#!/usr/bin/env python3
"""Rewrites a Piper (VITS) voice's 1-D convolutions as 2-D ones of height 1, and keeps the
HiFi-GAN decoder's tensors in ONNX Runtime's blocked-channel (NCHWc) layout between them.

    /usr/bin/python3 tools/piper/conv2d_rewrite.py [--portable] VOICE.onnx VOICE.conv2d.onnx

--portable leaves out pass 6 (brisvox's own operator): a file any ONNX Runtime runs.

Why: ONNX Runtime's CPU provider runs a 2-D Conv through its NCHWc kernels (blocked channels,
AVX-512 here: the layout transformer at the default graph optimisation level), while a 1-D Conv
goes through im2col and SGEMM. VITS spends ~70 % of a run in the decoder's Conv nodes, so the same
arithmetic in the other layout makes a sentence cheaper on this CPU (docs/PERFORMANCE.md,
"Text-to-speech"). Between two NCHWc convolutions ONNX Runtime reorders the tensor back to NCHW
for every node its layout transformer does not know, and LeakyRelu is one of them: in the decoder
every convolution then paid a ReorderInput and a ReorderOutput (~14 % of a run).

The passes, each exact or within float rounding:
1. Every Conv whose weight is a 3-D initializer [O, I, K] gets the weight [O, I, 1, K], the
   attributes kernel_shape/strides/dilations [1, x] and pads [0, b, 0, e]; an Unsqueeze (axis 2)
   before it and a Squeeze (axis 2) after it. A ConvTranspose that upsamples by s with a kernel of
   2s (HiFi-GAN's) becomes its polyphase form: one Conv with s*Cout outputs and a kernel of 2 over
   the input, whose phases a Reshape/Transpose/Reshape interleaves, trimmed by the padding (ONNX
   Runtime's ConvTranspose is a GEMM and a col2im pass at half the speed of its NCHWc Conv). Any
   other 1-D ConvTranspose is made 2-D as a Conv is.
2. Elementwise nodes (Add, Sub, Mul, Div, LeakyRelu, Relu, Tanh, Sigmoid) whose tensor inputs all
   have a 4-D form, the others being one-element constants, run on the 4-D tensors instead, and an
   Unsqueeze of a tensor that has a 4-D form reads that form: the decoder stays 4-D from its first
   convolution to its last. Nodes left without a use are removed.
3. Identity depthwise 1x1 convolutions (weight 1, no bias: x * 1 = x exactly) where a tensor would
   otherwise leave the NCHWc layout: after each upsampler (its output feeds the residual Adds), and
   before each LeakyRelu whose input comes from the NCHWc side but is not a convolution's only use
   (a residual branch point). ONNX Runtime fuses Conv + LeakyRelu into one NCHWc convolution, so
   the activation costs the same pass it did, and the Adds stay NCHWc. Only for channel counts that
   are multiples of 16 (the NCHWc block on AVX-512; a multiple of AVX2's 8 too).
3a. A Div by a constant of a tensor on the NCHWc side (each decoder stage's mean of its residual
   blocks, x / 3) becomes a depthwise 1x1 convolution by 1/3, which the LeakyRelu after it fuses
   into: Div and LeakyRelu ran in NCHW, between a reorder out of NCHWc and one back in.
3b. A decoder convolution with one output channel (conv_post, 32 channels -> the waveform) becomes
   a depthwise convolution over time and a 1x1 convolution across the channels: the NCHWc kernels
   pad one output channel to 16 and compute them all; split, it does ~1/5 of the arithmetic.
4. value_info giving every decoder stage's tensors one symbolic length, so that ONNX Runtime can
   prove a residual Add's inputs have one shape and fold the Add into the convolution before it.
5. The undilated 5-tap convolutions (the flow's WaveNet layers) in Winograd form F(4, 5): a
   strided depthwise Conv, one batched MatMul over the 8 transform points (8 products per 4
   outputs instead of 20) and the output transform (tools/piper/winograd.py has the matrices).
6. The decoder's residual convolutions, s + Conv(LeakyRelu(s)) with 3, 5 or 7 taps at any
   dilation, as brisvox's WinogradConv operator (domain ai.brisvox, src/models/tts/piper/winograd_op.h):
   F(4, r) computed block by block while the block is in cache, the LeakyRelu and the Add fused.
   From here on the file runs only in brisvox, which registers the operator on its sessions.

Measured (docs/PERFORMANCE.md, "Text-to-speech"): passes 2-4 make a sentence ~9 % cheaper than
pass 1 alone did, which was ~15 % cheaper than the voice as shipped; passes 3a and 3b another
~2.5-4 % ("The decoder's last steps"); pass 5 another ~4-5 % ("The flow in Winograd form");
pass 6 another ~20 % of the engine's throughput ("The decoder's convolutions in Winograd form").

The audio differs from the original's only by float rounding (max |diff| ~5e-5 on a sentence;
tests/tts compare the two within 1e-4). brisvox's PiperTts loads VOICE.conv2d.onnx instead of
VOICE.onnx when it is beside it and not older.

Uses Debian's python3-onnx. Refuses a graph without any 1-D convolution. Deterministic: the same
voice gives the same bytes (scripts/deps.sha256 lists them).
"""
import collections
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper

from winograd import RUNTIME_FORMS, toom_cook

AXIS = "brisvox_conv2d_axis"
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "LeakyRelu", "Relu", "Tanh", "Sigmoid"}
NCHWC_BLOCK = 16


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


def add_constant(graph, name, array):
    """Adds `array` as the initializer `name` and returns the name (a new node's input)."""
    graph.initializer.append(numpy_helper.from_array(array, name))
    return name


def i64(values):
    return np.array(values, np.int64)


def polyphase_weights(w, bias, stride):
    """A ConvTranspose weight [Cin, Cout, 2s] as the weight [Cout*s, Cin, 1, 2] of a Conv over the
    input (and its bias repeated per phase): output sample q*s + r - p is phase r at position q,
    which reads input q (tap r of the kernel) and q - 1 (tap r + s)."""
    cin, cout, _ = w.shape
    phases = np.empty((cout, stride, cin, 2), np.float32)
    phases[..., 0] = w[:, :, stride:].transpose(1, 2, 0)
    phases[..., 1] = w[:, :, :stride].transpose(1, 2, 0)
    repeated = None if bias is None else np.repeat(bias, stride).astype(np.float32)
    return phases.reshape(cout * stride, cin, 1, 2), repeated


def polyphase_shape(node, w):
    """(stride, pad) when the ConvTranspose is an upsampler with kernel 2*stride (HiFi-GAN's), else None."""
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    stride = a.get("strides", [1])[0]
    pads = a.get("pads", [0, 0])
    if (w.shape[2] != 2 * stride or stride < 2 or pads[0] != pads[1] or a.get("group", 1) != 1
            or a.get("dilations", [1])[0] != 1 or any(a.get("output_padding", [0])) or "output_shape" in a):
        return None
    return stride, pads[0]


def convs_to_2d(graph, initializers):
    """Pass 1. Returns the new node list, the 4-D form of each Squeeze output, the output channel
    count of each 2-D convolution's output, and the upsamplers' 4-D outputs (ConvTranspose, polyphase
    or not: made outside the NCHWc layout, which pass 3 bridges them back into, and each the start of
    a decoder stage for pass 4)."""
    nodes, four_d, channels, upsampled = [], {}, {}, set()
    for node in graph.node:
        weight = initializers.get(node.input[1]) if len(node.input) > 1 else None
        if node.op_type not in ("Conv", "ConvTranspose") or weight is None or len(weight.dims) != 3:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weight)
        x4, y4 = node.output[0] + "_brisvox_in4d", node.output[0] + "_brisvox_out4d"
        nodes.append(helper.make_node("Unsqueeze", [node.input[0], AXIS], [x4], name=node.name + "_brisvox_unsqueeze"))
        shape = polyphase_shape(node, w) if node.op_type == "ConvTranspose" else None
        if node.op_type == "ConvTranspose":
            upsampled.add(y4)
        if shape is not None:
            nodes += polyphase_nodes(node, w, shape, x4, y4, graph, initializers)
            channels[y4] = w.shape[1]
        else:
            weight.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(w[:, :, None, :]), weight.name))
            nodes.append(helper.make_node(node.op_type, [x4] + list(node.input[1:]), [y4], name=node.name,
                                          **conv_2d_attributes(node, w.shape[2])))
            group = next((a.i for a in node.attribute if a.name == "group"), 1)
            channels[y4] = w.shape[0] if node.op_type == "Conv" else w.shape[1] * group
        nodes.append(helper.make_node("Squeeze", [y4, AXIS], [node.output[0]], name=node.name + "_brisvox_squeeze"))
        four_d[node.output[0]] = y4
    return nodes, four_d, channels, upsampled


def polyphase_nodes(node, w, shape, x4, y4, graph, initializers):
    """Pass 1 for an upsampler: ONNX Runtime's ConvTranspose is a GEMM and a col2im pass (half this
    CPU's peak in a profile); the same sums as one Conv with stride*Cout outputs (the NCHWc kernels),
    whose phases are then interleaved: [N, Cout*s, 1, Q+1] -> [N, Cout, s, Q+1] -> [N, Cout, Q+1, s]
    -> [N, Cout, 1, (Q+1)*s], less p samples at each end. Exact up to float rounding."""
    stride, pad = shape
    cout = w.shape[1]
    bias = numpy_helper.to_array(initializers[node.input[2]]) if len(node.input) > 2 else None
    phases, repeated = polyphase_weights(w, bias, stride)
    base = node.name + "_brisvox_polyphase"

    def const(suffix, array):
        return add_constant(graph, base + suffix, array)

    inputs = [x4, const("_weight", phases)] + ([const("_bias", repeated)] if repeated is not None else [])
    return [
        helper.make_node("Conv", inputs, [base + "_phases"], name=base, kernel_shape=[1, 2], pads=[0, 1, 0, 1]),
        helper.make_node("Reshape", [base + "_phases", const("_split_shape", i64([0, cout, stride, -1]))], [base + "_split"],
                         name=base + "_split"),
        helper.make_node("Transpose", [base + "_split"], [base + "_interleaved"], name=base + "_interleave",
                         perm=[0, 1, 3, 2]),
        helper.make_node("Reshape", [base + "_interleaved", const("_row_shape", i64([0, cout, 1, -1]))], [base + "_row"],
                         name=base + "_row"),
        helper.make_node("Slice", [base + "_row", const("_starts", i64([pad])), const("_ends", i64([-(stride - pad)])),
                                   const("_axes", i64([3]))], [y4], name=base + "_trim"),
    ]


def one_element_constants(graph, initializers):
    """The names of one-element constants (initializers and Constant nodes)."""
    names = {name for name, t in initializers.items() if int(np.prod(t.dims)) == 1}
    for node in graph.node:
        if node.op_type == "Constant" and any(a.name == "value" and int(np.prod(a.t.dims)) == 1 for a in node.attribute):
            names.add(node.output[0])
    return names


def lift_elementwise(nodes, four_d, channels, constants):
    """Pass 2: elementwise nodes on 4-D forms; Unsqueeze(Squeeze(y)) read as y."""
    lifted, out = 0, []
    for node in nodes:
        out.append(node)
        if node.op_type not in ELEMENTWISE:
            continue
        tensors = [i for i in node.input if i not in constants]
        if not tensors or not all(i in four_d for i in tensors):
            continue
        y4 = node.output[0] + "_brisvox_4d"
        lifted_node = helper.make_node(node.op_type, [four_d.get(i, i) for i in node.input], [y4],
                                       name=node.name + "_brisvox_4d")
        lifted_node.attribute.extend(node.attribute)
        out.append(lifted_node)
        four_d[node.output[0]] = y4
        known = [channels[four_d[i]] for i in tensors if four_d[i] in channels]
        if known:
            channels[y4] = known[0]
        lifted += 1
    alias = {}
    kept = []
    for node in out:
        if node.op_type == "Unsqueeze" and node.input[1:] == [AXIS] and node.input[0] in four_d:
            alias[node.output[0]] = four_d[node.input[0]]
        else:
            kept.append(node)
    for node in kept:
        for k, name in enumerate(node.input):
            node.input[k] = alias.get(name, name)
    return kept, lifted


def on_nchwc_side(name, producer, channels, seen=0):
    """Made by a 2-D Conv (or a bridge), or by Adds of such tensors."""
    node = producer.get(name)
    if node is None or seen > 64:
        return False
    if node.op_type == "Conv":
        return channels.get(name, 0) % NCHWC_BLOCK == 0 and channels.get(name, 0) > 0
    if node.op_type == "Add":
        return all(on_nchwc_side(i, producer, channels, seen + 1) for i in node.input)
    return False


def depthwise(x, c, value, name, graph):
    """A 1x1 depthwise convolution multiplying every channel by `value`: an NCHWc node that ONNX
    Runtime can fuse a following LeakyRelu into."""
    weight = name + "_weight"
    graph.initializer.append(numpy_helper.from_array(np.full((c, 1, 1, 1), value, np.float32), weight))
    return helper.make_node("Conv", [x, weight], [name + "_output"], name=name, group=int(c), kernel_shape=[1, 1])


def constant_values(graph, initializers, names):
    """The values of the one-element constants `names`."""
    values = {name: float(numpy_helper.to_array(initializers[name]).reshape(-1)[0])
              for name in names if name in initializers}
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] in names:
            for a in node.attribute:
                if a.name == "value":
                    values[node.output[0]] = float(numpy_helper.to_array(a.t).reshape(-1)[0])
    return values


def scales_as_depthwise(nodes, channels, values, graph):
    """Pass 3a (after pass 3, whose bridges put the upsamplers' outputs on the NCHWc side): a Div by
    a constant c of a tensor on the NCHWc side (a decoder stage's mean of its three residual
    blocks, x / 3) becomes a depthwise convolution by 1/c. ONNX Runtime runs Div and the LeakyRelu
    after it in NCHW, so the stage's tensor was reordered out of the NCHWc layout, divided,
    activated and reordered back: four passes over it where one fused convolution does the same.
    x * (1/c) differs from x / c by float rounding only."""
    producer = {o: n for n in nodes for o in n.output}
    out, scaled = [], 0
    for node in nodes:
        x = node.input[0] if node.input else None
        if (node.op_type == "Div" and node.output[0].endswith("_brisvox_4d") and node.input[1] in values
                and values[node.input[1]] != 0 and on_nchwc_side(x, producer, channels)):
            conv = depthwise(x, channels[x], 1.0 / values[node.input[1]], node.name + "_brisvox_scale", graph)
            conv.output[0] = node.output[0]
            channels[node.output[0]] = channels[x]
            producer[node.output[0]] = conv
            out.append(conv)
            scaled += 1
        else:
            out.append(node)
    return out, scaled


def add_nchwc_bridges(nodes, channels, upsampled, graph):
    """Pass 3: identity depthwise convolutions after the upsamplers and before branch-point LeakyRelu."""
    uses = collections.Counter(i for n in nodes for i in n.input)
    producer = {o: n for n in nodes for o in n.output}

    def identity(x, c, name):
        return depthwise(x, c, 1.0, name, graph)

    out, renamed, bridges = [], {}, 0
    for node in nodes:
        for k, name in enumerate(node.input):
            node.input[k] = renamed.get(name, name)
        if node.op_type == "LeakyRelu" and node.output[0].endswith("_brisvox_4d"):
            x = node.input[0]
            made_by = producer.get(x)
            convs_only_use = made_by is not None and made_by.op_type == "Conv" and uses[x] == 1
            if not convs_only_use and on_nchwc_side(x, producer, channels):
                bridge = identity(x, channels[x], node.name + "_brisvox_nchwc")
                out.append(bridge)
                node.input[0] = bridge.output[0]
                bridges += 1
        out.append(node)
        if node.output[0] in upsampled:
            y = node.output[0]
            c = channels[y]
            if c % NCHWC_BLOCK == 0:
                bridge = identity(y, c, node.name + "_brisvox_nchwc")
                out.append(bridge)
                renamed[y] = bridge.output[0]
                channels[bridge.output[0]] = c
                producer[bridge.output[0]] = bridge
                bridges += 1
    return out, bridges


def single_output_convs_split(nodes, upsampled, graph):
    """Pass 3b: a decoder convolution with one output channel (HiFi-GAN's conv_post: 32 channels ->
    the waveform, a kernel of 7) as a depthwise convolution over time and a 1x1 one across the
    channels. ONNX Runtime's NCHWc kernels pad the one output channel to a block of 16 and compute
    all 16 (~3.4 ms of a 60-phoneme run on the Zen 4, 1/16 of it useful). Split, the K-tap
    filtering is done once per channel (C*K products per sample, the depthwise kernel), and only
    the channel sum pays for the padding (16*C): 736 products per sample instead of 3584 here. Exact up to float rounding (another order of
    the same products)."""
    initializers = {i.name: i for i in graph.initializer}
    out, split, decoder = [], 0, False
    for node in nodes:
        decoder = decoder or node.output[0] in upsampled
        w = initializers.get(node.input[1]) if node.op_type == "Conv" and len(node.input) > 1 else None
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        if (not decoder or w is None or len(w.dims) != 4 or w.dims[0] != 1 or w.dims[2] != 1 or w.dims[3] < 2
                or w.dims[1] % NCHWC_BLOCK != 0 or a.get("group", 1) != 1 or "auto_pad" in a):
            out.append(node)
            continue
        c = int(w.dims[1])
        taps = numpy_helper.to_array(w)  # [1, C, 1, K]
        base = node.name + "_brisvox_split"
        graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(taps.transpose(1, 0, 2, 3)), base + "_taps"))
        graph.initializer.append(numpy_helper.from_array(np.ones((1, c, 1, 1), np.float32), base + "_sum"))
        attrs = {k: v for k, v in a.items() if k != "group"}
        out.append(helper.make_node("Conv", [node.input[0], base + "_taps"], [base + "_filtered"], name=base + "_taps",
                                    group=c, **attrs))
        out.append(helper.make_node("Conv", [base + "_filtered", base + "_sum"] + list(node.input[2:]), [node.output[0]],
                                    name=base + "_sum", kernel_shape=[1, 1]))
        split += 1
    return out, split


# Pass 5: F(4, 5) at these points (docs/MODELS.md): 8 products per 4 outputs against 20.
WINOGRAD_OUTPUTS, WINOGRAD_TAPS, WINOGRAD_POINTS = RUNTIME_FORMS[1]  # the operator's F(4, 5) too


def winograd_convs(nodes, graph):
    """Pass 5: the undilated 5-tap convolutions (the flow's WaveNet layers, 192 -> 384 channels at
    the frame rate: ~16 % of a run) in Winograd form F(4, 5) (tools/piper/winograd.py): per
    batch item, with K = 8 transform points and Q = ceil(T / 4) tiles,
      V = depthwise Conv(x), stride 4, kernel 8: each tile's input transform BT, [N, C*K, 1, Q]
      M = U @ V over the K points: one MatMul of [K, O, C] by [N, K, C, Q] (U = G folded into
          the weights), at 8/20 of the direct form's products
      y = AT @ M: the 4 outputs of each tile, interleaved into time and cut to T, plus the bias.
    The MatMul is not NCHWc, but its tensors (192 channels at the frame rate) stay in L2 and it
    runs at ~80 % of the NCHWc kernels' rate: ~0.7x the convolution's time. Not for the decoder:
    its large tensors make the transforms' extra passes cost more than the products saved, and
    its 5-tap convolutions are dilated. Within float rounding of the direct form (the audio
    within ~1e-5 of pass 4's)."""
    initializers = {i.name: i for i in graph.initializer}
    m, r = WINOGRAD_OUTPUTS, WINOGRAD_TAPS
    k_all = m + r - 1
    at, g, bt = (np.array([[float(v) for v in row] for row in a], np.float64)
                 for a in toom_cook(m, r, WINOGRAD_POINTS))
    out, done = [], 0
    for node in nodes:
        w = initializers.get(node.input[1]) if node.op_type == "Conv" and len(node.input) > 1 else None
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        if (w is None or len(w.dims) != 4 or w.dims[2] != 1 or w.dims[3] != r or a.get("group", 1) != 1
                or a.get("dilations", [1, 1]) != [1, 1] or a.get("strides", [1, 1]) != [1, 1] or "auto_pad" in a
                or a.get("pads") != [0, r // 2, 0, r // 2]):
            out.append(node)
            continue
        weight = numpy_helper.to_array(w)[:, :, 0, :].astype(np.float64)  # [O, C, r]
        o, c = weight.shape[:2]
        # U[k] = sum_i G[k, i] W[:, :, i], the sum in a fixed order: the same bytes on every machine.
        u = np.zeros((k_all, o, c), np.float64)
        for i in range(r):
            u += g[:, i, None, None] * weight[None, :, :, i]
        taps = np.tile(bt, (c, 1)).reshape(c * k_all, 1, 1, k_all)
        base = node.name + "_brisvox_winograd"

        def const(suffix, array):
            return add_constant(graph, base + suffix, array)

        x, y = node.input[0], node.output[0]
        bias = [node.input[2]] if len(node.input) > 2 and node.input[2] else []
        out += [
            helper.make_node("Conv", [x, const("_bt", taps.astype(np.float32))], [base + "_v"], name=base + "_bt",
                             group=int(c), kernel_shape=[1, k_all], strides=[1, m],
                             pads=[0, r // 2, 0, k_all - 1 - r // 2 + m - 1]),
            helper.make_node("Reshape", [base + "_v", const("_v_shape", i64([0, c, k_all, -1]))], [base + "_v4"],
                             name=base + "_v4"),
            helper.make_node("Transpose", [base + "_v4"], [base + "_vk"], name=base + "_vk", perm=[0, 2, 1, 3]),
            helper.make_node("MatMul", [const("_u", u.astype(np.float32)), base + "_vk"], [base + "_m"],
                             name=base + "_products"),
            helper.make_node("Reshape", [base + "_m", const("_m_shape", i64([0, k_all, -1]))], [base + "_m3"],
                             name=base + "_m3"),
            helper.make_node("MatMul", [const("_at", at.astype(np.float32)), base + "_m3"], [base + "_y"],
                             name=base + "_at"),
            helper.make_node("Reshape", [base + "_y", const("_y_shape", i64([0, m, o, -1]))], [base + "_y4"],
                             name=base + "_y4"),
            helper.make_node("Transpose", [base + "_y4"], [base + "_yt"], name=base + "_interleave", perm=[0, 2, 3, 1]),
            helper.make_node("Reshape", [base + "_yt", const("_row_shape", i64([0, o, 1, -1]))], [base + "_row"],
                             name=base + "_row"),
            helper.make_node("Shape", [x], [base + "_length"], name=base + "_length", start=3, end=4),
            helper.make_node("Slice", [base + "_row", const("_start", i64([0])), base + "_length", const("_axis", i64([3]))],
                             [base + "_cut" if bias else y], name=base + "_cut"),
        ]
        if bias:
            b = numpy_helper.to_array(initializers[bias[0]]).astype(np.float32).reshape(1, o, 1, 1)
            out.append(helper.make_node("Add", [base + "_cut", const("_bias", b)], [y], name=base + "_bias"))
        done += 1
    return out, done


# Pass 6: brisvox's WinogradConv operator (src/models/tts/piper/winograd_op.h) for the decoder's residual
# convolutions: x + Conv(LeakyRelu(x)) in one node, F(4, r) computed block by block in cache.
CUSTOM_DOMAIN = "ai.brisvox"
FUSED_TAPS = (3, 5, 7)


def is_identity_bridge(node, initializers):
    """A pass-3 bridge: a 1x1 depthwise Conv by 1.0, no bias (x * 1 = x)."""
    if node is None or node.op_type != "Conv" or len(node.input) != 2 or node.input[1] not in initializers:
        return False
    return bool(np.all(numpy_helper.to_array(initializers[node.input[1]]) == 1.0)) and \
        list(initializers[node.input[1]].dims)[1:] == [1, 1, 1]


def fused_residual_convs(nodes, graph):
    """Pass 6: each decoder convolution y = Conv(LeakyRelu(x)) whose only use is an Add(y, s)
    becomes WinogradConv(x, W, B, s, alpha, dilation): the LeakyRelu applied as the block is read,
    the residual added as it is written, F(4, r) in between (docs/MODELS.md). Pass 3's identity
    bridges in front of them are read through (they only served ONNX Runtime's NCHWc kernels) and
    drop out with the nodes left unused. For 3-, 5- and 7-tap convolutions, group 1, stride 1,
    "same" padding, a constant bias, input channels a multiple of 16 and output channels of 32
    (what the AVX-512 kernel tiles; AVX2's divide them too). The rewritten file runs only where
    brisvox registers its operators."""
    nodes = remove_unused(graph, nodes)  # else pass 1's Squeezes, unused since pass 2, count as users
    initializers = {i.name: i for i in graph.initializer}
    producer = {o: n for n in nodes for o in n.output}
    users = collections.defaultdict(list)
    for n in nodes:
        for i in n.input:
            users[i].append(n)

    def through_bridge(name):
        made_by = producer.get(name)
        return made_by.input[0] if is_identity_bridge(made_by, initializers) else name

    replaced, removed, done = {}, set(), 0
    for node in nodes:
        w = initializers.get(node.input[1]) if node.op_type == "Conv" and len(node.input) == 3 else None
        if w is None or len(w.dims) != 4 or w.dims[2] != 1 or w.dims[3] not in FUSED_TAPS or node.input[2] not in initializers:
            continue
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        r, d = int(w.dims[3]), a.get("dilations", [1, 1])[1]
        if (a.get("group", 1) != 1 or a.get("strides", [1, 1]) != [1, 1] or "auto_pad" in a
                or a.get("dilations", [1, 1])[0] != 1 or a.get("pads") != [0, d * (r // 2), 0, d * (r // 2)]
                or w.dims[1] % 16 or w.dims[0] % 32):
            continue
        act = producer.get(node.input[0])
        if act is None or act.op_type != "LeakyRelu":
            continue
        alpha = next((helper.get_attribute_value(x) for x in act.attribute if x.name == "alpha"), 0.01)
        x = through_bridge(act.input[0])
        inputs = [x, node.input[1], node.input[2]]
        output = node.output[0]
        add = users[output][0] if len(users[output]) == 1 else None
        if add is not None and add.op_type == "Add" and len(add.input) == 2 and add.input[0] != add.input[1]:
            inputs.append(through_bridge(add.input[1] if add.input[0] == output else add.input[0]))
            output = add.output[0]
        fused = helper.make_node("WinogradConv", inputs, [output], name=node.name + "_brisvox_winograd",
                                 domain=CUSTOM_DOMAIN, dilation=int(d), alpha=float(alpha))
        # In the Add's place when it fuses one (every input is ready there), else the Conv's.
        removed.add(id(node))
        replaced[id(add) if len(inputs) == 4 else id(node)] = fused
        done += 1
    out = [replaced.get(id(n), n) for n in nodes if id(n) not in removed or id(n) in replaced]
    return out, done


def add_length_hints(graph, nodes, channels, upsampled):
    """Pass 4: value_info naming each decoder stage's length. ONNX Runtime folds a residual Add into
    the NCHWc convolution before it only when it can prove both inputs have one shape, and its own
    tracking gives up at a dilated convolution (most of the resblocks'). A symbolic length per stage
    (the upsampler's output; kept by 'same' stride-1 convolutions and elementwise nodes) proves it:
    the Adds then cost nothing of their own (~6 % of a run)."""
    initializers = {i.name: i for i in graph.initializer}
    length, stage = {}, 0
    for node in nodes:
        y = node.output[0]
        if y in upsampled:
            stage += 1
            length[y] = f"brisvox_decoder_length_{stage}"
        elif node.op_type == "Conv" and node.input[0] in length and node.input[1] in initializers:
            a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
            k = initializers[node.input[1]].dims[-1]
            d = a.get("dilations", [1, 1])[-1]
            pads = a.get("pads", [0, 0, 0, 0])
            if a.get("strides", [1, 1])[-1] == 1 and pads[1] + pads[3] == d * (k - 1):
                length[y] = length[node.input[0]]
        elif node.op_type in ELEMENTWISE and any(i in length for i in node.input):
            length[y] = next(length[i] for i in node.input if i in length)
    hinted = 0
    for node in nodes:
        y = node.output[0]
        if node.op_type in ("Conv", "Add") and y in length:
            graph.value_info.append(helper.make_tensor_value_info(
                y, onnx.TensorProto.FLOAT, ["brisvox_batch", channels.get(y), 1, length[y]]))
            hinted += 1
    return hinted


def remove_unused(graph, nodes):
    outputs = {o.name for o in graph.output}
    while True:
        used = {i for n in nodes for i in n.input} | outputs
        kept = [n for n in nodes if any(o in used for o in n.output)]
        if len(kept) == len(nodes):
            return nodes
        nodes = kept


def main() -> int:
    args = sys.argv[1:]
    portable = "--portable" in args
    args = [a for a in args if a != "--portable"]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    src, dst = args
    model = onnx.load(src)
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    if AXIS in initializers:
        print(f"{src}: already rewritten", file=sys.stderr)
        return 1
    constants = one_element_constants(graph, initializers)
    nodes, four_d, channels, upsampled = convs_to_2d(graph, initializers)
    rewritten = len(four_d)
    if rewritten == 0:
        print(f"{src}: no 1-D Conv or ConvTranspose with a constant weight", file=sys.stderr)
        return 1
    graph.initializer.append(numpy_helper.from_array(np.array([2], dtype=np.int64), AXIS))
    nodes, lifted = lift_elementwise(nodes, four_d, channels, constants)
    nodes, bridges = add_nchwc_bridges(nodes, channels, upsampled, graph)
    nodes, scaled = scales_as_depthwise(nodes, channels, constant_values(graph, initializers, constants), graph)
    nodes, narrowed = single_output_convs_split(nodes, upsampled, graph)
    nodes, winograd = winograd_convs(nodes, graph)
    nodes, fused = (nodes, 0) if portable else fused_residual_convs(nodes, graph)
    if fused:
        model.opset_import.append(helper.make_opsetid(CUSTOM_DOMAIN, 1))
    nodes = remove_unused(graph, nodes)
    used = {i for n in nodes for i in n.input}
    kept_initializers = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept_initializers)
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.value_info[:]  # the rewritten tensors' shapes changed; ONNX Runtime infers them again
    hints = add_length_hints(graph, nodes, channels, upsampled)
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    print(f"{dst}: {rewritten} convolutions rewritten as 2-D, {lifted} elementwise nodes kept 4-D, "
          f"{bridges} NCHWc bridges, {scaled} scales as depthwise convolutions, "
          f"{narrowed} one-channel convolutions split, {winograd} in Winograd form, "
          f"{fused} as brisvox WinogradConv, {hints} length hints", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
