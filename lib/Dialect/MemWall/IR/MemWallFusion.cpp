//===- MemWallFusion.cpp - memwall.fusion ---------------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The fusion region op (one future kernel), its verifier and its cost as a
// fused kernel.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace memwall;

void FusionOp::build(OpBuilder &builder, OperationState &state, FusionKind kind,
                     ValueRange inputs, TypeRange resultTypes) {
  state.addAttribute(getKindAttrName(state.name),
                     FusionKindAttr::get(builder.getContext(), kind));
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
}

LogicalResult FusionOp::verify() {
  Block &block = getBodyBlock();
  if (block.getArgumentTypes() != getInputs().getTypes())
    return emitOpError("body arguments must have the types of the inputs");
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded types must be the result types");
  // Independent AdamW updates, one multi-tensor launch.
  if (getKind() == FusionKind::Horizontal) {
    for (Operation &op : block.without_terminator())
      if (!isa<AdamWOp>(op))
        return op.emitOpError("cannot be fused into a horizontal fusion: "
                              "only AdamW updates run there");
    if (block.without_terminator().empty())
      return emitOpError("body has no ops");
    return success();
  }
  // A dequantize kernel: one materialized dequantize, and the dequantize of
  // its scales (double quantization), which it dequantizes as it reads them.
  if (getKind() == FusionKind::Dequantize) {
    unsigned materialized = 0;
    for (Operation &op : block.without_terminator()) {
      auto dequantize = dyn_cast<DequantizeOp>(op);
      if (!dequantize)
        return op.emitOpError("cannot be fused into a dequantize fusion: "
                              "only a dequantize and the dequantize of its "
                              "scales run there");
      materialized += dequantize.getMaterialize() ? 1 : 0;
    }
    if (materialized != 1)
      return emitOpError("a dequantize fusion holds exactly one dequantize "
                         "with `materialize`");
    return success();
  }
  // Attention, its backward, or one or two ropes, with the views of their
  // operands and results (memwall::matchAttentionViews,
  // matchAttentionGradViews and matchRopeViews say which views they can
  // index).
  if (getKind() == FusionKind::Attention ||
      getKind() == FusionKind::AttentionGrad || getKind() == FusionKind::Rope) {
    auto isAnchor = [&](Operation &op) {
      switch (getKind()) {
      case FusionKind::Attention:
        return isa<FlashAttentionOp>(op);
      case FusionKind::AttentionGrad:
        return isa<FlashAttentionGradOp>(op);
      default:
        return isa<RopeOp>(op);
      }
    };
    // Attention's backward writes its gradients packed through a concat, a
    // rope k's new rows into its KV cache.
    bool packs = getKind() == FusionKind::AttentionGrad;
    bool appends = getKind() == FusionKind::Rope;
    unsigned anchors = 0;
    for (Operation &op : block.without_terminator()) {
      if (isAnchor(op))
        ++anchors;
      else if (!isa<ReshapeOp, TransposeOp, SliceOp>(op) &&
               !(packs && isa<ConcatOp>(op)) &&
               !(appends && isa<KVCacheAppendOp>(op)))
        return op.emitOpError("cannot be fused into ")
               << (appends ? "a rope" : "an attention")
               << " fusion: only reshapes, transposes and slices of its "
                  "operands or results"
               << (packs ? " and a concat of its gradients" : "")
               << (appends ? " and KV-cache appends of its results" : "")
               << " run there";
    }
    if (getKind() == FusionKind::Attention && anchors != 1)
      return emitOpError("an attention fusion holds exactly one "
                         "flash_attention");
    if (getKind() == FusionKind::AttentionGrad && anchors != 1)
      return emitOpError("an attention_grad fusion holds exactly one "
                         "flash_attention_grad");
    if (getKind() == FusionKind::Rope && (anchors < 1 || anchors > 2))
      return emitOpError("a rope fusion holds one or two ropes");
    return success();
  }
  unsigned matmuls = 0, rowReductions = 0, norms = 0, others = 0,
           dequantizes = 0, layouts = 0, outputLayouts = 0;
  Value matmulLhs;
  bool lhsDiffers = false;
  for (Operation &op : block.without_terminator()) {
    if (isa<LayerNormOp, RmsNormOp>(op))
      ++norms;
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      lhsDiffers |= matmulLhs && matmul.getLhs() != matmulLhs;
      matmulLhs = matmul.getLhs();
      ++matmuls;
    } else if (isRowReductionOp(&op))
      ++rowReductions;
    else if (auto dequantize = dyn_cast<DequantizeOp>(op)) {
      // The dequantize of another's scales (double quantization) runs in
      // that one's prologue.
      bool scalesOfAnother =
          llvm::any_of(dequantize->getUsers(),
                       [](Operation *user) { return isa<DequantizeOp>(user); });
      dequantizes += scalesOfAnother ? 0 : 1;
    } else if (isa<ReshapeOp, TransposeOp, RopeOp, KVCacheAppendOp>(op)) {
      ++layouts;
      // A transpose of an input and the reshape of it make a GEMM's lhs
      // (a heads merge), which a norm in the epilogue does not mind.
      Value input = op.getOperand(0);
      Operation *def = input.getDefiningOp();
      bool mergesInput =
          (isa<TransposeOp>(op) && isa<BlockArgument>(input)) ||
          (isa<ReshapeOp>(op) && isa_and_nonnull<TransposeOp>(def) &&
           isa<BlockArgument>(def->getOperand(0)));
      outputLayouts += mergesInput ? 0 : 1;
    } else if (!isElementwiseOp(&op))
      return op.emitOpError("cannot be fused: only elementwise ops, one row "
                            "reduction or one matmul (with a dequantize of "
                            "its rhs or a heads layout of its result, which "
                            "may end in a KV-cache append) run in a fusion");
    else
      ++others;
  }
  if (matmuls + rowReductions + others == 0)
    return emitOpError("body has no ops");
  // A dequantize runs as the rhs prologue of a generated GEMM's matmul.
  if (dequantizes && (getKind() != FusionKind::Gemm || dequantizes > matmuls))
    return emitOpError("a dequantize is fused only into a gemm fusion, as "
                       "the rhs prologue of a matmul");
  // A reshape, transpose, rope and KV-cache append write a generated GEMM's
  // result heads-split (into the cache), or a transpose and reshape make
  // its lhs (memwall::matchGemmHeadsLayouts and matchGemmLhsHeadsMerge say
  // which).
  if (layouts && (getKind() != FusionKind::Gemm || !matmuls ||
                  (rowReductions && outputLayouts)))
    return emitOpError("a reshape, transpose, rope or KV-cache append is "
                       "fused only into a gemm fusion, as the heads layout "
                       "of its lhs or of a product (not with a norm)");
  switch (getKind()) {
  case FusionKind::Elementwise:
    if (matmuls || rowReductions)
      return emitOpError("an elementwise fusion holds only elementwise ops");
    break;
  case FusionKind::Reduction:
    if (matmuls || rowReductions != 1)
      return emitOpError("a reduction fusion holds exactly one row "
                         "reduction and no matmul");
    break;
  case FusionKind::MatmulEpilogue:
    // One cuBLASLt call: a matmul and its epilogue, or sibling matmuls
    // (one lhs) and nothing else as a batched call (FusionCost.h,
    // batchedMatmuls).
    if (rowReductions || !(matmuls == 1 || (!lhsDiffers && !others)))
      return emitOpError("a matmul_epilogue fusion holds exactly one matmul "
                         "and no row reduction, or sibling matmuls of one "
                         "lhs and nothing else");
    break;
  case FusionKind::Gemm: {
    // memwall's GEMM runs one layer_norm or rms_norm in its epilogue, or two
    // matmuls sharing their lhs as a dual GEMM (FusionCost.h,
    // siblingMatmul), which has no norm epilogue.
    bool single = matmuls == 1 && rowReductions <= 1 && rowReductions == norms;
    bool dual = matmuls == 2 && !lhsDiffers && rowReductions == 0;
    if (!single && !dual)
      return emitOpError("a gemm fusion holds one matmul and at most one row "
                         "reduction, a layer_norm or rms_norm, or two "
                         "matmuls sharing their lhs and no row reduction");
    break;
  }
  case FusionKind::Attention:
  case FusionKind::AttentionGrad:
  case FusionKind::Rope:
  case FusionKind::Horizontal:
  case FusionKind::Dequantize:
    llvm_unreachable("verified above");
  }
  return success();
}

