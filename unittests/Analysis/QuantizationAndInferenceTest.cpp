//===- QuantizationAndInferenceTest.cpp - quantization and serving answers ===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Weight-only quantization dequantizes inside the GEMM, an fp8 KV cache is
// read as stored, fp8-mixed training adds no activation memory, and the
// inference fixes and --max-batch speak in batch and context. Expected
// figures are worked out by hand from the Llama-2-7B shapes (hidden 4096,
// MLP 11008, 32 layers of 32 heads of 128, vocabulary 32000), never from the
// analyses.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/FusionCost.h"
#include "memwall/Analysis/InferenceAnalysis.h"
#include "memwall/Analysis/InferenceFixes.h"
#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/ModelGen/ModelBuilder.h"
#include "memwall/ModelGen/ModelConfig.h"
#include "memwall/Pipelines.h"
#include "memwall/Registration.h"

#include "TestTargets.h"

#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace memwall;

namespace {

using memwall::testing::roundTarget;

// Llama-2-7B, by hand. GEMM weights per layer: q, k, v, o [4096, 4096],
// gate, up [4096, 11008], down [11008, 4096]; plus the LM head
// [4096, 32000]: 32 * (4 * 4096^2 + 3 * 4096 * 11008) + 4096 * 32000.
constexpr int64_t kGemmParams =
    32 * (4 * 4096LL * 4096 + 3 * 4096LL * 11008) + 4096LL * 32000;
static_assert(kGemmParams == 6'607'077'376);
// Output channels (one int8 scale each): 4 x 4096 + 2 x 11008 + 4096 per
// layer, 32000 for the head.
constexpr int64_t kChannels = 32 * (4 * 4096 + 2 * 11008 + 4096) + 32000;
// int4 groups of 128 along K: K = 4096 has 32 groups, the down
// projection's K = 11008 has 86.
constexpr int64_t kInt4Groups =
    32 * ((4 * 4096 + 2 * 11008) * 32 + 4096 * 86) + 32000 * 32;
// All parameters: the GEMM weights, the embedding table [32000, 4096] and
// 65 RMSNorm vectors of 4096.
constexpr int64_t kParams = kGemmParams + 32000LL * 4096 + 65 * 4096;
// K and V, 32 layers x 32 heads x (4095 cached + 1 new) tokens x 128, at
// batch 1, in bf16.
constexpr int64_t kKVBytesPerSequence = 2LL * 32 * 32 * 4096 * 128 * 2;

struct QuantizationTest : public ::testing::Test {
  QuantizationTest() : context(makeRegistry()) {
    context.loadAllAvailableDialects();
  }
  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    return registry;
  }

  /// Llama-2-7B in `mode`, through memwall's default pipeline with the
  /// given precision policy, KV-cache type and fusion.
  OwningOpRef<ModuleOp> build(GenerationMode mode, StringRef precision = "",
                              StringRef kvDtype = "", bool fuse = false,
                              int64_t batch = 1, int64_t kvLen = 4095,
                              int64_t layers = 32) {
    llvm::Expected<ModelConfig> config = lookupPreset("llama-2-7b");
    EXPECT_TRUE(static_cast<bool>(config));
    if (!config)
      return {};
    config->batch = batch;
    config->kvLen = kvLen;
    config->layers = layers;
    if (mode == GenerationMode::Train)
      config->seq = 512;
    OwningOpRef<ModuleOp> module = buildModel(&context, *config, mode);
    DefaultPipelineOptions options;
    options.target = "h100-sxm";
    options.precision = precision.str();
    options.kvCacheDtype = kvDtype.str();
    options.fuse = fuse;
    PassManager pm(&context);
    buildDefaultPipeline(pm, options);
    EXPECT_TRUE(succeeded(pm.run(*module)));
    return module;
  }

  /// QLoRA's Llama-2-7B layer 0 in train mode (batch 4 x 512, r 64 on q,
  /// the base NF4) and its q projection's matmul (null on failure).
  std::pair<OwningOpRef<ModuleOp>, MatmulOp> buildQLoRAProjection() {
    llvm::Expected<ModelConfig> config = lookupPreset("llama-2-7b");
    EXPECT_TRUE(static_cast<bool>(config));
    if (!config)
      return {};
    config->layers = 1;
    config->seq = 512;
    config->batch = 4;
    config->loraRank = 64;
    config->loraTargets = {"q"};
    config->baseDtype = "nf4";
    OwningOpRef<ModuleOp> module =
        buildModel(&context, *config, GenerationMode::Train);
    MatmulOp q;
    if (module)
      module->walk([&](MatmulOp matmul) {
        if (auto loc = dyn_cast<NameLoc>(matmul.getLoc());
            loc && loc.getName() == "layers.0.attn.q")
          q = matmul;
      });
    return {std::move(module), q};
  }

  static GPUTarget h100(LaunchMode launch = LaunchMode::Stream) {
    GPUTarget target = *lookupBuiltinGPUTarget("h100-sxm");
    target.launchMode = launch;
    return target;
  }

  MLIRContext context;
};

TEST_F(QuantizationTest, SubByteTensorsArePacked) {
  Builder b(&context);
  // Two i4 per byte, rounded up to whole bytes; i1 still takes a byte.
  EXPECT_EQ(getTensorByteSize(
                RankedTensorType::get({4096, 4096}, b.getIntegerType(4))),
            4096 * 4096 / 2);
  EXPECT_EQ(getTensorByteSize(RankedTensorType::get({3}, b.getIntegerType(4))),
            2);
  EXPECT_EQ(getTensorByteSize(RankedTensorType::get({3}, b.getI1Type())), 3);
  EXPECT_EQ(getTensorByteSize(RankedTensorType::get({3}, b.getI8Type())), 3);
}

TEST_F(QuantizationTest, Int8DecodeStreamsHalfTheWeightBytesPlusScales) {
  OwningOpRef<ModuleOp> bf16 = build(GenerationMode::Decode);
  OwningOpRef<ModuleOp> int8 = build(GenerationMode::Decode, "int8-weights");
  OwningOpRef<ModuleOp> int4 = build(GenerationMode::Decode, "int4-weights");
  GPUTarget target = h100();
  std::optional<InferenceSummary> wide =
      analyzeInference(getMainFunction(*bf16), target);
  std::optional<InferenceSummary> narrow =
      analyzeInference(getMainFunction(*int8), target);
  std::optional<InferenceSummary> nibble =
      analyzeInference(getMainFunction(*int4), target);
  ASSERT_TRUE(wide && narrow && nibble);
  EXPECT_EQ(wide->weightBytes, kGemmParams * 2);
  // 1 B per weight + one 2-byte scale per output channel.
  EXPECT_EQ(narrow->weightBytes, kGemmParams + kChannels * 2);
  // Half a byte per weight + one 2-byte scale per group of 128.
  EXPECT_EQ(nibble->weightBytes, kGemmParams / 2 + kInt4Groups * 2);

  // Memory: the quantized weights and their scales are all that is stored
  // (norms and the embedding table stay bf16); no wide copy of any weight
  // is allocated.
  MemorySummary m = simulateMemory(getMainFunction(*int8), {});
  EXPECT_EQ(m.atPeak[static_cast<unsigned>(MemoryBucket::Weights)],
            kGemmParams + kChannels * 2 + (kParams - kGemmParams) * 2);
}

TEST_F(QuantizationTest, Int8DecodeIsFasterThanSixTenthsOfBf16) {
  // Weight streaming dominates a short-context decode step replayed from a
  // CUDA graph: halving the weight bytes must take the step below 0.6x
  // (the int8 GEMMs run in memwall's GEMM, K split at decode, as duals where
  // bf16's are).
  OwningOpRef<ModuleOp> bf16 =
      build(GenerationMode::Decode, "", "", /*fuse=*/true, 1, 511);
  OwningOpRef<ModuleOp> int8 =
      build(GenerationMode::Decode, "int8-weights", "", /*fuse=*/true, 1, 511);
  GPUTarget target = h100(LaunchMode::Graph);
  std::optional<InferenceSummary> wide =
      analyzeInference(getMainFunction(*bf16), target);
  std::optional<InferenceSummary> narrow =
      analyzeInference(getMainFunction(*int8), target);
  ASSERT_TRUE(wide && narrow);
  EXPECT_LT(narrow->stepSeconds, 0.6 * wide->stepSeconds);
  // The saving is the weight traffic: at most the halved weight bytes at
  // the achievable bandwidth, at least most of it; plus the layout kernels
  // (heads transposes, ropes) the int8 step's GEMMs, memwall's, take into
  // their epilogues where bf16's cuBLASLt GEMMs cannot.
  double saved = (kGemmParams * 2.0 - (kGemmParams + kChannels * 2)) /
                 target.achievable.memoryBandwidth;
  auto layoutKernelSeconds = [&](ModuleOp module) {
    double seconds = 0;
    getMainFunction(module).walk([&](Operation *op) {
      if (isa<TransposeOp, RopeOp>(op) && !op->getParentOfType<FusionOp>())
        seconds +=
            estimateOpRoofline(cast<CostOpInterface>(op), target).timeSeconds;
    });
    return seconds;
  };
  double fusedLayouts = layoutKernelSeconds(*bf16) - layoutKernelSeconds(*int8);
  EXPECT_GE(fusedLayouts, 0);
  EXPECT_LE(wide->stepSeconds - narrow->stepSeconds,
            saved * 1.001 + fusedLayouts);
  EXPECT_GE(wide->stepSeconds - narrow->stepSeconds, saved * 0.9);
}

TEST_F(QuantizationTest, FusedDecodeFloorCountsWeightsAndKVCache) {
  OwningOpRef<ModuleOp> fused =
      build(GenerationMode::Decode, "", "", /*fuse=*/true);
  GPUTarget target = h100();
  std::optional<InferenceSummary> s =
      analyzeInference(getMainFunction(*fused), target);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->weightBytes, kGemmParams * 2);
  EXPECT_EQ(s->kvCacheBytes, kKVBytesPerSequence);
  EXPECT_DOUBLE_EQ(s->bandwidthFloorSeconds,
                   (kGemmParams * 2.0 + kKVBytesPerSequence) /
                       target.achievable.memoryBandwidth);
}

