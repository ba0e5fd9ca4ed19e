//===- MemWallInterfaces.cpp - support code of the op interfaces ----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The queries built on the op interfaces (op classes for fusion and codegen)
// and the part of VJPBuilder that rules share.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"

using namespace mlir;
using namespace memwall;

bool memwall::isElementwiseOp(Operation *op) {
  auto elementwise = dyn_cast<ElementwiseOpInterface>(op);
  return elementwise && elementwise.isFusibleElementwise();
}

Value memwall::getReusedOperand(OpResult result) {
  Operation *op = result.getOwner();
  // Where a training step peaks; forward and inference kernels keep their
  // inputs read-only (the non-coherent load path, noalias).
  auto phase = op->getAttrOfType<StringAttr>(MemWallDialect::kPhaseAttrName);
  if (!phase || phase.getValue() != "backward")
    return {};
  auto fusion = dyn_cast<FusionOp>(op);
  if (fusion ? fusion.getKind() != FusionKind::Elementwise
             : !isElementwiseOp(op))
    return {};
  auto reusable = [&](OpOperand &operand, Type type) {
    Value value = operand.get();
    auto made = dyn_cast<OpResult>(value);
    if (!made || value.getType() != type || !value.hasOneUse())
      return false;
    if (auto aliasing = dyn_cast<AliasingOpInterface>(made.getOwner());
        aliasing && aliasing.getAliasedOperand(made.getResultNumber()))
      return false;
    if (!fusion)
      return true;
    // Inside a fusion: read element for element only.
    BlockArgument argument =
        fusion.getBodyBlock().getArgument(operand.getOperandNumber());
    return llvm::all_of(argument.getUsers(), [&](Operation *user) {
      return isElementwiseOp(user) &&
             llvm::all_of(user->getResultTypes(), [&](Type resultType) {
               return cast<ShapedType>(resultType).getShape() ==
                      cast<ShapedType>(type).getShape();
             });
    });
  };
  // Results take operands in order, each operand once.
  llvm::SmallPtrSet<Value, 4> taken;
  for (OpResult each : op->getResults()) {
    Value chosen;
    for (OpOperand &operand : op->getOpOperands())
      if (!taken.contains(operand.get()) && reusable(operand, each.getType())) {
        chosen = operand.get();
        break;
      }
    if (each == result)
      return chosen;
    if (chosen)
      taken.insert(chosen);
  }
  return {};
}

bool memwall::isRowReductionOp(Operation *op) {
  auto reduction = dyn_cast<RowReductionOpInterface>(op);
  return reduction && reduction.isRowReduction();
}

//===----------------------------------------------------------------------===//
// VJPBuilder
//===----------------------------------------------------------------------===//

LogicalResult VJPBuilder::notDifferentiable(Operation *op, const Twine &why) {
  return op->emitOpError("has no vector-Jacobian product: ") << why;
}

RankedTensorType VJPBuilder::gradientType(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (isa<Float8E4M3FNType, Float8E5M2Type>(type.getElementType()))
    return type.clone(BFloat16Type::get(value.getContext()));
  return type;
}

Value VJPBuilder::castTo(Value value, RankedTensorType type) {
  auto current = cast<RankedTensorType>(value.getType());
  if (current.getElementType() == type.getElementType())
    return value;
  return CastOp::create(builder, getLoc(), value,
                        TypeAttr::get(type.getElementType()));
}

Value VJPBuilder::reduceToShape(Value gradient, Value target) {
  ArrayRef<int64_t> from =
      cast<RankedTensorType>(gradient.getType()).getShape();
  ArrayRef<int64_t> to = cast<RankedTensorType>(target.getType()).getShape();
  if (from == to)
    return gradient;
  // Leading dimensions the target lacks, and dimensions it has as 1.
  SmallVector<int64_t> axes;
  int64_t extra = from.size() - to.size();
  for (int64_t i = 0; i < static_cast<int64_t>(from.size()); ++i)
    if (i < extra || (to[i - extra] == 1 && from[i] != 1))
      axes.push_back(i);
  Value summed = ReduceOp::create(builder, getLoc(), ReduceKind::Sum, gradient,
                                  axes, /*keep_dims=*/false);
  if (cast<RankedTensorType>(summed.getType()).getShape() == to)
    return summed;
  return ReshapeOp::create(builder, getLoc(), summed,
                           builder.getDenseI64ArrayAttr(to));
}

Value VJPBuilder::scale(Value value, double factor) {
  return ScaleOp::create(builder, getLoc(), value,
                         builder.getF64FloatAttr(factor))
      .getResult();
}
