# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Checks that memwall-remat applied the cheapest plan that fits among the
solvers' and the baselines' (docs/remat.md) and says which it was."""
import json
import sys

remat = json.load(open(sys.argv[1]))["remat"]
budget = remat["budget_bytes"]
assert remat["peak_after_bytes"] <= budget, remat["peak_after_bytes"]
fitting = {b["name"]: b["overhead_time_s"] for b in remat["baselines"]
           if b["fits"]}
if remat["solver_overhead_time_s"] is not None:
    fitting["solver"] = remat["solver_overhead_time_s"]
applied = remat["overhead_time_s"]
cheapest = min(fitting.values())
assert applied <= cheapest * (1 + 1e-9), (applied, fitting)
print("applied %s (%s), overhead %.2f ms" % (
    remat["plan"],
    "a baseline" if remat["plan"] in fitting else "the solver's plan",
    1e3 * applied))
print("cheapest of the solver's plan and every baseline that fits: "
      + " ".join("%s=%.2fms" % (k, 1e3 * v) for k, v in sorted(fitting.items())))
if remat["solver_overhead_time_s"] is not None and remat["plan"] in fitting:
    assert remat["solver_overhead_time_s"] > applied
    print("the solver's best plan costs more")
