//===- Roofline.cpp - The time model of one kernel ------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Hardware/Roofline.h"

#include <algorithm>
#include <cmath>

using namespace memwall;

double memwall::softRooflineSeconds(double computeSeconds,
                                    double memorySeconds) {
  double largest = std::max(computeSeconds, memorySeconds);
  if (!(largest > 0))
    return 0;
  double c = computeSeconds / largest, m = memorySeconds / largest;
  return largest * std::pow(std::pow(c, 4) + std::pow(m, 4), 0.25);
}

double memwall::computeEfficiency(ComputeUnit unit, GemmShapeClass gemmShape,
                                  const GPUTarget &target) {
  switch (unit) {
  case ComputeUnit::CudaCores:
    return 1;
  case ComputeUnit::Gemm:
    return target.achievable.gemmEfficiency[static_cast<unsigned>(gemmShape)];
  case ComputeUnit::Attention:
    return target.achievable.attentionEfficiency;
  case ComputeUnit::GeneratedGemm:
    return target.achievable
        .generatedGemmEfficiency[static_cast<unsigned>(gemmShape)];
  }
  return 1;
}

GemmShapeClass memwall::classifyGemm(int64_t batch, int64_t m, int64_t n,
                                     int64_t k) {
  if (std::min(m, n) <= 64)
    return GemmShapeClass::Skinny;
  // Below 2^30 multiply-adds (a 1024^3 GEMM: ~3 us on an H100) the launch,
  // prologue and a partial last wave are a large share of the kernel.
  double macs = static_cast<double>(batch) * static_cast<double>(m) *
                static_cast<double>(n) * static_cast<double>(k);
  return macs < 1073741824.0 ? GemmShapeClass::Small : GemmShapeClass::Large;
}

RooflineEstimate memwall::estimateKernelTime(const KernelWork &work,
                                             const GPUTarget &target) {
  RooflineEstimate estimate;
  if (!work.launchesKernel)
    return estimate;
  double bytes = totalBytes(work);
  estimate.intensity = bytes > 0 ? work.flops / bytes : 0;
  double rate = target.peakFor(work.precision) *
                computeEfficiency(work.unit, work.gemmShape, target) *
                std::clamp(work.computeFraction, 1e-3, 1.0);
  estimate.computeSeconds = work.flops / rate;
  // An FMA is two FLOPs: the fp32 peak is twice the lanes' issue rate.
  if (work.cudaCoreInstructions > 0)
    estimate.computeSeconds +=
        work.cudaCoreInstructions / (target.peakFor(MathPrecision::FP32) / 2);
  // A kernel no block of which fits an SM (occupancy 0) still runs; the
  // floor keeps its time finite rather than infinite or NaN.
  double fraction = std::clamp(work.bandwidthFraction, 1e-3, 1.0);
  estimate.memorySeconds =
      bytes / (target.achievable.memoryBandwidth * fraction);
  estimate.launchSeconds =
      target.launchSeconds() *
      static_cast<double>(1 + std::max<int64_t>(work.extraLaunches, 0));
  estimate.timeSeconds =
      softRooflineSeconds(estimate.computeSeconds, estimate.memorySeconds) +
      estimate.launchSeconds;
  estimate.memoryBound = !(estimate.computeSeconds > estimate.memorySeconds);
  return estimate;
}
