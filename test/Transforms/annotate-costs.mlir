// Built-in targets, chosen by the tool flag, memwall-set-target, a pipeline
// or the target the module carries:
// RUN: memwall-opt %s --memwall-annotate-costs | FileCheck %s --check-prefixes=H100,ALL
// RUN: memwall-opt %s --memwall-annotate-costs --target=h100-sxm | FileCheck %s --check-prefixes=H100,ALL
// RUN: memwall-opt %s --memwall-annotate-costs --target=a100-40gb | FileCheck %s --check-prefixes=A100,ALL
// RUN: memwall-opt %s --memwall-set-target=target=a100-40gb --memwall-annotate-costs | FileCheck %s --check-prefixes=A100,ALL
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-set-target{target=a100-40gb},func.func(memwall-annotate-costs))' | FileCheck %s --check-prefixes=A100,ALL
// RUN: memwall-opt %s --memwall-set-target=target=a100-40gb | memwall-opt --memwall-annotate-costs | FileCheck %s --check-prefixes=A100,ALL
// A later memwall-set-target wins over the tool flag (which sets it first).
// RUN: memwall-opt %s --target=h100-sxm --memwall-set-target=target=a100-40gb --memwall-annotate-costs | FileCheck %s --check-prefixes=A100,ALL
// Target files: the example in examples/targets and a test input.
// RUN: memwall-opt %s --memwall-annotate-costs --target-file=%memwall_src/examples/targets/custom-gpu.json | FileCheck %s --check-prefixes=CUSTOM,ALL
// RUN: memwall-opt %s --memwall-set-target=target-file=%memwall_src/examples/targets/custom-gpu.json --memwall-annotate-costs | FileCheck %s --check-prefixes=CUSTOM,ALL
// RUN: memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/half-bandwidth.json | FileCheck %s --check-prefixes=HALF,ALL
// Annotated IR reads back and is not annotated differently a second time.
// RUN: memwall-opt %s --memwall-annotate-costs | memwall-opt | FileCheck %s --check-prefixes=H100,ALL
// RUN: memwall-opt %s --memwall-annotate-costs | memwall-opt --memwall-annotate-costs | FileCheck %s --check-prefixes=H100,ALL

// Failures: one error naming the problem, a nonzero exit, no IR on stdout.
// RUN: not memwall-opt %s --memwall-annotate-costs --target=b100 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not memwall-opt %s --memwall-set-target=target=b100 --memwall-annotate-costs 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/negative-bandwidth.json 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not memwall-opt %s --memwall-set-target=target-file=%S/Inputs/negative-bandwidth.json --memwall-annotate-costs 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/unknown-field.json 2>&1 | FileCheck %s --check-prefix=FIELD
// RUN: not memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/bad-syntax.json 2>&1 | FileCheck %s --check-prefix=SYNTAX
// UNKNOWN: error: unknown target 'b100'; valid targets: a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200, b200, l4, rtx-4090
// UNKNOWN-NOT: error
// UNKNOWN-NOT: func.func
// NEGATIVE: error: {{.*}}negative-bandwidth.json: "memory_bandwidth_bytes_per_s" must be a non-negative number
// NEGATIVE-NOT: error
// NEGATIVE-NOT: func.func
// FIELD: error: {{.*}}unknown-field.json: "memory_bandwith_bytes_per_s" is not a target field
// FIELD-NOT: func.func
// SYNTAX: error: {{.*}}bad-syntax.json:3:2:
// SYNTAX-NOT: func.func

