//===- Roofline.cpp - Roofline time of one kernel -------------------------===//

#include "memwall/Hardware/Roofline.h"

#include <algorithm>

using namespace memwall;

RooflineEstimate memwall::estimateRoofline(double flops, double bytes,
                                           MathPrecision precision,
                                           const GPUTarget &target,
                                           bool launchesKernel) {
  RooflineEstimate estimate;
  estimate.intensity = bytes > 0 ? flops / bytes : 0;
  estimate.computeSeconds = flops / target.peakFor(precision);
  estimate.memorySeconds = bytes / target.memoryBandwidth;
  estimate.launchSeconds = launchesKernel ? target.kernelLaunchSeconds : 0;
  estimate.timeSeconds =
      std::max(estimate.computeSeconds, estimate.memorySeconds) +
      estimate.launchSeconds;
  estimate.memoryBound = !(estimate.computeSeconds > estimate.memorySeconds);
  return estimate;
}
