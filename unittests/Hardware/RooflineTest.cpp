//===- RooflineTest.cpp - roofline time of one kernel ---------------------===//

#include "memwall/Hardware/Roofline.h"

#include "gtest/gtest.h"

using namespace memwall;

namespace {
/// 100 TFLOP/s bf16, 10 TFLOP/s fp32, 2 TB/s, 3 us launches: round numbers
/// that make the hand computations below exact.
GPUTarget simpleTarget() {
  GPUTarget target;
  target.name = "simple";
  target.peakFlops = {10e12, 0, 100e12, 0, 0, 0};
  target.memoryBandwidth = 2e12;
  target.memoryCapacityBytes = 1ull << 30;
  target.smCount = 1;
  target.kernelLaunchSeconds = 3e-6;
  return target;
}

const GPUTarget &h100() {
  const GPUTarget *target = lookupBuiltinGPUTarget("h100-sxm");
  EXPECT_NE(target, nullptr);
  return *target;
}
} // namespace

TEST(RooflineTest, ElementwiseOpIsBoundByBandwidth) {
  // 1e6 FLOP at 10 TFLOP/s = 0.1 us; 8e6 bytes at 2 TB/s = 4 us; + 3 us.
  RooflineEstimate e =
      estimateRoofline(1e6, 8e6, MathPrecision::FP32, simpleTarget());
  EXPECT_TRUE(e.memoryBound);
  EXPECT_DOUBLE_EQ(e.computeSeconds, 0.1e-6);
  EXPECT_DOUBLE_EQ(e.memorySeconds, 4e-6);
  EXPECT_DOUBLE_EQ(e.launchSeconds, 3e-6);
  EXPECT_DOUBLE_EQ(e.timeSeconds, 7e-6);
  EXPECT_DOUBLE_EQ(e.intensity, 0.125);
}

TEST(RooflineTest, BF16AddOnH100MatchesTheHandComputation) {
  // c = a + b over 2^20 bf16 elements: 1 FLOP per element, 3 tensors of
  // 2 MiB each through HBM, on the FP32 CUDA cores.
  double flops = 1048576, bytes = 3 * 2 * 1048576.0;
  RooflineEstimate e =
      estimateRoofline(flops, bytes, MathPrecision::FP32, h100());
  // 1048576 / 66.9e12 = 0.01567 us; 6291456 / 3.35e12 = 1.87805 us.
  EXPECT_DOUBLE_EQ(e.computeSeconds, 1048576 / 66.9e12);
  EXPECT_DOUBLE_EQ(e.memorySeconds, 6291456 / 3.35e12);
  EXPECT_NEAR(e.memorySeconds, 1.87805e-6, 1e-11);
  EXPECT_TRUE(e.memoryBound);
  EXPECT_NEAR(e.timeSeconds, 1.87805e-6 + 2e-6, 1e-11);
  EXPECT_NEAR(e.intensity, 1.0 / 6, 1e-15);
}

TEST(RooflineTest, LargeGemmIsBoundByTensorCores) {
  // 2e12 FLOP at 100 TFLOP/s = 20 ms; 1e9 bytes at 2 TB/s = 0.5 ms.
  RooflineEstimate e =
      estimateRoofline(2e12, 1e9, MathPrecision::BF16, simpleTarget());
  EXPECT_FALSE(e.memoryBound);
  EXPECT_DOUBLE_EQ(e.computeSeconds, 20e-3);
  EXPECT_DOUBLE_EQ(e.memorySeconds, 0.5e-3);
  EXPECT_DOUBLE_EQ(e.timeSeconds, 20e-3 + 3e-6);
  EXPECT_DOUBLE_EQ(e.intensity, 2000);
}

