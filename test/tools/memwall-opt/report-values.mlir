// The report's numbers for a model with one compute-bound and one
// memory-bound kernel, against hand computations; the same report through
// the pass, a pipeline, a target file; the SVG has one point per op that does
// arithmetic.

// RUN: rm -rf %t && mkdir -p %t
// RUN: memwall-opt %s --report=%t/h100.json -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t/h100.json
// RUN: %PYTHON %S/check_report.py %t/h100.json
// RUN: %PYTHON -c "import json,sys; t=json.load(open(sys.argv[1]))['totals']; f=t['memory_bound_time_fraction']; assert 0 < f < 1, f; assert abs(f - 7.5765532185447285e-06 / 3.208326106604935e-05) < 1e-9, f" %t/h100.json

// The same report from the pass option and from a pipeline that names the
// target; an upper-case extension still selects JSON.
// RUN: memwall-opt %s --memwall-roofline-report=output=%t/pass.JSON -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t/pass.JSON
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target{target=a100-40gb},memwall-roofline-report{output=%t/a100.json})' -o /dev/null
// RUN: FileCheck %s --check-prefix=A100 < %t/a100.json
// RUN: %PYTHON %S/check_report.py %t/a100.json

// After annotation the IR carries the costs and the report agrees with them.
// RUN: memwall-opt %s --memwall-annotate-costs --report=%t/annotated.json | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=JSON < %t/annotated.json

// A target file: its name and figures appear in the report.
// RUN: memwall-opt %s --target-file=%memwall_src/examples/targets/custom-gpu.json --report=%t/custom.json -o /dev/null
// RUN: FileCheck %s --check-prefix=CUSTOM < %t/custom.json
// RUN: %PYTHON %S/check_report.py %t/custom.json

// Text on stdout, and in a .txt file.
// RUN: memwall-opt %s --report=- -o /dev/null | FileCheck %s --check-prefix=TEXT
// RUN: memwall-opt %s --report=%t/r.txt -o /dev/null
// RUN: FileCheck %s --check-prefix=TEXT < %t/r.txt

// SVG: the matmul and the rms_norm are points; the reshape (0 FLOP) is not.
// RUN: memwall-opt %s --report=%t/r.svg -o /dev/null
// RUN: %PYTHON %S/check_svg.py %t/r.svg 2
// RUN: %PYTHON -c "import json, sys, xml.etree.ElementTree as E; n = sum(1 for o in json.load(open(sys.argv[1]))['ops'] if o['flops'] > 0); c = [e for e in E.parse(sys.argv[2]).getroot().iter('{http://www.w3.org/2000/svg}circle') if e.get('class') == 'op']; assert len(c) == n == 2, (len(c), n)" %t/h100.json %t/r.svg

// Hand computation (docs/cost-model.md "Time"): time = (c^4 + m^4)^(1/4) +
// 2 us launch, c = flops / (peak x efficiency), m = bytes / the achievable
// bandwidth. h100-sxm: BF16 989.4e12, FP32 66.9e12 FLOP/s, large GEMMs at
// 767/989.4 of the peak, kernels reach 3.01e12 B/s:
//   matmul [2048,2048] x [2048,2048] bf16 (a large GEMM, 2^33 multiply-adds):
//     flops 2*2048^3 = 17179869184, read 2*2048*2048*2 = 16777216,
//     written 8388608, intensity 17179869184/25165824 = 682.67
//     compute 17179869184/767e12 = 22.3988 us > memory 25165824/3.01e12 =
//     8.36074 us: compute-bound, (c^4 + m^4)^(1/4) = 22.5067 us + 2 us =
//     24.5067 us
//   rms_norm of 2048 rows of 2048 bf16, f32 weight:
//     flops 4*4194304 + 3*2048 = 16783360, read 8388608 + 2048*4 = 8396800,
//     written 8388608; memory 16785408/3.01e12 = 5.57655 us > compute
//     0.25087 us: memory-bound, 7.57655 us
//   reshape: nothing.
//   totals: flops 17196652544, bytes 41951232, time 32.0833 us, memory-bound
//   7.57655 us = 23.62%
//   params: w 2048*2048 bf16 + g 2048 f32 = 4196352, 8396800 bytes
// On a100-40gb (BF16 312e12 x 767/989.4, FP32 19.5e12, kernels reach
// 1.555e12 x 3.01/3.35 B/s): matmul c = 71.030 us, m = 18.012 us -> 73.103
//   us; rms_norm m = 12.0138 us -> 14.0139 us.
// custom-gpu.json (BF16 7e14, 2.8e12 B/s of which 3.01/3.35 reached): ridge
//   7e14/2.8e12 = 250; matmul c = 31.659 us, m = 10.003 us -> 33.738 us;
//   rms_norm m = 6.67194 us -> 8.67194 us.

