// Weight-only quantization casts each use of a linear weight to bf16 (a
// dequantize at use: no kernel, the matmul reads the quantized bytes);
// norm weights stay bf16. An fp8 KV cache is appended to in fp8 and read
// by attention as stored. fp8-mixed casts each GEMM input once.
// RUN: memwall-opt %s --memwall-precision=policy=int4-weights | FileCheck %s --check-prefix=INT4
// RUN: memwall-opt %s --memwall-precision=kv-cache-dtype=f8E4M3FN | FileCheck %s --check-prefix=KV8
// RUN: memwall-opt %s --memwall-precision=policy=fp8-mixed | FileCheck %s --check-prefix=FP8
// RUN: memwall-opt %s --memwall-precision=policy=int8-weights --memwall-annotate-costs | FileCheck %s --check-prefix=COST
// RUN: memwall-opt %s --memwall-precision=policy=fp8-weights --memwall-fuse --memwall-annotate-costs | FileCheck %s --check-prefix=FUSE

// INT4-LABEL: func.func @block
// INT4-SAME: %arg1: tensor<64xbf16>
// INT4-SAME: %arg2: tensor<64x64xi4>
// INT4: memwall.rms_norm %{{.*}}, %arg1
// INT4: %[[W:.*]] = memwall.cast %arg2 to bf16 : tensor<64x64xi4> -> tensor<64x64xbf16>
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
// COST: memwall.cast %arg2 to bf16 {memwall.cost = #memwall.cost<flops = 0, bytes_read = 0, bytes_written = 0, {{.*}}time_s = 0.0>}
// COST-NEXT: memwall.matmul {{.*}}bytes_read = 4352,

// memwall-fuse leaves the dequantizing cast out of the kernel; the fused
// matmul + residual add reads the fp8 weight (4096 B) and its 64 scales
// (128 B), the normalized row and the residual (128 B each): 4480 B.
// FUSE: %[[W:.*]] = memwall.cast %arg4 to bf16 {memwall.cost = #memwall.cost<flops = 0, bytes_read = 0, bytes_written = 0,
// FUSE-NEXT: memwall.fusion matmul_epilogue(%{{.*}}, %[[W]], %{{.*}}) {memwall.cost = #memwall.cost<flops = 8256, bytes_read = 4480, bytes_written = 128,

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
