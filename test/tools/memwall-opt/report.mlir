// RUN: memwall-opt %s --target=h100-sxm --report=%t.json -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: %PYTHON %S/check_report.py %t.json
// RUN: memwall-opt %s --target=h100-sxm --report=- -o /dev/null | FileCheck %s --check-prefix=TEXT
// RUN: memwall-opt %s --target=h100-sxm --report=%t.txt -o /dev/null
// RUN: FileCheck %s --check-prefix=TEXT < %t.txt
// RUN: memwall-opt %s --target=l4 --report=%t.svg -o /dev/null
// RUN: %PYTHON %S/check_svg.py %t.svg 2

// The report pass leaves the IR alone.
// RUN: memwall-opt %s --report=%t.2.json | FileCheck %s --check-prefix=IR
// IR: memwall.matmul
// IR-NOT: memwall.cost

// JSON: "schema_version": 1
// JSON: "target": {
// JSON:   "name": "h100-sxm",
// JSON:   "ridge_flops_per_byte": 295.3
// JSON:   "hbm_bytes_per_s": 3350000000000,
// JSON:   "capacity_bytes": 85899345920,
// JSON:   "peak_flops": {
// JSON-NEXT: "fp32": 66900000000000,
// JSON-NEXT: "tf32": 494700000000000,
// JSON-NEXT: "bf16": 989400000000000,
// JSON: "model": {
// JSON-NEXT: "name": "tiny",
// Parameters: w (768*3072) + b (3072) = 2362368 elements of bf16.
// JSON-NEXT: "params": 2362368,
// JSON-NEXT: "param_bytes": 4724736
// JSON: "ops": [
// JSON: "id": 0,
// JSON-NEXT: "op": "memwall.matmul",
// JSON-NEXT: "loc": "{{.*}}report.mlir:{{[0-9]+}}:{{[0-9]+}}",
// JSON-NEXT: "flops": 2417491968,
// JSON-NEXT: "bytes_read": 5511168,
// JSON-NEXT: "bytes_written": 3145728,
// JSON-NEXT: "intensity": 279.2
// JSON-NEXT: "precision": "bf16",
// The GEMM at the measured 767/989.4 of the bf16 peak: c = 3.152 us, m =
// 8656896 B / 3.01 TB/s = 2.876 us: compute-bound, (c^4 + m^4)^(1/4) + 2 us.
// JSON: "bound": "compute",
// JSON-NEXT: "time_s": 5.59
// JSON-NEXT: "category": "gemm"
// JSON: "id": 1,
// JSON-NEXT: "op": "memwall.gelu",
// JSON-NEXT: "loc": "mlp.gelu",
// JSON: "id": 2,
// JSON-NEXT: "op": "memwall.reshape",
// JSON: "flops": 0,
// JSON: "time_s": 0
// JSON: "totals": {
// JSON: "memory_bound_time_fraction": 0.42
// JSON: "time_breakdown": [
// JSON-NEXT: {
// JSON-NEXT: "category": "gemm",
// JSON-NEXT: "kernels": 1,

// TEXT: memwall roofline report
// TEXT: model:  tiny, 2362368 parameters (4.72 MB)
// TEXT: target: h100-sxm (NVIDIA H100 SXM5 80GB), 3.35 TB/s, 85.90 GB, launch 2.00 us (stream)
// TEXT: achieved: 3.01 TB/s DRAM, GEMMs 78/50/25% (large/small/skinny), attention 36% of peak
// TEXT: bf16 989.40 TFLOP/s (ridge 295.3)
// TEXT: id op
// TEXT: 0 matmul {{.*}}report.mlir:{{.*}} 2.42 GFLOP {{.*}} 279.3 compute {{ *}}5.60 us
// TEXT: 1 gelu {{ *}}mlp.gelu
// TEXT: 2 reshape
// TEXT: totals: 3 ops
// TEXT: memory-bound: 2 of 3 ops, 42.2% of predicted time
// TEXT: time by kernel kind:  gemm 5.60 us (57.8%)  elementwise 4.09 us (42.2%)  layout 0 s (0.0%)
// TEXT: slowest ops:

module @tiny {
  func.func @f(%x: tensor<4x128x768xbf16> {memwall.kind = #memwall.arg_kind<input>},
               %w: tensor<768x3072xbf16> {memwall.kind = #memwall.arg_kind<weight>},
               %b: tensor<3072xbf16> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<512x3072xbf16> {
    %0 = memwall.matmul %x, %w bias %b : tensor<4x128x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16> -> tensor<4x128x3072xbf16>
    %1 = memwall.gelu %0 tanh : tensor<4x128x3072xbf16> loc("mlp.gelu")
    %2 = memwall.reshape %1 [512, 3072] : tensor<4x128x3072xbf16> -> tensor<512x3072xbf16>
    return %2 : tensor<512x3072xbf16>
  }
}
