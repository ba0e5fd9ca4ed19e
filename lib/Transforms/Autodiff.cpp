//===- Autodiff.cpp - reverse-mode differentiation of loss functions ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reverse-mode AD over the memwall dialect: each op's vector-Jacobian product
// (VJP) rule, which the op implements (AutodiffOpInterface, next to its
// verifier), is emitted after the forward in reverse op order, then the AdamW
// step. The rules are listed with their formulas in docs/autodiff.md.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace memwall {
#define GEN_PASS_DEF_AUTODIFF
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

bool memwall::returnsLoss(func::FuncOp function) {
  if (function.isExternal())
    return false;
  auto returnOp =
      dyn_cast<func::ReturnOp>(function.getBody().front().getTerminator());
  auto f32Scalar =
      RankedTensorType::get({}, Float32Type::get(function.getContext()));
  return returnOp && returnOp.getNumOperands() == 1 &&
         returnOp.getOperand(0).getType() == f32Scalar;
}

namespace {

bool isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// The reverse walk: calls each op's VJP rule (AutodiffOpInterface) and keeps
/// the gradient of every value the loss is differentiated through.
class Differentiator : public VJPBuilder {
public:
  Differentiator(func::FuncOp function, bool returnGradients)
      : VJPBuilder(function.getContext()), function(function),
        returnGradients(returnGradients) {}

  /// Emits the backward after the forward; fails with a diagnostic at the
  /// first op without a rule (the caller then discards the function body).
  LogicalResult run(Value loss);

  /// Accumulated gradient of `value`, or null if nothing flowed to it.
  Value gradientOf(Value value) {
    joinSliceGradients(value);
    return gradients.lookup(value);
  }

  bool needsGradient(Value value) const override {
    return requiresGrad.contains(value);
  }
  void accumulate(Value value, Value gradient) override;

private:
  Location loc(Operation *forward, StringRef suffix) {
    return withSuffix(forward->getLoc(), suffix);
  }
  /// `where` with `suffix` after its names (each part of a fused location,
  /// e.g. a fused head and loss's "lm_head+loss").
  Location withSuffix(Location where, StringRef suffix) {
    if (auto name = dyn_cast<NameLoc>(where))
      return NameLoc::get(
          getBuilder().getStringAttr(name.getName().getValue() + suffix));
    if (auto fused = dyn_cast<FusedLoc>(where)) {
      SmallVector<Location> parts;
      for (Location part : fused.getLocations())
        parts.push_back(withSuffix(part, suffix));
      return FusedLoc::get(where.getContext(), parts, fused.getMetadata());
    }
    return where;
  }

  LogicalResult differentiate(Operation *op);

  /// Where `value`'s gradient is the sum of its slices' gradients, each
  /// padded (SliceOp's VJP) along one axis and together covering it once
  /// (GPT-2's q, k and v of the packed QKV projection), makes it their
  /// concat: one write of the gradient instead of a zero-padded copy per
  /// slice and an add per pair.
  void joinSliceGradients(Value value);

  /// The pieces of a gradient accumulated as padded slice gradients along
  /// one axis: (offset, piece) pairs; a value whose gradient also got
  /// anything else maps to nothing.
  struct SlicePieces {
    int64_t axis = -1;
    SmallVector<std::pair<int64_t, Value>> pieces;
    bool mixed = false;
  };
  llvm::DenseMap<Value, SlicePieces> slicePieces;

