//===- ParallelismTest.cpp - tensor/pipeline/expert parallel plans --------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/ParallelismAnalysis.h"

#include "memwall/ModelGen/ModelBuilder.h"
#include "memwall/Registration.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "mlir/IR/Diagnostics.h"
#include <gtest/gtest.h>

using namespace mlir;
using namespace memwall;

namespace {
class ParallelismTest : public ::testing::Test {
protected:
  ParallelismTest() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// The training step of `config` (AdamW), as memwall-opt differentiates
  /// it.
  OwningOpRef<ModuleOp> trainingStep(const ModelConfig &config) {
    OwningOpRef<ModuleOp> module =
        buildModel(&context, config, GenerationMode::Train);
    PassManager pm(&context);
    pm.addPass(createAutodiff());
    EXPECT_TRUE(succeeded(pm.run(*module)));
    return module;
  }

  MLIRContext context;
};

/// GPT-2 small enough to differentiate in milliseconds: s 32, b 2, h 64,
/// a 4 heads, FFN 4h, bf16, dropout 0.1: one [s, b, h] tensor is
/// sbh = 4096 elements, 8192 bytes.
ModelConfig tinyGPT2(int64_t layers) {
  llvm::Expected<ModelConfig> config = lookupPreset("gpt2");
  EXPECT_TRUE(static_cast<bool>(config));
  config->layers = layers;
  config->hidden = 64;
  config->heads = 4;
  config->kvHeads = 4;
  config->ffn = 256;
  config->vocab = 100;
  config->maxPositions = 32;
  config->seq = 32;
  config->batch = 2;
  config->dropout = 0.1;
  return *config;
}

ParallelismOptions
plan(int64_t t, bool sp = false, int64_t p = 1, int64_t m = 1, int64_t e = 1,
     PipelineSchedule schedule = PipelineSchedule::OneFOneB) {
  llvm::Expected<ParallelismOptions> options = parseParallelismOptions(
      t, sp, p, schedule == PipelineSchedule::OneFOneB ? "1f1b" : "interleaved",
      2, m, e);
  EXPECT_TRUE(static_cast<bool>(options))
      << llvm::toString(options.takeError());
  return *options;
}

struct Step {
  OwningOpRef<ModuleOp> module;
  func::FuncOp function;
  std::unique_ptr<MemoryLiveness> liveness;
  std::unique_ptr<ParallelLayout> layout;
};
} // namespace

class ParallelismStepTest : public ParallelismTest {
protected:
  Step analyze(const ModelConfig &config) {
    Step step;
    step.module = trainingStep(config);
    step.function = *step.module->getOps<func::FuncOp>().begin();
    step.liveness = std::make_unique<MemoryLiveness>(step.function);
    step.layout =
        std::make_unique<ParallelLayout>(step.function, *step.liveness);
    return step;
  }
  ParallelismSummary evaluate(const Step &step,
                              const ParallelismOptions &options) {
    EXPECT_TRUE(succeeded(step.layout->check(options)));
    return step.layout->evaluate(options, ShardingOptions(), target);
  }
  GPUTarget target = *resolveGPUTarget("h100-sxm", "");
};

// Korthikanti et al. 2022 (Table 2) count a layer's activations in bytes of
// 16-bit tensors as sbh (10 + 24/t + 5as/(ht)) under tensor parallelism t
// and sbh (34/t + 5as/(ht)) with sequence parallelism. memwall stores, per
// GPT-2 layer: replicated, the QKV input (2sbh), the second LayerNorm's
// input (2sbh), the fc input (2sbh) and the layer's output (the next
// LayerNorm's input, 2sbh) = 8sbh, their 10 less the two dropout masks
// (memwall regenerates masks from the seed); sharded by heads or FFN
// columns, q, k, v (6sbh), the attention output and its heads-merged copy
// (4sbh: their 2sbh output-projection input plus the output the
// recompute-form attention backward reads), the fc output and the GELU
// output (16sbh) = 26sbh, and no 5as²b (no S x S probabilities are
// stored). So 34sbh = 139,264 B unsplit, (8 + 26/4) sbh = 59,392 B at
// t = 4, (8 + 26/2) sbh = 86,016 B at t = 2 and 34/4 sbh = 34,816 B with
// sequence parallelism.
TEST_F(ParallelismStepTest,
       PerLayerActivationsFollowKorthikantiForWhatIsStored) {
  Step step = analyze(tinyGPT2(2));
  constexpr int64_t sbh = 32 * 2 * 64;
  EXPECT_EQ(evaluate(step, plan(1)).layerActivationBytes, 34 * sbh);
  EXPECT_EQ(evaluate(step, plan(4)).layerActivationBytes,
            8 * sbh + 26 * sbh / 4);
  EXPECT_EQ(evaluate(step, plan(2)).layerActivationBytes,
            8 * sbh + 26 * sbh / 2);
  EXPECT_EQ(evaluate(step, plan(4, /*sp=*/true)).layerActivationBytes,
            34 * sbh / 4);
}

