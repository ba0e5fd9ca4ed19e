//===- AttentionKernelTest.cpp - the attention kernel, run on the CPU -----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runs the tensor-core attention kernels memwall-compile emits (the gpu.func
// IR that is lowered to PTX: cp.async, ldmatrix, mma.sync) in the SIMT
// interpreter and compares them with attention computed here in double
// precision from the same rounded inputs. The interpreter also fails a
// kernel on a shared-memory race (a missing barrier or wait), an
// out-of-bounds access or a divergent warp collective.
//
//===----------------------------------------------------------------------===//

#include "memwall/Simulator/SimtInterpreter.h"

#include "lib/Target/AttentionCodegen.h"
#include "lib/Target/AttentionGradCodegen.h"
#include "memwall/Hardware/GPUTarget.h"
#include "memwall/Hardware/Roofline.h"
#include "memwall/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

using namespace mlir;
using namespace memwall;

namespace {

struct AttentionCase {
  int64_t batch = 1, heads = 1, kvHeads = 1, sq = 1, sk = 1, d = 16;
  bool causal = false;
  /// A sliding window (causal only): query i sees the `window` keys ending
  /// at its diagonal; 0 for none.
  int64_t window = 0;
  int64_t blockQ = 64, blockKV = 64, splits = 1;
  bool f16 = false;
  /// None, an additive bf16 mask of shape [B, 1, Sq, Sk], or an i1 keep-mask
  /// of shape [1, Hq, 1, Sk] (both broadcast over the other dimensions).
  enum class Mask { None, Additive, Keep } mask = Mask::None;
};

/// One 16-bit tensor: the rounded values (for the reference) and their
/// bits (for the kernel).
struct HalfTensor {
  std::vector<double> values;
  std::vector<uint8_t> bytes;
};

class AttentionKernelTest : public ::testing::Test {
protected:
  AttentionKernelTest() : context(simt::createContext()) {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context->appendDialectRegistry(registry);
    context->loadAllAvailableDialects();
  }

  HalfTensor randomTensor(int64_t elements, double range, bool f16) {
    std::uniform_real_distribution<float> uniform(-range, range);
    HalfTensor tensor;
    tensor.bytes.resize(elements * 2);
    for (int64_t i = 0; i < elements; ++i) {
      float x = uniform(rng);
      uint16_t bits = f16 ? simt::floatToF16(x) : simt::floatToBf16(x);
      tensor.values.push_back(f16 ? simt::f16ToFloat(bits)
                                  : simt::bf16ToFloat(bits));
      std::memcpy(&tensor.bytes[2 * i], &bits, 2);
    }
    return tensor;
  }

