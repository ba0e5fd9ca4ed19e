// RUN: memwall-opt %s --memwall-autodiff --memwall-remat=budget=3MB | FileCheck %s
// RUN: memwall-opt %s --memwall-autodiff --memwall-remat="budget=3MB solver=dp" --memwall-roofline-report=output=- | FileCheck %s --check-prefix=HEURISTIC
// RUN: memwall-opt %s --memwall-autodiff --memwall-remat="budget=3MB solver=greedy" --memwall-roofline-report=output=- | FileCheck %s --check-prefix=HEURISTIC
// RUN: memwall-opt %s --memwall-autodiff --memwall-remat=budget=5MB | FileCheck %s --check-prefix=FITS
// RUN: memwall-opt %s --memwall-autodiff --memwall-remat=budget=3MB --memwall-roofline-report=output=- -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: memwall-opt %s --memwall-autodiff --memwall-remat="budget=3MB pareto=%t.svg" -o /dev/null
// RUN: %PYTHON -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1]); print('svg ok')" %t.svg | FileCheck %s --check-prefix=SVG
// RUN: FileCheck %s --check-prefix=PARETO < %t.svg

// Three layers of matmul + tanh-GELU on 2048x64 f32 activations (512 KiB
// each). Without recomputation the step peaks at 3.83 MB when the backward
// starts: every h (read by activation_grad) and every a (read by the dW
// GEMM of the next layer) is saved (each gelu writes over nothing: its h is
// saved). At 3 MB the cheapest plan recomputes each layer's matmul output h
// from its kept input just before that layer's backward (per-layer
// checkpointing here): 2.77 MB. Each clone is placed right before its
// layer's activation_grad, which reads it (the loss gradient's broadcast
// moves down to its reader too: made earlier, it would be held across the
// clone).

// CHECK-LABEL: func.func @step
// CHECK: %[[A0:.*]] = memwall.gelu
// CHECK: %[[A1:.*]] = memwall.gelu
// CHECK: memwall.reduce sum
// CHECK: %[[H2:.*]] = memwall.matmul %[[A1]], %arg3 {memwall.phase = "backward", memwall.recomputed}
// CHECK-NEXT: memwall.broadcast
// CHECK-NEXT: memwall.activation_grad gelu_tanh %[[H2]],
// CHECK: %[[H1:.*]] = memwall.matmul %[[A0]], %arg2 {memwall.phase = "backward", memwall.recomputed}
// CHECK-NEXT: memwall.activation_grad gelu_tanh %[[H1]],
// CHECK: %[[H0:.*]] = memwall.matmul %arg0, %arg1 {memwall.phase = "backward", memwall.recomputed}
// CHECK-NEXT: memwall.activation_grad gelu_tanh %[[H0]],
// CHECK: memwall.adamw

// The heuristics may choose other values (recomputing the cheap GELUs and
// keeping the matmul outputs also fits), but always within the budget.
// HEURISTIC: recomputation (memwall-remat, solver {{.*}}): budget 3.00 MB, peak 3.83 MB -> 2.{{[0-9][0-9]}} MB
// HEURISTIC: {memwall.phase = "backward", memwall.recomputed}

// A budget the step already fits: nothing is cloned.
// FITS-NOT: memwall.recomputed}
// FITS: module attributes {memwall.remat = {{.*}}peak_after_bytes = 3833860 : i64, peak_before_bytes = 3833860 : i64{{.*}}recomputed = 0 : i64
// FITS-NOT: memwall.recomputed}

// SVG: svg ok
// PARETO: Recompute overhead vs memory budget
// PARETO: <path d="M
// PARETO: budget 3.00 MB
// PARETO-DAG: >checkpoint-layers</text>
// PARETO-DAG: >chen-sqrt</text>
// PARETO-DAG: >selective</text>

// REPORT: recomputation (memwall-remat, solver milp): budget 3.00 MB, peak 3.83 MB -> 2.77 MB
// REPORT-NEXT: 3 values recomputed (1.57 MB, 50.33 MFLOP), 3 kept (1.05 MB); overhead {{.*}}, MILP gap 0.00%
// REPORT-NEXT: baselines:
// REPORT-NEXT: none               peak    3.83 MB  overhead    0.0%  does not fit
// REPORT-NEXT: checkpoint-layers  peak    2.77 MB  overhead {{.*}}  fits
// REPORT-NEXT: chen-sqrt          peak    2.77 MB  overhead {{.*}}  fits
// REPORT-NEXT: selective          peak    3.83 MB  overhead    0.0%  does not fit

func.func @step(%x: tensor<2048x64xf32> {memwall.kind = #memwall.arg_kind<input>},
                %w0: tensor<64x64xf32> {memwall.kind = #memwall.arg_kind<weight>},
                %w1: tensor<64x64xf32> {memwall.kind = #memwall.arg_kind<weight>},
                %w2: tensor<64x64xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
  %h0 = memwall.matmul %x, %w0 : tensor<2048x64xf32>, tensor<64x64xf32> -> tensor<2048x64xf32> loc("layers.0.fc")
  %a0 = memwall.gelu %h0 tanh : tensor<2048x64xf32> loc("layers.0.act")
  %h1 = memwall.matmul %a0, %w1 : tensor<2048x64xf32>, tensor<64x64xf32> -> tensor<2048x64xf32> loc("layers.1.fc")
  %a1 = memwall.gelu %h1 tanh : tensor<2048x64xf32> loc("layers.1.act")
  %h2 = memwall.matmul %a1, %w2 : tensor<2048x64xf32>, tensor<64x64xf32> -> tensor<2048x64xf32> loc("layers.2.fc")
  %a2 = memwall.gelu %h2 tanh : tensor<2048x64xf32> loc("layers.2.act")
  %l = memwall.reduce sum %a2 axes [0, 1] : tensor<2048x64xf32> -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
