//===- RooflineTest.cpp - the time model of one kernel --------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Hardware/Roofline.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace memwall;

namespace {
/// 100 TFLOP/s bf16, 10 TFLOP/s fp32, 2 TB/s datasheet (1.6 TB/s achievable),
/// GEMMs at 0.8 / 0.5 / 0.25 of the peak, attention at 0.4, 3 us launches
/// (1 us from a CUDA graph): round numbers that keep the hand computations
/// below exact.
GPUTarget simpleTarget() {
  GPUTarget target;
  target.name = "simple";
  target.peakFlops = {10e12, 0, 100e12, 0, 0, 0};
  target.memoryBandwidth = 2e12;
  target.memoryCapacityBytes = 1ull << 30;
  target.l2Bytes = 1 << 20;
  target.smCount = 1;
  target.kernelLaunchSeconds = 3e-6;
  target.graphKernelLaunchSeconds = 1e-6;
  target.achievable.memoryBandwidth = 1.6e12;
  target.achievable.gemmEfficiency = {0.8, 0.5, 0.25};
  target.achievable.attentionEfficiency = 0.4;
  return target;
}

const GPUTarget &h100() {
  const GPUTarget *target = lookupBuiltinGPUTarget("h100-sxm");
  EXPECT_NE(target, nullptr);
  return *target;
}

KernelWork work(double flops, double bytes, MathPrecision precision,
                ComputeUnit unit = ComputeUnit::CudaCores) {
  KernelWork kernel;
  kernel.flops = flops;
  kernel.bytesRead = bytes;
  kernel.precision = precision;
  kernel.unit = unit;
  return kernel;
}

/// (c^4 + m^4)^(1/4), written out independently of the implementation.
double smoothMax(double c, double m) {
  return std::sqrt(std::sqrt(c * c * c * c + m * m * m * m));
}
} // namespace