LogicalResult FusionOp::buildVJP(VJPBuilder &, ValueRange) {
  return VJPBuilder::notDifferentiable(
      *this, "run memwall-autodiff before memwall-fuse");
}

/// The input whose buffer result `resultNumber` reuses: the one the body
/// op yielding it updates in place (AdamW, a KV-cache append), if any.
Value FusionOp::getAliasedOperand(unsigned resultNumber) {
  Value yielded = getBodyBlock().getTerminator()->getOperand(resultNumber);
  auto made = dyn_cast<OpResult>(yielded);
  // Not a view or a cast of an input: the kernel writes those out whole.
  if (!made || !isa<AdamWOp, KVCacheAppendOp>(made.getOwner()))
    return {};
  auto aliasing = cast<AliasingOpInterface>(made.getOwner());
  auto updated = dyn_cast_or_null<BlockArgument>(
      aliasing.getAliasedOperand(made.getResultNumber()));
  if (!updated || updated.getOwner() != &getBodyBlock())
    return {};
  return getInputs()[updated.getArgNumber()];
}

unsigned FusionOp::getNumUnfusedKernels() {
  unsigned kernels = 0;
  for (Operation &op : getBodyBlock().without_terminator())
    if (auto cost = dyn_cast<CostOpInterface>(op))
      kernels += cost.launchesKernel() ? 1 : 0;
  return kernels;
}

