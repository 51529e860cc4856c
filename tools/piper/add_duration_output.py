#!/usr/bin/env python3
"""Adds a Piper (VITS) voice's per-phoneme durations as a second graph output.

    /usr/bin/python3 tools/piper/add_duration_output.py VOICE.onnx VOICE.durations.onnx

A Piper voice returns only `output` float32 [B, 1, 1, S]: in a batch every sentence's audio is
padded to the longest one, and the padding is not silence (the decoder runs over it). The number
of samples that belong to sentence b is sum(durations[b]) * hop_length, where `durations` is the
output of the graph's one Ceil node (frames per phoneme id, zero past input_lengths). This tool
keeps every node and weight and only lists that tensor as an extra output named `durations`
(float32 [B, 1, T]), so brisvox can cut each sentence out of a batched run. A single-sentence run
of the rewritten file gives exactly the original audio.

Uses Debian's python3-onnx. Refuses a graph without exactly one Ceil node.
"""
import sys

import onnx
from onnx import TensorProto, helper


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    src, dst = sys.argv[1], sys.argv[2]
    model = onnx.load(src)
    graph = model.graph
    ceil_nodes = [n for n in graph.node if n.op_type == "Ceil"]
    if len(ceil_nodes) != 1:
        print(f"{src}: expected one Ceil node (the VITS duration rounding), found {len(ceil_nodes)}",
              file=sys.stderr)
        return 1
    if any(o.name == "durations" for o in graph.output):
        print(f"{src}: already has an output 'durations'", file=sys.stderr)
        return 1
    ceil_out = ceil_nodes[0].output[0]
    # An Identity gives the tensor a stable name whatever the exporter called the Ceil output.
    graph.node.append(helper.make_node("Identity", [ceil_out], ["durations"], name="brisvox_durations"))
    graph.output.append(helper.make_tensor_value_info("durations", TensorProto.FLOAT,
                                                      ["batch_size", 1, "phonemes"]))
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
