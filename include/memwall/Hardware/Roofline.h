//===- Roofline.h - The time model of one kernel ----------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall's one time model (docs/cost-model.md, "Time"): a kernel doing
// `flops` on a compute unit and moving `bytes` to or from DRAM takes
//
//   compute = flops / (peak(precision) * efficiency(unit, GEMM shape))
//   memory  = bytes / (achievable bandwidth * bandwidth fraction)
//   time    = (compute^4 + memory^4)^(1/4) + launch
//
// with the target's achievable rates, not its datasheet peaks. The report,
// fusion, remat, inference/memory fixes and codegen's predictions all go
// through estimateKernelTime, so the same kernel gets the same time
// everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_HARDWARE_ROOFLINE_H
#define MEMWALL_HARDWARE_ROOFLINE_H

#include "memwall/Hardware/GPUTarget.h"

namespace memwall {

/// What executes a kernel's FLOPs; decides the fraction of the peak it
/// reaches.
enum class ComputeUnit : unsigned {
  /// FP32 CUDA cores: elementwise, norms, softmax, data movement. These sit
  /// far below their ridge, so their efficiency is taken as 1.
  CudaCores = 0,
  /// A cuBLAS-class GEMM on tensor cores, by GemmShapeClass.
  Gemm,
  /// A FlashAttention-class fused attention kernel on tensor cores.
  Attention,
  /// memwall's own generated GEMM kernel on tensor cores, by GemmShapeClass.
  GeneratedGemm,
};

/// One kernel as the time model sees it.
struct KernelWork {
  double flops = 0;
  /// DRAM traffic.
  double bytesRead = 0;
  double bytesWritten = 0;
  MathPrecision precision = MathPrecision::FP32;
  ComputeUnit unit = ComputeUnit::CudaCores;
  GemmShapeClass gemmShape = GemmShapeClass::Large;
  /// Fraction of the achievable bandwidth the kernel's geometry sustains
  /// (below 1 for generated kernels at low occupancy; docs/fusion.md).
  double bandwidthFraction = 1;
  /// Fraction of the compute unit's efficiency the kernel's tiling reaches
  /// (below 1 for a generated GEMM held to a worse tile than it would
  /// choose, e.g. the row-chunked norm epilogue's; docs/fusion.md).
  double computeFraction = 1;
  /// False for pure metadata (a reshape of a contiguous tensor): no launch,
  /// no time.
  bool launchesKernel = true;
  /// Kernels launched besides the first, each one more launch cost (split
  /// K's reduce kernel: the work is both kernels' FLOPs and traffic).
  int64_t extraLaunches = 0;
  /// Instructions the same SMs issue on their CUDA cores besides `flops`,
  /// one per lane and cycle (half the fp32 FMA peak), added to the compute
  /// time: a generated GEMM's dequantizing prologue (docs/cost-model.md).
  double cudaCoreInstructions = 0;
};

inline double totalBytes(const KernelWork &work) {
  return work.bytesRead + work.bytesWritten;
}

struct RooflineEstimate {
  /// FLOP per byte of DRAM traffic (0 when the kernel moves no bytes).
  double intensity = 0;
  /// flops at the achievable compute rate of the kernel's unit.
  double computeSeconds = 0;
  /// bytes at the achievable bandwidth times the bandwidth fraction.
  double memorySeconds = 0;
  /// The target's launch cost (stream or graph) times the kernels launched
  /// (1 + extraLaunches), or 0 when the op launches none.
  double launchSeconds = 0;
  /// softRooflineSeconds(computeSeconds, memorySeconds) + launchSeconds.
  double timeSeconds = 0;
  /// True unless computeSeconds > memorySeconds (data movement and ops with
  /// no work count as memory-bound).
  bool memoryBound = true;
};

/// Smooth maximum of compute and memory time, (c^4 + m^4)^(1/4): equal to
/// the roofline away from the ridge and up to 19% slower at it, where real
/// kernels overlap compute and memory imperfectly.
double softRooflineSeconds(double computeSeconds, double memorySeconds);

/// Fraction of the peak `unit` reaches on `target` (for GEMMs, at
/// `gemmShape`).
double computeEfficiency(ComputeUnit unit, GemmShapeClass gemmShape,
                         const GPUTarget &target);

/// The shape class of a GEMM of `batch` x [M, K] x [K, N] (docs/targets.md):
/// Skinny when M or N is at most 64, Small below 2^30 multiply-adds, else
/// Large.
GemmShapeClass classifyGemm(int64_t batch, int64_t m, int64_t n, int64_t k);

/// The time model (see the file comment).
RooflineEstimate estimateKernelTime(const KernelWork &work,
                                    const GPUTarget &target);

} // namespace memwall

#endif // MEMWALL_HARDWARE_ROOFLINE_H
