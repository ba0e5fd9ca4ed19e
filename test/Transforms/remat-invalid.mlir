// RUN: memwall-opt %s --memwall-autodiff --memwall-remat=budget=2.2MB -verify-diagnostics -o /dev/null
// RUN: not memwall-opt %s --memwall-autodiff --memwall-remat=budget=40XB 2>&1 | FileCheck %s --check-prefix=UNIT
// RUN: not memwall-opt %s --memwall-autodiff --memwall-remat 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not memwall-opt %s --memwall-autodiff --memwall-remat="budget=3MB solver=ilp" 2>&1 | FileCheck %s --check-prefix=SOLVER
// RUN: not memwall-opt %s --memwall-autodiff --memwall-remat="budget=3MB time-limit=0" 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not memwall-opt %s --memwall-autodiff --memwall-remat="budget=3MB pareto=p.png" 2>&1 | FileCheck %s --check-prefix=PARETO
// RUN: not memwall-opt %s --fuse --budget=3MB --remat-solver=ilp -o %t.mlir 2>&1 | FileCheck %s --check-prefix=SOLVER
// RUN: not test -e %t.mlir

// UNIT: error: --budget: invalid size '40XB': unknown unit 'XB'
// MISSING: error: memwall-remat: a budget is required (budget=40GB)
// SOLVER: error: --remat-solver: unknown solver 'ilp' (expected auto, milp, dp or greedy)
// LIMIT: error: --remat-time-limit: must be > 0 seconds
// PARETO: error: --remat-pareto: 'p.png' must be an .svg file

// The smallest peak recomputation reaches here is 2.24 MB (two levels: the
// first layer's output recomputed too); a 2.2 MB budget is refused, naming
// what dominates.
// expected-error @below {{memwall-remat: no recomputation fits the budget of 2.20 MB: the least peak it reaches is 2.24 MB (milp (least-memory plan, segments of 2 layers), at loss.grad: weights 49.15 kB, optimizer 98.30 kB, activations 1.05 MB, workspace 1.05 MB); activations dominate: shorten the sequence or the micro-batch}}
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
