// Weight-only quantization stores each linear weight quantized with a
// scales argument after it (one bf16 scale per output channel; per group of
// 128 along K for int4 where K allows) and dequantizes it at each use (no
// kernel: the matmul reads the quantized bytes and scales); norm weights
// stay bf16. An fp8 KV cache is appended to in fp8 and read by attention as
// stored. fp8-mixed casts each GEMM input once.
// RUN: memwall-opt %s --memwall-precision=policy=int4-weights | FileCheck %s --check-prefix=INT4
// RUN: memwall-opt %s --memwall-precision=kv-cache-dtype=f8E4M3FN | FileCheck %s --check-prefix=KV8
// RUN: memwall-opt %s --memwall-precision=policy=fp8-mixed | FileCheck %s --check-prefix=FP8
// RUN: memwall-opt %s --memwall-precision=policy=int8-weights --memwall-annotate-costs | FileCheck %s --check-prefix=COST
// RUN: memwall-opt %s --memwall-precision=policy=fp8-weights --memwall-fuse --memwall-annotate-costs | FileCheck %s --check-prefix=FUSE
// RUN: memwall-opt %s --memwall-precision=policy=int4-weights -split-input-file | FileCheck %s --check-prefix=GROUPS

// INT4-LABEL: func.func @block
// INT4-SAME: %arg1: tensor<64xbf16>
// INT4-SAME: %arg2: tensor<64x64xi4> {memwall.kind = #memwall.arg_kind<weight>}, %arg3: tensor<1x64xbf16> {memwall.kind = #memwall.arg_kind<weight>}
// INT4: memwall.rms_norm %{{.*}}, %arg1
// INT4: %[[W:.*]] = memwall.dequantize %arg2, %arg3 : tensor<64x64xi4>, tensor<1x64xbf16> -> tensor<64x64xbf16>
// INT4-NEXT: memwall.matmul %{{.*}}, %[[W]] : tensor<1x1x64xbf16>, tensor<64x64xbf16>

// KV8-LABEL: func.func @block
// KV8-SAME: %arg3: tensor<1x4x7x16xf8E4M3FN>
// KV8: %[[NEW:.*]] = memwall.cast %{{.*}} to f8E4M3FN : tensor<1x4x1x16xbf16> -> tensor<1x4x1x16xf8E4M3FN>
// KV8-NEXT: %[[CACHE:.*]] = memwall.kv_cache_append %arg3, %[[NEW]] : tensor<1x4x7x16xf8E4M3FN>, tensor<1x4x1x16xf8E4M3FN> -> tensor<1x4x8x16xf8E4M3FN>
// KV8-NOT: memwall.cast %[[CACHE]]
// KV8: memwall.attention %{{.*}}, %[[CACHE]], %[[CACHE]] causal : tensor<1x4x1x16xbf16>, tensor<1x4x8x16xf8E4M3FN>, tensor<1x4x8x16xf8E4M3FN> -> tensor<1x4x1x16xbf16>

// The normalized input feeds two GEMMs: one fp8 copy.
// FP8-LABEL: func.func @block
// FP8: %[[N:.*]] = memwall.rms_norm
// FP8-NEXT: %[[N8:.*]] = memwall.cast %[[N]] to f8E4M3FN
// FP8-NOT: memwall.cast %[[N]] to
// FP8: memwall.matmul %[[N8]],
// FP8: memwall.matmul %[[N8]],

// 64 x 64 int8 weights and 64 scales of 2 B; the bf16 row of 64 (128 B).
// COST: memwall.dequantize %arg2, %arg3 {memwall.cost = #memwall.cost<flops = 0, bytes_read = 0, bytes_written = 0, {{.*}}time_s = 0.0>}
// COST-NEXT: memwall.matmul {{.*}}bytes_read = 4352,

