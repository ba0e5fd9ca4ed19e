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
// JSON: "bound": "memory",
// JSON-NEXT: "time_s": 4.58
// JSON: "id": 1,
// JSON-NEXT: "op": "memwall.gelu",
// JSON-NEXT: "loc": "mlp.gelu",
// JSON: "id": 2,
// JSON-NEXT: "op": "memwall.reshape",
// JSON: "flops": 0,
// JSON: "time_s": 0
// JSON: "totals": {
// JSON: "memory_bound_time_fraction": 1

// TEXT: memwall roofline report
// TEXT: model:  tiny, 2362368 parameters (4.72 MB)
// TEXT: target: h100-sxm (NVIDIA H100 SXM5 80GB), 3.35 TB/s
// TEXT: bf16 989.40 TFLOP/s (ridge 295.3)
// TEXT: id op
// TEXT: 0 matmul {{.*}}report.mlir:{{.*}} 2.42 GFLOP {{.*}} 279.3 memory {{ *}}4.58 us
// TEXT: 1 gelu {{ *}}mlp.gelu
// TEXT: 2 reshape
// TEXT: totals: 3 ops
// TEXT: memory-bound: 3 of 3 ops, 100.0% of predicted time
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
