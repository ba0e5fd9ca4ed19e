// Predicted beside measured: --measured reads a memwall-run --report file and
// puts each kernel it timed beside this report's prediction for the same ops
// (matched by location); kernels of ops this model does not have are counted
// as unmatched.
// RUN: memwall-opt %s --target=h100-sxm --measured=%S/Inputs/run-report.json --report=%t.json -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: %PYTHON %S/check_report.py %t.json
// RUN: memwall-opt %s --target=h100-sxm --measured=%S/Inputs/run-report.json -o /dev/null | FileCheck %s --check-prefix=TEXT
// --measured alone asks for a (text) report.

// Hand computation (docs/cost-model.md "Time"), h100-sxm:
//   matmul 2048^3 bf16: c = 17179869184 / 767e12 = 22.3988 us, m = 25165824 /
//   3.01e12 = 8.3607 us -> 24.5067 us; rms_norm: m = 16785408 / 3.01e12 =
//   5.5765 us -> 7.5766 us. Matched: 32.083 us predicted, 40.5 us measured.
// JSON: "measured": {
// JSON-NEXT: "device": "NVIDIA H100 80GB HBM3",
// JSON-NEXT: "measured_time_s": 4.25{{0*[0-9]*}}e-05,
// JSON-NEXT: "matched_measured_time_s": 4.05{{0*[0-9]*}}e-05,
// JSON-NEXT: "matched_predicted_time_s": 3.20832{{[0-9]*}}e-05,
// JSON-NEXT: "unmatched_kernels": 1,
// JSON: "name": "fused_0",
// JSON-NEXT: "ops": "layers.0.mlp.up",
// JSON-NEXT: "predicted_time_s": 2.45067{{[0-9]*}}e-05,
// JSON-NEXT: "bundle_predicted_time_s": {{2.45|2.449999[0-9]*}}e-05,
// JSON-NEXT: "measured_time_s": 3.1{{0*[0-9]*}}e-05
// JSON: "name": "stray",
// JSON-NEXT: "ops": "not.in.this.model",
// JSON-NEXT: "predicted_time_s": null,

// TEXT: measured on NVIDIA H100 80GB HBM3: 42.50 us (3 kernels); the 2 this report predicts: 32.08 us predicted, 40.50 us measured
// TEXT: kernel predicted measured meas/pred
// TEXT: fused_0 24.51 us 31.00 us 1.26
// TEXT: rms_1 7.58 us 9.50 us 1.25
// TEXT: stray ? 2.00 us -

// A file that is not a run report, or has a bad time: one error, no report.
// RUN: not memwall-opt %s --measured=%S/Inputs/bad-run-report.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not memwall-opt %s --measured=%S/Inputs/missing.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// BAD: error: {{.*}}bad-run-report.json: steps[0] "measured_time_s" must be a non-negative number of seconds
// BAD-NOT: measured on
// MISSING: error: cannot read run report '{{.*}}missing.json'

// Launch modes: a CUDA graph charges the target's graph launch cost (1 us on
// an H100 instead of 2 us) for every kernel.
// RUN: memwall-opt %s --target=h100-sxm --launch=graph --report=- -o /dev/null | FileCheck %s --check-prefix=GRAPH
// RUN: not memwall-opt %s --launch=eager --report=- -o /dev/null 2>&1 | FileCheck %s --check-prefix=LAUNCH
// GRAPH: launch 1.00 us (graph)
// GRAPH: 0 matmul {{.*}} 23.51 us
// GRAPH: 1 rms_norm {{.*}} 6.58 us
// LAUNCH: memwall-opt: error: --launch='eager' must be stream or graph

func.func @f(%x: tensor<2048x2048xbf16> {memwall.kind = #memwall.arg_kind<input>},
             %w: tensor<2048x2048xbf16> {memwall.kind = #memwall.arg_kind<weight>},
             %g: tensor<2048xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<2048x2048xbf16> {
  %0 = memwall.matmul %x, %w : tensor<2048x2048xbf16>, tensor<2048x2048xbf16> -> tensor<2048x2048xbf16> loc("layers.0.mlp.up")
  %1 = memwall.rms_norm %0, %g : tensor<2048x2048xbf16>, tensor<2048xf32> loc("layers.0.norm")
  return %1 : tensor<2048x2048xbf16>
}