// Hand computations (docs/cost-model.md "Time"): time = (c^4 + m^4)^(1/4)
// + 2 us launch, c = flops / (peak x efficiency), m = bytes / achievable
// bandwidth. Targets (docs/targets.md):
//   h100-sxm  FP32 66.9e12, BF16/FP16 989.4e12, FP8 1978.9e12; kernels
//             reach 3.01e12 B/s, large GEMMs 767/989.4, attention 356/989.4
//   a100-40gb FP32 19.5e12, BF16/FP16 312e12, no FP8 (-> FP16); kernels
//             reach 1.555e12 x 3.01/3.35 = 1.3972e12 B/s, large GEMMs
//             767/989.4, attention 0.6
//   custom-gpu.json: h100-sxm with BF16/FP16 7e14 and a 2.8e12 B/s datasheet
//             bandwidth, of which kernels reach 3.01/3.35 (2.5158e12)
//   half-bandwidth.json: h100-sxm with 1.675e12 B/s (1.5050e12 reached)
//
// matmul x [4,128,768] @ w [768,3072] + b, bf16: a large GEMM (512*3072*768
// = 1.2e9 >= 2^30 multiply-adds)
//   flops = 2*512*3072*768 + 512*3072 = 2417491968
//   read  = (512*768 + 768*3072 + 3072) * 2 = 5511168, written = 512*3072*2 = 3145728
//   intensity = 2417491968 / 8656896 = 279.3
//   h100:   c = 2417491968/(989.4e12*0.7752) = 3.152us, m = 8656896/3.01e12 = 2.876us -> 5.595us, compute
//   a100:   c = /(312e12*0.7752) = 9.995us, m = /1.3972e12 = 6.196us -> 12.35us, compute
//   custom: c = /(7e14*0.7752) = 4.455us, m = /2.5158e12 = 3.441us -> 6.807us, compute
//   half:   c = 3.152us, m = /1.5050e12 = 5.752us -> 7.878us, memory
// relu on [1024,1024] f32: 1048576 flops, 4194304 B in and out (its kernel
// runs at full occupancy):
//   h100 m = 8388608/3.01e12 = 2.787us -> 4.787us; a100 m = 6.004us -> 8.004us
//   custom m = 3.334us -> 5.334us; half m = 5.574us -> 7.574us
// reshape: a view, no kernel: all zero.
// causal attention q [1,32,128,128], k = v [1,8,128,128], bf16:
//   pairs/head 128*129/2 = 8256; flops 4*32*8256*128 = 135266304
//   scores 32*128*128*2 B = 1048576, read twice and written twice
//   read 48*128*128*2 + 2097152 = 3670016, written 1048576 + 2097152 = 3145728
//   intensity 135266304/6815744 = 19.85
//   h100: c = 135266304/(989.4e12*0.3598) = 0.380us, m = 6815744/3.01e12 = 2.264us -> 4.265us
//   a100: c = /(312e12*0.6) = 0.723us, m = /1.3972e12 = 4.878us -> 6.879us
// fp8 matmul [4096,4096] @ [4096,4096] -> bf16 (cuBLASLt runs no fp8 here,
// so it is costed as a GEMM by its own kernel work):
//   flops 2*4096^3 = 137438953472; read 2*4096*4096 = 33554432, written 4096*4096*2 = 33554432
//   intensity 137438953472/67108864 = 2048
//   h100 FP8: c = 137438953472/(1978.9e12*0.7752) = 89.59us, m = 22.30us -> 91.68us, compute
//   a100 has no FP8 and runs it at FP16: c = 568.2us, m = 48.03us -> 570.2us, compute
// layer_norm [4,128,768] bf16 with f32 weight and bias (the same value %g,
// which its kernel reads once):
//   flops 7*393216 + 4*512 = 2754560; read 393216*2 + 2*768*4 = 792576, written 786432
//   kernel traffic 393216*2 + 768*4 + 786432 = 1575936 B, intensity 1.748
//   h100: 1575936/3.01e12 = 0.5236us -> 2.524us; a100: /1.3972e12 = 1.128us -> 3.128us
// embedding of 512 ids (i64) into [50257,768] bf16: reads ids + 512 rows only
//   read 512*8 + 512*768*2 = 790528, written 786432
//   h100: 1576960/3.01e12 = 0.5239us -> 2.524us; a100: 1.129us -> 3.129us
// kv_cache_append of one token, 8 heads x 128, bf16: 2048 B in, 2048 B out
//   h100: 4096/3.01e12 + 2us = 2.001us; a100: 4096/1.3972e12 + 2us = 2.003us