// memwall-fuse puts each dequantize in its GEMM's kernel (memwall's GEMM:
// cuBLASLt cannot dequantize). Both GEMMs read the normalized row: one dual
// GEMM reads the two fp8 weights (4096 B each), their 64 scales (128 B
// each) and the row once (128 B): 8576 B.
// FUSE: memwall.fusion gemm(%arg2, %arg3, %{{.*}}, %arg5, %arg6) {memwall.cost = #memwall.cost<flops = 16384, bytes_read = 8576,
// FUSE: memwall.dequantize %{{.*}} : tensor<64x64xf8E4M3FN>
// FUSE-NEXT: memwall.matmul
// FUSE-NEXT: memwall.dequantize %{{.*}} : tensor<64x64xf8E4M3FN>
// FUSE-NEXT: memwall.matmul
// FUSE-NEXT: memwall.yield

func.func @block(%x: tensor<1x1x64xbf16> {memwall.kind = #memwall.arg_kind<input>},
                 %g: tensor<64xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                 %w: tensor<64x64xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                 %cache: tensor<1x4x7x16xbf16> {memwall.kind = #memwall.arg_kind<kv_cache>},
                 %wo: tensor<64x64xbf16> {memwall.kind = #memwall.arg_kind<weight>})
    -> tensor<1x1x64xbf16> {
  %n = memwall.rms_norm %x, %g eps 1.0e-05 : tensor<1x1x64xbf16>, tensor<64xbf16>
  %h = memwall.matmul %n, %w : tensor<1x1x64xbf16>, tensor<64x64xbf16> -> tensor<1x1x64xbf16>
  %q = memwall.reshape %h [1, 4, 1, 16] : tensor<1x1x64xbf16> -> tensor<1x4x1x16xbf16>
  %kv = memwall.kv_cache_append %cache, %q : tensor<1x4x7x16xbf16>, tensor<1x4x1x16xbf16> -> tensor<1x4x8x16xbf16>
  %a = memwall.attention %q, %kv, %kv causal : tensor<1x4x1x16xbf16>, tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x4x1x16xbf16>
  %r = memwall.reshape %a [1, 1, 64] : tensor<1x4x1x16xbf16> -> tensor<1x1x64xbf16>
  %o = memwall.matmul %n, %wo : tensor<1x1x64xbf16>, tensor<64x64xbf16> -> tensor<1x1x64xbf16>
  %s = memwall.add %r, %o : tensor<1x1x64xbf16>, tensor<1x1x64xbf16> -> tensor<1x1x64xbf16>
  return %s : tensor<1x1x64xbf16>
}

// -----

// int4 groups of 128 along K: a [K, N] weight's scales are [K / 128, N], an
// [N, K] one's [N, K / 128].
// GROUPS-LABEL: func.func @groups
// GROUPS-SAME: %arg1: tensor<256x64xi4> {memwall.kind = #memwall.arg_kind<weight>}, %arg2: tensor<2x64xbf16>
// GROUPS-SAME: %arg3: tensor<64x384xi4> {memwall.kind = #memwall.arg_kind<weight>}, %arg4: tensor<64x3xbf16>
// GROUPS: memwall.dequantize %arg1, %arg2 : tensor<256x64xi4>, tensor<2x64xbf16> -> tensor<256x64xbf16>
// GROUPS: memwall.dequantize %arg3, %arg4 : tensor<64x384xi4>, tensor<64x3xbf16> -> tensor<64x384xbf16>
func.func @groups(%x: tensor<4x256xbf16> {memwall.kind = #memwall.arg_kind<input>},
                  %w: tensor<256x64xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                  %v: tensor<64x384xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                  %y: tensor<4x384xbf16> {memwall.kind = #memwall.arg_kind<input>})
    -> (tensor<4x64xbf16>, tensor<4x64xbf16>) {
  %a = memwall.matmul %x, %w : tensor<4x256xbf16>, tensor<256x64xbf16> -> tensor<4x64xbf16>
  %b = memwall.matmul %y, %v {transpose_rhs} : tensor<4x384xbf16>, tensor<64x384xbf16> -> tensor<4x64xbf16>
  return %a, %b : tensor<4x64xbf16>, tensor<4x64xbf16>
}
