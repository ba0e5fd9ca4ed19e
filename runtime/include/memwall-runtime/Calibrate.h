//===- Calibrate.h - memwall-run --calibrate --------------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Measures, with memwall-run's own driver and cuBLASLt code, what a target
// file's achievable figures stand for (docs/targets.md, "Calibration
// files"): a device copy's bandwidth, cuBLASLt GEMM rates on a grid of
// shapes, and the launch overhead of an empty kernel on a stream and in a
// CUDA graph. Free of CUDA types, like Executor.h.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_CALIBRATE_H
#define MEMWALL_RUNTIME_CALIBRATE_H

#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/Status.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace memwall::runtime {

/// The device copy: one buffer to another, bytes read plus written.
constexpr int64_t kCalibrationCopyBytes = int64_t(1) << 30;
/// Empty kernels launched back to back per timed sample.
constexpr int kCalibrationLaunches = 1000;

/// What measureDeviceRates measures with the driver alone.
struct DeviceRates {
  std::string device; // cuDeviceGetName
  int major = 0, minor = 0;
  int driverVersion = 0; // 13000 = 13.0
  int64_t copyBytes = 0; // of one copy
  double copyTimeS = 0;  // median
  double kernelLaunchS = 0;
  bool hasGraphs = false; // the driver has stream capture
  double graphKernelLaunchS = 0;
};

/// Opens device 0, calls `onDevice` with its name (an error from it stops
/// before anything is measured), then times the copy, the stream launches
/// and the graph launches, each `iters` times after a warm-up. Fails like
/// runOnGpu.
Status
measureDeviceRates(int iters,
                   const std::function<Status(const std::string &)> &onDevice,
                   DeviceRates &rates);

struct GemmShape {
  int64_t m, n, k;
};

/// The shapes --calibrate times, in both bf16 and f16.
const std::vector<GemmShape> &calibrationGemmShapes();

struct GemmMeasurement {
  GemmShape shape;
  DType dtype = DType::BF16;
  const char *shapeClass = ""; // gemmShapeClass()
  double timeS = 0;            // median
  double flopsPerS = 0;
  double fractionOfPeak = 0; // of the base target's peak for the dtype
};

struct CalibrateOptions {
  std::string name; // "" = "<base>-measured"
  std::string base; // "" = builtinTargetForDevice(the device's name)
  int iters = 20;
  std::string date; // "" = today (UTC), YYYY-MM-DD
};

struct Calibration {
  std::string name, base, calibration;
  DeviceRates rates;
  double datasheetBandwidth = 0, bf16PeakFlops = 0, fp16PeakFlops = 0;
  double copyBytesPerS = 0; // 2 x copyBytes / copyTimeS
  std::vector<GemmMeasurement> gemms;
  /// Per class (large, small, skinny): the median fraction over its shapes.
  double bf16Efficiency[3] = {0, 0, 0}, fp16Efficiency[3] = {0, 0, 0};
};

extern const char *const kGemmClassNames[3]; // "large", "small", "skinny"

/// Measures everything. Fails with Unsupported when the device is no
/// built-in target and options.base is empty; otherwise like runOnGpu.
Status calibrate(const CalibrateOptions &options, Calibration &result);

/// "" when the target parser would accept `calibration`'s figures, else why
/// not (a rate above the base's datasheet).
std::string checkCalibration(const Calibration &calibration);

/// The target file (docs/targets.md, "Calibration files").
std::string calibrationTargetJson(const Calibration &calibration);
/// Every raw measurement, for --report.
std::string calibrationReportJson(const Calibration &calibration);
void printCalibrationTable(FILE *out, const Calibration &calibration);

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_CALIBRATE_H