TEST(RooflineTest, BF16GemmOnH100MatchesTheHandComputation) {
  // 4096^3 GEMM in bf16: 2 * 4096^3 = 137438953472 FLOP; A, B and C are
  // 4096 * 4096 * 2 bytes each = 100663296 bytes.
  double flops = 2.0 * 4096 * 4096 * 4096, bytes = 3.0 * 4096 * 4096 * 2;
  RooflineEstimate e =
      estimateRoofline(flops, bytes, MathPrecision::BF16, h100());
  // 137438953472 / 989.4e12 = 138.911 us; 100663296 / 3.35e12 = 30.049 us.
  EXPECT_NEAR(e.computeSeconds, 138.911e-6, 1e-9);
  EXPECT_NEAR(e.memorySeconds, 30.049e-6, 1e-9);
  EXPECT_FALSE(e.memoryBound);
  EXPECT_NEAR(e.timeSeconds, 138.911e-6 + 2e-6, 1e-9);
  // 1365.3 FLOP/byte, far right of the 295 FLOP/byte ridge.
  EXPECT_NEAR(e.intensity, 1365.333, 1e-3);
  EXPECT_GT(e.intensity, h100().ridgeFor(MathPrecision::BF16));
}

TEST(RooflineTest, IntensityAtTheRidgeIsStillMemoryBound) {
  // Ridge of bf16 = 100e12 / 2e12 = 50 FLOP/B: compute and memory tie.
  RooflineEstimate e =
      estimateRoofline(50e6, 1e6, MathPrecision::BF16, simpleTarget());
  EXPECT_DOUBLE_EQ(e.intensity, simpleTarget().ridgeFor(MathPrecision::BF16));
  EXPECT_DOUBLE_EQ(e.computeSeconds, e.memorySeconds);
  EXPECT_TRUE(e.memoryBound);
}

TEST(RooflineTest, OpsThatLaunchNoKernelPayNoLaunchCost) {
  // A metadata-only op: same roofline terms, no 3 us launch.
  RooflineEstimate e =
      estimateRoofline(1e6, 8e6, MathPrecision::FP32, simpleTarget(),
                       /*launchesKernel=*/false);
  EXPECT_DOUBLE_EQ(e.launchSeconds, 0);
  EXPECT_DOUBLE_EQ(e.timeSeconds, 4e-6);
  EXPECT_TRUE(e.memoryBound);

  RooflineEstimate view =
      estimateRoofline(0, 0, MathPrecision::FP32, simpleTarget(),
                       /*launchesKernel=*/false);
  EXPECT_EQ(view.timeSeconds, 0);
}

TEST(RooflineTest, KernelWithNoWorkCostsOnlyItsLaunch) {
  RooflineEstimate e =
      estimateRoofline(0, 0, MathPrecision::BF16, simpleTarget());
  EXPECT_EQ(e.intensity, 0);
  EXPECT_EQ(e.computeSeconds, 0);
  EXPECT_EQ(e.memorySeconds, 0);
  EXPECT_DOUBLE_EQ(e.timeSeconds, 3e-6);
  EXPECT_TRUE(e.memoryBound);

  // FLOPs with no DRAM traffic (all operands on chip): intensity is defined
  // as 0, and the kernel is compute-bound.
  RooflineEstimate onChip =
      estimateRoofline(1e9, 0, MathPrecision::BF16, simpleTarget());
  EXPECT_EQ(onChip.intensity, 0);
  EXPECT_FALSE(onChip.memoryBound);
  EXPECT_DOUBLE_EQ(onChip.timeSeconds, 1e9 / 100e12 + 3e-6);
}

TEST(RooflineTest, UnsupportedPrecisionRunsAtTheFallbackPeak) {
  // FP8 and FP16 are missing: FP8 runs at the bf16 rate.
  RooflineEstimate fp8 =
      estimateRoofline(1e12, 1, MathPrecision::FP8, simpleTarget());
  EXPECT_DOUBLE_EQ(fp8.computeSeconds, 1e12 / 100e12);
  // FP8 on an A100 runs at 312 TFLOP/s.
  const GPUTarget *a100 = lookupBuiltinGPUTarget("a100-80gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_DOUBLE_EQ(
      estimateRoofline(312e12, 1, MathPrecision::FP8, *a100).computeSeconds,
      1.0);
}