// JSON: "target": {
// JSON-NEXT: "name": "h100-sxm",
// JSON: "model": {
// An unnamed module is named after its file.
// JSON-NEXT: "name": "{{.*}}report-values.mlir",
// JSON-NEXT: "params": 4196352,
// JSON-NEXT: "param_bytes": 8396800
// JSON: "ops": [
// JSON: "id": 0,
// JSON-NEXT: "op": "memwall.matmul",
// JSON-NEXT: "loc": "layers.0.mlp.up",
// JSON-NEXT: "flops": 17179869184,
// JSON-NEXT: "bytes_read": 16777216,
// JSON-NEXT: "bytes_written": 8388608,
// JSON-NEXT: "intensity": 682.666
// JSON-NEXT: "precision": "bf16",
// JSON-NEXT: "compute_time_s": 2.23987{{[0-9]*}}e-05,
// JSON-NEXT: "memory_time_s": 8.36073{{[0-9]*}}e-06,
// JSON-NEXT: "launch_s": {{2e-06|1.99999[0-9]*e-06|2.00000[0-9]*e-06}},
// JSON-NEXT: "bound": "compute",
// JSON-NEXT: "time_s": 2.45067{{[0-9]*}}e-05
// JSON: "id": 1,
// JSON-NEXT: "op": "memwall.rms_norm",
// JSON-NEXT: "loc": "{{.*}}report-values.mlir:{{[0-9]+}}:8",
// JSON-NEXT: "flops": 16783360,
// JSON-NEXT: "bytes_read": 8396800,
// JSON-NEXT: "bytes_written": 8388608,
// JSON-NEXT: "intensity": 0.99987
// JSON-NEXT: "precision": "fp32",
// JSON-NEXT: "compute_time_s": 2.50872{{[0-9]*}}e-07,
// JSON-NEXT: "memory_time_s": 5.57654{{[0-9]*}}e-06,
// JSON: "bound": "memory",
// JSON-NEXT: "time_s": 7.57655{{[0-9]*}}e-06
// JSON: "id": 2,
// JSON-NEXT: "op": "memwall.reshape",
// JSON: "flops": 0,
// JSON-NEXT: "bytes_read": 0,
// JSON-NEXT: "bytes_written": 0,
// JSON: "launch_s": 0,
// JSON-NEXT: "bound": "memory",
// JSON-NEXT: "time_s": 0
// JSON: "totals": {
// JSON-NEXT: "flops": 17196652544,
// JSON-NEXT: "bytes_read": 25174016,
// JSON-NEXT: "bytes_written": 16777216,
// JSON-NEXT: "bytes": 41951232,
// JSON-NEXT: "time_s": 3.20832{{[0-9]*}}e-05,
// JSON-NEXT: "memory_bound_time_s": 7.57655{{[0-9]*}}e-06,
// JSON-NEXT: "memory_bound_time_fraction": 0.23615
// JSON-NEXT: "ops": 3,
// JSON-NEXT: "memory_bound_ops": 2

// A100: "name": "a100-40gb",
// A100: "op": "memwall.matmul",
// A100: "bound": "compute",
// A100-NEXT: "time_s": 7.31033{{[0-9]*}}e-05
// A100: "op": "memwall.rms_norm",
// A100: "bound": "memory",
// A100-NEXT: "time_s": 1.40138{{[0-9]*}}e-05

// CUSTOM: "name": "h100-sxm-derated",
// CUSTOM: "ridge_flops_per_byte": 250,
// CUSTOM-NEXT: "hbm_bytes_per_s": 2800000000000,
// CUSTOM: "bf16": 700000000000000,
// CUSTOM: "op": "memwall.matmul",
// CUSTOM: "bound": "compute",
// CUSTOM-NEXT: "time_s": 3.37376{{[0-9]*}}e-05
// CUSTOM: "op": "memwall.rms_norm",
// CUSTOM: "bound": "memory",
// CUSTOM-NEXT: "time_s": 8.67194{{[0-9]*}}e-06

// IR: memwall.matmul {{.*}}memwall.cost = #memwall.cost<flops = 17179869184, bytes_read = 16777216, bytes_written = 8388608, intensity = 682.7, bound = compute, time_s = 2.451e-05>
// IR: memwall.rms_norm {{.*}}memwall.cost = #memwall.cost<flops = 16783360, bytes_read = 8396800, bytes_written = 8388608, intensity = 0.9999, bound = memory, time_s = 7.577e-06>

// TEXT: model: {{.*}}report-values.mlir, 4196352 parameters
// TEXT: target: h100-sxm
// TEXT: 0 matmul {{.*}}layers.0.mlp.up {{.*}} compute {{.*}}24.51 us
// TEXT: 1 rms_norm {{.*}} memory {{.*}}7.58 us
// TEXT: 2 reshape
// TEXT: totals: 3 ops
// TEXT: memory-bound: 2 of 3 ops, 23.6% of predicted time
// TEXT: time by kernel kind:  gemm 24.51 us (76.4%)  norm 7.58 us (23.6%)  layout 0 s (0.0%)

func.func @f(%x: tensor<2048x2048xbf16> {memwall.kind = #memwall.arg_kind<input>},
             %w: tensor<2048x2048xbf16> {memwall.kind = #memwall.arg_kind<weight>},
             %g: tensor<2048xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<4194304xbf16> {
  %0 = memwall.matmul %x, %w : tensor<2048x2048xbf16>, tensor<2048x2048xbf16> -> tensor<2048x2048xbf16> loc("layers.0.mlp.up")
  %1 = memwall.rms_norm %0, %g : tensor<2048x2048xbf16>, tensor<2048xf32>
  %2 = memwall.reshape %1 [4194304] : tensor<2048x2048xbf16> -> tensor<4194304xbf16>
  return %2 : tensor<4194304xbf16>
}