  /// Compiles `c` into the attention kernels, runs them in the interpreter
  /// on random inputs and checks output and log-sum-exp against a direct
  /// double-precision evaluation.
  void check(const AttentionCase &c) {
    std::string element = c.f16 ? "f16" : "bf16";
    auto tensor = [&](int64_t h, int64_t s, int64_t d, StringRef type) {
      return llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", c.batch, h, s, d,
                           type)
          .str();
    };
    std::string q = tensor(c.heads, c.sq, c.d, element);
    std::string kv = tensor(c.kvHeads, c.sk, c.d, element);
    std::string lseType =
        llvm::formatv("tensor<{0}x{1}x{2}xf32>", c.batch, c.heads, c.sq);
    double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
    char scaleText[32];
    std::snprintf(scaleText, sizeof scaleText, "%.17g", scale);
    // The mask: shape, element type, and its value at (b, h, i, j).
    bool additive = c.mask == AttentionCase::Mask::Additive;
    std::vector<int64_t> maskShape =
        additive ? std::vector<int64_t>{c.batch, 1, c.sq, c.sk}
                 : std::vector<int64_t>{1, c.heads, 1, c.sk};
    int64_t maskElements = maskShape[0] * maskShape[1] * maskShape[2] *
                           maskShape[3];
    auto maskIndex = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
      return additive ? (b * c.sq + i) * c.sk + j : h * c.sk + j;
    };
    std::string maskType =
        llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", maskShape[0], maskShape[1],
                      maskShape[2], maskShape[3], additive ? "bf16" : "i1");
    bool masked = c.mask != AttentionCase::Mask::None;
    std::string maskArg = masked ? ", %m: " + maskType : "";
    std::string maskUse = masked ? " mask %m" : "";
    std::string maskOperandType = masked ? ", " + maskType : "";
    std::string source = llvm::formatv(
        "func.func @f(%q: {0}, %k: {1}, %v: {1}{8}) -> ({0}, {2}) {{\n"
        "  %o, %lse = memwall.flash_attention %q, %k, %v{9} {3} scale {4} "
        "block_q {5} block_kv {6} splits {7} : ({0}, {1}, {1}{10}) -> ({0}, "
        "{2})\n"
        "  return %o, %lse : {0}, {2}\n}",
        q, kv, lseType,
        c.causal
            ? (c.window ? llvm::formatv("causal window {0}", c.window).str()
                        : "causal")
            : "",
        scaleText, c.blockQ, c.blockKV, c.splits, maskArg, maskUse,
        maskOperandType);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, context.get());
    ASSERT_TRUE(module) << source;
    FlashAttentionOp op;
    module->walk([&](FlashAttentionOp found) { op = found; });
    ASSERT_EQ(whyNoAttentionKernel(op), "");
    AttentionKernelPlan plan = planAttentionKernel(op);

    OpBuilder builder(context.get());
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(builder.getUnknownLoc());
    (*kernels)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                        builder.getUnitAttr());
    builder.setInsertionPointToStart(kernels->getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(builder, builder.getUnknownLoc(), "kernels");
    FailureOr<AttentionViews> views = matchAttentionViews({op});
    ASSERT_TRUE(succeeded(views));
    gpu::GPUFuncOp forward =
        emitAttentionKernel(gpuModule, "attention", *views, plan);
    ASSERT_TRUE(succeeded(verify(*kernels)));

    int64_t rows = c.batch * c.heads * c.sq;
    HalfTensor query = randomTensor(rows * c.d, 2.0, c.f16);
    HalfTensor key = randomTensor(c.batch * c.kvHeads * c.sk * c.d, 2.0, c.f16);
    HalfTensor value =
        randomTensor(c.batch * c.kvHeads * c.sk * c.d, 1.0, c.f16);
    // An additive mask in U(-2, 2); a keep-mask true with probability 3/4
    // and always at key 0, so every row sees a key.
    HalfTensor additiveMask = randomTensor(masked ? maskElements : 0, 2.0,
                                           /*f16=*/false);
    std::vector<uint8_t> keepMask(c.mask == AttentionCase::Mask::Keep
                                      ? maskElements
                                      : 0);
    for (int64_t i = 0; i < static_cast<int64_t>(keepMask.size()); ++i)
      keepMask[i] = i % c.sk == 0 || rng() % 4 != 0;
    std::vector<uint8_t> out(rows * c.d * 2), lse(rows * 4);
    // With splits: partials as garbage (an arena's reused bytes), counters
    // at zero.
    std::vector<uint8_t> partialOut(plan.splits * rows * c.d * 4, 0xff),
        partialLse(plan.splits * rows * 4, 0xff),
        counters(getAttentionCounters(plan) * 4, 0);
    simt::LaunchConfig launch;
    launch.grid = plan.grid;
    launch.block = {plan.threads(), 1, 1};
    launch.dynamicSharedBytes = plan.sharedBytes;
    bool split = plan.splits > 1;
    std::vector<MutableArrayRef<uint8_t>> args{query.bytes, key.bytes,
                                               value.bytes};
    if (additive)
      args.push_back(additiveMask.bytes);
    else if (masked)
      args.push_back(keepMask);
    args.push_back(out);
    args.push_back(lse);
    if (split) {
      args.push_back(partialOut);
      args.push_back(partialLse);
      args.push_back(counters);
    }
    llvm::Error error = simt::runKernel(forward, launch, args);
    ASSERT_FALSE(error) << llvm::toString(std::move(error));
    EXPECT_TRUE(llvm::all_of(counters, [](uint8_t b) { return b == 0; }))
        << "a split-keys launch left an arrival counter nonzero";

    // Attention by definition, in double precision.
    double squaredError = 0, squaredReference = 0, worst = 0, worstLse = 0;
    int64_t group = c.heads / c.kvHeads;
    for (int64_t row = 0; row < rows; ++row) {
      int64_t i = row % c.sq, h = (row / c.sq) % c.heads,
              b = row / (c.sq * c.heads);
      int64_t kvRow0 = (b * c.kvHeads + h / group) * c.sk;
      std::vector<double> scores;
      double maxScore = -std::numeric_limits<double>::infinity();
      int64_t visible = c.causal ? std::min(c.sk, i + c.sk - c.sq + 1) : c.sk;
      int64_t firstVisible =
          c.window ? std::max<int64_t>(0, visible - c.window) : 0;
      for (int64_t j = firstVisible; j < visible; ++j) {
        double dot = 0;
        for (int64_t x = 0; x < c.d; ++x)
          dot +=
              query.values[row * c.d + x] * key.values[(kvRow0 + j) * c.d + x];
        double score = scale * dot;
        if (additive)
          score += additiveMask.values[maskIndex(b, h, i, j)];
        else if (masked && !keepMask[maskIndex(b, h, i, j)])
          score = -std::numeric_limits<double>::infinity();
        scores.push_back(score);
        maxScore = std::max(maxScore, scores.back());
      }
      double sum = 0;
      for (double s : scores)
        sum += std::exp(s - maxScore);
      for (int64_t x = 0; x < c.d; ++x) {
        double expected = 0;
        for (int64_t j = firstVisible; j < visible; ++j)
          expected += std::exp(scores[j - firstVisible] - maxScore) / sum *
                      value.values[(kvRow0 + j) * c.d + x];
        uint16_t bits;
        std::memcpy(&bits, &out[2 * (row * c.d + x)], 2);
        double got = c.f16 ? simt::f16ToFloat(bits) : simt::bf16ToFloat(bits);
        squaredError += (got - expected) * (got - expected);
        squaredReference += expected * expected;
        worst = std::max(worst, std::fabs(got - expected));
      }
      float gotLse;
      std::memcpy(&gotLse, &lse[4 * row], 4);
      worstLse =
          std::max(worstLse, std::fabs(gotLse - (maxScore + std::log(sum))));
    }
    double relativeRms = std::sqrt(squaredError / squaredReference);
    // P is rounded to 16 bits before P·V (as FlashAttention does) and the
    // output is stored in 16 bits: errors of a few 2^-9 relative.
    EXPECT_LT(relativeRms, 1e-2);
    EXPECT_LT(worst, 2e-2);
    EXPECT_LT(worstLse, 1e-4);
  }

  std::unique_ptr<MLIRContext> context;
  std::mt19937 rng{1234};
};

