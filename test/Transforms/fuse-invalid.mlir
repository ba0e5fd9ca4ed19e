// A bad target is one error before any IR changes.
// RUN: not memwall-opt %S/../Target/compile-seed.mlir --pass-pipeline='builtin.module(memwall-set-target{target=h900},func.func(memwall-fuse))' 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: unknown target 'h900'
// TARGET-NOT: memwall.fusion

// Fusions built by hand are verified: wrong kinds and bodies are rejected.
// RUN: memwall-opt %s --split-input-file --verify-diagnostics

func.func @kind_mismatch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{an elementwise fusion holds only elementwise ops}}
  %0 = memwall.fusion elementwise (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = memwall.softmax %a : tensor<4x8xf32>
    memwall.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @two_reductions(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{a reduction fusion holds exactly one row reduction and no matmul}}
  %0 = memwall.fusion reduction (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = memwall.softmax %a : tensor<4x8xf32>
    %2 = memwall.softmax %1 : tensor<4x8xf32>
    memwall.yield %2 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @transpose_without_gemm(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @below {{a reshape, transpose, rope or KV-cache append is fused only into a gemm fusion, as the heads layout of its lhs or of a product (not with a norm)}}
  %0 = memwall.fusion elementwise (%x) : (tensor<4x8xf32>) -> tensor<8x4xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = memwall.relu %a : tensor<4x8xf32>
    %2 = memwall.transpose %1 [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
    memwall.yield %2 : tensor<8x4xf32>
  }
  return %0 : tensor<8x4xf32>
}

// -----

func.func @unfusible_op(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %0 = memwall.fusion elementwise (%x) : (tensor<4x8xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    // expected-error @below {{cannot be fused: only elementwise ops, one row reduction or one matmul (with a dequantize of its rhs or a heads layout of its result, which may end in a KV-cache append) run in a fusion}}
    %1 = memwall.slice %a offsets [0, 0] sizes [4, 4] : tensor<4x8xf32> -> tensor<4x4xf32>
    memwall.yield %1 : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

func.func @yield_types(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // expected-error @below {{yielded types must be the result types}}
  %0 = memwall.fusion elementwise (%x) : (tensor<4x8xf32>) -> tensor<4x8xbf16> {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = memwall.relu %a : tensor<4x8xf32>
    memwall.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xbf16>
}

// -----

func.func @argument_types(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{body arguments must have the types of the inputs}}
  %0 = memwall.fusion elementwise (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xbf16>):
    %1 = memwall.relu %a : tensor<4x8xbf16>
    %2 = memwall.cast %1 to f32 : tensor<4x8xbf16> -> tensor<4x8xf32>
    memwall.yield %2 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_with_softmax(%x: tensor<16x16xbf16>, %w: tensor<16x16xbf16>) -> tensor<16x16xbf16> {
  // expected-error @below {{a gemm fusion holds one matmul and at most one row reduction, a layer_norm or rms_norm, or two matmuls sharing their lhs and no row reduction}}
  %0 = memwall.fusion gemm (%x, %w) : (tensor<16x16xbf16>, tensor<16x16xbf16>) -> tensor<16x16xbf16> {
  ^bb0(%a: tensor<16x16xbf16>, %b: tensor<16x16xbf16>):
    %1 = memwall.matmul %a, %b : tensor<16x16xbf16>, tensor<16x16xbf16> -> tensor<16x16xbf16>
    %2 = memwall.softmax %1 : tensor<16x16xbf16>
    memwall.yield %2 : tensor<16x16xbf16>
  }
  return %0 : tensor<16x16xbf16>
}

// -----

// Two matmuls share a gemm fusion only as a dual GEMM, reading one lhs.
func.func @dual_gemm_with_two_lhs(%x: tensor<16x32xbf16>, %y: tensor<16x32xbf16>, %w: tensor<32x64xbf16>) -> tensor<16x64xbf16> {
  // expected-error @below {{a gemm fusion holds one matmul and at most one row reduction, a layer_norm or rms_norm, or two matmuls sharing their lhs and no row reduction}}
  %0 = memwall.fusion gemm (%x, %y, %w) : (tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16> {
  ^bb0(%a: tensor<16x32xbf16>, %b: tensor<16x32xbf16>, %c: tensor<32x64xbf16>):
    %1 = memwall.matmul %a, %c : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xbf16>
    %2 = memwall.matmul %b, %c : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xbf16>
    %3 = memwall.swiglu %1, %2 : tensor<16x64xbf16>
    memwall.yield %3 : tensor<16x64xbf16>
  }
  return %0 : tensor<16x64xbf16>
}

// -----

// A cuBLASLt call runs sibling matmuls (one lhs) only with nothing else.
func.func @batched_call_with_an_epilogue(%x: tensor<16x32xbf16>, %wg: tensor<32x64xbf16>, %wu: tensor<32x64xbf16>) -> tensor<16x64xbf16> {
  // expected-error @below {{a matmul_epilogue fusion holds exactly one matmul and no row reduction, or sibling matmuls of one lhs and nothing else}}
  %0 = memwall.fusion matmul_epilogue (%x, %wg, %wu) : (tensor<16x32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16> {
  ^bb0(%a: tensor<16x32xbf16>, %b: tensor<32x64xbf16>, %c: tensor<32x64xbf16>):
    %1 = memwall.matmul %a, %b : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xbf16>
    %2 = memwall.matmul %a, %c : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xbf16>
    %3 = memwall.swiglu %1, %2 : tensor<16x64xbf16>
    memwall.yield %3 : tensor<16x64xbf16>
  }
  return %0 : tensor<16x64xbf16>
}

// -----

func.func @batched_call_with_two_lhs(%x: tensor<16x32xbf16>, %y: tensor<16x32xbf16>, %w: tensor<32x64xbf16>) -> (tensor<16x64xbf16>, tensor<16x64xbf16>) {
  // expected-error @below {{a matmul_epilogue fusion holds exactly one matmul and no row reduction, or sibling matmuls of one lhs and nothing else}}
  %0:2 = memwall.fusion matmul_epilogue (%x, %y, %w) : (tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<32x64xbf16>) -> (tensor<16x64xbf16>, tensor<16x64xbf16>) {
  ^bb0(%a: tensor<16x32xbf16>, %b: tensor<16x32xbf16>, %c: tensor<32x64xbf16>):
    %1 = memwall.matmul %a, %c : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xbf16>
    %2 = memwall.matmul %b, %c : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xbf16>
    memwall.yield %1, %2 : tensor<16x64xbf16>, tensor<16x64xbf16>
  }
  return %0#0, %0#1 : tensor<16x64xbf16>, tensor<16x64xbf16>
}

// -----

// A dual GEMM has no norm epilogue.
func.func @dual_gemm_with_norm(%x: tensor<16x32xbf16>, %wg: tensor<32x64xbf16>, %wu: tensor<32x64xbf16>, %g: tensor<64xbf16>) -> tensor<16x64xbf16> {
  // expected-error @below {{a gemm fusion holds one matmul and at most one row reduction, a layer_norm or rms_norm, or two matmuls sharing their lhs and no row reduction}}
  %0 = memwall.fusion gemm (%x, %wg, %wu, %g) : (tensor<16x32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16> {
  ^bb0(%a: tensor<16x32xbf16>, %b: tensor<32x64xbf16>, %c: tensor<32x64xbf16>, %d: tensor<64xbf16>):
    %1 = memwall.matmul %a, %b : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xbf16>
    %2 = memwall.matmul %a, %c : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xbf16>
    %3 = memwall.swiglu %1, %2 : tensor<16x64xbf16>
    %4 = memwall.rms_norm %3, %d eps 1.000000e-06 : tensor<16x64xbf16>, tensor<64xbf16>
    memwall.yield %4 : tensor<16x64xbf16>
  }
  return %0 : tensor<16x64xbf16>
}

// -----

func.func @dequantize_in_cublas_kernel(%x: tensor<4x32xbf16>, %q: tensor<32x16xi8>, %s: tensor<1x16xbf16>) -> tensor<4x16xbf16> {
  // expected-error @below {{a dequantize is fused only into a gemm fusion, as the rhs prologue of a matmul}}
  %0 = memwall.fusion matmul_epilogue (%x, %q, %s) : (tensor<4x32xbf16>, tensor<32x16xi8>, tensor<1x16xbf16>) -> tensor<4x16xbf16> {
  ^bb0(%a: tensor<4x32xbf16>, %b: tensor<32x16xi8>, %c: tensor<1x16xbf16>):
    %w = memwall.dequantize %b, %c : tensor<32x16xi8>, tensor<1x16xbf16> -> tensor<32x16xbf16>
    %1 = memwall.matmul %a, %w : tensor<4x32xbf16>, tensor<32x16xbf16> -> tensor<4x16xbf16>
    memwall.yield %1 : tensor<4x16xbf16>
  }
  return %0 : tensor<4x16xbf16>
}

// -----

func.func @attention_fusion_with_math(%q: tensor<1x2x16x64xbf16>, %k: tensor<1x2x16x64xbf16>, %v: tensor<1x2x16x64xbf16>) -> tensor<1x2x16x64xbf16> {
  %0:2 = memwall.fusion attention (%q, %k, %v) : (tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>) -> (tensor<1x2x16x64xbf16>, tensor<1x2x16xf32>) {
  ^bb0(%a: tensor<1x2x16x64xbf16>, %b: tensor<1x2x16x64xbf16>, %c: tensor<1x2x16x64xbf16>):
    // expected-error @below {{cannot be fused into an attention fusion: only reshapes, transposes and slices of its operands or results run there}}
    %s = memwall.scale %a by 2.000000e+00 : tensor<1x2x16x64xbf16>
    %o, %lse = memwall.flash_attention %s, %b, %c causal scale 0.125 block_q 64 block_kv 64 splits 1 : (tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>) -> (tensor<1x2x16x64xbf16>, tensor<1x2x16xf32>)
    memwall.yield %o, %lse : tensor<1x2x16x64xbf16>, tensor<1x2x16xf32>
  }
  return %0#0 : tensor<1x2x16x64xbf16>
}

// -----

func.func @attention_grad_fusion_with_math(%x: tensor<1x2x16x64xbf16>, %lse: tensor<1x2x16xf32>) -> tensor<1x2x16x64xbf16> {
  %0:3 = memwall.fusion attention_grad (%x, %lse) : (tensor<1x2x16x64xbf16>, tensor<1x2x16xf32>) -> (tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>) {
  ^bb0(%a: tensor<1x2x16x64xbf16>, %l: tensor<1x2x16xf32>):
    %dq, %dk, %dv = memwall.flash_attention_grad %a, %a, %a, %a, %a, %l scale 0.125 block_q 64 block_kv 64 : (tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16xf32>) -> (tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>)
    // expected-error @below {{cannot be fused into an attention fusion: only reshapes, transposes and slices of its operands or results and a concat of its gradients run there}}
    %s = memwall.scale %dq by 2.000000e+00 : tensor<1x2x16x64xbf16>
    memwall.yield %s, %dk, %dv : tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>
  }
  return %0#0 : tensor<1x2x16x64xbf16>
}

// -----

func.func @attention_grad_fusion_without_its_op(%x: tensor<1x16x2x64xbf16>) -> tensor<1x2x16x64xbf16> {
  // expected-error @below {{an attention_grad fusion holds exactly one flash_attention_grad}}
  %0 = memwall.fusion attention_grad (%x) : (tensor<1x16x2x64xbf16>) -> tensor<1x2x16x64xbf16> {
  ^bb0(%a: tensor<1x16x2x64xbf16>):
    %t = memwall.transpose %a [0, 2, 1, 3] : tensor<1x16x2x64xbf16> -> tensor<1x2x16x64xbf16>
    memwall.yield %t : tensor<1x2x16x64xbf16>
  }
  return %0 : tensor<1x2x16x64xbf16>
}

// -----

func.func @added_view_outside_a_fusion(%x: tensor<1x16x2x64xbf16>) -> tensor<1x2x16x64xbf16> {
  // expected-error @below {{'memwall.added_view' must be a unit attribute on a reshape, transpose or slice in a memwall.fusion}}
  %t = memwall.transpose %x [0, 2, 1, 3] {memwall.added_view} : tensor<1x16x2x64xbf16> -> tensor<1x2x16x64xbf16>
  return %t : tensor<1x2x16x64xbf16>
}

// -----

func.func @attention_fusion_without_attention(%x: tensor<1x16x2x64xbf16>) -> tensor<1x2x16x64xbf16> {
  // expected-error @below {{an attention fusion holds exactly one flash_attention}}
  %0 = memwall.fusion attention (%x) : (tensor<1x16x2x64xbf16>) -> tensor<1x2x16x64xbf16> {
  ^bb0(%a: tensor<1x16x2x64xbf16>):
    %t = memwall.transpose %a [0, 2, 1, 3] : tensor<1x16x2x64xbf16> -> tensor<1x2x16x64xbf16>
    memwall.yield %t : tensor<1x2x16x64xbf16>
  }
  return %0 : tensor<1x2x16x64xbf16>
}

// -----

func.func @three_ropes(%x: tensor<1x2x16x64xbf16>, %p: tensor<16xi64>) -> tensor<1x2x16x64xbf16> {
  // expected-error @below {{a rope fusion holds one or two ropes}}
  %0 = memwall.fusion rope (%x, %p) : (tensor<1x2x16x64xbf16>, tensor<16xi64>) -> tensor<1x2x16x64xbf16> {
  ^bb0(%a: tensor<1x2x16x64xbf16>, %b: tensor<16xi64>):
    %r1 = memwall.rope %a, %b : tensor<1x2x16x64xbf16>, tensor<16xi64>
    %r2 = memwall.rope %r1, %b : tensor<1x2x16x64xbf16>, tensor<16xi64>
    %r3 = memwall.rope %r2, %b : tensor<1x2x16x64xbf16>, tensor<16xi64>
    memwall.yield %r3 : tensor<1x2x16x64xbf16>
  }
  return %0 : tensor<1x2x16x64xbf16>
}

// -----

func.func @horizontal_non_update(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = memwall.fusion horizontal (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    // expected-error @below {{cannot be fused into a horizontal fusion: only AdamW updates run there}}
    %1 = memwall.relu %a : tensor<4x8xf32>
    memwall.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @dequantize_fusion_not_materialized(%q: tensor<32x16xi8>, %s: tensor<1x16xbf16>) -> tensor<32x16xbf16> {
  // expected-error @below {{a dequantize fusion holds exactly one dequantize with `materialize`}}
  %0 = memwall.fusion dequantize (%q, %s) : (tensor<32x16xi8>, tensor<1x16xbf16>) -> tensor<32x16xbf16> {
  ^bb0(%a: tensor<32x16xi8>, %b: tensor<1x16xbf16>):
    %w = memwall.dequantize %a, %b : tensor<32x16xi8>, tensor<1x16xbf16> -> tensor<32x16xbf16>
    memwall.yield %w : tensor<32x16xbf16>
  }
  return %0 : tensor<32x16xbf16>
}

// -----

func.func @dequantize_fusion_with_math(%q: tensor<32x16xi8>, %s: tensor<1x16xbf16>) -> tensor<32x16xbf16> {
  %0 = memwall.fusion dequantize (%q, %s) : (tensor<32x16xi8>, tensor<1x16xbf16>) -> tensor<32x16xbf16> {
  ^bb0(%a: tensor<32x16xi8>, %b: tensor<1x16xbf16>):
    %w = memwall.dequantize %a, %b {materialize} : tensor<32x16xi8>, tensor<1x16xbf16> -> tensor<32x16xbf16>
    // expected-error @below {{cannot be fused into a dequantize fusion: only a dequantize and the dequantize of its scales run there}}
    %g = memwall.gelu %w : tensor<32x16xbf16>
    memwall.yield %g : tensor<32x16xbf16>
  }
  return %0 : tensor<32x16xbf16>
}
