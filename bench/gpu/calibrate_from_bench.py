#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Adds the rates of memwall's own kernels, measured by the GPU benchmark, to
a calibration file written by `memwall-run --calibrate`.

memwall-run --calibrate measures what the runtime can run alone: the copy
rate, cuBLASLt's GEMM rates and the launch overhead. The generated GEMM and
the attention kernel are measured by bench/gpu/run.sh instead (their PTX is
compiled on the development machine); this script reads those reports and
writes
  achievable.generated_gemm_efficiency.{large,small}: per GEMM shape class
      (docs/targets.md), the median over every generated GEMM kernel of the
      `*.memwall` bundles (its shape from the `.cublaslt` twin; on sm_90a the
      wgmma kernels only) of FLOPs / (time x the bf16 peak); skinny GEMMs
      are memory-bound and keep the base's figure. With `--variant ws`, the
      `*.ws` bundles' (the warp-specialized kernel's) instead: the rate to
      price it at where memwall.gemm_warp_specialized is on;
  achievable.attention_efficiency: the median over the attention workloads
      that run one kernel without split keys of FLOPs / (time x peak),
      FLOPs as pytorch_bench.py counts them.
  python3 bench/gpu/calibrate_from_bench.py --target CAL.json \\
      --memwall-dir RUN/memwall --bundles bench/gpu/bundles \\
      --peak-flops 989.4e12 --out CAL.json
Standard library only.
"""

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    with open(path) as f:
        return json.load(f)


def gemm_class(m, n, k):
    """The shape class of lib/Hardware/Roofline.cpp's classifyGemm."""
    if min(m, n) <= 64:
        return "skinny"
    return "small" if m * n * k < (1 << 30) else "large"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--memwall-dir", required=True)
    parser.add_argument("--bundles", required=True)
    parser.add_argument("--peak-flops", type=float, required=True,
                        help="the base target's bf16 peak, FLOP/s")
    parser.add_argument("--out", required=True)
    parser.add_argument("--variant", choices=["memwall", "ws"],
                        default="memwall",
                        help="the bundles whose generated GEMMs set "
                             "generated_gemm_efficiency: <name>.memwall "
                             "(the default kernel) or <name>.ws (the "
                             "warp-specialized one)")
    args = parser.parse_args()
    suffix = "." + args.variant

    target = load(args.target)
    achievable = target.setdefault("achievable", {})
    fractions = {}
    for name in sorted(os.listdir(args.bundles)):
        if not name.endswith(suffix):
            continue
        report_path = os.path.join(args.memwall_dir, name + ".json")
        cublas = os.path.join(args.bundles, name[:-len(suffix)] +
                              ".cublaslt", "manifest.json")
        if not os.path.exists(report_path) or not os.path.exists(cublas):
            continue
        # The same workload under --gemm=cublaslt names each GEMM's shape;
        # its GEMMs and the generated GEMM kernels come in the same order.
        gemms = [s for s in load(cublas)["steps"] if s.get("kind") == "gemm"]
        manifest = load(os.path.join(args.bundles, name, "manifest.json"))
        generated = [s for s in manifest["steps"]
                     if s.get("kind") == "kernel" and s["name"].endswith("_gemm")]
        if len(gemms) != len(generated):
            continue
        measured = {s["name"]: s["measured_time_s"]
                    for s in load(report_path).get("steps", [])}
        for g, step in zip(gemms, generated):
            # On sm_90a the figure is the wgmma kernel's (the one with tensor
            # maps); the mma.sync fallback is priced relative to it.
            if not step.get("tensor_maps") and any(
                    s.get("tensor_maps") for s in manifest["steps"]):
                continue
            if step["name"] not in measured:
                continue
            m, n, k = g["m"], g["n"], g["k"] * g.get("batch", 1)
            if min(m, n) <= 64:
                continue  # memory-bound: FLOPs over time is no compute rate
            fraction = 2.0 * m * n * k / (measured[step["name"]] *
                                          args.peak_flops)
            cls = gemm_class(m, n, k)
            fractions.setdefault(cls, []).append(fraction)
            print("generated GEMM %-44s %-16s %dx%dx%d %-5s %.3f of peak" % (
                name, step["name"], m, n, k, cls, fraction))
    if fractions:
        achievable["generated_gemm_efficiency"] = {
            cls: round(statistics.median(v), 4) for cls, v in fractions.items()}

    sys.path.insert(0, HERE)
    import pytorch_bench  # the workloads' FLOPs; importing needs no GPU
    attention = []
    for w in pytorch_bench.workloads():
        if w.get("kind") != "attention":
            continue
        report_path = os.path.join(args.memwall_dir, w["name"] + ".json")
        if not os.path.exists(report_path):
            continue
        steps = load(report_path).get("steps", [])
        if len(steps) != 1:
            continue
        # Split keys (grid.z > 1): the last split's merge is in the kernel's
        # time, so its FLOP rate is no attention rate.
        manifest_path = os.path.join(args.bundles, w["name"], "manifest.json")
        if os.path.exists(manifest_path) and any(
                s.get("kind") == "kernel" and s.get("grid", [1, 1, 1])[2] > 1
                for s in load(manifest_path)["steps"]):
            continue
        fraction = w["flops"] / (steps[0]["measured_time_s"] * args.peak_flops)
        attention.append(fraction)
        print("attention %-46s %.3f of peak" % (w["name"], fraction))
    if attention:
        achievable["attention_efficiency"] = round(
            statistics.median(attention), 4)

    calibration = target.get("calibration", "")
    target["calibration"] = (calibration + "; " if calibration else "") + (
        "generated GEMM and attention rates from bench/gpu/run.sh "
        "(bench/gpu/calibrate_from_bench.py)")
    with open(args.out, "w") as f:
        json.dump(target, f, indent=2)
        f.write("\n")
    print("wrote %s" % args.out)


if __name__ == "__main__":
    main()