TEST_F(AttentionKernelTest, CausalWithRaggedLastBlocksMatchesDefinition) {
  // 100 rows: the second query block holds 36, the last key block 4; the
  // diagonal crosses key blocks inside each query block.
  AttentionCase c;
  c.heads = 2;
  c.sq = c.sk = 100;
  c.d = 64;
  c.causal = true;
  c.blockQ = 64;
  c.blockKV = 32;
  check(c);
}

TEST_F(AttentionKernelTest, GroupedQueryNonCausalMatchesDefinition) {
  // Two query heads per KV head, two batches, more keys than queries; 40
  // rows in a 64-row block, 64-key blocks, the last one ragged.
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kvHeads = 2;
  c.sq = 40;
  c.sk = 72;
  c.d = 32;
  c.blockQ = 64;
  c.blockKV = 64;
  check(c);
}

TEST_F(AttentionKernelTest,
       CausalBottomRightWithFewerQueriesMatchesDefinition) {
  // Sq < Sk: query i sees keys up to i + Sk - Sq.
  AttentionCase c;
  c.heads = 2;
  c.sq = 24;
  c.sk = 90;
  c.d = 32;
  c.causal = true;
  c.blockQ = 32;
  c.blockKV = 32;
  check(c);
}

TEST_F(AttentionKernelTest, DecodeWithSplitKeysAndF16MatchesDefinition) {
  // Flash-decoding: one query token over 200 cached keys, multi-query heads,
  // key blocks split in 3 ranges, merged by the last split to finish.
  AttentionCase c;
  c.heads = 4;
  c.kvHeads = 1;
  c.sq = 1;
  c.sk = 200;
  c.d = 64;
  c.causal = true;
  c.blockQ = 128;
  c.blockKV = 32;
  c.splits = 3;
  c.f16 = true;
  check(c);
}

TEST_F(AttentionKernelTest, CausalSplitsThatSeeNoKeyWeighNothing) {
  // With 4 splits of one 16-key block each, the first query block's rows see
  // only the first block: three of its splits are empty (lse -inf).
  AttentionCase c;
  c.sq = c.sk = 64;
  c.d = 32;
  c.causal = true;
  c.blockQ = 16;
  c.blockKV = 16;
  c.splits = 4;
  check(c);
}

