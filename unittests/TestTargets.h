//===- TestTargets.h - GPU targets with round numbers for tests -*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Hand computations in the tests are easier with round hardware figures.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_UNITTESTS_TESTTARGETS_H
#define MEMWALL_UNITTESTS_TESTTARGETS_H

#include "memwall/Hardware/GPUTarget.h"

namespace memwall::testing {

/// 10 TFLOP/s fp32, 100 TFLOP/s bf16 (ridges 10 and 100 FLOP/B), 1 TB/s,
/// 100 SMs of 228 KiB shared memory, 50 MiB of L2, 80 GB, 2 us launches
/// (1 us from a CUDA graph). Kernels reach the peaks (achievable = datasheet,
/// efficiencies 1) so hand computations stay round; the efficiencies have
/// their own tests.
inline GPUTarget roundTarget() {
  GPUTarget target;
  target.name = "round";
  target.peakFlops = {10e12, 0, 100e12, 0, 0, 0};
  target.memoryBandwidth = 1e12;
  target.memoryCapacityBytes = 80e9;
  target.sharedMemoryPerSMBytes = 228 * 1024;
  target.smCount = 100;
  target.l2Bytes = 50 << 20;
  target.kernelLaunchSeconds = 2e-6;
  target.graphKernelLaunchSeconds = 1e-6;
  target.achievable.memoryBandwidth = target.memoryBandwidth;
  target.achievable.gemmEfficiency = {1, 1, 1};
  target.achievable.generatedGemmEfficiency = {0.5, 0.5, 0.5};
  target.achievable.attentionEfficiency = 1;
  return target;
}

} // namespace memwall::testing

#endif // MEMWALL_UNITTESTS_TESTTARGETS_H
