#!/usr/bin/env python3
"""Sums an ONNX Runtime profile (SessionConfig::profile_prefix, or onnxruntime's
SessionOptions.enable_profiling) per operator type: time per Run and share of the kernels' total.

    tools/ort_profile_summary.py PROFILE.json [--top 15] [--nodes 10] [--shapes Conv]

--shapes OP also sums OP's time by output shape (which layers of a network cost what).

Only the standard library. The first Run (warm-up) is left out when there are several.
"""

import argparse
import collections
import json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile")
    ap.add_argument("--top", type=int, default=15, help="operator types to list")
    ap.add_argument("--nodes", type=int, default=10, help="slowest single nodes to list")
    ap.add_argument("--shapes", metavar="OP", help="also sum this operator type's time by output shape")
    args = ap.parse_args()
    with open(args.profile) as f:
        events = json.load(f)
    runs = sorted((e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"), key=lambda e: e["ts"])
    first_end = runs[0]["ts"] + runs[0]["dur"] if len(runs) > 1 else -1
    counted = runs[1:] if len(runs) > 1 else runs
    by_op = collections.Counter()
    by_node = collections.Counter()
    node_op = {}
    by_shape = collections.Counter()
    shape_nodes = collections.Counter()
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time") or e["ts"] < first_end:
            continue
        op = e.get("args", {}).get("op_name", "?")
        provider = e.get("args", {}).get("provider", "")
        by_op[op] += e["dur"]
        node = e["name"][: -len("_kernel_time")]
        by_node[node] += e["dur"]
        node_op[node] = f"{op} ({provider})" if provider else op
        if op == args.shapes:
            shape = str(e.get("args", {}).get("output_type_shape", "?"))
            by_shape[shape] += e["dur"]
            shape_nodes[shape] += 1
    n = max(1, len(counted))
    total = sum(by_op.values())
    run_ms = sum(r["dur"] for r in counted) / n / 1000
    print(f"{len(counted)} runs counted, model_run {run_ms:.2f} ms per run, kernels {total / n / 1000:.2f} ms per run")
    print(f"{'operator':32} {'ms/run':>8} {'share':>7}")
    for op, us in by_op.most_common(args.top):
        print(f"{op:32} {us / n / 1000:8.3f} {100 * us / total:6.1f}%")
    print(f"\nslowest nodes:")
    for node, us in by_node.most_common(args.nodes):
        print(f"  {node[:60]:60} {node_op[node]:28} {us / n / 1000:7.3f} ms")
    if args.shapes:
        print(f"\n{args.shapes} by output shape:")
        for shape, us in by_shape.most_common():
            print(f"  {us / n / 1000:8.2f} ms  {shape_nodes[shape] // n:4d} nodes  {shape}")


if __name__ == "__main__":
    main()
