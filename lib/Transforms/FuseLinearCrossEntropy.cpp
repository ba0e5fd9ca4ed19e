//===- FuseLinearCrossEntropy.cpp - a head and its loss as one op ---------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// cross_entropy(matmul(h, W)) -> linear_cross_entropy(h, W): the logits,
// and the backward's logits gradient, are never stored whole.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace memwall {
#define GEN_PASS_DEF_FUSELINEARCROSSENTROPY
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace memwall;

namespace {
/// The matmul whose logits `loss` reads, directly or through a cast to f32
/// (exact, so the fused op computes the same loss), when it can
/// be fused: the loss is the only reader, no bias, an lhs read as stored, a
/// 2-D rhs, one float type; else null.
MatmulOp getFusibleHead(CrossEntropyOp loss) {
  Value logits = loss.getLogits();
  if (auto widen = logits.getDefiningOp<CastOp>()) {
    auto from = dyn_cast<FloatType>(getElementTypeOrSelf(widen.getInput()));
    auto to = dyn_cast<FloatType>(getElementTypeOrSelf(widen.getType()));
    // Only to f32 is every bf16/f16 value kept (bf16 to f16 is not).
    if (!widen->hasOneUse() || !from || !to || !to.isF32())
      return {};
    logits = widen.getInput();
  }
  auto matmul = logits.getDefiningOp<MatmulOp>();
  if (!matmul || !matmul->hasOneUse() || matmul.getBias() ||
      matmul.getTransposeLhs())
    return {};
  auto lhs = matmul.getLhs().getType(), rhs = matmul.getRhs().getType();
  Type element = lhs.getElementType();
  if (rhs.getRank() != 2 || lhs.getRank() < 2 ||
      rhs.getElementType() != element ||
      matmul.getType().getElementType() != element ||
      !isa<Float32Type, BFloat16Type, Float16Type>(element))
    return {};
  return matmul;
}

struct FuseHeadAndLoss : OpRewritePattern<CrossEntropyOp> {
  FuseHeadAndLoss(MLIRContext *ctx, llvm::Statistic &fused)
      : OpRewritePattern(ctx), fused(fused) {}

  LogicalResult matchAndRewrite(CrossEntropyOp loss,
                                PatternRewriter &rewriter) const override {
    MatmulOp head = getFusibleHead(loss);
    if (!head)
      return rewriter.notifyMatchFailure(loss, "no fusible matmul feeds it");
    Location loc = rewriter.getFusedLoc({head.getLoc(), loss.getLoc()});
    auto fusedLoss = LinearCrossEntropyOp::create(
        rewriter, loc, head.getLhs(), head.getRhs(), loss.getLabels(),
        loss.getReduction(), loss.getIgnoreIndexAttr(), head.getTransposeRhs());
    rewriter.replaceOp(loss, fusedLoss.getResult());
    ++fused;
    return success();
  }

  llvm::Statistic &fused;
};

struct FuseLinearCrossEntropyPass
    : public memwall::impl::FuseLinearCrossEntropyBase<
          FuseLinearCrossEntropyPass> {
  using FuseLinearCrossEntropyBase::FuseLinearCrossEntropyBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseHeadAndLoss>(&getContext(), numFused);
    // The matmul and any cast it fed are dead after the rewrite; the greedy
    // driver erases them.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace
