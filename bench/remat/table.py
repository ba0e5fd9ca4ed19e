#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Records one memwall-remat run (record ...) or prints the table (table FILE).

record MODEL BUDGET_GB SOLVER STATUS REPORT.json TIMING.txt -> one JSON line:
the pass's wall time from --mlir-timing, the remat section of the report,
or the error line when the budget was refused.
"""
import json
import re
import sys


def record(model, budget, solver, status, report, timing):
    text = open(timing).read()
    match = re.search(r"^\s*([0-9.]+) \(\s*[0-9.]+%\)\s+Remat\s*$", text, re.M)
    row = {"model": model, "budget_gb": float(budget), "requested": solver,
           "solver": solver,
           "remat_s": float(match.group(1)) if match else None}
    if int(status) != 0:
        error = re.search(r"error: (.*)", text)
        row["error"] = error.group(1)[:300] if error else "exit %s" % status
    else:
        remat = json.load(open(report))["remat"]
        row.update({k: remat[k] for k in (
            "peak_before_bytes", "peak_after_bytes", "overhead_time_s",
            "overhead_fraction", "recomputed", "solver", "gap", "bound_s")})
        row["baselines"] = {b["name"]: [b["peak_bytes"], b["overhead_fraction"]]
                            for b in remat["baselines"]}
    print(json.dumps(row))


def table(path):
    rows = [json.loads(line) for line in open(path)]
    print("| model | budget | --remat-solver | plan from | remat pass (s) "
          "| peak before -> after (GB) | overhead (% step) | vs milp run "
          "| MILP gap | per-layer ckpt (GB, %) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    best = {}
    for r in rows:
        if r.get("requested") == "milp" and "error" not in r:
            best[(r["model"], r["budget_gb"])] = r["overhead_time_s"]
    for r in rows:
        key = (r["model"], r["budget_gb"])
        t = "%.2f" % r["remat_s"] if r["remat_s"] is not None else "?"
        if "error" in r:
            print("| %s | %g GB | %s | | %s | refused: %s | | | | |" % (
                r["model"], r["budget_gb"], r.get("requested", ""), t,
                r["error"][:120]))
            continue
        ratio = ""
        if key in best and best[key] > 0:
            ratio = "%+.1f%%" % (100 * (r["overhead_time_s"] / best[key] - 1))
        gap = "%.2f%%" % (100 * r["gap"]) if r["solver"] == "milp" else ""
        ckpt = r["baselines"].get("checkpoint-layers")
        ckpt_s = "%.1f, %.1f%%" % (ckpt[0] / 1e9, 100 * ckpt[1]) if ckpt else ""
        print("| %s | %g GB | %s | %s | %s | %.1f -> %.1f | %.2f%% | %s | %s "
              "| %s |" % (
            r["model"], r["budget_gb"], r.get("requested", ""), r["solver"], t,
            r["peak_before_bytes"] / 1e9, r["peak_after_bytes"] / 1e9,
            100 * r["overhead_fraction"], ratio, gap, ckpt_s))


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(*sys.argv[2:8])
    else:
        table(sys.argv[2])