TEST_F(AttentionKernelTest,
       SplitKeysOverSeveralRowBlocksAndKVHeadsMergeEachBlocksOwnRows) {
  // Grouped-query prefill with split keys: 2 KV heads of 2 query heads x 50
  // rows each (100 rows per KV head: blocks of 32, the last ragged), keys in
  // 3 splits. Each (row block, KV head) has its own arrival counter, and its
  // last split merges its rows only (two blocks merging one row would race,
  // which the interpreter reports).
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kvHeads = 2;
  c.sq = c.sk = 50;
  c.d = 32;
  c.causal = true;
  c.blockQ = 32;
  c.blockKV = 16;
  c.splits = 3;
  check(c);
}

TEST_F(AttentionKernelTest, SlidingWindowSkipsAndMasksKeysBeforeIt) {
  // 100 queries and keys, a 37-key window: query block 1 (rows 32..63)
  // starts its keys at block (32 - 36) -> 0, block 2 (64..95) at key 28,
  // block 1 of 16; the window's edge crosses key blocks inside each query
  // block, the last key block is ragged, and GQA puts two heads per KV head.
  AttentionCase c;
  c.heads = 4;
  c.kvHeads = 2;
  c.sq = c.sk = 100;
  c.d = 32;
  c.causal = true;
  c.window = 37;
  c.blockQ = 32;
  c.blockKV = 16;
  check(c);
}

TEST_F(AttentionKernelTest, SlidingWindowWithSplitKeysLeavesEarlySplitsEmpty) {
  // Decode past the window: one query over 300 keys, a 50-key window, keys
  // in 4 splits of 80: only the last split sees a key, the others are empty
  // ranges the merge weighs 0. And a prefill whose blocks span two heads
  // (rows of head 0's end and head 1's start: least query 0).
  AttentionCase c;
  c.heads = 2;
  c.sq = 1;
  c.sk = 300;
  c.d = 32;
  c.causal = true;
  c.window = 50;
  c.blockQ = 16;
  c.blockKV = 16;
  c.splits = 4;
  check(c);
  AttentionCase spans;
  spans.heads = 2;
  spans.sq = spans.sk = 40;
  spans.d = 32;
  spans.causal = true;
  spans.window = 9;
  spans.blockQ = 32;
  spans.blockKV = 16;
  check(spans);
}

TEST_F(AttentionKernelTest, H100TilesForHeadDim128MatchDefinition) {
  // The tiles memwall-tile-attention picks on an H100 for head dim 128:
  // 128x64, eight warps, three key blocks per query block.
  AttentionCase c;
  c.sq = c.sk = 192;
  c.d = 128;
  c.causal = true;
  c.blockQ = 128;
  c.blockKV = 64;
  check(c);
}

TEST_F(AttentionKernelTest, AdditiveMaskBroadcastOverHeadsMatchesDefinition) {
  // A [B, 1, Sq, Sk] bf16 mask added to the scaled scores, with causal
  // masking and a ragged last key block.
  AttentionCase c;
  c.batch = 2;
  c.heads = 2;
  c.sq = c.sk = 72;
  c.d = 32;
  c.causal = true;
  c.blockQ = 64;
  c.blockKV = 32;
  c.mask = AttentionCase::Mask::Additive;
  check(c);
}

TEST_F(AttentionKernelTest, KeepMaskPerHeadMatchesDefinition) {
  // An i1 [1, Hq, 1, Sk] padding mask: false keys are hidden in every row.
  AttentionCase c;
  c.heads = 2;
  c.sq = 40;
  c.sk = 100;
  c.d = 64;
  c.blockQ = 64;
  c.blockKV = 32;
  c.mask = AttentionCase::Mask::Keep;
  check(c);
}

TEST_F(AttentionKernelTest, GroupedQueryBlocksSpanningHeadsMatchDefinition) {
  // A block's rows are the group x Sq rows of a KV head: with 2 query heads
  // per KV head and 40 queries, the first 64-row block holds all of head 0
  // and the first 24 queries of head 1, so the causal diagonal and the
  // per-head mask are per row, and the key range is the union of both.
  AttentionCase c;
  c.heads = 4;
  c.kvHeads = 2;
  c.sq = c.sk = 40;
  c.d = 32;
  c.causal = true;
  c.blockQ = 64;
  c.blockKV = 32;
  c.mask = AttentionCase::Mask::Keep;
  check(c);
}