TEST_F(QuantizationTest, Fp8KVCacheHalvesKVBytesAndLowersPeakAndTime) {
  OwningOpRef<ModuleOp> bf16 = build(GenerationMode::Decode);
  OwningOpRef<ModuleOp> fp8 = build(GenerationMode::Decode, "", "f8E4M3FN");
  GPUTarget target = h100();
  std::optional<InferenceSummary> wide =
      analyzeInference(getMainFunction(*bf16), target);
  std::optional<InferenceSummary> narrow =
      analyzeInference(getMainFunction(*fp8), target);
  ASSERT_TRUE(wide && narrow);
  EXPECT_EQ(narrow->kvCacheBytes, kKVBytesPerSequence / 2);
  EXPECT_LT(narrow->stepSeconds, wide->stepSeconds);
  MemorySummary before = simulateMemory(getMainFunction(*bf16), {});
  MemorySummary after = simulateMemory(getMainFunction(*fp8), {});
  unsigned kv = static_cast<unsigned>(MemoryBucket::KVCache);
  EXPECT_EQ(before.atPeak[kv], kKVBytesPerSequence);
  EXPECT_EQ(after.atPeak[kv], kKVBytesPerSequence / 2);
  // Nothing is widened back: the peak drops by the bytes the cache lost,
  // give or take the few kB of the new token's casts.
  EXPECT_NEAR(static_cast<double>(after.peakBytes),
              static_cast<double>(before.peakBytes - kKVBytesPerSequence / 2),
              64 * 1024);
}

