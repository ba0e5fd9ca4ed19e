#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The training benchmark's table (bench/gpu/README.md, "Training").

Reads the memwall-run --report files of the training bundles (<dir>/<bundle>.json,
bench/gpu/compile_train_bundles.sh names them stack, stack.budget,
stack.least, step, step.budget, step.least) and bench/gpu/train_bench.py's
JSON, and writes one markdown table per workload: every memwall bundle
(step time, measured peak, the arena it planned and the peak memwall-remat
predicted, which holds the arena, plus the budget it was compiled for)
beside every PyTorch mode (step time, max_memory_allocated), and each
one's time over torch.compile's.

  python3 bench/gpu/train_table.py --memwall-dir DIR --pytorch FILE \\
      --bundles bench/gpu/train-bundles --device-file device.txt --out train.md
"""

import argparse
import json
import os
import re
import sys


def gb(value):
    return "%.2f GB" % (value / 1e9) if value is not None else "—"


def ms(value):
    return "%.1f ms" % value if value is not None else "—"


def budget_of(bundles, name):
    """The budget a bundle was compiled for, from its report.txt."""
    path = os.path.join(bundles, name, "report.txt")
    if not os.path.exists(path):
        return None
    match = re.search(r"^budget ([0-9.]+ [kMGT]?B)", open(path).read(), re.M)
    return match.group(1) if match else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--memwall-dir", required=True)
    parser.add_argument("--pytorch", required=True)
    parser.add_argument("--bundles", required=True)
    parser.add_argument("--device-file")
    parser.add_argument("--command", default="bench/gpu/train.sh")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    pytorch = {}
    if os.path.exists(args.pytorch):
        pytorch = json.load(open(args.pytorch))
    device = open(args.device_file).read().strip() if args.device_file else "?"
    lines = ["# Training: memwall beside PyTorch", "",
             "Device: %s; PyTorch %s; command: `%s`." % (
                 device, pytorch.get("torch", "?"), args.command), ""]
    for workload in ("stack", "step"):
        torch_records = [r for r in pytorch.get("records", [])
                         if r["workload"] == workload]
        compiled = next((r["step_ms"] for r in torch_records
                         if r["mode"] == "compile" and r["step_ms"]), None)
        ratio = lambda t: ("%.2fx" % (t / compiled)) if t and compiled else "—"
        lines += ["## %s" % workload, "",
                  "| run | step time | vs torch.compile | peak (measured) | arena / predicted peak | budget |",
                  "|---|---|---|---|---|---|"]
        for suffix in ("", ".budget", ".least"):
            name = workload + suffix
            path = os.path.join(args.memwall_dir, name + ".json")
            if not os.path.exists(path):
                continue
            report = json.load(open(path))
            t = report["total"]["measured_time_s"]
            t = t * 1e3 if t is not None else None
            memory = report["memory"]
            lines.append("| memwall %s | %s | %s | %s | %s / %s | %s |" % (
                name, ms(t), ratio(t), gb(memory.get("measured_peak_bytes")),
                gb(memory.get("arena_bytes")),
                gb(memory.get("predicted_peak_bytes")),
                budget_of(args.bundles, name) or "none"))
        for record in torch_records:
            lines.append("| PyTorch %s | %s | %s | %s | | |" % (
                record["mode"], ms(record["step_ms"]), ratio(record["step_ms"]),
                gb(record["peak_bytes"]) if record["error"] is None
                else "error: " + record["error"][:60]))
        lines.append("")
    with open(args.out, "w") as out:
        out.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
