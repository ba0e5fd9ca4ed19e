// RUN: memwall-opt %s --memwall-annotate-costs | FileCheck %s --check-prefix=H100
// RUN: memwall-opt %s --memwall-annotate-costs --target=a100-40gb | FileCheck %s --check-prefix=A100
// RUN: memwall-opt %s --memwall-annotate-costs=target=a100-40gb | FileCheck %s --check-prefix=A100
// RUN: memwall-opt %s --pass-pipeline='builtin.module(memwall-annotate-costs{target=a100-40gb})' | FileCheck %s --check-prefix=A100
// RUN: memwall-opt %s --memwall-annotate-costs --target-file=%S/Inputs/half-bandwidth.json | FileCheck %s --check-prefix=CUSTOM
// RUN: memwall-opt %s --memwall-annotate-costs | memwall-opt | FileCheck %s --check-prefix=H100

// Hand computation (docs/cost-model.md), x [4,128,768] @ w [768,3072] + b:
//   flops = 2*512*3072*768 + 512*3072 = 2417491968
//   read  = (512*768 + 768*3072 + 3072) * 2 = 5511168, written = 512*3072*2 = 3145728
//   intensity = 2417491968 / 8656896 = 279.3
//   h100-sxm: max(2417491968/989.4e12 = 2.443us, 8656896/3.35e12 = 2.584us) + 2us = 4.584us, memory-bound
//   a100-40gb: max(2417491968/312e12 = 7.748us, 8656896/1555e9 = 5.567us) + 2us = 9.748us, compute-bound
//   custom (h100 at half the bandwidth, 1.675e12): max(2.443us, 5.168us) + 2us = 7.168us
// relu on [1024,1024] f32: 1048576 flops, 4 MiB in and out:
//   h100-sxm: 8388608 / 3.35e12 = 2.504us + 2us = 4.504us
// reshape: a view, no kernel: all zero.

// H100-LABEL: func.func @costs
// A100-LABEL: func.func @costs
func.func @costs(%x: tensor<4x128x768xbf16>, %w: tensor<768x3072xbf16>,
                 %b: tensor<3072xbf16>, %r: tensor<1024x1024xf32>) {
  // H100: memwall.matmul {{.*}}memwall.cost = #memwall.cost<flops = 2417491968, bytes_read = 5511168, bytes_written = 3145728, intensity = 279.3, bound = memory, time_s = 4.584e-06>
  // A100: memwall.matmul {{.*}}memwall.cost = #memwall.cost<flops = 2417491968, bytes_read = 5511168, bytes_written = 3145728, intensity = 279.3, bound = compute, time_s = 9.748e-06>
  // CUSTOM: memwall.matmul {{.*}}bound = memory, time_s = 7.168e-06>
  %0 = memwall.matmul %x, %w bias %b : tensor<4x128x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16> -> tensor<4x128x3072xbf16>
  // H100: memwall.relu {{.*}}memwall.cost = #memwall.cost<flops = 1048576, bytes_read = 4194304, bytes_written = 4194304, intensity = 0.125, bound = memory, time_s = 4.504e-06>
  %1 = memwall.relu %r : tensor<1024x1024xf32>
  // H100: memwall.reshape {{.*}}memwall.cost = #memwall.cost<flops = 0, bytes_read = 0, bytes_written = 0, intensity = 0.0, bound = memory, time_s = 0.0>
  %2 = memwall.reshape %r [1048576] : tensor<1024x1024xf32> -> tensor<1048576xf32>
  return
}
