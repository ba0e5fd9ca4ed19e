//===- TileAttention.cpp - attention into its tiled FlashAttention form ---===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-tile-attention: chooses tile sizes from the target and rewrites
// memwall.attention (and the backward of a rewritten attention) into
// memwall.flash_attention(_grad). docs/attention.md.
//
//===----------------------------------------------------------------------===//

#include "memwall/Transforms/TileAttention.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;

namespace memwall {
#define GEN_PASS_DEF_TILEATTENTION
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace memwall;

namespace {

struct Tiles {
  int64_t blockQ = 0, blockKV = 0, splits = 1;
};

/// Why the tiled kernel cannot run `op`, or "" when it can.
std::string unsupportedReason(AttentionOp op) {
  return whyAttentionKernelCannotRun(op.getQuery().getType().getElementType(),
                                     op.getQuery().getType().getDimSize(3),
                                     op.getValue().getType().getDimSize(3));
}

/// Blocks whose rows fill at most 1/kDecodeRowsFraction of the query tile
/// are decode-shaped; they split over kDecodeSplitWaves waves of SMs.
constexpr int64_t kDecodeRowsFraction = 4;
constexpr int64_t kDecodeSplitWaves = 4;

/// The largest tiles whose Q tile and double-buffered K and V tiles fit in
/// half an SM's shared memory (two blocks per SM hide latency); splits when
/// the query blocks do not fill one wave of SMs.
std::optional<Tiles> chooseTiles(AttentionOp op, const GPUTarget &target) {
  RankedTensorType q = op.getQuery().getType();
  int64_t d = q.getDimSize(3), dv = op.getValue().getType().getDimSize(3);
  int64_t bytes = getElementByteSize(q.getElementType());
  int64_t budget = static_cast<int64_t>(target.sharedMemoryPerSMBytes) / 2;
  Tiles tiles;
  for (auto [bq, bkv] :
       {std::pair<int64_t, int64_t>{128, 128}, {128, 64}, {64, 64}, {64, 32}}) {
    if (bytes * (bq * d + 2 * bkv * (d + dv)) <= budget) {
      tiles.blockQ = bq;
      tiles.blockKV = bkv;
      break;
    }
  }
  if (!tiles.blockQ)
    return std::nullopt;
  int64_t sq = q.getDimSize(2), sk = op.getKey().getType().getDimSize(2);
  // Grouped-query heads share blocks: a block's rows come from the
  // Hq / Hkv heads x Sq queries of one KV head.
  int64_t kvHeads = std::max<int64_t>(op.getKey().getType().getDimSize(1), 1);
  CheckedInt groupRows = CheckedInt(q.getDimSize(1) / kvHeads) * sq;
  std::optional<int64_t> queryBlocks =
      (CheckedInt(q.getDimSize(0)) * kvHeads *
       llvm::divideCeil(groupRows.saturated(), tiles.blockQ))
          .get();
  int64_t keyBlocks = llvm::divideCeil(sk, tiles.blockKV);
  int64_t sms = std::max<int64_t>(target.smCount, 1);
  // Decode-shaped (each block's rows are a few queries of one KV head): the
  // kernel streams K and V, and one wave of single-warp blocks keeps too few
  // bytes in flight (measured on an H100: 136 blocks, 1.26 TB/s). Several
  // waves of splits let each SM interleave blocks' loads with their math.
  int64_t waves = groupRows.saturated() * kDecodeRowsFraction <= tiles.blockQ
                      ? kDecodeSplitWaves
                      : 1;
  // No query rows (an empty batch or head count) launch no blocks to split.
  if (queryBlocks && *queryBlocks > 0 && *queryBlocks < sms && keyBlocks > 1)
    tiles.splits = std::min<int64_t>(
        {keyBlocks,
         static_cast<int64_t>(llvm::divideCeil(waves * sms, *queryBlocks)),
         kMaxAttentionSplits});
  return tiles;
}

/// The phase travels with the rewritten op (a cost annotation would be
/// the untiled kernel's, so it does not).
void copyMemWallAttrs(Operation *from, Operation *to) {
  if (Attribute phase = from->getAttr(MemWallDialect::kPhaseAttrName))
    to->setAttr(MemWallDialect::kPhaseAttrName, phase);
}

} // namespace

std::string memwall::whyAttentionKernelCannotRun(Type element, int64_t d,
                                                 int64_t dv) {
  if (!element.isBF16() && !element.isF16()) {
    std::string type;
    llvm::raw_string_ostream os(type);
    os << element;
    return "the tiled kernel needs bf16 or f16 inputs, got " + type;
  }
  for (int64_t dim : {d, dv}) {
    if (dim <= 0)
      return "the tiled kernel needs positive head dimensions, got " +
             std::to_string(dim);
    if (dim % 16 != 0 || dim > 128)
      return "the tiled kernel needs head dimensions that are multiples of "
             "16 and at most 128, got " +
             std::to_string(dim);
  }
  return "";
}

/// What memwall-tile-attention did: attention ops (forward and backward)
/// rewritten into their tiled form, and those left untiled with a warning.
struct AttentionTilingCounts {
  unsigned tiled = 0;
  unsigned untiled = 0;
};

/// Rewrites every attention under `root` it can tile (warning at the
/// others) and the backward of each rewritten one.
static AttentionTilingCounts tileAttention(Operation *root,
                                           const GPUTarget &target) {
  AttentionTilingCounts counts;
  SmallVector<AttentionOp> forwards;
  root->walk([&](AttentionOp op) { forwards.push_back(op); });
  for (AttentionOp op : forwards) {
    if (std::string why = unsupportedReason(op); !why.empty()) {
      op.emitWarning("memwall-tile-attention: attention stays untiled: ")
          << why;
      ++counts.untiled;
      continue;
    }
    std::optional<Tiles> tiles = chooseTiles(op, target);
    if (!tiles) {
      op.emitWarning("memwall-tile-attention: attention stays untiled: no "
                     "tile fits the shared memory of ")
          << target.name;
      ++counts.untiled;
      continue;
    }
    OpBuilder builder(op);
    RankedTensorType q = op.getQuery().getType();
    auto lseType = RankedTensorType::get(
        {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2)},
        builder.getF32Type());
    auto flash = FlashAttentionOp::create(
        builder, op.getLoc(), op.getType(), lseType, op.getQuery(), op.getKey(),
        op.getValue(), op.getMask(),
        op.getCausal() ? builder.getUnitAttr() : nullptr,
        builder.getF64FloatAttr(op.getEffectiveScale()),
        builder.getI64IntegerAttr(tiles->blockQ),
        builder.getI64IntegerAttr(tiles->blockKV),
        builder.getI64IntegerAttr(tiles->splits), op.getWindowAttr());
    copyMemWallAttrs(op, flash);
    op.getResult().replaceAllUsesWith(flash.getResult());
    op.erase();
    ++counts.tiled;
  }
  SmallVector<AttentionGradOp> backwards;
  root->walk([&](AttentionGradOp op) { backwards.push_back(op); });
  for (AttentionGradOp op : backwards) {
    auto flash = op.getOut().getDefiningOp<FlashAttentionOp>();
    if (!flash)
      continue; // its forward stayed untiled
    if (op.getMaskGrad()) {
      op.emitWarning("memwall-tile-attention: the backward stays untiled: "
                     "the tiled backward does not differentiate the mask");
      ++counts.untiled;
      continue;
    }
    OpBuilder builder(op);
    // FlashAttention-2's backward iterates key blocks outside and query
    // blocks inside: the forward's tiles, swapped.
    auto grad = FlashAttentionGradOp::create(
        builder, op.getLoc(), op.getQuery().getType(), op.getKey().getType(),
        op.getValue().getType(), op.getQuery(), op.getKey(), op.getValue(),
        op.getOut(), op.getGrad(), flash.getLse(), op.getMask(),
        op.getCausal() ? builder.getUnitAttr() : nullptr, op.getScaleAttr(),
        builder.getI64IntegerAttr(flash.getBlockKv()),
        builder.getI64IntegerAttr(flash.getBlockQ()), op.getWindowAttr());
    copyMemWallAttrs(op, grad);
    op.getQueryGrad().replaceAllUsesWith(grad.getQueryGrad());
    op.getKeyGrad().replaceAllUsesWith(grad.getKeyGrad());
    op.getValueGrad().replaceAllUsesWith(grad.getValueGrad());
    op.erase();
    ++counts.tiled;
  }
  return counts;
}

namespace {
struct TileAttentionPass
    : public memwall::impl::TileAttentionBase<TileAttentionPass> {
  using TileAttentionBase::TileAttentionBase;

  void runOnOperation() override {
    FailureOr<GPUTarget> target = getTargetOf(getOperation());
    if (failed(target))
      return signalPassFailure();
    AttentionTilingCounts counts = tileAttention(getOperation(), *target);
    numAttentionsTiled += counts.tiled;
    numAttentionsUntiled += counts.untiled;
  }
};

} // namespace
