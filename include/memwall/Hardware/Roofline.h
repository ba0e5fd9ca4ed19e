//===- Roofline.h - Roofline time of one kernel -----------------*- C++ -*-===//
//
// The roofline estimate of a single kernel on a GPUTarget: the kernel takes
// max(flops / peak, bytes / bandwidth) plus a fixed launch cost. Every analysis
// that predicts time (cost annotation, reports, fusion, remat) goes through
// estimateRoofline so the model lives in one place.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_HARDWARE_ROOFLINE_H
#define MEMWALL_HARDWARE_ROOFLINE_H

#include "memwall/Hardware/GPUTarget.h"

namespace memwall {

struct RooflineEstimate {
  /// FLOP per byte of DRAM traffic (0 when the kernel moves no bytes).
  double intensity = 0;
  /// flops / peakFor(precision).
  double computeSeconds = 0;
  /// bytes / memoryBandwidth.
  double memorySeconds = 0;
  /// kernelLaunchSeconds when the op launches a kernel, else 0.
  double launchSeconds = 0;
  /// max(computeSeconds, memorySeconds) + launchSeconds.
  double timeSeconds = 0;
  /// True unless computeSeconds > memorySeconds (data movement and ops with
  /// no work count as memory-bound).
  bool memoryBound = true;
};

/// Roofline estimate for a kernel doing `flops` at `precision` and moving
/// `bytes` to or from DRAM. `launchesKernel` is false for ops that are pure
/// metadata (a reshape of a contiguous tensor), which cost nothing.
RooflineEstimate estimateRoofline(double flops, double bytes,
                                  MathPrecision precision,
                                  const GPUTarget &target,
                                  bool launchesKernel = true);

} // namespace memwall

#endif // MEMWALL_HARDWARE_ROOFLINE_H
