//===- Autodiff.cpp - reverse-mode differentiation of loss functions ------===//
//
// Reverse-mode AD over the memwall dialect: one vector-Jacobian product (VJP)
// rule per op, emitted after the forward in reverse op order, then the AdamW
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
#include "llvm/ADT/TypeSwitch.h"

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

/// Gradients of fp8 values are kept in bf16: fp8 is a storage format for
/// GEMM inputs, not a gradient precision.
RankedTensorType gradientType(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (isa<Float8E4M3FNType, Float8E5M2Type>(type.getElementType()))
    return type.clone(BFloat16Type::get(value.getContext()));
  return type;
}

class Differentiator {
public:
  Differentiator(func::FuncOp function, bool returnGradients)
      : function(function), builder(function.getContext()),
        returnGradients(returnGradients) {}

  /// Emits the backward after the forward; fails with a diagnostic at the
  /// first op without a rule (the caller then discards the function body).
  LogicalResult run(Value loss);

  /// Accumulated gradient of `value`, or null if nothing flowed to it.
  Value gradientOf(Value value) const { return gradients.lookup(value); }

private:
  Location loc(Operation *forward, StringRef suffix) {
    if (auto name = dyn_cast<NameLoc>(forward->getLoc()))
      return NameLoc::get(
          builder.getStringAttr(name.getName().getValue() + suffix));
    return forward->getLoc();
  }

  void accumulate(Value value, Value gradient, Location where);
  bool needsGradient(Value value) const { return requiresGrad.contains(value); }

  /// Sums `gradient` (shaped like a broadcast result) down to `target`'s
  /// shape: the VJP of NumPy broadcasting.
  Value reduceToShape(Value gradient, Value target, Location where);
  Value castTo(Value value, RankedTensorType type, Location where);

  LogicalResult differentiate(Operation *op);
  LogicalResult matmulRule(MatmulOp op, Value dy);

  func::FuncOp function;
  OpBuilder builder;
  bool returnGradients;
  llvm::DenseSet<Value> requiresGrad;
  llvm::DenseMap<Value, Value> gradients;
};

void Differentiator::accumulate(Value value, Value gradient, Location where) {
  if (!gradient || !needsGradient(value))
    return;
  RankedTensorType type = gradientType(value);
  gradient = castTo(gradient, type, where);
  auto [it, inserted] = gradients.try_emplace(value, gradient);
  if (!inserted)
    it->second = AddOp::create(builder, where, it->second, gradient);
}

Value Differentiator::castTo(Value value, RankedTensorType type,
                             Location where) {
  auto current = cast<RankedTensorType>(value.getType());
  if (current.getElementType() == type.getElementType())
    return value;
  return CastOp::create(builder, where, value,
                        TypeAttr::get(type.getElementType()));
}

Value Differentiator::reduceToShape(Value gradient, Value target,
                                    Location where) {
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
  Value summed = ReduceOp::create(builder, where, ReduceKind::Sum, gradient,
                                  axes, /*keep_dims=*/false);
  if (cast<RankedTensorType>(summed.getType()).getShape() == to)
    return summed;
  return ReshapeOp::create(builder, where, summed,
                           builder.getDenseI64ArrayAttr(to));
}

LogicalResult Differentiator::matmulRule(MatmulOp op, Value dy) {
  Location where = loc(op, ".grad");
  Value a = op.getLhs(), b = op.getRhs();
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(b.getType());
  // fp8 operands are saved in fp8 and widened for the backward GEMMs.
  Value aWide = castTo(a, gradientType(a), where);
  Value bWide = castTo(b, gradientType(b), where);
  dy = castTo(dy, gradientType(aWide), where);
  auto unit = [&](bool set) { return set ? builder.getUnitAttr() : nullptr; };
  auto mm = [&](Value lhs, Value rhs, bool transposeLhs, bool transposeRhs) {
    return MatmulOp::create(builder, where, lhs, rhs, Value(),
                            unit(transposeLhs), unit(transposeRhs))
        .getResult();
  };
  if (needsGradient(a)) {
    // dA = dY B^T, or (dY B^T)^T = B dY^T when A is stored transposed.
    Value da = ta ? mm(bWide, dy, tb, true) : mm(dy, bWide, false, !tb);
    accumulate(a, reduceToShape(da, a, where), where);
  }
  if (needsGradient(b)) {
    Value db;
    if (bType.getRank() == 2 && aType.getRank() > 2 && !ta) {
      // A linear layer: fold the batch into the rows so that one GEMM sums
      // over it (rather than a batched GEMM and a reduction).
      int64_t k = aType.getShape().back();
      int64_t n = cast<RankedTensorType>(dy.getType()).getShape().back();
      int64_t rows = k == 0 ? 0 : aType.getNumElements() / k;
      Value a2 = ReshapeOp::create(builder, where, aWide,
                                   builder.getDenseI64ArrayAttr({rows, k}));
      Value dy2 = ReshapeOp::create(builder, where, dy,
                                    builder.getDenseI64ArrayAttr({rows, n}));
      db = tb ? mm(dy2, a2, true, false) : mm(a2, dy2, true, false);
    } else {
      // dB = A^T dY, or dY^T A when B is stored transposed.
      db = tb ? mm(dy, aWide, true, ta) : mm(aWide, dy, !ta, false);
      db = reduceToShape(db, b, where);
    }
    accumulate(b, db, where);
  }
  if (Value bias = op.getBias(); bias && needsGradient(bias))
    accumulate(bias, reduceToShape(dy, bias, where), where);
  return success();
}

