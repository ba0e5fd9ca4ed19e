#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Measured over predicted time of every benchmarked kernel, before and after
calibration.

The kernels were measured once (memwall-run --report files of one GPU run,
the bundles compiled for the built-in target). "Before" is the prediction in
those bundles' manifests; "after" is the prediction of the same workloads
compiled with the calibration file (bench/gpu/compile_bundles.sh with
MEMWALL_TARGET_FILE and BUNDLES_DIR). A kernel is compared after calibration
only where the calibrated compile chose the same step (same name, kind and
ops): where calibration changes a fusion decision, the new kernel has not
been measured and the row says so.

  python3 bench/gpu/prediction_ratios.py --memwall-dir RUN/memwall \\
      --bundles bench/gpu/bundles --calibrated-bundles DIR --out FILE.md
Standard library only.
"""

import argparse
import glob
import json
import math
import os
import statistics


def load(path):
    with open(path) as f:
        return json.load(f)


def step_key(step):
    return (step["name"], step.get("kind"), tuple(step.get("ops", [])))


def manifest_steps(bundle_dir):
    path = os.path.join(bundle_dir, "manifest.json")
    if not os.path.exists(path):
        return None
    steps = {}
    for step in load(path).get("steps", []):
        ops = step.get("ops") or []
        if not ops and step.get("kind") == "kernel":
            ops = step.get("kernel", {}).get("ops", [])
        steps[step["name"]] = {"kind": step.get("kind"),
                               "predicted": step.get("predicted_time_s")}
    return steps


def geomean_spread(ratios):
    """Geometric mean of measured/predicted and the geometric mean of each
    ratio's distance from 1 (1.0 = every prediction exact)."""
    if not ratios:
        return None, None
    logs = [math.log(r) for r in ratios]
    return (math.exp(sum(logs) / len(logs)),
            math.exp(sum(abs(x) for x in logs) / len(logs)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memwall-dir", required=True)
    parser.add_argument("--bundles", required=True)
    parser.add_argument("--calibrated-bundles", required=True)
    parser.add_argument("--out")
    args = parser.parse_args()

    rows, before, after = [], [], []
    for report_path in sorted(glob.glob(os.path.join(args.memwall_dir,
                                                     "*.json"))):
        name = os.path.basename(report_path)[:-len(".json")]
        report = load(report_path)
        if "steps" not in report:
            continue
        calibrated = manifest_steps(os.path.join(args.calibrated_bundles,
                                                 name))
        for step in report["steps"]:
            measured = step.get("measured_time_s")
            predicted = step.get("predicted_time_s")
            if not measured or not predicted:
                continue
            ratio_before = measured / predicted
            before.append(ratio_before)
            ratio_after = None
            note = ""
            if calibrated is None:
                note = "no calibrated bundle"
            elif step["name"] not in calibrated or \
                    calibrated[step["name"]]["kind"] != step.get("kind"):
                note = "calibrated compile chose other kernels"
            else:
                ratio_after = measured / calibrated[step["name"]]["predicted"]
                after.append(ratio_after)
            rows.append((name, step["name"], measured * 1e6, predicted * 1e6,
                         ratio_before, ratio_after, note))

    lines = ["| bundle | step | measured us | predicted us (built-in) | "
             "measured/predicted before | after calibration | note |",
             "|---|---|---|---|---|---|---|"]
    for name, step, measured, predicted, rb, ra, note in rows:
        lines.append("| %s | %s | %.1f | %.1f | %.2f | %s | %s |" % (
            name, step, measured, predicted, rb,
            "%.2f" % ra if ra is not None else "-", note))
    for label, ratios in (("before", before), ("after", after)):
        mean, spread = geomean_spread(ratios)
        if mean is not None:
            lines.append("")
            lines.append("%s calibration: %d kernels, geometric mean of "
                         "measured/predicted %.3f, median %.3f, mean "
                         "distance from exact x%.3f" % (
                             label, len(ratios), mean,
                             statistics.median(ratios), spread))
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
