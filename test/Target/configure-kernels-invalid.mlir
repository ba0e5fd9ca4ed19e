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

// -----

// Attention's backward has no kernel yet, fused with its views or not.
func.func @attention_grad(%x: tensor<1x16x2x64xbf16>, %o: tensor<1x2x16x64xbf16>, %lse: tensor<1x2x16xf32>) -> tensor<1x2x16x64xbf16> {
  // expected-error @+1 {{codegen does not support 'memwall.flash_attention_grad' yet (an attention_grad fusion)}}
  %0:3 = memwall.fusion attention_grad (%x, %o, %lse) : (tensor<1x16x2x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16xf32>) -> (tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>) {
  ^bb0(%a: tensor<1x16x2x64xbf16>, %b: tensor<1x2x16x64xbf16>, %l: tensor<1x2x16xf32>):
    %t = memwall.transpose %a [0, 2, 1, 3] : tensor<1x16x2x64xbf16> -> tensor<1x2x16x64xbf16>
    %dq, %dk, %dv = memwall.flash_attention_grad %t, %b, %b, %b, %b, %l scale 0.125 block_q 64 block_kv 64 : (tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16xf32>) -> (tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>)
    memwall.yield %dq, %dk, %dv : tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>
  }
  return %0#0 : tensor<1x2x16x64xbf16>
}