LogicalResult Differentiator::differentiate(Operation *op) {
  if (op->getNumResults() != 1)
    return op->emitOpError(
        "has no vector-Jacobian product in memwall-autodiff");
  Value y = op->getResult(0);
  Value dy = gradients.lookup(y);
  if (!dy)
    return success(); // does not contribute to the loss
  Location where = loc(op, ".grad");
  auto scale = [&](Value v, double factor) {
    return ScaleOp::create(builder, where, v, builder.getF64FloatAttr(factor))
        .getResult();
  };
  auto activation = [&](ActivationKind kind, Value x, Value g) {
    return ActivationGradOp::create(builder, where, x.getType(), kind, x, g)
        .getResult();
  };
  auto noRule = [&](StringRef why) {
    return op->emitOpError("has no vector-Jacobian product: ") << why;
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](MatmulOp mm) { return matmulRule(mm, dy); })
      .Case([&](AttentionOp attn) {
        // A trained additive mask (a learned bias) gets the score gradient.
        Value mask = attn.getMask();
        bool maskGrad =
            mask && requiresGrad.contains(mask) && isFloatTensor(mask);
        auto grad = AttentionGradOp::create(builder, where, attn, dy, maskGrad);
        accumulate(attn.getQuery(), grad.getQueryGrad(), where);
        accumulate(attn.getKey(), grad.getKeyGrad(), where);
        accumulate(attn.getValue(), grad.getValueGrad(), where);
        if (maskGrad)
          accumulate(mask, grad.getMaskGrad(), where);
        return success();
      })
      .Case([&](AddOp add) {
        accumulate(add.getLhs(), reduceToShape(dy, add.getLhs(), where), where);
        accumulate(add.getRhs(), reduceToShape(dy, add.getRhs(), where), where);
        return success();
      })
      .Case([&](SubOp sub) {
        accumulate(sub.getLhs(), reduceToShape(dy, sub.getLhs(), where), where);
        if (needsGradient(sub.getRhs()))
          accumulate(sub.getRhs(),
                     scale(reduceToShape(dy, sub.getRhs(), where), -1.0),
                     where);
        return success();
      })
      .Case([&](MulOp mul) {
        if (needsGradient(mul.getLhs()))
          accumulate(
              mul.getLhs(),
              reduceToShape(MulOp::create(builder, where, dy, mul.getRhs()),
                            mul.getLhs(), where),
              where);
        if (needsGradient(mul.getRhs()))
          accumulate(
              mul.getRhs(),
              reduceToShape(MulOp::create(builder, where, dy, mul.getLhs()),
                            mul.getRhs(), where),
              where);
        return success();
      })
      .Case([&](DivOp div) {
        if (needsGradient(div.getLhs()))
          accumulate(
              div.getLhs(),
              reduceToShape(DivOp::create(builder, where, dy, div.getRhs()),
                            div.getLhs(), where),
              where);
        if (needsGradient(div.getRhs())) {
          // d(a/b)/db = -(a/b)/b = -y/b.
          Value t = MulOp::create(builder, where, dy, y);
          t = DivOp::create(builder, where, t, div.getRhs());
          accumulate(div.getRhs(),
                     scale(reduceToShape(t, div.getRhs(), where), -1.0), where);
        }
        return success();
      })
      .Case([&](ScaleOp s) {
        accumulate(s.getInput(), scale(dy, s.getFactor().convertToDouble()),
                   where);
        return success();
      })
      .Case([&](GeluOp gelu) {
        accumulate(gelu.getInput(),
                   activation(gelu.getApproximation() == GeluApproximation::Tanh
                                  ? ActivationKind::GeluTanh
                                  : ActivationKind::GeluErf,
                              gelu.getInput(), dy),
                   where);
        return success();
      })
      .Case([&](SiluOp silu) {
        accumulate(silu.getInput(),
                   activation(ActivationKind::Silu, silu.getInput(), dy),
                   where);
        return success();
      })
      .Case([&](ReluOp relu) {
        accumulate(relu.getInput(),
                   activation(ActivationKind::Relu, relu.getInput(), dy),
                   where);
        return success();
      })
      .Case([&](TanhOp t) {
        accumulate(t.getInput(),
                   activation(ActivationKind::Tanh, t.getInput(), dy), where);
        return success();
      })
      .Case([&](SwigluOp swiglu) {
        // y = silu(g) * u.
        Value g = swiglu.getGate(), u = swiglu.getUp();
        if (needsGradient(g))
          accumulate(g,
                     activation(ActivationKind::Silu, g,
                                MulOp::create(builder, where, dy, u)),
                     where);
        if (needsGradient(u))
          accumulate(u,
                     MulOp::create(builder, where, dy,
                                   SiluOp::create(builder, where, g)),
                     where);
        return success();
      })
      .Case([&](DropoutOp dropout) {
        // The mask is regenerated from the same seed.
        accumulate(dropout.getInput(),
                   DropoutOp::create(builder, where, dy, dropout.getRateAttr(),
                                     dropout.getSeedAttr()),
                   where);
        return success();
      })
      .Case([&](LayerNormOp norm) {
        auto grad = LayerNormGradOp::create(builder, where, norm.getInput(),
                                            norm.getWeight(), dy,
                                            norm.getEpsilon().convertToDouble(),
                                            static_cast<bool>(norm.getBias()));
        accumulate(norm.getInput(), grad.getInputGrad(), where);
        accumulate(norm.getWeight(), grad.getWeightGrad(), where);
        if (norm.getBias())
          accumulate(norm.getBias(), grad.getBiasGrad(), where);
        return success();
      })
      .Case([&](RmsNormOp norm) {
        auto grad = RmsNormGradOp::create(builder, where, norm.getInput(),
                                          norm.getWeight(), dy,
                                          norm.getEpsilon().convertToDouble());
        accumulate(norm.getInput(), grad.getInputGrad(), where);
        accumulate(norm.getWeight(), grad.getWeightGrad(), where);
        return success();
      })
      .Case([&](SoftmaxOp softmax) {
        // dx = y * (dy - sum(dy * y, axis)).
        int64_t rank = cast<RankedTensorType>(y.getType()).getRank();
        int64_t axis = softmax.getAxis();
        if (axis < 0)
          axis += rank;
        Value dyy = MulOp::create(builder, where, dy, y);
        Value sum = ReduceOp::create(builder, where, ReduceKind::Sum, dyy,
                                     ArrayRef<int64_t>{axis},
                                     /*keep_dims=*/true);
        Value centered = SubOp::create(builder, where, dy, sum);
        accumulate(softmax.getInput(),
                   MulOp::create(builder, where, y, centered), where);
        return success();
      })
      .Case([&](ReduceOp reduce) -> LogicalResult {
        if (reduce.getKind() == ReduceKind::Max)
          return noRule("reduce max is not differentiated (its gradient "
                        "needs the argmax)");
        auto inputType = cast<RankedTensorType>(reduce.getInput().getType());
        SmallVector<int64_t> kept(inputType.getShape());
        int64_t count = 1;
        for (int64_t axis : reduce.getAxes()) {
          int64_t a = axis < 0 ? axis + inputType.getRank() : axis;
          count *= kept[a];
          kept[a] = 1;
        }
        Value g = ReshapeOp::create(builder, where, dy,
                                    builder.getDenseI64ArrayAttr(kept));
        g = BroadcastOp::create(
            builder, where, g,
            builder.getDenseI64ArrayAttr(inputType.getShape()));
        if (reduce.getKind() == ReduceKind::Mean)
          g = scale(g, 1.0 / static_cast<double>(count));
        accumulate(reduce.getInput(), g, where);
        return success();
      })
      .Case([&](RopeOp rope) {
        accumulate(
            rope.getInput(),
            RopeOp::create(builder, where, dy, rope.getPositions(),
                           rope.getThetaAttr(),
                           rope.getInverse() ? nullptr : builder.getUnitAttr()),
            where);
        return success();
      })
      .Case([&](EmbeddingOp embedding) -> LogicalResult {
        Value table = embedding.getTable();
        if (!needsGradient(table))
          return success();
        auto tableType = cast<RankedTensorType>(table.getType());
        if (!isa<FloatType>(tableType.getElementType()) ||
            isa<Float8E4M3FNType, Float8E5M2Type>(tableType.getElementType()))
          return noRule("quantized embedding tables are not trained");
        accumulate(table,
                   EmbeddingGradOp::create(builder, where, tableType,
                                           castTo(dy, tableType, where),
                                           embedding.getIndices()),
                   where);
        return success();
      })
      .Case([&](CrossEntropyOp loss) {
        accumulate(loss.getLogits(),
                   CrossEntropyGradOp::create(builder, where, loss, dy), where);
        return success();
      })
      .Case([&](ReshapeOp reshape) {
        auto inputType = cast<RankedTensorType>(reshape.getInput().getType());
        accumulate(reshape.getInput(),
                   ReshapeOp::create(
                       builder, where, dy,
                       builder.getDenseI64ArrayAttr(inputType.getShape())),
                   where);
        return success();
      })
      .Case([&](TransposeOp transpose) {
        ArrayRef<int64_t> perm = transpose.getPermutation();
        SmallVector<int64_t> inverse(perm.size());
        for (auto [i, p] : llvm::enumerate(perm))
          inverse[p] = i;
        accumulate(transpose.getInput(),
                   TransposeOp::create(builder, where, dy,
                                       builder.getDenseI64ArrayAttr(inverse)),
                   where);
        return success();
      })
      .Case([&](SliceOp slice) -> LogicalResult {
        if (std::optional<ArrayRef<int64_t>> strides = slice.getStrides();
            strides && llvm::any_of(*strides, [](int64_t s) { return s != 1; }))
          return noRule("strided slices are not differentiated");
        auto inputType = cast<RankedTensorType>(slice.getInput().getType());
        SmallVector<int64_t> high;
        for (auto [dim, offset, size] : llvm::zip_equal(
                 inputType.getShape(), slice.getOffsets(), slice.getSizes()))
          high.push_back(dim - offset - size);
        accumulate(slice.getInput(),
                   PadOp::create(builder, where, dy, slice.getOffsetsAttr(),
                                 builder.getDenseI64ArrayAttr(high)),
                   where);
        return success();
      })
      .Case([&](ConcatOp concat) {
        auto resultType = cast<RankedTensorType>(y.getType());
        int64_t axis = concat.getAxis();
        if (axis < 0)
          axis += resultType.getRank();
        int64_t offset = 0;
        for (Value input : concat.getInputs()) {
          auto type = cast<RankedTensorType>(input.getType());
          if (needsGradient(input)) {
            SmallVector<int64_t> offsets(type.getRank(), 0);
            offsets[axis] = offset;
            accumulate(
                input,
                SliceOp::create(
                    builder, where, dy, builder.getDenseI64ArrayAttr(offsets),
                    builder.getDenseI64ArrayAttr(type.getShape()), nullptr),
                where);
          }
          offset += type.getDimSize(axis);
        }
        return success();
      })
      .Case([&](CastOp castOp) {
        accumulate(castOp.getInput(),
                   castTo(dy, gradientType(castOp.getInput()), where), where);
        return success();
      })
      .Case([&](KVCacheAppendOp) {
        return noRule("training graphs do not append to a KV cache");
      })
      .Case([&](FusionOp) {
        return noRule("run memwall-autodiff before memwall-fuse");
      })
      .Default([&](Operation *) { return noRule("no rule for this op"); });
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
        (returnGradients ||
         getArgKind(function, arg.getArgNumber()) == ArgKind::Weight))
      requiresGrad.insert(arg);
  for (Operation *op : forward)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return requiresGrad.contains(v); }))
      for (Value result : op->getResults())
        if (isFloatTensor(result))
          requiresGrad.insert(result);

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
        auto type = gradientType(arg);
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
      if (getArgKind(function, arg.getArgNumber()) == ArgKind::Weight &&
          isFloatTensor(arg))
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
    }
    func::ReturnOp::create(builder, returnOp.getLoc(), results);
    returnOp.erase();
    function.setFunctionType(FunctionType::get(ctx, body.getArgumentTypes(),
                                               ValueRange(results).getTypes()));
    function.setAllArgAttrs(argAttrs);
  }
};

} // namespace
