//===- InferenceAnalysisTest.cpp - why a decode step is memory-bound ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Expected figures are worked out by hand from tensor sizes and the roofline
// formula (time = max(flops / peak, bytes / bandwidth) + launch), never from
// the analysis.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/InferenceAnalysis.h"
#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Registration.h"

#include "TestTargets.h"

#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace memwall;

namespace {

using memwall::testing::roundTarget;

struct InferenceAnalysisTest : public ::testing::Test {
  InferenceAnalysisTest() : context(makeRegistry()) {
    context.loadAllAvailableDialects();
  }
  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    return registry;
  }
  OwningOpRef<ModuleOp> parse(const char *text) {
    return parseSourceString<ModuleOp>(text, &context);
  }
  MLIRContext context;
};

TEST_F(InferenceAnalysisTest, WeightGemmOfFourTokensIsFarBelowTheRidge) {
  OwningOpRef<ModuleOp> module = parse(R"(
    func.func @f(%x: tensor<4x1024xbf16> {memwall.kind = #memwall.arg_kind<input>},
                 %w: tensor<1024x2048xbf16> {memwall.kind = #memwall.arg_kind<weight>})
        -> tensor<4x2048xbf16> {
      %h = memwall.matmul %x, %w : tensor<4x1024xbf16>, tensor<1024x2048xbf16> -> tensor<4x2048xbf16>
      return %h : tensor<4x2048xbf16>
    })");
  ASSERT_TRUE(module);
  std::optional<InferenceSummary> s =
      analyzeInference(getMainFunction(*module), roundTarget());
  ASSERT_TRUE(s);
  // flops 2*4*1024*2048; bytes: x 4*1024*2 + w 1024*2048*2 + h 4*2048*2.
  double flops = 2.0 * 4 * 1024 * 2048;
  double bytes = 4 * 1024 * 2 + 1024 * 2048 * 2 + 4 * 2048 * 2;
  EXPECT_EQ(s->tokensPerStep, 4);
  EXPECT_EQ(s->weightBytes, 1024 * 2048 * 2);
  EXPECT_EQ(s->kvCacheBytes, 0);
  EXPECT_EQ(s->totalBytes, static_cast<int64_t>(bytes));
  EXPECT_DOUBLE_EQ(s->weightGemmFlops, flops);
  EXPECT_NEAR(s->weightGemmIntensity, flops / bytes, 1e-12); // 3.977
  EXPECT_EQ(s->mathPrecision, "bf16");
  EXPECT_DOUBLE_EQ(s->ridge, 100.0);
  // Memory-bound: bytes / 1 TB/s = 4.219 us > flops / 100 TFLOP/s = 0.17 us;
  // the soft roofline of the two, + 2 us launch.
  double step = std::pow(std::pow(flops / 100e12, 4) + std::pow(bytes / 1e12, 4),
                         0.25) +
                2e-6;
  EXPECT_NEAR(s->stepSeconds, step, 1e-15);
  EXPECT_DOUBLE_EQ(s->weightGemmTimeFraction, 1.0);
  EXPECT_DOUBLE_EQ(s->memoryBoundTimeFraction, 1.0);
  // 4 rows * 100 / 3.9767 = 100.59 -> 101 tokens per step reach the ridge.
  EXPECT_EQ(s->tokensAtRidge, 101);
  EXPECT_NEAR(s->bandwidthFloorSeconds, 1024.0 * 2048 * 2 / 1e12, 1e-18);
  EXPECT_NEAR(s->tokensPerSecond, 4 / step, 1e-6);
}

TEST_F(InferenceAnalysisTest, AttentionReadsTheWholeAppendedCache) {
  // Caches 1x2x7x64 bf16 plus one appended token: attention reads
  // 2 x (1*2*8*64*2 B) = 4096 B of cache.
  OwningOpRef<ModuleOp> module = parse(R"(
    func.func @f(%q: tensor<1x2x1x64xbf16> {memwall.kind = #memwall.arg_kind<input>},
                 %w: tensor<64x64xbf16> {memwall.kind = #memwall.arg_kind<weight>},
                 %kc: tensor<1x2x7x64xbf16> {memwall.kind = #memwall.arg_kind<kv_cache>},
                 %vc: tensor<1x2x7x64xbf16> {memwall.kind = #memwall.arg_kind<kv_cache>})
        -> tensor<1x2x1x64xbf16> {
      %p = memwall.matmul %q, %w : tensor<1x2x1x64xbf16>, tensor<64x64xbf16> -> tensor<1x2x1x64xbf16>
      %k = memwall.kv_cache_append %kc, %p : tensor<1x2x7x64xbf16>, tensor<1x2x1x64xbf16> -> tensor<1x2x8x64xbf16>
      %v = memwall.kv_cache_append %vc, %p : tensor<1x2x7x64xbf16>, tensor<1x2x1x64xbf16> -> tensor<1x2x8x64xbf16>
      %o = memwall.attention %q, %k, %v causal : tensor<1x2x1x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16> -> tensor<1x2x1x64xbf16>
      return %o : tensor<1x2x1x64xbf16>
    })");
  ASSERT_TRUE(module);
  std::optional<InferenceSummary> s =
      analyzeInference(getMainFunction(*module), roundTarget());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kvCacheBytes, 2 * (1 * 2 * 8 * 64 * 2));
  EXPECT_EQ(s->weightBytes, 64 * 64 * 2);
  EXPECT_EQ(s->tokensPerStep, 2); // rows of the [1, 2, 1, 64] result
  EXPECT_NEAR(s->bandwidthFloorSeconds, (4096.0 + 8192.0) / 1e12, 1e-18);
}

TEST_F(InferenceAnalysisTest,
       TrainingStepsAndGraphsWithoutWeightGemmsHaveNone) {
  OwningOpRef<ModuleOp> module = parse(R"(
    func.func @noweights(%x: tensor<4x8xf32> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<4x8xf32> {
      %r = memwall.relu %x : tensor<4x8xf32>
      return %r : tensor<4x8xf32>
    })");
  ASSERT_TRUE(module);
  EXPECT_FALSE(analyzeInference(getMainFunction(*module), roundTarget()));
  OwningOpRef<ModuleOp> training = parse(R"(
    func.func @step(%x: tensor<4x8xf32> {memwall.kind = #memwall.arg_kind<input>},
                    %w: tensor<8x8xf32> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<4x8xf32> {
      %h = memwall.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
      %g = memwall.relu %h {memwall.phase = "backward"} : tensor<4x8xf32>
      return %g : tensor<4x8xf32>
    })");
  ASSERT_TRUE(training);
  EXPECT_FALSE(analyzeInference(getMainFunction(*training), roundTarget()));
}

} // namespace
