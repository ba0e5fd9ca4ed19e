// memwall-fuse never carries a buffer across other kernels above the step's
// peak (docs/fusion.md, "Lifetimes"): a kernel runs at its last op's step,
// so what its first op reads lives until then.
// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm | FileCheck %s
// RUN: memwall-opt %s --split-input-file --fuse --target=h100-sxm --report=- -o /dev/null | FileCheck %s --check-prefix=REPORT

// A weight gradient (dw = gᵀ·h) and the add accumulating it run as one
// cuBLASLt GEMM with its residual only at the add's step, after the
// softmax: g (4096 x 4096 bf16, 33.55 MB), an input freed after its last
// read, would then live across the softmax, the peak (x and its softmax,
// 2 x 67.11 MB, with dw and e: 135.27 MB), raising it to 168.82 MB. So the
// two stay apart, as the report says.
// CHECK-LABEL: func.func @weight_gradient
// CHECK: memwall.matmul
// CHECK-NEXT: memwall.softmax
// CHECK-NEXT: memwall.add
// CHECK-NOT: memwall.fusion
// REPORT: kept apart: {{.*}}one kernel (cuBLASLt (14.5 us) over memwall gemm (17.8 us)) predicts 14.5 us, apart 14.3 us + 2.5 us, but it would raise the peak from 135.27 MB to 168.82 MB (what its first op reads would live until its last)
// REPORT: memory (per device): peak 135.27 MB
func.func @weight_gradient(%g: tensor<4096x4096xbf16> {memwall.kind = #memwall.arg_kind<input>},
                           %h: tensor<4096x64xbf16> {memwall.kind = #memwall.arg_kind<input>},
                           %e: tensor<4096x64xbf16> {memwall.kind = #memwall.arg_kind<input>},
                           %x: tensor<8192x4096xbf16> {memwall.kind = #memwall.arg_kind<input>})
    -> (tensor<4096x64xbf16>, tensor<8192x4096xbf16>) {
  %dw = memwall.matmul %g, %h {transpose_lhs} : tensor<4096x4096xbf16>, tensor<4096x64xbf16> -> tensor<4096x64xbf16>
  %y = memwall.softmax %x {axis = -1 : i64} : tensor<8192x4096xbf16>
  %acc = memwall.add %dw, %e : tensor<4096x64xbf16>, tensor<4096x64xbf16> -> tensor<4096x64xbf16>
  return %acc, %y : tensor<4096x64xbf16>, tensor<8192x4096xbf16>
}

// -----

// The same graph with g a weight: live throughout, nothing is carried
// further, and the GEMM takes the add as its epilogue.
// CHECK-LABEL: func.func @weight_lives_anyway
// CHECK: memwall.softmax
// CHECK: memwall.fusion matmul_epilogue
// CHECK: memwall.matmul
// CHECK-NEXT: memwall.add
// REPORT-NOT: raise the peak
func.func @weight_lives_anyway(%g: tensor<4096x4096xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                               %h: tensor<4096x64xbf16> {memwall.kind = #memwall.arg_kind<input>},
                               %e: tensor<4096x64xbf16> {memwall.kind = #memwall.arg_kind<input>},
                               %x: tensor<8192x4096xbf16> {memwall.kind = #memwall.arg_kind<input>})
    -> (tensor<4096x64xbf16>, tensor<8192x4096xbf16>) {
  %dw = memwall.matmul %g, %h {transpose_lhs} : tensor<4096x4096xbf16>, tensor<4096x64xbf16> -> tensor<4096x64xbf16>
  %y = memwall.softmax %x {axis = -1 : i64} : tensor<8192x4096xbf16>
  %acc = memwall.add %dw, %e : tensor<4096x64xbf16>, tensor<4096x64xbf16> -> tensor<4096x64xbf16>
  return %acc, %y : tensor<4096x64xbf16>, tensor<8192x4096xbf16>
}

// -----

// A kernel's own step holds its inputs and outputs at once: a residual add
// and the layer_norm of its sum fuse at the peak (x, r, the sum and the
// norm, 4 x 12.58 MB, where apart the add held 3), as every fuser does.
// CHECK-LABEL: func.func @residual_norm_at_the_peak
// CHECK: memwall.fusion reduction
// CHECK: memwall.add
// CHECK-NEXT: memwall.layer_norm
func.func @residual_norm_at_the_peak(%x: tensor<8x1024x768xbf16>, %r: tensor<8x1024x768xbf16>,
                                     %w: tensor<768xbf16>, %b: tensor<768xbf16>)
    -> (tensor<8x1024x768xbf16>, tensor<8x1024x768xbf16>) {
  %s = memwall.add %x, %r : tensor<8x1024x768xbf16>, tensor<8x1024x768xbf16> -> tensor<8x1024x768xbf16>
  %n = memwall.layer_norm %s, %w, %b : tensor<8x1024x768xbf16>, tensor<768xbf16>, tensor<768xbf16>
  return %s, %n : tensor<8x1024x768xbf16>, tensor<8x1024x768xbf16>
}