int64_t FusionOp::getFlops() {
  CheckedInt flops = 0;
  for (Operation &op : getBodyBlock().without_terminator())
    if (auto cost = dyn_cast<CostOpInterface>(op))
      flops += CheckedInt::fromSaturated(cost.getFlops());
  return flops.saturated();
}

int64_t FusionOp::getBytesRead() {
  // Each input once, however many body ops read it; unused inputs not at all.
  CheckedInt bytes = 0;
  for (BlockArgument argument : getBodyBlock().getArguments())
    if (!argument.use_empty())
      bytes += CheckedInt::fromSaturated(
          getGemmOperandBytes(getInputs()[argument.getArgNumber()]));
  return bytes.saturated();
}

int64_t FusionOp::getBytesWritten() { return detail::sumResultBytes(*this); }

MathPrecision FusionOp::getMathPrecision() {
  for (Operation &op : getBodyBlock().without_terminator())
    if (auto matmul = dyn_cast<MatmulOp>(op))
      return matmul.getMathPrecision();
  return MathPrecision::FP32;
}

SmallVector<AdamWOp> memwall::getOptimizerUpdates(Operation *op) {
  if (auto adamw = dyn_cast<AdamWOp>(op))
    return {adamw};
  auto fusion = dyn_cast<FusionOp>(op);
  if (!fusion || fusion.getKind() != FusionKind::Horizontal)
    return {};
  return SmallVector<AdamWOp>(fusion.getBodyBlock().getOps<AdamWOp>());
}

Value memwall::getValueOutsideFusions(Value value) {
  while (auto argument = dyn_cast<BlockArgument>(value)) {
    auto fusion =
        dyn_cast_or_null<FusionOp>(argument.getOwner()->getParentOp());
    if (!fusion)
      break;
    value = fusion->getOperand(argument.getArgNumber());
  }
  return value;
}
