//===- RooflineTest.cpp - roofline time of one kernel ---------------------===//

#include "memwall/Hardware/Roofline.h"

#include "gtest/gtest.h"

using namespace memwall;

namespace {
/// 100 TFLOP/s bf16, 10 TFLOP/s fp32, 2 TB/s, 3 us launches.
GPUTarget simpleTarget() {
  GPUTarget target;
  target.name = "simple";
  target.peakFlops = {10e12, 0, 100e12, 0, 0, 0};
  target.memoryBandwidth = 2e12;
  target.kernelLaunchSeconds = 3e-6;
  return target;
}
} // namespace

TEST(RooflineTest, ElementwiseOpIsBoundByBandwidth) {
  // 1e6 FLOP at 10 TFLOP/s = 0.1 us; 8e6 bytes at 2 TB/s = 4 us.
  RooflineEstimate e =
      estimateRoofline(1e6, 8e6, MathPrecision::FP32, simpleTarget());
  EXPECT_TRUE(e.memoryBound);
  EXPECT_DOUBLE_EQ(e.computeSeconds, 0.1e-6);
  EXPECT_DOUBLE_EQ(e.memorySeconds, 4e-6);
  EXPECT_DOUBLE_EQ(e.timeSeconds, 7e-6);
  EXPECT_DOUBLE_EQ(e.intensity, 0.125);
}

TEST(RooflineTest, LargeGemmIsBoundByTensorCores) {
  // 2e12 FLOP at 100 TFLOP/s = 20 ms; 1e9 bytes at 2 TB/s = 0.5 ms.
  RooflineEstimate e =
      estimateRoofline(2e12, 1e9, MathPrecision::BF16, simpleTarget());
  EXPECT_FALSE(e.memoryBound);
  EXPECT_DOUBLE_EQ(e.timeSeconds, 20e-3 + 3e-6);
  EXPECT_DOUBLE_EQ(e.intensity, 2000);
}

TEST(RooflineTest, IntensityAtTheRidgeIsStillMemoryBound) {
  // Ridge of bf16 = 100e12 / 2e12 = 50 FLOP/B: compute and memory tie.
  RooflineEstimate e =
      estimateRoofline(50e6, 1e6, MathPrecision::BF16, simpleTarget());
  EXPECT_DOUBLE_EQ(e.computeSeconds, e.memorySeconds);
  EXPECT_TRUE(e.memoryBound);
}

TEST(RooflineTest, ViewsCostNothingAndUnsupportedPrecisionsFallBack) {
  RooflineEstimate view =
      estimateRoofline(0, 0, MathPrecision::FP32, simpleTarget(), false);
  EXPECT_EQ(view.timeSeconds, 0);
  EXPECT_EQ(view.intensity, 0);
  EXPECT_TRUE(view.memoryBound);
  // FP8 is missing: it runs at the bf16 rate (fp16 missing too).
  RooflineEstimate fp8 =
      estimateRoofline(1e12, 1, MathPrecision::FP8, simpleTarget());
  EXPECT_DOUBLE_EQ(fp8.computeSeconds, 1e12 / 100e12);
}
