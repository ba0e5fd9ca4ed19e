#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Checks the memory and budget sections of a report against their own
invariants and against closed-form model-state formulas (docs/memory.md).

usage: check_memory.py REPORT.json PARAMS WEIGHT_BYTES_PER_PARAM
Prints one summary line per check group for FileCheck."""
import json
import sys

report = json.load(open(sys.argv[1]))
params = int(sys.argv[2])
weight_bytes = int(sys.argv[3])
memory = report["memory"]
buckets = ["weights", "gradients", "optimizer", "activations", "kv_cache",
           "workspace"]
at_peak = sum(memory[b + "_bytes"] for b in buckets)
assert at_peak == memory["peak_bytes"], (at_peak, memory["peak_bytes"])
peak_step = max(memory["timeline"], key=lambda s: s["total_bytes"])
assert peak_step["total_bytes"] == memory["peak_bytes"]
for step in memory["timeline"]:
    assert step["total_bytes"] == sum(step[b + "_bytes"] for b in buckets)
devices, stage = memory["devices"], memory["zero_stage"]
# Model states, independently: weights at their dtype, fp32 master (when
# the weights are narrower) + two fp32 moments, each sharded by ZeRO.
opt_per_param = 12 if weight_bytes < 4 else 8
expect_weights = params * weight_bytes // (devices if stage >= 3 else 1)
expect_opt = params * opt_per_param // (devices if stage >= 1 else 1)
assert abs(memory["weights_bytes"] - expect_weights) <= devices, \
    (memory["weights_bytes"], expect_weights)
assert abs(memory["optimizer_bytes"] - expect_opt) <= 3 * devices, \
    (memory["optimizer_bytes"], expect_opt)
# Each weight is updated as soon as its gradient is complete (docs/
# autodiff.md): a gradient is live when its update starts. (Not all at once:
# no closed form bounds them, a tied table's two partial gradients overlap.)
first_update = next(s for s in memory["timeline"] if s["phase"] == "optimizer")
assert first_update["gradients_bytes"] > 0
print(f"memory: peak {memory['peak_bytes'] / 1e9:.1f} GB at {memory['peak_at']}"
      f" training={memory['training']} model states match "
      f"{weight_bytes}+{weight_bytes}+{opt_per_param} B/param")

budget = report.get("budget")
if budget:
    assert budget["headroom_bytes"] == budget["budget_bytes"] - budget["peak_bytes"]
    assert budget["fits"] == (budget["peak_bytes"] <= budget["budget_bytes"])
    first = [f for f in budget["fixes"] if f["first_that_fits"]]
    fitting = [f for f in budget["fixes"] if f["fits"]]
    assert len(first) <= 1
    if fitting:
        assert first and first[0] is fitting[0]
    for f in budget["fixes"]:
        assert f["fits"] == (f["peak_bytes"] <= budget["budget_bytes"])
    names = " ".join(f["name"] for f in budget["fixes"])
    print(f"budget: fits={budget['fits']} fixes: {names}")
    print("first that fits: " + (first[0]["name"] if first else "none"))
