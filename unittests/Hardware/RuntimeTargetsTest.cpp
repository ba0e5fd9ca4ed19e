//===- RuntimeTargetsTest.cpp - the runtime's copy of the built-ins -------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-run cannot link lib/Hardware (LLVM), so --calibrate keeps its own
// table of the built-in targets' peaks and bandwidths and its own GEMM shape
// classes (runtime/include/memwall-runtime/Targets.h). These tests keep the
// two from drifting, and check that what --calibrate writes parses.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Calibrate.h"
#include "memwall-runtime/Targets.h"

#include "memwall/Hardware/GPUTarget.h"
#include "memwall/Hardware/Roofline.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

using namespace memwall;

namespace {

TEST(RuntimeTargets, MatchBuiltinGPUTargets) {
  llvm::ArrayRef<GPUTarget> builtins = getBuiltinGPUTargets();
  ASSERT_EQ(runtime::builtinTargetFigures().size(), builtins.size());
  for (const GPUTarget &target : builtins) {
    SCOPED_TRACE(target.name);
    const runtime::BuiltinTargetFigures *figures =
        runtime::findBuiltinTarget(target.name);
    ASSERT_NE(figures, nullptr);
    EXPECT_EQ(figures->bf16PeakFlops,
              target.peakFlops[static_cast<unsigned>(MathPrecision::BF16)]);
    EXPECT_EQ(figures->fp16PeakFlops,
              target.peakFlops[static_cast<unsigned>(MathPrecision::FP16)]);
    EXPECT_EQ(figures->memoryBandwidth, target.memoryBandwidth);
  }
}

TEST(RuntimeTargets, GemmShapeClassesMatchClassifyGemm) {
  std::vector<runtime::GemmShape> shapes = runtime::calibrationGemmShapes();
  // The class boundaries: exactly 2^30 multiply-adds is large; 64 is skinny.
  shapes.push_back({1024, 1024, 1024});
  shapes.push_back({1024, 1024, 1023});
  shapes.push_back({65, 4096, 4096});
  shapes.push_back({4096, 64, 4096});
  for (const runtime::GemmShape &shape : shapes) {
    SCOPED_TRACE(std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" +
                 std::to_string(shape.k));
    EXPECT_EQ(
        std::string(runtime::gemmShapeClass(1, shape.m, shape.n, shape.k)),
        stringifyGemmShapeClass(classifyGemm(1, shape.m, shape.n, shape.k))
            .str());
  }
}

TEST(RuntimeTargets, CalibrationGridCoversEveryClass) {
  unsigned counts[kNumGemmShapeClasses] = {0, 0, 0};
  for (const runtime::GemmShape &shape : runtime::calibrationGemmShapes())
    ++counts[static_cast<unsigned>(classifyGemm(1, shape.m, shape.n, shape.k))];
  for (unsigned count : counts)
    EXPECT_GE(count, 3u);
}

runtime::Calibration sampleCalibration() {
  runtime::Calibration calibration;
  calibration.name = "h100-sxm-measured";
  calibration.base = "h100-sxm";
  calibration.calibration = "memwall-run --calibrate on NVIDIA H100 80GB "
                            "HBM3, driver 13.0, 2026-11-24";
  calibration.copyBytesPerS = 3.0e12;
  calibration.datasheetBandwidth = 3.35e12;
  calibration.bf16Efficiency[0] = 0.77;
  calibration.bf16Efficiency[1] = 0.5;
  calibration.bf16Efficiency[2] = 0.3;
  calibration.rates.kernelLaunchS = 2.2e-6;
  calibration.rates.hasGraphs = true;
  calibration.rates.graphKernelLaunchS = 0.9e-6;
  return calibration;
}

TEST(RuntimeTargets, CalibrationFileParses) {
  runtime::Calibration calibration = sampleCalibration();
  EXPECT_EQ(runtime::checkCalibration(calibration), "");
  llvm::Expected<GPUTarget> target = parseGPUTargetJSON(
      runtime::calibrationTargetJson(calibration), "calibration.json");
  ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
  EXPECT_EQ(target->name, "h100-sxm-measured");
  EXPECT_EQ(target->baseName, "h100-sxm");
  EXPECT_EQ(target->achievable.memoryBandwidth, 3.0e12);
  EXPECT_EQ(target->achievable
                .gemmEfficiency[static_cast<unsigned>(GemmShapeClass::Skinny)],
            0.3);
  EXPECT_EQ(target->kernelLaunchSeconds, 2.2e-6);
  EXPECT_EQ(target->graphKernelLaunchSeconds, 0.9e-6);
  EXPECT_EQ(target->calibration, calibration.calibration);
}

// What checkCalibration refuses, the target parser refuses too.
TEST(RuntimeTargets, RefusedCalibrationDoesNotParse) {
  runtime::Calibration calibration = sampleCalibration();
  calibration.copyBytesPerS = 3.4e12;
  EXPECT_NE(runtime::checkCalibration(calibration), "");
  llvm::Expected<GPUTarget> target = parseGPUTargetJSON(
      runtime::calibrationTargetJson(calibration), "calibration.json");
  ASSERT_FALSE(static_cast<bool>(target));
  EXPECT_NE(llvm::toString(target.takeError()).find("exceeds the datasheet"),
            std::string::npos);
}

} // namespace
