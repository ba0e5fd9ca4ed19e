// Ops codegen cannot run: one error per distinct message at its first op,
// the repeats counted once on the function.
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target,func.func(memwall-configure-kernels))' -split-input-file -verify-diagnostics

// expected-error @+1 {{codegen cannot run 1 more op of @repeats for the reasons above}}
func.func @repeats(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{codegen runs attention only in its tiled form (memwall.flash_attention); this one stayed untiled}}
  %0 = memwall.attention %q, %q, %q causal : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %1 = memwall.attention %0, %0, %0 causal : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %1 : tensor<1x2x8x16xf32>
}

// -----

func.func @constant() -> tensor<4xf32> {
  // expected-error @+1 {{codegen does not support 'arith.constant' yet}}
  %0 = arith.constant dense<1.0> : tensor<4xf32>
  return %0 : tensor<4xf32>
}