// ALL-LABEL: func.func @costs
func.func @costs(%x: tensor<4x128x768xbf16>, %w: tensor<768x3072xbf16>,
                 %b: tensor<3072xbf16>, %r: tensor<1024x1024xf32>) {
  // H100: memwall.matmul {{.*}}{memwall.cost = #memwall.cost<flops = 2417491968, bytes_read = 5511168, bytes_written = 3145728, intensity = 279.3, bound = compute, time_s = 5.595e-06>}
  // A100: memwall.matmul {{.*}}{memwall.cost = #memwall.cost<flops = 2417491968, bytes_read = 5511168, bytes_written = 3145728, intensity = 279.3, bound = compute, time_s = 1.235e-05>}
  // CUSTOM: memwall.matmul {{.*}}{memwall.cost = #memwall.cost<flops = 2417491968, bytes_read = 5511168, bytes_written = 3145728, intensity = 279.3, bound = compute, time_s = 6.807e-06>}
  // HALF: memwall.matmul {{.*}}{memwall.cost = #memwall.cost<flops = 2417491968, bytes_read = 5511168, bytes_written = 3145728, intensity = 279.3, bound = memory, time_s = 7.878e-06>}
  %0 = memwall.matmul %x, %w bias %b : tensor<4x128x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16> -> tensor<4x128x3072xbf16>
  // H100: memwall.relu {{.*}}{memwall.cost = #memwall.cost<flops = 1048576, bytes_read = 4194304, bytes_written = 4194304, intensity = 0.125, bound = memory, time_s = 4.787e-06>}
  // A100: memwall.relu {{.*}}{memwall.cost = #memwall.cost<flops = 1048576, bytes_read = 4194304, bytes_written = 4194304, intensity = 0.125, bound = memory, time_s = 8.004e-06>}
  // CUSTOM: memwall.relu {{.*}}{memwall.cost = #memwall.cost<flops = 1048576, bytes_read = 4194304, bytes_written = 4194304, intensity = 0.125, bound = memory, time_s = 5.334e-06>}
  // HALF: memwall.relu {{.*}}{memwall.cost = #memwall.cost<flops = 1048576, bytes_read = 4194304, bytes_written = 4194304, intensity = 0.125, bound = memory, time_s = 7.574e-06>}
  %1 = memwall.relu %r : tensor<1024x1024xf32>
  // ALL: memwall.reshape {{.*}}{memwall.cost = #memwall.cost<flops = 0, bytes_read = 0, bytes_written = 0, intensity = 0.0, bound = memory, time_s = 0.0>}
  %2 = memwall.reshape %r [1048576] : tensor<1024x1024xf32> -> tensor<1048576xf32>
  // Only memwall ops are annotated.
  // ALL-NEXT: return{{$}}
  return
}