TEST_F(QuantizationTest, Fp8MixedTrainingAddsNoActivationMemory) {
  OwningOpRef<ModuleOp> bf16 =
      build(GenerationMode::Train, "bf16-mixed", "", false, 1, 0, 2);
  OwningOpRef<ModuleOp> fp8 =
      build(GenerationMode::Train, "fp8-mixed", "", false, 1, 0, 2);
  MemorySummary wide = simulateMemory(getMainFunction(*bf16), {});
  MemorySummary narrow = simulateMemory(getMainFunction(*fp8), {});
  ASSERT_TRUE(wide.training && narrow.training);
  // The fp8 copies of the normalized inputs and of the MLP's inner
  // activation replace their bf16 values for the backward: at least the
  // attention-norm output [512, 4096] of each layer saves 1 B per element.
  EXPECT_LE(narrow.savedActivationsBytes,
            wide.savedActivationsBytes - 2 * 512 * 4096);
  EXPECT_LE(narrow.peakBytes, wide.peakBytes);
}

TEST_F(QuantizationTest, InferenceFixesShrinkTheKVCacheNeverAccumulate) {
  // Batch 64 at 4096 tokens: 64 x 2.147 GB = 137.4 GB of KV cache.
  OwningOpRef<ModuleOp> module = build(GenerationMode::Decode, "", "",
                                       /*fuse=*/false, /*batch=*/64);
  func::FuncOp function = getMainFunction(*module);
  GPUTarget target = h100();
  MemorySummary memory = simulateMemory(function, {});
  EXPECT_EQ(memory.atPeak[static_cast<unsigned>(MemoryBucket::KVCache)],
            64 * kKVBytesPerSequence);
  BudgetSummary budget =
      planInferenceBudget(function, memory, 80'000'000'000, {}, target);
  ASSERT_FALSE(budget.fits);
  const MemoryFix *batchFix = nullptr;
  for (const MemoryFix &fix : budget.fixes) {
    EXPECT_NE(fix.name, "micro-batch");
    EXPECT_NE(fix.name, "checkpointing");
    EXPECT_EQ(fix.description.find("accumulation"), std::string::npos);
    EXPECT_GT(fix.tokensPerSecond, 0);
    if (fix.name == "smaller-batch")
      batchFix = &fix;
  }
  ASSERT_TRUE(batchFix);
  // Halving from 64: 32 sequences need 13.48 + 68.72 GB > 80 GB, 16 need
  // 13.48 + 34.36 GB, plus the untiled attention's bf16 scores (batch x 32
  // heads x 4096 keys x 2 B) and under 2 MB of activations.
  int64_t weights = kParams * 2;
  auto scores = [](int64_t batch) { return batch * 32 * 4096 * 2; };
  EXPECT_NEAR(
      static_cast<double>(batchFix->peakBytes),
      static_cast<double>(weights + 16 * kKVBytesPerSequence + scores(16)),
      2e6);
  EXPECT_TRUE(batchFix->fits);
  EXPECT_NE(batchFix->description.find("batch 64 -> 16"), std::string::npos);
  // An fp8 KV cache holds half the bytes: 13.48 + 68.72 GB, over 80 GB.
  for (const MemoryFix &fix : budget.fixes) {
    if (fix.name != "kv-cache-fp8")
      continue;
    EXPECT_NEAR(
        static_cast<double>(fix.peakBytes),
        static_cast<double>(weights + 32 * kKVBytesPerSequence + scores(64)),
        2e6);
  }
}

TEST_F(QuantizationTest, MaxBatchIsTheLargestThatFits) {
  OwningOpRef<ModuleOp> module = build(GenerationMode::Decode);
  func::FuncOp function = getMainFunction(*module);
  GPUTarget target = roundTarget();
  // (80e9 - 13.48e9 of weights) / 2.147e9 per sequence = 30.98: batch 30
  // fits, 31 does not (the activations and scores add a few hundred kB per
  // sequence, far from the 2.1 GB margin).
  int64_t limit = 80'000'000'000;
  int64_t weights = kParams * 2;
  int64_t expected = (limit - weights) / kKVBytesPerSequence;
  ASSERT_EQ(expected, 30);
  CapacitySummary c = findMaxBatch(function, {}, target, limit, "capacity");
  EXPECT_EQ(c.batch, 1);
  EXPECT_EQ(c.context, 4096);
  EXPECT_EQ(c.maxBatch, expected);
  EXPECT_LE(c.peakAtMaxBatch, limit);
  EXPECT_NEAR(static_cast<double>(c.peakAtMaxBatch),
              static_cast<double>(weights + expected * kKVBytesPerSequence),
              10e6);
  EXPECT_GT(c.tokensPerSecondAtMaxBatch, 0);
  // At batch 1, the context: each token holds 524,288 B of K and V (2 x 32
  // layers x 32 heads x 128 x 2 B) and 64 B of attention scores (32 heads x
  // 2 B): (80e9 - 13.48e9) / 524,352 = 126,867.6 tokens, less the ~25 kB of
  // activations.
  int64_t perToken = kKVBytesPerSequence / 4096 + 32 * 2;
  EXPECT_LE(c.maxContext, (limit - weights) / perToken);
  EXPECT_GE(c.maxContext, (limit - weights - 100'000) / perToken);
  EXPECT_LE(c.peakAtMaxContext, limit);
}

// QLoRA's NF4 Llama-2-7B step (batch 4 x 512: M = 2048): the q projection's
// GEMM reads 4.127 bits a weight and its prologue dequantizes each weight
// once per CTA row of tiles, 31 CUDA-core instructions each.
TEST_F(QuantizationTest, Nf4PrologueDequantizesEachWeightOncePerTileRow) {
  auto [module, q] = buildQLoRAProjection();
  ASSERT_TRUE(module && q);
  auto dequantize = q.getRhs().getDefiningOp<DequantizeOp>();
  ASSERT_TRUE(dequantize && isDequantizeAtUse(dequantize));
  // By hand: 7 per element, +2 to unpack i4, +20 for the codebook (bit
  // tests and 15 selects), +2 for the double-quantized absmax.
  EXPECT_EQ(getDequantizePrologueInstructions(dequantize), 31);
  // Codes 4096 x 4096 / 2, an i8 absmax per 64, an f32 per 256 absmax.
  EXPECT_EQ(getGemmOperandBytes(q.getRhs()), 8388608 + 262144 + 4096);
  // ceil(2048 / 128) = 16 passes over 4096 x 4096 weights.
  double work = 16.0 * 4096 * 4096 * 31;
  EXPECT_EQ(getDequantizePrologueWork(q, 128), work);
  EXPECT_EQ(getDequantizePrologueWork(q, 100), 21.0 * 4096 * 4096 * 31);
  GPUTarget target = h100();
  KernelWork kernel = q.getKernelWork(target);
  EXPECT_EQ(kernel.cudaCoreInstructions, work);
  // They add work / (fp32 FMA peak / 2) to the compute time: 249 us on an
  // H100 (66.9 TFLOP/s fp32: 33.45 T instructions a second).
  KernelWork withoutPrologue = kernel;
  withoutPrologue.cudaCoreInstructions = 0;
  double added = estimateKernelTime(kernel, target).computeSeconds -
                 estimateKernelTime(withoutPrologue, target).computeSeconds;
  EXPECT_NEAR(added, work / 33.45e12, 1e-3 * added);
  EXPECT_NEAR(added, 248.8e-6, 0.1e-6);
  // A weight with no dequantize costs no prologue.
  module->walk([&](MatmulOp matmul) {
    if (!matmul.getRhs().getDefiningOp<DequantizeOp>())
      EXPECT_EQ(matmul.getKernelWork(target).cudaCoreInstructions, 0);
  });
}

TEST_F(QuantizationTest, Nf4DequantizeKernelWritesTheWeightOnce) {
  auto [module, q] = buildQLoRAProjection();
  ASSERT_TRUE(module && q);
  auto dequantize = q.getRhs().getDefiningOp<DequantizeOp>();
  auto absmax = dequantize.getScales().getDefiningOp<DequantizeOp>();
  ASSERT_TRUE(dequantize && absmax);
  // memwall-fuse gives each GEMM its own copy; this one reads it alone.
  OpBuilder builder(q);
  auto absmaxCopy = cast<DequantizeOp>(builder.clone(*absmax));
  auto copy = cast<DequantizeOp>(builder.clone(*dequantize));
  copy.getScalesMutable().assign(absmaxCopy.getResult());
  q.getRhsMutable().assign(copy.getResult());
  copy.setMaterialize(true);
  // Written, no longer in the GEMM; its absmax dequantized as it reads them.
  EXPECT_FALSE(isDequantizeAtUse(copy));
  EXPECT_TRUE(isDequantizeAtUse(absmaxCopy));
  EXPECT_FALSE(getDequantizeAtUse(q.getRhs()));
  EXPECT_EQ(getGemmOperandBytes(q.getRhs()), 4096 * 4096 * 2);
  EXPECT_EQ(getDequantizePrologueWork(q, 128), 0);
  // By hand: 10 an element for packed i4, +22 for the codebook, +2 for
  // the double-quantized absmax.
  EXPECT_EQ(getDequantizeKernelInstructions(copy), 34);
  GPUTarget target = h100();
  FailureOr<KernelAnalysis> kernel = analyzeOpKernel(copy, target);
  ASSERT_TRUE(succeeded(kernel));
  EXPECT_EQ(kernel->kind, FusionKind::Dequantize);
  EXPECT_EQ(kernel->ops.size(), 2u);
  // Codes, absmax and their f32 scales in; the bf16 weight out.
  EXPECT_EQ(kernel->bytesRead, 8388608 + 262144 + 4096);
  EXPECT_EQ(kernel->bytesWritten, 33554432);
  // Eight bf16 a thread, 256 threads a block.
  EXPECT_EQ(kernel->geometry.vectorWidth, 8);
  EXPECT_EQ(kernel->geometry.gridSize, 4096 * 4096 / 8 / 256);
  // By hand on an H100: compute 16.8 M multiplies at 66.9 TFLOP/s plus 16.8
  // M x 34 instructions at 33.45 T a second = 17.30 us; memory 42.21 MB at
  // 3.01 TB/s = 14.02 us; the soft roofline (c^4 + m^4)^(1/4) = 18.93 us,
  // plus a 2 us launch.
  double compute = 16777216 / 66.9e12 + 16777216.0 * 34 / 33.45e12;
  double memory = 42209280 / 3.01e12;
  double expected =
      std::pow(std::pow(compute, 4) + std::pow(memory, 4), 0.25) + 2e-6;
  EXPECT_NEAR(kernel->timeSeconds, expected, 1e-3 * expected);
  EXPECT_NEAR(kernel->timeSeconds, 20.93e-6, 0.01e-6);
  // A kernel of anything else is refused.
  std::string whyNot;
  EXPECT_TRUE(failed(analyzeKernel({copy, q}, target, &whyNot)));
  EXPECT_EQ(whyNot, "a dequantize kernel holds its dequantize and the "
                    "dequantize of its scales (double quantization), "
                    "nothing else");
}

} // namespace