TEST(RooflineTest, SoftRooflineIsTheFourNormOfComputeAndMemory) {
  EXPECT_DOUBLE_EQ(softRooflineSeconds(1.0, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(softRooflineSeconds(0.0, 2.0), 2.0);
  // At the ridge: 2^(1/4) = 1.189207115.
  EXPECT_NEAR(softRooflineSeconds(1.0, 1.0), 1.189207115, 1e-9);
  // (81 + 256)^(1/4) = 4.284572.
  EXPECT_NEAR(softRooflineSeconds(3.0, 4.0), 4.284572, 1e-6);
  EXPECT_EQ(softRooflineSeconds(0.0, 0.0), 0.0);
}

TEST(RooflineTest, ElementwiseKernelRunsAtTheAchievableBandwidth) {
  // 1e6 FLOP at 10 TFLOP/s = 0.1 us; 8e6 bytes at 1.6 TB/s (not the 2 TB/s
  // datasheet figure) = 5 us; + 3 us launch.
  RooflineEstimate e =
      estimateKernelTime(work(1e6, 8e6, MathPrecision::FP32), simpleTarget());
  EXPECT_TRUE(e.memoryBound);
  EXPECT_DOUBLE_EQ(e.computeSeconds, 0.1e-6);
  EXPECT_DOUBLE_EQ(e.memorySeconds, 5e-6);
  EXPECT_DOUBLE_EQ(e.launchSeconds, 3e-6);
  EXPECT_NEAR(e.timeSeconds, smoothMax(0.1e-6, 5e-6) + 3e-6, 1e-15);
  EXPECT_DOUBLE_EQ(e.intensity, 0.125);
}

TEST(RooflineTest, BF16AddOnH100UsesTheMeasuredCopyRate) {
  // c = a + b over 2^20 bf16 elements: 3 tensors of 2 MiB each, on the FP32
  // CUDA cores; the H100's device copy measured 3.01 TB/s.
  double flops = 1048576, bytes = 3 * 2 * 1048576.0;
  RooflineEstimate e =
      estimateKernelTime(work(flops, bytes, MathPrecision::FP32), h100());
  EXPECT_DOUBLE_EQ(e.computeSeconds, 1048576 / 66.9e12);
  // 6291456 / 3.01e12 = 2.09019 us.
  EXPECT_NEAR(e.memorySeconds, 2.09019e-6, 1e-11);
  EXPECT_TRUE(e.memoryBound);
  EXPECT_NEAR(e.timeSeconds, smoothMax(1048576 / 66.9e12, 6291456 / 3.01e12) +
                                 2e-6,
              1e-15);
}

TEST(RooflineTest, GemmComputeTimeUsesItsShapeClassEfficiency) {
  // 2e12 FLOP at 100 TFLOP/s x 0.8 (large) = 25 ms; 1e9 bytes at 1.6 TB/s =
  // 0.625 ms.
  RooflineEstimate large = estimateKernelTime(
      work(2e12, 1e9, MathPrecision::BF16, ComputeUnit::Gemm),
      simpleTarget());
  EXPECT_FALSE(large.memoryBound);
  EXPECT_DOUBLE_EQ(large.computeSeconds, 25e-3);
  EXPECT_DOUBLE_EQ(large.memorySeconds, 0.625e-3);
  EXPECT_NEAR(large.timeSeconds, smoothMax(25e-3, 0.625e-3) + 3e-6, 1e-12);

  KernelWork small = work(2e12, 1e9, MathPrecision::BF16, ComputeUnit::Gemm);
  small.gemmShape = GemmShapeClass::Small;
  EXPECT_DOUBLE_EQ(estimateKernelTime(small, simpleTarget()).computeSeconds,
                   40e-3); // x 0.5
  small.gemmShape = GemmShapeClass::Skinny;
  EXPECT_DOUBLE_EQ(estimateKernelTime(small, simpleTarget()).computeSeconds,
                   80e-3); // x 0.25
  // Attention at 0.4 of the peak: 50 ms.
  EXPECT_DOUBLE_EQ(
      estimateKernelTime(
          work(2e12, 1e9, MathPrecision::BF16, ComputeUnit::Attention),
          simpleTarget())
          .computeSeconds,
      50e-3);
}

TEST(RooflineTest, BF16GemmOnH100RunsAtTheMeasuredCuBLASRate) {
  // 8192^3 GEMM in bf16 (the shape cuBLAS was measured at, 767 TFLOP/s):
  // 2 * 8192^3 = 1.0995e12 FLOP -> 1.4335 ms.
  double flops = 2.0 * 8192 * 8192 * 8192, bytes = 3.0 * 8192 * 8192 * 2;
  KernelWork gemm = work(flops, bytes, MathPrecision::BF16, ComputeUnit::Gemm);
  gemm.gemmShape = classifyGemm(1, 8192, 8192, 8192);
  EXPECT_EQ(gemm.gemmShape, GemmShapeClass::Large);
  RooflineEstimate e = estimateKernelTime(gemm, h100());
  EXPECT_NEAR(e.computeSeconds, flops / 767e12, 1e-9);
  EXPECT_NEAR(e.computeSeconds, 1.4335e-3, 1e-7);
  EXPECT_FALSE(e.memoryBound);
}

TEST(RooflineTest, GemmShapeClasses) {
  // M or N of at most 64: skinny (a decode GEMV); under 2^30 multiply-adds:
  // small; else large.
  EXPECT_EQ(classifyGemm(1, 1, 4096, 4096), GemmShapeClass::Skinny);
  EXPECT_EQ(classifyGemm(1, 4096, 64, 4096), GemmShapeClass::Skinny);
  EXPECT_EQ(classifyGemm(1, 512, 1024, 1024), GemmShapeClass::Small);
  EXPECT_EQ(classifyGemm(1, 1024, 1024, 1024), GemmShapeClass::Large);
  EXPECT_EQ(classifyGemm(2, 512, 1024, 1024), GemmShapeClass::Large);
}

TEST(RooflineTest, LowOccupancyDividesTheBandwidth) {
  // Half the achievable bandwidth: 8e6 bytes take 10 us instead of 5.
  KernelWork kernel = work(0, 8e6, MathPrecision::FP32);
  kernel.bandwidthFraction = 0.5;
  EXPECT_DOUBLE_EQ(estimateKernelTime(kernel, simpleTarget()).memorySeconds,
                   10e-6);
}

TEST(RooflineTest, GraphLaunchModeChargesTheGraphLaunchCost) {
  GPUTarget target = simpleTarget();
  target.launchMode = LaunchMode::Graph;
  RooflineEstimate e =
      estimateKernelTime(work(0, 8e6, MathPrecision::FP32), target);
  EXPECT_DOUBLE_EQ(e.launchSeconds, 1e-6);
  EXPECT_DOUBLE_EQ(e.timeSeconds, 5e-6 + 1e-6);
}

TEST(RooflineTest, OpsThatLaunchNoKernelCostNothing) {
  KernelWork view = work(0, 0, MathPrecision::FP32);
  view.launchesKernel = false;
  RooflineEstimate e = estimateKernelTime(view, simpleTarget());
  EXPECT_EQ(e.launchSeconds, 0);
  EXPECT_EQ(e.timeSeconds, 0);
  EXPECT_TRUE(e.memoryBound);
}

TEST(RooflineTest, KernelWithNoWorkCostsOnlyItsLaunch) {
  RooflineEstimate e =
      estimateKernelTime(work(0, 0, MathPrecision::BF16), simpleTarget());
  EXPECT_EQ(e.intensity, 0);
  EXPECT_EQ(e.computeSeconds, 0);
  EXPECT_EQ(e.memorySeconds, 0);
  EXPECT_DOUBLE_EQ(e.timeSeconds, 3e-6);
  EXPECT_TRUE(e.memoryBound);

  // FLOPs with no DRAM traffic: intensity is defined as 0, compute-bound.
  RooflineEstimate onChip =
      estimateKernelTime(work(1e9, 0, MathPrecision::BF16), simpleTarget());
  EXPECT_EQ(onChip.intensity, 0);
  EXPECT_FALSE(onChip.memoryBound);
  EXPECT_DOUBLE_EQ(onChip.timeSeconds, 1e9 / 100e12 + 3e-6);
}

TEST(RooflineTest, UnsupportedPrecisionRunsAtTheFallbackPeak) {
  // FP8 and FP16 are missing: FP8 runs at the bf16 rate.
  RooflineEstimate fp8 =
      estimateKernelTime(work(1e12, 1, MathPrecision::FP8), simpleTarget());
  EXPECT_DOUBLE_EQ(fp8.computeSeconds, 1e12 / 100e12);
  // FP8 GEMMs on an A100 run at its 312 TFLOP/s fp16 peak x 0.7752.
  const GPUTarget *a100 = lookupBuiltinGPUTarget("a100-80gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_NEAR(estimateKernelTime(
                  work(312e12, 1, MathPrecision::FP8, ComputeUnit::Gemm),
                  *a100)
                  .computeSeconds,
              989.4 / 767, 1e-9);
}