TEST_F(AttentionKernelTest, UnsupportedShapesAreRefusedWithAReason) {
  std::string source =
      "func.func @f(%q: tensor<1x1x32x40xbf16>, %m: tensor<1x1x32x32xbf16>) "
      "-> (tensor<1x1x32x40xbf16>, tensor<1x1x32xf32>) {\n"
      "  %o, %lse = memwall.flash_attention %q, %q, %q scale 0.5 block_q 64 "
      "block_kv 64 splits 1 : (tensor<1x1x32x40xbf16>, tensor<1x1x32x40xbf16>, "
      "tensor<1x1x32x40xbf16>) -> (tensor<1x1x32x40xbf16>, "
      "tensor<1x1x32xf32>)\n"
      "  return %o, %lse : tensor<1x1x32x40xbf16>, tensor<1x1x32xf32>\n}";
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, context.get());
  ASSERT_TRUE(module);
  FlashAttentionOp op;
  module->walk([&](FlashAttentionOp found) { op = found; });
  EXPECT_NE(whyNoAttentionKernel(op).find("multiples of 16"),
            std::string::npos);
}

/// The flash_attention_grad of one [1, 1, S, D] head of `element`.
static std::string attentionGradSource(int64_t s, int64_t d,
                                       StringRef element) {
  std::string t = llvm::formatv("tensor<1x1x{0}x{1}x{2}>", s, d, element);
  std::string lse = llvm::formatv("tensor<1x1x{0}xf32>", s);
  return llvm::formatv(
      "func.func @f(%x: {0}, %l: {1}) -> ({0}, {0}, {0}) {{\n"
      "  %dq, %dk, %dv = memwall.flash_attention_grad %x, %x, %x, %x, %x, %l "
      "scale 0.125 block_q 64 block_kv 64 : ({0}, {0}, {0}, {0}, {0}, {1}) "
      "-> ({0}, {0}, {0})\n"
      "  return %dq, %dk, %dv : {0}, {0}, {0}\n}",
      t, lse);
}

TEST_F(AttentionKernelTest, GradTileAndSharedBytesFollowTheHeadDim) {
  struct Expected {
    int64_t d;
    StringRef element;
    bool tensorCores;
    int64_t tile, threads, sharedBytes;
  };
  // Tensor cores: five tiles of `tile` rows of (D + 8) 16-bit elements and
  // two f32 rows: 64 x 2 x 5 x 72 + 2 x 64 x 4 = 46592 at D = 64;
  // 32 x 2 x 5 x 136 + 2 x 32 x 4 = 43776 at D = 128. f32 runs on CUDA
  // cores with static shared memory.
  for (const Expected &e : {Expected{64, "bf16", true, 64, 128, 46592},
                            Expected{128, "f16", true, 32, 64, 43776},
                            Expected{32, "f32", false, 32, 128, 0}}) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
        attentionGradSource(128, e.d, e.element), context.get());
    ASSERT_TRUE(module);
    FlashAttentionGradOp op;
    module->walk([&](FlashAttentionGradOp found) { op = found; });
    EXPECT_EQ(whyNoAttentionGradKernel(op), "");
    AttentionGradKernelPlan plan = planAttentionGradKernel(op);
    EXPECT_EQ(plan.tensorCores, e.tensorCores) << e.d;
    EXPECT_EQ(plan.tile, e.tile) << e.d;
    EXPECT_EQ(plan.threads, e.threads) << e.d;
    EXPECT_EQ(plan.sharedBytes, e.sharedBytes) << e.d;
    // 128 rows: key tiles then query tiles along x.
    EXPECT_EQ(plan.grid[0], 2 * 128 / e.tile) << e.d;
  }
}

TEST_F(AttentionKernelTest, GradPredictionCountsTwiceFlashAttention2sProducts) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      attentionGradSource(128, 64, "bf16"), context.get());
  ASSERT_TRUE(module);
  FlashAttentionGradOp op;
  module->walk([&](FlashAttentionGradOp found) { op = found; });
  // FlashAttention-2's five products: 2 x 128 x 128 pairs x (3 x 64 +
  // 2 x 64) FLOPs; the kernel runs 6d + 4dv per pair, twice as many.
  EXPECT_EQ(op.getFlops(), 10485760);
  GPUTarget target = *lookupBuiltinGPUTarget("h100-sxm");
  KernelWork work =
      cast<CostOpInterface>(op.getOperation()).getKernelWork(target);
  work.flops = 20971520;
  EXPECT_DOUBLE_EQ(predictAttentionGradKernelSeconds(op, target),
                   estimateKernelTime(work, target).timeSeconds);
}

} // namespace