  func::FuncOp function;
  bool returnGradients;
  llvm::DenseSet<Value> requiresGrad;
  llvm::DenseMap<Value, Value> gradients;
};

/// The one axis `pad` pads, or -1.
static int64_t getPaddedAxis(PadOp pad) {
  int64_t axis = -1;
  for (auto [i, low, high] : llvm::enumerate(pad.getLow(), pad.getHigh())) {
    if (low == 0 && high == 0)
      continue;
    if (axis >= 0)
      return -1;
    axis = static_cast<int64_t>(i);
  }
  return axis;
}

void Differentiator::accumulate(Value value, Value gradient) {
  if (!gradient || !needsGradient(value))
    return;
  gradient = castTo(gradient, gradientType(value));
  SlicePieces &record = slicePieces[value];
  auto pad = gradient.getDefiningOp<PadOp>();
  int64_t axis = pad ? getPaddedAxis(pad) : -1;
  bool first = !gradients.contains(value);
  if (!record.mixed && axis >= 0 && (first || record.axis == axis)) {
    record.axis = axis;
    record.pieces.emplace_back(pad.getLow()[axis], pad.getInput());
  } else {
    record.mixed = true;
  }
  auto [it, inserted] = gradients.try_emplace(value, gradient);
  if (!inserted)
    it->second = AddOp::create(getBuilder(), getLoc(), it->second, gradient);
}

void Differentiator::joinSliceGradients(Value value) {
  auto it = slicePieces.find(value);
  if (it == slicePieces.end() || it->second.mixed ||
      it->second.pieces.size() < 2)
    return;
  SlicePieces record = std::move(it->second);
  slicePieces.erase(it);
  auto type = cast<RankedTensorType>(gradients.lookup(value).getType());
  llvm::sort(record.pieces, llvm::less_first());
  int64_t next = 0;
  SmallVector<Value> pieces;
  for (auto [offset, piece] : record.pieces) {
    if (offset != next)
      return; // a gap or an overlap: the pads' sum stays
    next += cast<RankedTensorType>(piece.getType()).getDimSize(record.axis);
    pieces.push_back(piece);
  }
  if (next != type.getDimSize(record.axis))
    return;
  Value sum = gradients.lookup(value);
  Value joined = ConcatOp::create(getBuilder(), sum.getLoc(), pieces,
                                  getBuilder().getI64IntegerAttr(record.axis));
  gradients[value] = joined;
  // The adds and pads that summed the pieces are dead now.
  SmallVector<Operation *> worklist{sum.getDefiningOp()};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!op || !op->use_empty() || !isa<AddOp, PadOp>(op))
      continue;
    SmallVector<Value> operands(op->getOperands());
    op->erase();
    for (Value operand : operands)
      worklist.push_back(operand.getDefiningOp());
  }
}

LogicalResult Differentiator::differentiate(Operation *op) {
  if (op->getNumResults() == 0)
    return op->emitOpError(
        "has no vector-Jacobian product in memwall-autodiff");
  // One gradient per result, null where the result does not reach the loss.
  SmallVector<Value> dys;
  for (Value result : op->getResults()) {
    joinSliceGradients(result);
    dys.push_back(gradients.lookup(result));
  }
  if (llvm::all_of(dys, [](Value dy) { return !dy; }))
    return success(); // does not contribute to the loss
  auto rule = dyn_cast<AutodiffOpInterface>(op);
  if (!rule)
    return notDifferentiable(op, "no rule for this op");
  setLoc(loc(op, ".grad"));
  return rule.buildVJP(*this, dys);
}

LogicalResult Differentiator::run(Value loss) {
  Block &body = function.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);

  // Values the loss can be differentiated through to a trainable argument.
  for (BlockArgument arg : function.getArguments())
    if (isFloatTensor(arg) &&
        (returnGradients || isTrainableWeight(function, arg.getArgNumber())))
      requiresGrad.insert(arg);
  for (Operation *op : forward)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return requiresGrad.contains(v); }))
      for (Value result : op->getResults())
        if (isFloatTensor(result))
          requiresGrad.insert(result);

  OpBuilder &builder = getBuilder();
  builder.setInsertionPoint(returnOp);
  Location lossLoc = loss.getDefiningOp() ? loc(loss.getDefiningOp(), ".grad")
                                          : function.getLoc();
  // d loss / d loss = 1.
  auto seedType = cast<RankedTensorType>(loss.getType());
  gradients[loss] = arith::ConstantOp::create(
      builder, lossLoc,
      DenseElementsAttr::get(seedType, builder.getF32FloatAttr(1.0)));
  for (Operation *op : llvm::reverse(forward))
    if (failed(differentiate(op)))
      return failure();
  // Everything emitted after the forward is the backward.
  llvm::DenseSet<Operation *> forwardOps(forward.begin(), forward.end());
  StringAttr phase = builder.getStringAttr("backward");
  for (Operation &op : body.without_terminator())
    if (!forwardOps.contains(&op))
      op.setAttr(MemWallDialect::kPhaseAttrName, phase);
  return success();
}

