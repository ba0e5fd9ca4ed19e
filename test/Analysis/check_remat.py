# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Checks a report of a rematerialized step: the simulated peak is within the
budget and agrees with the memory section; prints one line per fact."""
import json
import sys

report = json.load(open(sys.argv[1]))
budget = int(sys.argv[2])
memory = report["memory"]
if "--peak-only" in sys.argv:
    assert memory["peak_bytes"] <= budget, memory["peak_bytes"]
    print("peak within budget")
    sys.exit(0)
remat = report["remat"]
assert remat["budget_bytes"] == budget
assert remat["peak_after_bytes"] <= budget < remat["peak_before_bytes"]
assert remat["recomputed"] > 0 and remat["overhead_time_s"] > 0
print("remat: peak %.2f GB -> %.2f GB within budget %.2f GB; overhead %.2f%% "
      "of the step; solver %s" % (
          remat["peak_before_bytes"] / 1e9, remat["peak_after_bytes"] / 1e9,
          budget / 1e9, 100 * remat["overhead_fraction"], remat["solver"]))
print("baselines: " + " ".join(b["name"] for b in remat["baselines"]))
assert memory["peak_bytes"] == remat["peak_after_bytes"], (
    memory["peak_bytes"], remat["peak_after_bytes"])
print("memory.peak_bytes == remat.peak_after_bytes")
