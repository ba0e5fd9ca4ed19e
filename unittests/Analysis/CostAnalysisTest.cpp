//===- CostAnalysisTest.cpp - roofline of ops and modules -----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Registration.h"
#include "memwall/Report/RooflineReport.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir;
using namespace memwall;

namespace {
/// A made-up GPU with round numbers: 100 TFLOP/s bf16, 10 TFLOP/s fp32,
/// 1 TB/s of which kernels reach 0.8, large GEMMs at half the peak, 5 us
/// launches.
GPUTarget roundTarget() {
  GPUTarget target;
  target.name = "round";
  target.peakFlops = {10e12, 0, 100e12, 0, 0, 0};
  target.memoryBandwidth = 1e12;
  target.memoryCapacityBytes = 1;
  target.l2Bytes = 1 << 20;
  target.smCount = 1;
  target.kernelLaunchSeconds = 5e-6;
  target.achievable.memoryBandwidth = 0.8e12;
  target.achievable.gemmEfficiency = {0.5, 0.25, 0.125};
  target.achievable.attentionEfficiency = 0.4;
  return target;
}

/// The soft roofline (c^4 + m^4)^(1/4), written out here.
double soft(double c, double m) {
  return std::pow(std::pow(c, 4) + std::pow(m, 4), 0.25);
}

constexpr const char *kModule = R"mlir(
module @m {
  func.func @f(%x: tensor<1024x1024xbf16> {memwall.kind = #memwall.arg_kind<input>},
               %w: tensor<1024x1024xbf16> {memwall.kind = #memwall.arg_kind<weight>},
               %g: tensor<1024xf32> {memwall.kind = #memwall.arg_kind<weight>},
               %c: tensor<2x2xbf16> {memwall.kind = #memwall.arg_kind<kv_cache>}) {
    %0 = memwall.matmul %x, %w : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16> loc("proj")
    %1 = memwall.relu %0 : tensor<1024x1024xbf16> loc("act")
    %2 = memwall.reshape %1 [1048576] : tensor<1024x1024xbf16> -> tensor<1048576xbf16>
    return
  }
}
)mlir";
} // namespace

TEST(CostAnalysisTest, ReportHasEveryOpWithHandComputedRooflineTimes) {
  DialectRegistry registry;
  registerMemWallDialects(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &context);
  ASSERT_TRUE(module);

  RooflineReport report = buildRooflineReport(
      roundTarget(), computeModuleCost(*module, roundTarget()));
  EXPECT_EQ(report.modelName, "m");
  // Weights: 1024*1024 bf16 + 1024 f32; the input and the cache don't count.
  EXPECT_EQ(report.params, 1024 * 1024 + 1024);
  EXPECT_EQ(report.paramBytes, 1024 * 1024 * 2 + 1024 * 4);
  ASSERT_EQ(report.ops.size(), 3u);

  // matmul: 2 * 1024^3 = 2147483648 FLOP, a large GEMM (2^30 multiply-adds)
  // at 0.5 x 100 TFLOP/s = 42.95 us; 3 MiB of bf16 = 6291456 B at 0.8 TB/s =
  // 7.86 us: compute-bound, soft roofline + 5 us launch.
  const OpRecord &matmul = report.ops[0];
  EXPECT_EQ(matmul.loc, "proj");
  EXPECT_EQ(matmul.flops, 2147483648);
  EXPECT_EQ(matmul.category, "gemm");
  EXPECT_FALSE(matmul.estimate.memoryBound);
  EXPECT_NEAR(matmul.estimate.computeSeconds, 42.94967296e-6, 1e-15);
  EXPECT_NEAR(matmul.estimate.memorySeconds, 7.86432e-6, 1e-15);
  double matmulTime = soft(42.94967296e-6, 7.86432e-6) + 5e-6;
  EXPECT_NEAR(matmul.estimate.timeSeconds, matmulTime, 1e-15);

  // relu: 1048576 FLOP on FP32 cores = 0.105 us; 2 MiB of bf16 in and 2 MiB
  // out = 4194304 B at 0.8 TB/s = 5.24 us (its kernel's occupancy, 25%, is
  // enough for the full bandwidth); intensity 0.25.
  const OpRecord &relu = report.ops[1];
  EXPECT_EQ(relu.loc, "act");
  EXPECT_EQ(relu.category, "elementwise");
  EXPECT_TRUE(relu.estimate.memoryBound);
  double reluTime = soft(1048576 / 10e12, 4194304 / 0.8e12) + 5e-6;
  EXPECT_NEAR(relu.estimate.timeSeconds, reluTime, 1e-15);
  EXPECT_NEAR(relu.estimate.intensity, 0.25, 1e-12);

  // reshape: a view, free.
  EXPECT_EQ(report.ops[2].estimate.timeSeconds, 0);
  EXPECT_EQ(report.ops[2].category, "layout");

  RooflineTotals totals = report.computeTotals();
  EXPECT_EQ(totals.flops, 2147483648 + 1048576);
  EXPECT_NEAR(totals.memoryBoundTimeFraction,
              reluTime / (matmulTime + reluTime), 1e-9);

  // The breakdown by kernel kind: gemm first, then elementwise; the view
  // launches nothing.
  std::vector<TimeBreakdownEntry> breakdown = report.computeTimeBreakdown();
  ASSERT_EQ(breakdown.size(), 3u);
  EXPECT_EQ(breakdown[0].category, "gemm");
  EXPECT_EQ(breakdown[0].kernels, 1u);
  EXPECT_NEAR(breakdown[0].fraction, matmulTime / (matmulTime + reluTime),
              1e-12);
  EXPECT_EQ(breakdown[1].category, "elementwise");
  EXPECT_EQ(breakdown[2].category, "layout");
  EXPECT_EQ(breakdown[2].kernels, 0u);
}

TEST(CostAnalysisTest, LocationsFormatForReports) {
  MLIRContext context;
  Location file = FileLineColLoc::get(&context, "model.mlir", 12, 8);
  EXPECT_EQ(formatLocationForReport(file), "model.mlir:12:8");
  Location name = NameLoc::get(StringAttr::get(&context, "layers.0.qkv"));
  EXPECT_EQ(formatLocationForReport(name), "layers.0.qkv");
  EXPECT_EQ(formatLocationForReport(UnknownLoc::get(&context)), "?");
}
