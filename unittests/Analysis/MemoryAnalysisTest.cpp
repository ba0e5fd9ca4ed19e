//===- MemoryAnalysisTest.cpp - liveness-simulated memory ------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Expected bytes are computed by hand from tensor sizes (comments show the
// arithmetic) or from closed-form formulas, never from the analysis.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/ModelGen/ModelBuilder.h"
#include "memwall/ModelGen/ModelConfig.h"
#include "memwall/Registration.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace memwall;

namespace {

int64_t bucket(const MemorySummary &m, MemoryBucket b) {
  return m.atPeak[static_cast<unsigned>(b)];
}

struct Fixture : public ::testing::Test {
  Fixture() : context(makeRegistry()) { context.loadAllAvailableDialects(); }
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

TEST_F(Fixture, InferencePeakIsTheLargestStepAndBucketsFollowArgumentKinds) {
  // x 4x8 f32 = 128 B (input), w 8x8 f32 = 256 B (weight), cache
  // 1x1x16x8 f32 = 512 B (kv_cache), h and r 128 B each.
  OwningOpRef<ModuleOp> module = parse(R"(
    func.func @f(%x: tensor<4x8xf32> {memwall.kind = #memwall.arg_kind<input>},
                 %w: tensor<8x8xf32> {memwall.kind = #memwall.arg_kind<weight>},
                 %c: tensor<1x1x16x8xf32> {memwall.kind = #memwall.arg_kind<kv_cache>})
        -> (tensor<4x8xf32>, tensor<1x1x16x8xf32>) {
      %h = memwall.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
      %r = memwall.relu %h : tensor<4x8xf32>
      %s = memwall.scale %r by 2.0 : tensor<4x8xf32>
      return %s, %c : tensor<4x8xf32>, tensor<1x1x16x8xf32>
    })");
  ASSERT_TRUE(module);
  MemorySummary m = simulateMemory(getMainFunction(*module), {});
  ASSERT_EQ(m.timeline.size(), 3u);
  // Step 0 (matmul): x + h = 256 of activations. Step 1 (relu): x died at
  // step 0, h + r = 256. Step 2 (scale): h died, r + s = 256.
  for (const MemoryStep &step : m.timeline) {
    EXPECT_EQ(step.bytes[static_cast<unsigned>(MemoryBucket::Weights)], 256);
    EXPECT_EQ(step.bytes[static_cast<unsigned>(MemoryBucket::KVCache)], 512);
    EXPECT_EQ(step.bytes[static_cast<unsigned>(MemoryBucket::Activations)],
              256);
  }
  EXPECT_EQ(m.peakBytes, 256 + 512 + 256);
  EXPECT_EQ(m.peakStep, 0);
  EXPECT_FALSE(m.training);
  EXPECT_EQ(m.savedActivationsBytes, 0);
}

TEST_F(Fixture, ReshapeIsAViewThatExtendsItsSourceLifetime) {
  // a 64 B; its reshape aliases it, so a stays live until the relu of the
  // view at step 2 even though a itself is last used at step 0.
  OwningOpRef<ModuleOp> module = parse(R"(
    func.func @f(%x: tensor<16xf32> {memwall.kind = #memwall.arg_kind<input>}) -> tensor<4x4xf32> {
      %a = memwall.relu %x : tensor<16xf32>
      %v = memwall.reshape %a [4, 4] : tensor<16xf32> -> tensor<4x4xf32>
      %b = memwall.relu %v : tensor<4x4xf32>
      return %b : tensor<4x4xf32>
    })");
  ASSERT_TRUE(module);
  MemorySummary m = simulateMemory(getMainFunction(*module), {});
  ASSERT_EQ(m.timeline.size(), 3u);
  // Step 0: x 64 + a 64. Step 1 (the view): a only. Step 2: a + b.
  EXPECT_EQ(m.timeline[0].total(), 128);
  EXPECT_EQ(m.timeline[1].total(), 64);
  EXPECT_EQ(m.timeline[2].total(), 128);
}

TEST_F(Fixture, StepMemoryChargesAMergeWhatItCarriesAcrossOtherKernels) {
  // Step 0: dw = g^T h; step 1: y = relu(x); step 2: z = dw + e. Bytes:
  // g 4096 (32x32 f32), h, e, dw 128 each (32x1), x and y 8192 each.
  //   step 0: g + h + e + x + dw = 4096 + 128 + 128 + 8192 + 128 = 12672
  //   step 1: e + x + dw + y = 128 + 8192 + 128 + 8192 = 16640 (the peak)
  //   step 2: e + dw + y + z = 128 + 128 + 8192 + 128 = 8576
  OwningOpRef<ModuleOp> module = parse(R"(
    func.func @f(%g: tensor<32x32xf32> {memwall.kind = #memwall.arg_kind<input>},
                 %h: tensor<32x1xf32> {memwall.kind = #memwall.arg_kind<input>},
                 %e: tensor<32x1xf32> {memwall.kind = #memwall.arg_kind<input>},
                 %x: tensor<2048xf32> {memwall.kind = #memwall.arg_kind<input>})
        -> (tensor<32x1xf32>, tensor<2048xf32>) {
      %dw = memwall.matmul %g, %h {transpose_lhs} : tensor<32x32xf32>, tensor<32x1xf32> -> tensor<32x1xf32>
      %y = memwall.relu %x : tensor<2048xf32>
      %z = memwall.add %dw, %e : tensor<32x1xf32>, tensor<32x1xf32> -> tensor<32x1xf32>
      return %z, %y : tensor<32x1xf32>, tensor<2048xf32>
    })");
  ASSERT_TRUE(module);
  MemoryLiveness liveness(getMainFunction(*module));
  StepMemory memory(liveness);
  EXPECT_EQ(memory.getLimit(), 16640);
  ArrayRef<Operation *> steps = liveness.getSteps();
  ASSERT_EQ(steps.size(), 3u);
  // The matmul and the add as one kernel at step 2: g and h are carried
  // across step 1 (16640 + 4096 + 128 = 20864); dw is never allocated
  // (its 128 bytes leave step 1: 20736); step 2 holds the kernel itself.
  StepMemory::Merge merge = memory.plan({steps[0], steps[2]});
  EXPECT_EQ(merge.step, 2);
  EXPECT_EQ(merge.emptied, SmallVector<int64_t>{0});
  EXPECT_EQ(memory.peakWith(merge), 16640 + 4096 + 128 - 128);
  // The relu and the add as one kernel at step 2: x is carried only into
  // the kernel's own step, step 1 is emptied, and the one other kernel's
  // step (0) keeps its 12672.
  EXPECT_EQ(memory.peakWith(memory.plan({steps[1], steps[2]})), 12672);
  // Applied, that kernel's step may hold what it holds (e + dw + x + y + z
  // = 16768, above the limit); the matmul joining it then crosses no other
  // kernel's step.
  memory.apply(memory.plan({steps[1], steps[2]}));
  EXPECT_LE(memory.peakWith(memory.plan({steps[0], steps[1], steps[2]})),
            memory.getLimit());
}

TEST_F(Fixture, MixedPrecisionAdamHoldsSixteenBytesPerParameterAndZeroShards) {
  // 64 bf16 params: weight 128 B, gradient 128 B, master + m + v 3 x 256 B
  // = 768 B: 2 + 2 + 12 = 16 B per parameter.
  OwningOpRef<ModuleOp> module = parse(R"(
    func.func @step(%x: tensor<4x8xbf16> {memwall.kind = #memwall.arg_kind<input>},
                    %w: tensor<8x8xbf16> {memwall.kind = #memwall.arg_kind<weight>}) -> tensor<f32> {
      %h = memwall.matmul %x, %w : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
      %c = memwall.cast %h to f32 : tensor<4x8xbf16> -> tensor<4x8xf32>
      %l = memwall.reduce sum %c axes [0, 1] : tensor<4x8xf32> -> tensor<f32>
      return %l : tensor<f32>
    })");
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(createAutodiff());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  func::FuncOp step = getMainFunction(*module);

  auto atFirstUpdate = [&](const MemorySummary &m) {
    for (const MemoryStep &s : m.timeline)
      if (s.phase == "optimizer")
        return s.bytes;
    ADD_FAILURE() << "no optimizer step";
    return BucketBytes{};
  };
  auto get = [](const BucketBytes &b, MemoryBucket k) {
    return b[static_cast<unsigned>(k)];
  };
  MemorySummary plain = simulateMemory(step, {});
  EXPECT_TRUE(plain.training);
  BucketBytes update = atFirstUpdate(plain);
  EXPECT_EQ(get(update, MemoryBucket::Weights), 128);
  EXPECT_EQ(get(update, MemoryBucket::Gradients), 128);
  EXPECT_EQ(get(update, MemoryBucket::Optimizer), 768);

  // ZeRO over 4 devices: stage 1 shards the optimizer (768 / 4), stage 2
  // also the gradients (128 / 4), stage 3 also the weights (128 / 4) plus
  // the gather working set of two copies of the largest weight (2 x 128).
  ShardingOptions zero;
  zero.devices = 4;
  zero.zeroStage = 1;
  update = atFirstUpdate(simulateMemory(step, zero));
  EXPECT_EQ(get(update, MemoryBucket::Optimizer), 192);
  EXPECT_EQ(get(update, MemoryBucket::Gradients), 128);
  zero.zeroStage = 2;
  update = atFirstUpdate(simulateMemory(step, zero));
  EXPECT_EQ(get(update, MemoryBucket::Gradients), 32);
  EXPECT_EQ(get(update, MemoryBucket::Weights), 128);
  zero.zeroStage = 3;
  MemorySummary stage3 = simulateMemory(step, zero);
  update = atFirstUpdate(stage3);
  EXPECT_EQ(get(update, MemoryBucket::Weights), 32);
  EXPECT_GE(get(update, MemoryBucket::Workspace), 256);
  // Offloading the optimizer leaves no optimizer bytes on the device.
  ShardingOptions offload;
  offload.offload = OffloadPolicy::Optimizer;
  EXPECT_EQ(get(atFirstUpdate(simulateMemory(step, offload)),
                MemoryBucket::Optimizer),
            0);
  // Live across the forward/backward boundary: the input x (64 B, for
  // dW = x^T dh) and the loss (4 B, returned). h is not: the VJPs of cast and
  // reduce need no forward value.
  EXPECT_EQ(plain.savedActivationsBytes, 64 + 4);
}

TEST_F(Fixture, DecodeKVCacheMatchesTheClosedForm) {
  llvm::Expected<ModelConfig> config = lookupPreset("llama-2-7b");
  ASSERT_TRUE(static_cast<bool>(config));
  config->layers = 2;
  config->kvLen = 1023;
  OwningOpRef<ModuleOp> module =
      buildModel(&context, *config, GenerationMode::Decode);
  ASSERT_TRUE(module);
  MemorySummary m = simulateMemory(getMainFunction(*module), {});
  // 2 (K and V) x layers 2 x batch 1 x (1023 cached + 1 new) tokens x 32 KV
  // heads x head dim 128 x 2 bytes (bf16) = 33,554,432 B.
  EXPECT_EQ(bucket(m, MemoryBucket::KVCache), 2 * 2 * 1 * 1024 * 32 * 128 * 2);
}

} // namespace