// ALL-LABEL: func.func @more
func.func @more(%q: tensor<1x32x128x128xbf16>, %k: tensor<1x8x128x128xbf16>,
                %a8: tensor<4096x4096xf8E4M3FN>,
                %h: tensor<4x128x768xbf16>, %g: tensor<768xf32>,
                %t: tensor<50257x768xbf16>, %ids: tensor<4x128xi64>,
                %kc: tensor<1x8x4096x128xbf16>, %kn: tensor<1x8x1x128xbf16>) {
  // H100: memwall.attention {{.*}}{memwall.cost = #memwall.cost<flops = 135266304, bytes_read = 3670016, bytes_written = 3145728, intensity = 19.85, bound = memory, time_s = 4.265e-06>}
  // A100: memwall.attention {{.*}}{memwall.cost = #memwall.cost<flops = 135266304, bytes_read = 3670016, bytes_written = 3145728, intensity = 19.85, bound = memory, time_s = 6.879e-06>}
  %0 = memwall.attention %q, %k, %k causal : tensor<1x32x128x128xbf16>, tensor<1x8x128x128xbf16>, tensor<1x8x128x128xbf16> -> tensor<1x32x128x128xbf16>
  // fp8 operands run on memwall's generated GEMM only (no fp8 cuBLASLt
  // path): its efficiency (Hopper 0.40 of the fp8 peak, Ampere 0.9 x
  // cuBLAS's of the peak the A100 runs fp8 at).
  // H100: memwall.matmul {{.*}}{memwall.cost = #memwall.cost<flops = 137438953472, bytes_read = 33554432, bytes_written = 33554432, intensity = 2048.0, bound = compute, time_s = 0.0001756>}
  // A100: memwall.matmul {{.*}}{memwall.cost = #memwall.cost<flops = 137438953472, bytes_read = 33554432, bytes_written = 33554432, intensity = 2048.0, bound = compute, time_s = 0.0006334>}
  %1 = memwall.matmul %a8, %a8 : tensor<4096x4096xf8E4M3FN>, tensor<4096x4096xf8E4M3FN> -> tensor<4096x4096xbf16>
  // H100: memwall.layer_norm {{.*}}{memwall.cost = #memwall.cost<flops = 2754560, bytes_read = 792576, bytes_written = 786432, intensity = 1.748, bound = memory, time_s = 2.524e-06>}
  // A100: memwall.layer_norm {{.*}}{memwall.cost = #memwall.cost<flops = 2754560, bytes_read = 792576, bytes_written = 786432, intensity = 1.748, bound = memory, time_s = 3.128e-06>}
  %2 = memwall.layer_norm %h, %g, %g : tensor<4x128x768xbf16>, tensor<768xf32>, tensor<768xf32>
  // H100: memwall.embedding {{.*}}{memwall.cost = #memwall.cost<flops = 0, bytes_read = 790528, bytes_written = 786432, intensity = 0.0, bound = memory, time_s = 2.524e-06>}
  // A100: memwall.embedding {{.*}}{memwall.cost = #memwall.cost<flops = 0, bytes_read = 790528, bytes_written = 786432, intensity = 0.0, bound = memory, time_s = 3.129e-06>}
  %3 = memwall.embedding %t[%ids] : tensor<50257x768xbf16>, tensor<4x128xi64> -> tensor<4x128x768xbf16>
  // H100: memwall.kv_cache_append {{.*}}{memwall.cost = #memwall.cost<flops = 0, bytes_read = 2048, bytes_written = 2048, intensity = 0.0, bound = memory, time_s = 2.001e-06>}
  // A100: memwall.kv_cache_append {{.*}}{memwall.cost = #memwall.cost<flops = 0, bytes_read = 2048, bytes_written = 2048, intensity = 0.0, bound = memory, time_s = 2.003e-06>}
  %4 = memwall.kv_cache_append %kc, %kn : tensor<1x8x4096x128xbf16>, tensor<1x8x1x128xbf16> -> tensor<1x8x4097x128xbf16>
  return
}

// An empty matmul (M = 0) does no work and reads only the [8,16] f32 rhs:
// 512 B, 2 us of launch. Under the ASan/UBSan build this divides by zero in
// MatmulOp::getDims (MatmulOps.cpp: batch = elements / (m * n) is computed
// before the m * n == 0 check) and dies with SIGFPE.
// ALL-LABEL: func.func @empty
func.func @empty(%a: tensor<0x8xf32>, %b: tensor<8x16xf32>) {
  // ALL: memwall.matmul {{.*}}{memwall.cost = #memwall.cost<flops = 0, bytes_read = 512, bytes_written = 0, intensity = 0.0, bound = memory, time_s = 2.0e-06>}
  %0 = memwall.matmul %a, %b : tensor<0x8xf32>, tensor<8x16xf32> -> tensor<0x16xf32>
  return
}