// Megatron's all-reduces per micro-batch, by hand (bytes of [b, s, h] bf16
// = 8192): per layer the attention and MLP output projections' partial
// sums (forward) and the QKV and fc inputs' gradients (backward), 4 x 8192;
// the vocabulary-parallel embedding (the token and position lookups summed
// before one all-reduce) and the tied head's input gradient, 8192 each;
// the vocabulary-parallel loss, 3 floats a position, 3 x 4 x 64 = 768.
// Two layers: 65,536 + 16,384 + 768 = 82,688 B; each device sends
// 2 (t - 1)/t of it: 124,032 B at t = 4, over 450 GB/s NVLink.
TEST_F(ParallelismStepTest,
       TensorParallelAllReducesAreTheRowParallelPartialSums) {
  Step step = analyze(tinyGPT2(2));
  ParallelismSummary s = evaluate(step, plan(4));
  EXPECT_EQ(s.tensorParallelBytes, 124032);
  EXPECT_EQ(s.tensorParallelLink, "nvlink");
  EXPECT_NEAR(s.tensorParallelSeconds, 124032 / 450e9, 1e-15);
  // Sequence parallelism moves the same bytes (reduce-scatter plus
  // all-gather instead of an all-reduce).
  EXPECT_EQ(evaluate(step, plan(4, true)).tensorParallelBytes, 124032);
  EXPECT_EQ(evaluate(step, plan(1)).tensorParallelBytes, 0);
}

// Four layers in two 1F1B stages of two layers; four micro-batches: the
// first stage holds 2 of them in flight (P - stage), the last one; the
// bubble is (P - 1) / M = 1/4 of a step, and an eighth with two chunks
// per device (interleaved). Each micro-batch sends its [b, s, h] hidden
// state forward and its gradient back: 2 x 8192 x 4 = 65,536 B a step.
TEST_F(ParallelismStepTest,
       PipelineStagesHoldTheirLayersAndMicroBatchesInFlight) {
  Step step = analyze(tinyGPT2(4));
  ParallelismSummary single = evaluate(step, plan(1));
  ParallelismSummary piped = evaluate(step, plan(1, false, 2, 4));
  EXPECT_DOUBLE_EQ(piped.bubbleFraction, 0.25);
  EXPECT_EQ(piped.pipelineBytes, 65536);
  EXPECT_EQ(piped.gpus, 2);
  // Stage 0: two layers' weights (plus the embeddings) of four.
  MemorySummary first =
      step.layout->simulate(plan(1, false, 2, 4), ShardingOptions(), 0);
  MemorySummary last =
      step.layout->simulate(plan(1, false, 2, 4), ShardingOptions(), 1);
  constexpr int64_t sbh = 32 * 2 * 64;
  // Saved activations of the first stage, two micro-batches of: 34sbh a
  // layer for two layers, the embedding output layer 0's LayerNorm reads
  // (2sbh), and the token ids and positions the embeddings' gradients read
  // (2 x 32 + 32 i64 = 768 B). The last stage holds one micro-batch.
  EXPECT_EQ(first.savedActivationsBytes, 2 * (2 * 34 * sbh + 2 * sbh + 768));
  EXPECT_LT(last.savedActivationsBytes, first.savedActivationsBytes);
  EXPECT_LT(first.peakBytes, single.peakBytes);
  ParallelismSummary interleaved =
      evaluate(step, plan(1, false, 2, 4, 1, PipelineSchedule::Interleaved));
  EXPECT_DOUBLE_EQ(interleaved.bubbleFraction, 0.125);
  // Each device has two chunks, so two boundaries a micro-batch.
  EXPECT_EQ(interleaved.pipelineBytes, 2 * 65536);
}

