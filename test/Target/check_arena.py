# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Checks a bundle's arena against the budget and against the peak the
report's recomputation simulated.

usage: check_arena.py MANIFEST.json REPORT.json BUDGET_BYTES REL_TOLERANCE"""
import json
import sys

arena = json.load(open(sys.argv[1]))["arena_bytes"]
remat = json.load(open(sys.argv[2]))["remat"]
budget, tolerance = int(sys.argv[3]), float(sys.argv[4])
predicted = remat["peak_after_bytes"]
assert arena <= budget, (arena, budget)
assert abs(arena - predicted) <= tolerance * predicted, (arena, predicted)
print("arena within the budget and within %g%% of the simulated peak" %
      (100 * tolerance))
print("two levels: segments of %d layers" % remat["segment_layers"])
