# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Checks the invariants of a memwall report: totals are the sums of the ops,
fractions are fractions, and every op's bound agrees with its times."""
import json
import sys

report = json.load(open(sys.argv[1]))
ops, totals = report["ops"], report["totals"]
for key in ("target", "model", "ops", "totals"):
    assert key in report, key
for key in ("name", "ridge_flops_per_byte", "hbm_bytes_per_s", "capacity_bytes", "peak_flops"):
    assert key in report["target"], key
for op in ops:
    for key in ("id", "op", "loc", "flops", "bytes_read", "bytes_written", "intensity", "bound", "time_s"):
        assert key in op, key
    memory_bound = op["compute_time_s"] <= op["memory_time_s"]
    assert (op["bound"] == "memory") == memory_bound, op
    # The time model: the soft roofline (c^4 + m^4)^(1/4) plus the launch.
    soft = (op["compute_time_s"] ** 4 + op["memory_time_s"] ** 4) ** 0.25
    assert abs(op["time_s"] - soft - op["launch_s"]) <= 1e-12 * max(1e-6, op["time_s"]), op
    assert op["category"] in ("gemm", "attention", "norm", "elementwise", "layout", "optimizer"), op
assert [op["id"] for op in ops] == list(range(len(ops)))
assert totals["flops"] == sum(op["flops"] for op in ops)
assert totals["bytes"] == sum(op["bytes_read"] + op["bytes_written"] for op in ops)
assert abs(totals["time_s"] - sum(op["time_s"] for op in ops)) <= 1e-12 * max(1, totals["time_s"])
memory_time = sum(op["time_s"] for op in ops if op["bound"] == "memory")
assert abs(totals["memory_bound_time_fraction"] - memory_time / totals["time_s"]) < 1e-9
assert 0 <= totals["memory_bound_time_fraction"] <= 1
# The breakdown by kernel kind adds up to the step (plus exposed
# communication, reported separately).
breakdown = report["time_breakdown"]
kernel_time = sum(e["time_s"] for e in breakdown if e["category"] != "communication")
assert abs(kernel_time - totals["time_s"]) <= 1e-9 * max(1, totals["time_s"]), breakdown
assert abs(sum(e["fraction"] for e in breakdown) - 1) < 1e-9 or not ops, breakdown
for e in breakdown:
    if e["category"] != "communication":
        assert e["kernels"] == sum(1 for op in ops if op["category"] == e["category"] and op["launch_s"] > 0), e
if "fusion" in report:
    fusion = report["fusion"]
    groups, ftotals = fusion["groups"], fusion["totals"]
    fused_ids = {g["id"] for g in groups}
    assert fused_ids == {op["id"] for op in ops if op["op"] == "memwall.fusion"}
    assert ftotals["bytes_saved"] == sum(g["bytes_saved"] for g in groups)
    assert abs(ftotals["time_after_s"] - totals["time_s"]) <= 1e-12 * max(1, totals["time_s"])
    # Kernels an op launches (a split-K GEMM two) from its launch time.
    target = report["target"]
    launch = target["graph_kernel_launch_s"] if target["launch_mode"] == "graph" else target["kernel_launch_s"]
    kernels = lambda op: round(op["launch_s"] / launch) if launch > 0 else int(op["launch_s"] > 0)
    unfused_kernels = sum(kernels(op) for op in ops if op["op"] != "memwall.fusion")
    fused_kernels = sum(kernels(op) for op in ops if op["op"] == "memwall.fusion")
    assert ftotals["kernels_after"] == fused_kernels + unfused_kernels
    assert ftotals["kernels_before"] == sum(g["kernels_before"] for g in groups) + unfused_kernels
    for g in groups:
        # A dequantize at use launches no kernel of its own.
        assert g["kernels_before"] >= 1 and len(g["ops"]) >= g["kernels_before"]
        # Merges save time; bytes too, except where the merged GEMM splits K
        # more ways than its parts did (its f32 partials are traffic); a
        # matmul with its dequantize is one kernel, merged or not (nothing
        # saved).
        assert g["bytes_saved"] >= 0 or "K split" in g.get("gemm_choice", ""), g
        assert g["time_after_s"] <= g["time_before_s"] * (1 + 1e-12), g
        saves_bytes = g["bytes_saved"] > 0 or "K split" in g.get("gemm_choice", "")
        # A horizontal kernel moves the bytes its updates moved, in fewer
        # launches.
        saves_launches = g["kind"] == "horizontal" and g["bytes_saved"] == 0 and \
            g["kernels_before"] == len(g["ops"]) > 1
        assert ((saves_bytes or saves_launches) and g["time_after_s"] < g["time_before_s"]) or \
            any(loc.endswith(".dequantized") for loc in g["ops"]) or len(g["ops"]) > g["kernels_before"], g
    for r in fusion.get("refused", []):
        assert r["producer"] and r["consumer"] and r["reason"], r
    # A dequantize kernel's reason compares the two kernels with the GEMM
    # dequantizing in its main loop.
    for r in fusion.get("dequantize_kernels", []):
        assert r["producer"] and r["consumer"] and "against" in r["reason"], r
    print("fusion ok:", len(groups), "groups")
print("report ok:", len(ops), "ops")
