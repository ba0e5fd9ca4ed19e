#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Markdown tables of the memwall GPU benchmark (bench/gpu/README.md).

Reads the `memwall-run --report` JSON files of a directory (one per bundle,
<name>.json; schema in docs/runtime.md), the bundles' manifests (for the
bytes and GEMM FLOPs of each workload), the JSON of pytorch_bench.py and,
optionally, the exit codes that run.sh recorded, and writes markdown:

  python3 bench/gpu/make_table.py --memwall-dir OUT/memwall \\
      --pytorch OUT/pytorch.json --exit-codes OUT/memwall/exit_codes.txt \\
      --device-file OUT/device.txt --out OUT/table.md

Effective bandwidth (GB/s, 1 GB = 1e9 bytes) = (bytes of every input and
weight + bytes of every output, each once) / median time, the same
definition pytorch_bench.py uses. Speedup = PyTorch time / memwall time
(above 1: memwall is faster). The attention workloads (attention_*) get
their own table: memwall against each SDPA backend and a naive
matmul-softmax-matmul, in ms and TFLOP/s (FLOPs from pytorch_bench.py's
definition, 4*B*Hq*D*pairs). Standard library only.
"""

import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXIT_MEANINGS = {0: "ok", 1: "error", 2: "usage error", 3: "no CUDA device",
                 4: "check failed", 124: "timed out", 137: "killed",
                 125: "skipped: run.sh's memwall time budget was spent"}


def load_json(path):
    with open(path) as f:
        return json.load(f)


def manifest_figures(manifest):
    """(bytes, flops, steps) of a bundle: every input/weight and output
    buffer once; 2*M*N*K*batch for every GEMM step."""
    by_name = {b["name"]: b for b in manifest.get("buffers", [])}
    names = []
    for binding in manifest.get("inputs", []) + manifest.get("outputs", []):
        if binding["buffer"] not in names:
            names.append(binding["buffer"])
    total = sum(by_name[n]["bytes"] for n in names if n in by_name)
    flops = sum(2 * s["m"] * s["n"] * s["k"] * s.get("batch", 1)
                for s in manifest.get("steps", []) if s.get("kind") == "gemm")
    return total, flops


def reference_matmul_flops(manifest):
    """2*M*N*K of every matmul of the bundle's reference graph: what
    memwall-run --check evaluates in double on the CPU, however the bundle
    runs it (cuBLASLt steps or generated kernels)."""
    shapes = {v["name"]: v["shape"]
              for v in manifest.get("reference", {}).get("values", [])}
    flops = 0
    for op in manifest.get("reference", {}).get("ops", []):
        if op.get("op") != "matmul" or not op.get("results"):
            continue
        lhs = shapes.get(op["operands"][0])
        result = shapes.get(op["results"][0])
        if not lhs or not result:
            continue
        k = lhs[-2] if op.get("attrs", {}).get("transpose_lhs") else lhs[-1]
        outputs = 1
        for d in result:
            outputs *= d
        flops += 2 * outputs * k
    return flops


def read_exit_codes(path):
    codes = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and not parts[0].startswith("#"):
                    try:
                        codes[parts[0]] = int(parts[1])
                    except ValueError:
                        pass
    return codes


def fmt_ms(seconds_or_ms, is_seconds=False):
    if seconds_or_ms is None:
        return "-"
    ms = seconds_or_ms * 1e3 if is_seconds else seconds_or_ms
    return "%.4f" % ms if ms < 1 else "%.3f" % ms


def fmt_rate(value):
    return "-" if value is None else "%.0f" % value


def fmt_tflops(value):
    return "-" if value is None else "%.1f" % value


def ratio(numerator, denominator):
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def fmt_speedup(value):
    return "-" if value is None else "%.2fx" % value


def collect(args):
    pytorch = load_json(args.pytorch) if args.pytorch and os.path.exists(
        args.pytorch) else None
    torch_rows = {w["name"]: w for w in (pytorch or {}).get("workloads", [])}
    codes = read_exit_codes(args.exit_codes)

    names = list(torch_rows)
    definitions = {}
    try:  # the canonical order, when PyTorch has no results
        sys.dont_write_bytecode = True
        sys.path.insert(0, HERE)
        import pytorch_bench
        definitions = {w["name"]: w for w in pytorch_bench.workloads()}
        names += [n for n in definitions if n not in torch_rows]
    except Exception:
        pass
    extra = set()
    if os.path.isdir(args.memwall_dir):
        extra |= {f[:-5] for f in os.listdir(args.memwall_dir)
                  if f.endswith(".json")}
    if args.bundles and os.path.isdir(args.bundles):
        extra |= {d for d in os.listdir(args.bundles)
                  if os.path.exists(os.path.join(args.bundles, d,
                                                 "manifest.json"))}
    extra |= set(codes)
    names += sorted(extra - set(names))

    rows = []
    for name in names:
        torch_row = torch_rows.get(name)
        definition = definitions.get(name, {})
        row = {"name": name, "torch": torch_row, "report": None,
               "bytes": None, "flops": None, "exit": codes.get(name),
               "attention": (definition.get("kind") == "attention" or
                             (torch_row or {}).get("kind") == "attention" or
                             name.startswith("attention_"))}
        report_path = os.path.join(args.memwall_dir, name + ".json")
        if os.path.exists(report_path):
            try:
                row["report"] = load_json(report_path)
            except (OSError, ValueError) as e:
                row["report_error"] = str(e)
        manifest_path = None
        if args.bundles:
            manifest_path = os.path.join(args.bundles, name, "manifest.json")
        if (not manifest_path or not os.path.exists(manifest_path)) and \
                row["report"]:
            manifest_path = os.path.join(row["report"].get("bundle", ""),
                                         "manifest.json")
        if manifest_path and os.path.exists(manifest_path):
            row["bytes"], row["flops"] = manifest_figures(
                load_json(manifest_path))
        elif row["torch"]:
            row["bytes"], row["flops"] = row["torch"]["bytes"], \
                row["torch"]["flops"]
        if row["attention"]:
            # The manifest counts GEMM steps only: attention's FLOPs come
            # from pytorch_bench.py's definition (or its JSON).
            source = row["torch"] or definition
            row["flops"] = source.get("flops")
            row["bytes"] = source.get("bytes", row["bytes"])
            row["shape"] = source.get("attention")
        rows.append(row)
    return pytorch, rows


def check_text(row):
    report = row["report"]
    if report is None:
        code = row["exit"]
        if code is None:
            return "not run"
        return "no report (exit %d: %s)" % (code,
                                            EXIT_MEANINGS.get(code, "?"))
    check = report.get("check")
    if check is None:
        return "not checked"
    if check.get("passed"):
        return "PASS"
    # Outputs against their bound (docs/runtime.md, "Check"), isolated
    # steps against the tolerance.
    failed = ["%s max rel %.3g > %.3g" % (o["name"], o["max_rel_error"],
                                          o.get("bound", o["tolerance"]))
              for o in check.get("outputs", []) if not o.get("passed")]
    failed += ["step %s (%s) max rel %.3g > %.3g" % (
        s["step"], s["buffer"], s["max_rel_error"], s["tolerance"])
        for s in check.get("steps", []) if not s.get("passed")]
    return "FAIL (" + ", ".join(failed) + ")"


def memwall_seconds(row):
    report = row["report"]
    if report is None:
        return None
    t = report.get("total", {}).get("measured_time_s")
    return t if t else None


def render(args, pytorch, rows):
    device = args.device
    if args.device_file and os.path.exists(args.device_file):
        with open(args.device_file) as f:
            device = " / ".join(line.strip() for line in f if line.strip())
    if not device:
        reports = [r["report"] for r in rows if r["report"]]
        device = reports[0].get("device") if reports else "unknown device"
    date = args.date or datetime.date.today().isoformat()
    iters = sorted({r["report"].get("iters") for r in rows if r["report"]})

    out = []
    out.append("## memwall vs PyTorch: memory-bound workloads")
    out.append("")
    out.append("- Device (name, driver): %s" % device)
    out.append("- Date: %s" % date)
    if args.command:
        out.append("- Command: `%s`" % args.command)
    out.append("- memwall: `memwall-run BUNDLE --inputs=random --check "
               "--iters=N --report=...`, N = %s; time = median of N runs of "
               "the whole step sequence" %
               (", ".join(map(str, iters)) or "-"))
    if pytorch:
        out.append("- PyTorch %s (CUDA %s), eager and `torch.compile` (mode "
                   "default), %s warm-up + %s timed iterations, median; "
                   "TF32 off" % (pytorch.get("torch"), pytorch.get("cuda"),
                                 pytorch.get("warmup"), pytorch.get("iters")))
    else:
        out.append("- PyTorch: no results")
    out.append("")
    out.append("| workload | memwall ms | memwall GB/s | eager ms | "
               "torch.compile ms | speedup vs eager | speedup vs compile | "
               "check |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---|")
    attention_rows = [r for r in rows if r["attention"]]
    rows = [r for r in rows if not r["attention"]]
    for row in rows:
        t = memwall_seconds(row)
        torch_row = row["torch"] or {}
        eager, comp = torch_row.get("eager_ms"), torch_row.get("compile_ms")
        mw_ms = t * 1e3 if t else None
        gbps = row["bytes"] / t / 1e9 if t and row["bytes"] else None
        comp_text = fmt_ms(comp)
        if comp is None and torch_row.get("compile_error"):
            comp_text = "failed" if not torch_row["compile_error"].startswith(
                "skipped") else "skipped"
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["name"], fmt_ms(mw_ms), fmt_rate(gbps), fmt_ms(eager),
            comp_text, fmt_speedup(ratio(eager, mw_ms)),
            fmt_speedup(ratio(comp, mw_ms)), check_text(row)))
    out.append("")
    out.append("GB/s = (bytes of every input, weight and output, each once) "
               "/ median time. H100 SXM: 3.35 TB/s HBM3 peak, about "
               "2.8-3.0 TB/s achievable. Speedup = PyTorch ms / memwall ms.")

    bw_rows = [r for r in rows if r["torch"]]
    if bw_rows:
        out.append("")
        out.append("### Bandwidth and matmul throughput")
        out.append("")
        out.append("| workload | shape | dtype | MB moved | memwall GB/s | "
                   "eager GB/s | compile GB/s | GEMM GFLOP | memwall TFLOP/s "
                   "| eager TFLOP/s | compile TFLOP/s |")
        out.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in bw_rows:
            w = row["torch"]
            t = memwall_seconds(row)
            gbps = row["bytes"] / t / 1e9 if t and row["bytes"] else None
            flops = row["flops"] or 0
            mw_tf = flops / t / 1e12 if t and flops else None
            out.append("| %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s "
                       "| %s |" % (
                           row["name"], "x".join(map(str, w["shape"])),
                           w["dtype"], (row["bytes"] or 0) / 1e6,
                           fmt_rate(gbps), fmt_rate(w.get("eager_GBps")),
                           fmt_rate(w.get("compile_GBps")),
                           "%.1f" % (flops / 1e9) if flops else "-",
                           fmt_tflops(mw_tf),
                           fmt_tflops(w.get("eager_TFLOPs")),
                           fmt_tflops(w.get("compile_TFLOPs"))))

    tuned_rows = [r for r in rows
                  if r["torch"] and "autotune_ms" in r["torch"]]
    if tuned_rows:
        out.append("")
        out.append("### GEMM workloads against torch.compile max-autotune")
        out.append("")
        out.append("| workload | memwall ms | max-autotune ms | speedup vs "
                   "max-autotune |")
        out.append("|---|---:|---:|---:|")
        for row in tuned_rows:
            t = memwall_seconds(row)
            mw_ms = t * 1e3 if t else None
            tuned = row["torch"].get("autotune_ms")
            tuned_text = fmt_ms(tuned)
            if tuned is None and row["torch"].get("autotune_error"):
                tuned_text = ("skipped" if row["torch"]["autotune_error"]
                              .startswith("skipped") else "failed")
            out.append("| %s | %s | %s | %s |" % (
                row["name"], fmt_ms(mw_ms), tuned_text,
                fmt_speedup(ratio(tuned, mw_ms))))

    if attention_rows:
        out += render_attention(pytorch, attention_rows)

    step_rows = [r for r in rows + attention_rows if r["report"]]
    if step_rows:
        out.append("")
        out.append("### memwall steps: measured against predicted")
        out.append("")
        out.append("| workload | step | kind | ops | predicted us | "
                   "measured us | meas/pred |")
        out.append("|---|---|---|---|---:|---:|---:|")
        for row in step_rows:
            report = row["report"]
            entries = list(report.get("steps", []))
            entries.append({"name": "total", "kind": "", "ops": [],
                            **report.get("total", {})})
            for step in entries:
                pred = step.get("predicted_time_s")
                meas = step.get("measured_time_s")
                out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                    row["name"], step.get("name"), step.get("kind"),
                    ", ".join(step.get("ops", [])),
                    "%.1f" % (pred * 1e6) if pred is not None else "-",
                    "%.1f" % (meas * 1e6) if meas is not None else "-",
                    "%.2f" % (meas / pred) if pred and meas else "-"))

    if step_rows:
        out += render_memory(step_rows)

    errors = [(r["name"], r["torch"]["compile_error"]) for r in rows
              if r["torch"] and r["torch"].get("compile_error")]
    for r in attention_rows:
        torch_row = r["torch"] or {}
        if torch_row.get("error"):
            errors.append((r["name"], torch_row["error"]))
        for backend, res in sorted(torch_row.get("backends", {}).items()):
            for key, what in (("error", ""), ("gqa", "GQA: "),
                              ("graph_error", "CUDA graph: ")):
                if res.get(key) and not (key == "gqa" and
                                         res[key] == "enable_gqa=True"):
                    errors.append(("%s %s" % (r["name"], backend),
                                   what + res[key]))
    errors += [(r["name"], "eager: " + r["torch"]["eager_error"]) for r in rows
               if r["torch"] and r["torch"].get("eager_error")]
    if errors:
        out.append("")
        out.append("### PyTorch notes")
        out.append("")
        for name, text in errors:
            out.append("- %s: %s" % (name, text.splitlines()[0][:300]))
    return "\n".join(out) + "\n"


# The CUDA driver maps device allocations in 2 MiB pages.
ALLOCATION_PAGE = 2 << 20


def pages(nbytes):
    return -(-nbytes // ALLOCATION_PAGE) * ALLOCATION_PAGE


def render_memory(step_rows):
    """Measured peak device memory (free memory before the run minus its
    least during the run) against the bundle's prediction: the arena plus
    cuBLASLt's workspace, also rounded up to the driver's 2 MiB pages (each
    is one allocation)."""
    out = ["", "### Peak device memory: measured against predicted", "",
           "Predicted = arena (the plan's peak) + cuBLASLt workspace; in "
           "pages = each rounded up to the driver's 2 MiB allocation "
           "granularity. Ratio = measured / predicted.", "",
           "| workload | predicted MiB | in pages MiB | measured MiB | "
           "ratio | ratio to pages |", "|---|---:|---:|---:|---:|---:|"]
    for row in step_rows:
        memory = row["report"].get("memory") or {}
        arena = memory.get("arena_bytes")
        measured = memory.get("measured_peak_bytes")
        if arena is None or not measured:
            continue
        workspace = memory.get("workspace_bytes") or 0
        predicted = arena + workspace
        paged = pages(arena) + (pages(workspace) if workspace else 0)
        out.append("| %s | %.2f | %.2f | %.2f | %.3f | %.3f |" % (
            row["name"], predicted / 2**20, paged / 2**20, measured / 2**20,
            measured / predicted if predicted else 0,
            measured / paged if paged else 0))
    return out


ATTENTION_COLUMNS = (("flash", "SDPA flash"), ("cudnn", "SDPA cuDNN"),
                     ("efficient", "SDPA efficient"), ("naive", "naive"))


def attention_time(torch_row, backend):
    """(ms, mark) of one PyTorch backend: the smaller of the eager and the
    CUDA-graph time, mark "g" when the graph's; (None, text) when it has no
    time."""
    res = ((torch_row or {}).get("backends") or {}).get(backend)
    if not res:
        return None, "-"
    times = [(res.get("ms"), ""), (res.get("graph_ms"), "g")]
    times = [(t, m) for t, m in times if t]
    if not times:
        error = res.get("error") or ""
        return None, "skipped" if error.startswith("skipped") else "failed"
    ms, mark = min(times)
    gqa = res.get("gqa") or ""
    if gqa.startswith("K and V expanded"):
        mark += "x"
    return ms, mark


def attention_shape_text(shape):
    if not shape:
        return "-"
    text = "B%d Hq%d" % (shape["B"], shape["Hq"])
    if shape["Hkv"] != shape["Hq"]:
        text += " Hkv%d" % shape["Hkv"]
    text += " Sq%d" % shape["Sq"] if shape["Sq"] != shape["Sk"] else ""
    text += " S%d" % shape["Sk"] if shape["Sq"] == shape["Sk"] else \
        " Sk%d" % shape["Sk"]
    text += " D%d" % shape["D"]
    if shape["causal"]:
        text += " causal"
    return text


def render_attention(pytorch, rows):
    out = ["", "### Attention forward: memwall vs PyTorch SDPA backends", ""]
    out.append("FLOPs = 4·B·Hq·D·pairs, pairs = Sq·Sk, halved when causal "
               "with Sq = Sk, all Sk keys for a one-token decode. Each cell: "
               "median ms / TFLOP/s. A PyTorch backend under 1 ms is also "
               "timed as a CUDA-graph replay (no Python launch overhead) and "
               "the smaller time shown, marked g when it is the graph's; x: "
               "K and V expanded with repeat_interleave because enable_gqa "
               "failed (see the notes). memwall GB/s = (q, k, v and output "
               "bytes) / time, the figure for the memory-bound decode. "
               "memwall/flash, memwall/cuDNN = PyTorch ms / memwall ms "
               "(above 1: memwall is faster).")
    out.append("")
    out.append("| workload | shape | memwall | memwall GB/s | %s | "
               "memwall/flash | memwall/cuDNN | check |" %
               " | ".join(t for _, t in ATTENTION_COLUMNS))
    out.append("|---|---|---:|---:|%s---:|---:|---|" %
               ("---:|" * len(ATTENTION_COLUMNS)))
    for row in rows:
        t = memwall_seconds(row)
        mw_ms = t * 1e3 if t else None
        flops = row["flops"] or 0

        def cell(ms, mark=""):
            if ms is None:
                return mark or "-"
            tf = flops / (ms * 1e-3) / 1e12 if flops else None
            text = "%.4g" % ms if ms < 1 else "%.3f" % ms
            return "%s%s / %s" % (text, " (%s)" % mark if mark else "",
                                  fmt_tflops(tf))
        cells, by_backend = [], {}
        for backend, _ in ATTENTION_COLUMNS:
            ms, mark = attention_time(row["torch"], backend)
            by_backend[backend] = ms
            cells.append(cell(ms, mark))
        gbps = row["bytes"] / t / 1e9 if t and row["bytes"] else None
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["name"], attention_shape_text(row.get("shape")), cell(mw_ms),
            fmt_rate(gbps), " | ".join(cells),
            fmt_speedup(ratio(by_backend["flash"], mw_ms)),
            fmt_speedup(ratio(by_backend["cudnn"], mw_ms)), check_text(row)))
    if not pytorch:
        out.append("")
        out.append("PyTorch: no results.")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memwall-dir", required=True,
                        help="directory of memwall-run --report files")
    parser.add_argument("--pytorch", help="JSON of pytorch_bench.py")
    parser.add_argument("--bundles",
                        default=os.path.join(HERE, "bundles"),
                        help="bundle directory (default bench/gpu/bundles)")
    parser.add_argument("--exit-codes",
                        help="file of 'NAME EXIT_CODE' lines from run.sh")
    parser.add_argument("--device", help="device text, e.g. the output of "
                        "nvidia-smi --query-gpu=name,driver_version "
                        "--format=csv,noheader")
    parser.add_argument("--device-file", help="file holding that text")
    parser.add_argument("--date", help="date to print (default today)")
    parser.add_argument("--command", help="command to print in the header")
    parser.add_argument("--out", help="markdown file (default stdout)")
    args = parser.parse_args()

    pytorch, rows = collect(args)
    text = render(args, pytorch, rows)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