TEST_F(ParallelismStepTest, SplitsThatDoNotDivideAreErrorsAtTheirOp) {
  Step step = analyze(tinyGPT2(4));
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    message = diagnostic.str();
    return success();
  });
  // 3 divides the packed QKV's 192 columns but not the 4 heads.
  EXPECT_TRUE(failed(step.layout->check(plan(3))));
  EXPECT_EQ(message, "--tensor-parallel=3 does not divide the query heads (4)");
  EXPECT_TRUE(failed(step.layout->check(plan(1, false, 3, 3))));
  EXPECT_EQ(message, "--pipeline-parallel=3 does not divide the 4 layers");
  EXPECT_TRUE(failed(step.layout->check(
      plan(1, false, 4, 4, 1, PipelineSchedule::Interleaved))));
  EXPECT_EQ(message, "--pipeline-parallel=4 x --virtual-stages=2 = 8 chunks "
                     "do not divide the 4 layers");
  EXPECT_TRUE(failed(step.layout->check(plan(1, false, 1, 1, 2))));
  EXPECT_EQ(message, "--expert-parallel=2 needs a mixture of experts (no "
                     "memwall.expert_matmul reads a weight)");
  // Without emitting, only the answer.
  message.clear();
  EXPECT_TRUE(failed(step.layout->check(plan(3), /*emit=*/false)));
  EXPECT_EQ(message, "");
  EXPECT_TRUE(succeeded(step.layout->check(plan(4, true, 2, 2))));
}

TEST(ParallelismOptionsTest, BadOptionsNameTheFlag) {
  auto error = [](llvm::Expected<ParallelismOptions> options) {
    return options ? std::string() : llvm::toString(options.takeError());
  };
  EXPECT_EQ(error(parseParallelismOptions(0, false, 1, "1f1b", 2, 1, 1)),
            "--tensor-parallel must be between 1 and 65536, got 0");
  EXPECT_EQ(error(parseParallelismOptions(1, true, 1, "1f1b", 2, 1, 1)),
            "--sequence-parallel splits what tensor parallelism replicates: "
            "give --tensor-parallel=T (T > 1)");
  EXPECT_EQ(error(parseParallelismOptions(1, false, 2, "gpipe", 2, 1, 1)),
            "--pipeline-schedule must be 1f1b or interleaved, got 'gpipe'");
  EXPECT_EQ(error(parseParallelismOptions(1, false, 1, "interleaved", 2, 1, 1)),
            "--pipeline-schedule=interleaved needs --pipeline-parallel=P "
            "(P > 1)");
  EXPECT_EQ(error(parseParallelismOptions(1, false, 4, "interleaved", 2, 6, 1)),
            "--pipeline-schedule=interleaved needs --micro-batches (6) to be "
            "a multiple of --pipeline-parallel (4)");
  EXPECT_EQ(error(parseParallelismOptions(1, false, 1, "1f1b", 2, 0, 1)),
            "--micro-batches must be between 1 and 65536, got 0");
}

// A tiny Mixtral layer (E 4, k 2, h 64, FFN 96, s 8, b 1): experts over 2
// devices hold half of each expert weight; every MoE layer dispatches and
// combines its token slots, forward and backward: 4 x (2 - 1)/2 x
// (8 tokens x 2 slots x 64 x 2 B = 2048) = 4096 B.
TEST_F(ParallelismStepTest, ExpertParallelHalvesTheExpertsAndMovesTheSlots) {
  llvm::Expected<ModelConfig> config = lookupPreset("mixtral-8x7b");
  ASSERT_TRUE(static_cast<bool>(config));
  config->layers = 1;
  config->hidden = 64;
  config->heads = 4;
  config->kvHeads = 2;
  config->ffn = 96;
  config->vocab = 40;
  config->seq = 8;
  config->experts = 4;
  config->expertsPerToken = 2;
  Step step = analyze(*config);
  ParallelismSummary one = evaluate(step, plan(1));
  ParallelismSummary two = evaluate(step, plan(1, false, 1, 1, 2));
  EXPECT_EQ(two.expertBytes, 4096);
  // Three expert weights of 4 x 64 x 96 bf16 = 49,152 B each; half of
  // them leave each device.
  EXPECT_EQ(one.weightBytes - two.weightBytes, 3 * 49152 / 2);
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    message = diagnostic.str();
    return success();
  });
  EXPECT_TRUE(failed(step.layout->check(plan(1, false, 1, 1, 3))));
  EXPECT_EQ(message, "--expert-parallel=3 does not divide the experts of "
                     "layers.0.mlp.experts.gate (4)");
}