struct AutodiffPass : public memwall::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    if (optimizer != "adamw" && optimizer != "none") {
      mlir::emitError(getOperation().getLoc())
          << "memwall-autodiff: unknown optimizer '" << optimizer
          << "' (expected adamw or none)";
      return signalPassFailure();
    }
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (function.isExternal() || failed(runOnFunction(function)))
        return signalPassFailure();
  }

  /// The loss a training function returns, or a diagnostic.
  FailureOr<Value> findLoss(func::FuncOp function, bool quiet) {
    auto returnOp =
        cast<func::ReturnOp>(function.getBody().front().getTerminator());
    bool differentiated = false;
    function.walk([&](Operation *op) {
      differentiated |= op->hasAttr(MemWallDialect::kPhaseAttrName);
    });
    if (differentiated) {
      if (!quiet)
        function.emitError("memwall-autodiff: @")
            << function.getName() << " is already differentiated";
      return failure();
    }
    if (!memwall::returnsLoss(function)) {
      if (!quiet)
        function.emitError("memwall-autodiff: @")
            << function.getName()
            << " is not a training function: it must return exactly one "
               "tensor<f32> loss";
      return failure();
    }
    return returnOp.getOperand(0);
  }

  LogicalResult runOnFunction(func::FuncOp function) {
    FailureOr<Value> loss = findLoss(function, onlyLossFunctions);
    if (failed(loss))
      return success(onlyLossFunctions);
    bool returnGradients = optimizer == "none";
    // Differentiate a clone so that a failure leaves the function untouched.
    func::FuncOp work = function.clone();
    Value workLoss =
        cast<func::ReturnOp>(work.getBody().front().getTerminator())
            .getOperand(0);
    Differentiator differentiator(work, returnGradients);
    if (failed(differentiator.run(workLoss))) {
      work.erase();
      return failure();
    }
    if (returnGradients)
      returnGradientsOf(work, differentiator, workLoss);
    else
      appendAdamW(work, differentiator, workLoss);
    function.getBody().takeBody(work.getBody());
    function.setFunctionTypeAttr(work.getFunctionTypeAttr());
    function.setAllArgAttrs(work.getAllArgAttrs());
    work.erase();
    function.walk([&](Operation *op) {
      if (auto phase =
              op->getAttrOfType<StringAttr>(MemWallDialect::kPhaseAttrName))
        ++(phase.getValue() == "optimizer" ? numOptimizerOps : numBackwardOps);
    });
    return success();
  }

  void returnGradientsOf(func::FuncOp function, Differentiator &ad,
                         Value loss) {
    Block &body = function.getBody().front();
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder builder(returnOp);
    SmallVector<Value> results = {loss};
    for (BlockArgument arg : function.getArguments()) {
      if (!isFloatTensor(arg))
        continue;
      Value grad = ad.gradientOf(arg);
      if (!grad) {
        // Unused by the loss: its gradient is zero.
        auto type = VJPBuilder::gradientType(arg);
        grad = arith::ConstantOp::create(
            builder, returnOp.getLoc(),
            DenseElementsAttr::get(type,
                                   builder.getZeroAttr(type.getElementType())));
        grad.getDefiningOp()->setAttr(MemWallDialect::kPhaseAttrName,
                                      builder.getStringAttr("backward"));
      }
      results.push_back(grad);
    }
    func::ReturnOp::create(builder, returnOp.getLoc(), results);
    returnOp.erase();
    function.setFunctionType(FunctionType::get(function.getContext(),
                                               body.getArgumentTypes(),
                                               ValueRange(results).getTypes()));
  }

  /// Moves `adam` to just after its gradient is complete and the weight's
  /// last reader has run, so that the gradient dies there instead of living
  /// to the end of the step (PyTorch's optimizer-in-backward; the weight is
  /// updated in place, docs/autodiff.md).
  static void placeUpdateEarly(AdamWOp adam) {
    Block *block = adam->getBlock();
    Operation *after = nullptr;
    auto consider = [&](Operation *op) {
      op = op ? block->findAncestorOpInBlock(*op) : nullptr;
      if (op && op != adam && op->isBeforeInBlock(adam) &&
          (!after || after->isBeforeInBlock(op)))
        after = op;
    };
    consider(adam.getGrad().getDefiningOp());
    for (Value state : adam->getOperands())
      for (Operation *user : state.getUsers())
        consider(user);
    if (after)
      adam->moveAfter(after);
  }

  void appendAdamW(func::FuncOp function, Differentiator &ad, Value loss) {
    Block &body = function.getBody().front();
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder builder(returnOp);
    MLIRContext *ctx = function.getContext();
    auto f32 = Float32Type::get(ctx);
    auto stateKind = ArgKindAttr::get(ctx, ArgKind::OptimizerState);
    StringAttr phase = builder.getStringAttr("optimizer");
    SmallVector<Value> results = {loss};
    SmallVector<BlockArgument> weights;
    for (BlockArgument arg : function.getArguments())
      if (isTrainableWeight(function, arg.getArgNumber()) && isFloatTensor(arg))
        weights.push_back(arg);
    // States are appended to the block and the signature set once at the
    // end: inserting them one by one would intern a function type and an
    // attribute array per state, quadratic in the number of weights.
    SmallVector<DictionaryAttr> argAttrs;
    function.getAllArgAttrs(argAttrs);
    DictionaryAttr stateAttrs = builder.getDictionaryAttr(
        builder.getNamedAttr(MemWallDialect::kArgKindAttrName, stateKind));
    for (BlockArgument weight : weights) {
      Value grad = ad.gradientOf(weight);
      if (!grad)
        continue; // not used by the loss: nothing to train
      auto type = cast<RankedTensorType>(weight.getType());
      auto stateType = type.clone(f32);
      std::string name = "param";
      if (auto nameLoc = dyn_cast<NameLoc>(weight.getLoc()))
        name = nameLoc.getName().getValue().str();
      auto addState = [&](StringRef suffix) {
        argAttrs.push_back(stateAttrs);
        return body.addArgument(
            stateType, NameLoc::get(builder.getStringAttr(name + suffix)));
      };
      Value master =
          type.getElementType().isF32() ? Value() : addState(".master");
      Value expAvg = addState(".exp_avg");
      Value expAvgSq = addState(".exp_avg_sq");
      auto adam = AdamWOp::create(
          builder, NameLoc::get(builder.getStringAttr(name + ".adamw")), weight,
          grad, expAvg, expAvgSq, master, learningRate);
      adam.setWeightDecay(APFloat(weightDecay));
      adam->setAttr(MemWallDialect::kPhaseAttrName, phase);
      llvm::append_range(results, adam->getResults());
      placeUpdateEarly(adam);
    }
    func::ReturnOp::create(builder, returnOp.getLoc(), results);
    returnOp.erase();
    function.setFunctionType(FunctionType::get(ctx, body.getArgumentTypes(),
                                               ValueRange(results).getTypes()));
    function.setAllArgAttrs(argAttrs);
  }
};

} // namespace
