//===- Precision.cpp - retype a forward graph by precision policy ---------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace memwall {
#define GEN_PASS_DEF_PRECISION
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

namespace {
/// `loc` named "<its name><suffix>" (a NameLoc keeps its child location);
/// a location without a name is kept.
Location withNameSuffix(Location loc, StringRef suffix) {
  auto name = dyn_cast<NameLoc>(loc);
  if (!name)
    return loc;
  return NameLoc::get(
      StringAttr::get(loc.getContext(), name.getName().getValue() + suffix),
      name.getChildLoc());
}

struct Policy {
  Type weights;     // storage type of weights
  Type activations; // type of every other float value
  bool fp8Gemms = false;
};

std::optional<Policy> lookupPolicy(MLIRContext *ctx, StringRef name) {
  Type f32 = Float32Type::get(ctx), bf16 = BFloat16Type::get(ctx),
       f16 = Float16Type::get(ctx);
  if (name == "fp32")
    return Policy{f32, f32};
  if (name == "bf16-mixed")
    return Policy{bf16, bf16};
  if (name == "fp16-mixed")
    return Policy{f16, f16};
  if (name == "fp8-mixed")
    return Policy{bf16, bf16, /*fp8Gemms=*/true};
  if (name == "int8-weights")
    return Policy{IntegerType::get(ctx, 8), bf16};
  if (name == "fp8-weights")
    return Policy{Float8E4M3FNType::get(ctx), bf16};
  if (name == "int4-weights")
    return Policy{IntegerType::get(ctx, 4), bf16};
  return std::nullopt;
}

std::optional<Type> lookupElementType(MLIRContext *ctx, StringRef name);
} // namespace

llvm::Error memwall::validatePrecisionOptions(llvm::StringRef policy,
                                              llvm::StringRef kvCacheDtype) {
  // Names only; the types live in a throwaway context.
  MLIRContext ctx;
  if (!policy.empty() && !lookupPolicy(&ctx, policy))
    return llvm::createStringError(
        "unknown policy '" + policy +
        "' (expected fp32, bf16-mixed, fp16-mixed, fp8-mixed, int8-weights, "
        "fp8-weights or int4-weights)");
  if (!kvCacheDtype.empty() && !lookupElementType(&ctx, kvCacheDtype))
    return llvm::createStringError("unknown KV-cache dtype '" +
                                   kvCacheDtype +
                                   "' (expected f32, bf16, f16, f8E4M3FN or "
                                   "f8E5M2)");
  return llvm::Error::success();
}

namespace {
std::optional<Type> lookupElementType(MLIRContext *ctx, StringRef name) {
  if (name == "f32")
    return Float32Type::get(ctx);
  if (name == "bf16")
    return BFloat16Type::get(ctx);
  if (name == "f16")
    return Float16Type::get(ctx);
  if (name == "f8E4M3FN")
    return Float8E4M3FNType::get(ctx);
  if (name == "f8E5M2")
    return Float8E5M2Type::get(ctx);
  return std::nullopt;
}

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

Type withElement(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

struct PrecisionPass : public memwall::impl::PrecisionBase<PrecisionPass> {
  using PrecisionBase::PrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (llvm::Error error = validatePrecisionOptions(policy, kvCacheDtype)) {
      mlir::emitError(module.getLoc())
          << "memwall-precision: " << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    std::optional<Policy> chosen;
    if (!policy.empty())
      chosen = lookupPolicy(ctx, policy);
    std::optional<Type> kvType;
    if (!kvCacheDtype.empty())
      kvType = lookupElementType(ctx, kvCacheDtype);
    bool differentiated = false;
    module.walk([&](Operation *op) {
      differentiated |= op->hasAttr(MemWallDialect::kPhaseAttrName) ||
                        isa<FusionOp>(op);
    });
    if (differentiated) {
      mlir::emitError(module.getLoc())
          << "memwall-precision runs on forward graphs, before "
             "memwall-autodiff and memwall-fuse";
      return signalPassFailure();
    }
    // Weight-only quantization is an inference format: a training step's
    // optimizer updates its weights in high precision.
    bool quantizesWeights = chosen && chosen->weights != chosen->activations;
    for (auto function : module.getOps<func::FuncOp>()) {
      if (quantizesWeights && returnsLoss(function)) {
        function.emitError("memwall-precision: '")
            << policy << "' quantizes weights for inference, but @"
            << function.getName()
            << " is a training step (it returns a loss): use bf16-mixed, "
               "fp16-mixed or fp8-mixed";
        return signalPassFailure();
      }
      if (!function.isExternal() &&
          failed(retype(function, chosen, kvType)))
        return signalPassFailure();
    }
    if (chosen)
      module->setAttr(MemWallDialect::kPrecisionAttrName,
                      StringAttr::get(ctx, policy));
  }

  void retypeArgument(BlockArgument arg, Type type) {
    if (arg.getType() != type)
      ++numValuesRetyped;
    arg.setType(type);
  }

  LogicalResult retype(func::FuncOp function, std::optional<Policy> chosen,
                       std::optional<Type> kvType) {
    Block &body = function.getBody().front();
    OpBuilder builder(function.getContext());
    builder.setInsertionPointToStart(&body);
    Type activation = chosen ? chosen->activations : Type();
    // One fp8 copy per value, however many GEMMs read it (q, k and v read
    // one normalized input): what Transformer Engine casts once and saves.
    DenseMap<std::pair<Value, int>, Value> fp8Copies;
    // Weights quantized weight-only, by argument number.
    SmallVector<unsigned> quantized;
    for (BlockArgument arg : function.getArguments()) {
      if (!isFloatTensor(arg.getType()))
        continue;
      ArgKind kind = ArgKind::Input;
      if (auto attr = function.getArgAttrOfType<ArgKindAttr>(
              arg.getArgNumber(), MemWallDialect::kArgKindAttrName))
        kind = attr.getValue();
      // Optimizer states keep f32; quantization scales (an NF4 base's)
      // keep their format.
      if (kind == ArgKind::OptimizerState || isQuantizationMetadata(arg))
        continue;
      if (kind == ArgKind::KVCache && kvType) {
        retypeArgument(arg, withElement(arg.getType(), *kvType));
        continue;
      }
      if (!chosen)
        continue;
      if (kind != ArgKind::Weight) {
        retypeArgument(arg, withElement(arg.getType(), activation));
        continue;
      }
      bool weightOnly = !isa<FloatType>(chosen->weights) ||
                        isa<Float8E4M3FNType>(chosen->weights);
      // Weight-only quantization (AWQ, GPTQ, TensorRT-LLM) quantizes the
      // linear layers; norm weights and embedding tables stay in the
      // activation type.
      if (weightOnly && !llvm::all_of(arg.getUsers(), [](Operation *user) {
            return isa<MatmulOp>(user);
          })) {
        retypeArgument(arg, withElement(arg.getType(), activation));
        continue;
      }
      retypeArgument(arg, withElement(arg.getType(), chosen->weights));
      if (weightOnly)
        quantized.push_back(arg.getArgNumber());
    }
    // Last first: a scales argument goes right after its weight.
    for (unsigned index : llvm::reverse(quantized))
      if (failed(addScales(function, index, activation, builder)))
        return failure();
    // Re-infer every op's result types in program order.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto castOp = dyn_cast<CastOp>(op)) {
        // A cast the new types made an identity disappears.
        if (castOp.getInput().getType() ==
            withElement(castOp.getInput().getType(), castOp.getElementType())) {
          castOp.getResult().replaceAllUsesWith(castOp.getInput());
          castOp.erase();
          continue;
        }
      }
      if (auto kvAppend = dyn_cast<KVCacheAppendOp>(op); kvAppend && kvType)
        retypeCacheAppend(kvAppend, builder);
      if (auto matmul = dyn_cast<MatmulOp>(op);
          matmul && chosen && chosen->fp8Gemms)
        castGemmInputs(matmul, builder, fp8Copies);
      if (failed(reinfer(op)))
        return failure();
    }
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    function.setFunctionType(FunctionType::get(
        function.getContext(), body.getArgumentTypes(),
        returnOp.getOperandTypes()));
    return success();
  }

  /// The scales of weight `index` (a new argument after it, of the
  /// activation type) and a dequantize at each use: one scale per output
  /// channel, and for i4 per group of kInt4GroupSize along K, as AWQ and
  /// GPTQ store them.
  LogicalResult addScales(func::FuncOp function, unsigned index,
                          Type activation, OpBuilder &builder) {
    BlockArgument weight = function.getArgument(index);
    auto type = cast<RankedTensorType>(weight.getType());
    int64_t rank = type.getRank();
    std::optional<int64_t> kAxis;
    for (OpOperand &use : weight.getUses()) {
      auto matmul = cast<MatmulOp>(use.getOwner());
      bool isRhs = use.getOperandNumber() == 1;
      bool transposed =
          isRhs ? matmul.getTransposeRhs() : matmul.getTransposeLhs();
      // K is the rhs's rows and the lhs's columns, unless transposed.
      int64_t axis = (isRhs != transposed) ? rank - 2 : rank - 1;
      if (kAxis && *kAxis != axis)
        return matmul.emitOpError("memwall-precision: weight #")
               << index << " is read with K along two different dims; its "
               << "scales need one layout";
      kAxis = axis;
    }
    SmallVector<int64_t> scaleShape(rank, 1);
    int64_t channelAxis = *kAxis == rank - 1 ? rank - 2 : rank - 1;
    scaleShape[channelAxis] = type.getDimSize(channelAxis);
    int64_t k = type.getDimSize(*kAxis);
    if (type.getElementType().isInteger(4) && k % kInt4GroupSize == 0)
      scaleShape[*kAxis] = k / kInt4GroupSize;
    auto scalesType = RankedTensorType::get(scaleShape, activation);
    // Named after the weight: "<weight>.scales", "<weight>.dequantized".
    auto suffixed = [&](StringRef suffix) {
      return withNameSuffix(weight.getLoc(), suffix);
    };
    NamedAttrList attrs;
    attrs.append(MemWallDialect::kArgKindAttrName,
                 ArgKindAttr::get(function.getContext(), ArgKind::Weight));
    // A frozen weight's scales are frozen with it.
    if (!isTrainableWeight(function, index))
      attrs.append(MemWallDialect::kFrozenAttrName,
                   UnitAttr::get(function.getContext()));
    if (failed(function.insertArgument(
            index + 1, scalesType, attrs.getDictionary(function.getContext()),
            suffixed(".scales"))))
      return failure();
    Value scales = function.getArgument(index + 1);
    Location dequantizedLoc = suffixed(".dequantized");
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : weight.getUses())
      uses.push_back(&use);
    for (OpOperand *use : uses) {
      builder.setInsertionPoint(use->getOwner());
      use->set(DequantizeOp::create(builder, dequantizedLoc,
                                    withElement(type, activation), weight,
                                    scales, /*zeroPoints=*/Value(),
                                    /*codebook=*/nullptr));
    }
    return success();
  }

  /// fp8 GEMM inputs: both operands cast to f8E4M3FN (the product is bf16),
  /// each value once, right after it is defined. fp8 tensor cores read both
  /// operands K-major (wgmma, cuBLASLt's fp8 "TN" layout), so an operand
  /// stored the other way (an rhs [K, N], an lhs [K, M]) reads the cast's
  /// transpose (one per value, as Transformer Engine's cast-transpose
  /// makes: the forward GEMM reads X, the weight-gradient GEMM X^T), and
  /// the matmul reads it as [N, K] (transpose_rhs) or [M, K].
  void castGemmInputs(MatmulOp matmul, OpBuilder &builder,
                      DenseMap<std::pair<Value, int>, Value> &fp8Copies) {
    Type f8 = Float8E4M3FNType::get(matmul.getContext());
    for (bool isLhs : {true, false}) {
      OpOperand &operand =
          isLhs ? matmul.getLhsMutable() : matmul.getRhsMutable();
      Value value = operand.get();
      auto type = cast<RankedTensorType>(value.getType());
      if (!isa<FloatType>(type.getElementType()) ||
          type.getElementType() == f8)
        return;
      bool transpose =
          isLhs ? matmul.getTransposeLhs() : !matmul.getTransposeRhs();
      // "<value>.fp8", and its transpose "<value>.fp8t": the bundle's
      // buffers and the reference's values are named after them.
      // (Copied out of the map: a second lookup may move its entries.)
      Value narrowed = fp8Copies.lookup({value, 0});
      if (!narrowed) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPointAfterValue(value);
        narrowed =
            CastOp::create(builder, withNameSuffix(value.getLoc(), ".fp8"),
                           value, TypeAttr::get(f8));
        fp8Copies[{value, 0}] = narrowed;
      }
      Value copy = narrowed;
      if (transpose) {
        copy = fp8Copies.lookup({value, 1});
        if (!copy) {
          OpBuilder::InsertionGuard guard(builder);
          builder.setInsertionPointAfterValue(narrowed);
          SmallVector<int64_t> permutation =
              llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
          std::swap(permutation[type.getRank() - 2],
                    permutation[type.getRank() - 1]);
          copy = TransposeOp::create(
              builder, withNameSuffix(value.getLoc(), ".fp8t"), narrowed,
              builder.getDenseI64ArrayAttr(permutation));
          fp8Copies[{value, 1}] = copy;
        }
      }
      operand.set(copy);
      if (transpose && isLhs)
        matmul.setTransposeLhs(false);
      else if (transpose)
        matmul.setTransposeRhs(true);
    }
  }

  /// Appending to a narrower cache: cast the new entries down first.
  /// Attention reads the cache as stored and dequantizes in the kernel (as
  /// vLLM's and TensorRT-LLM's fp8 KV caches do), so nothing is widened.
  void retypeCacheAppend(KVCacheAppendOp append, OpBuilder &builder) {
    auto cacheType = cast<RankedTensorType>(append.getCache().getType());
    auto updateType = cast<RankedTensorType>(append.getUpdate().getType());
    if (cacheType.getElementType() == updateType.getElementType())
      return;
    builder.setInsertionPoint(append);
    append.getUpdateMutable().set(
        CastOp::create(builder, append.getLoc(), append.getUpdate(),
                       TypeAttr::get(cacheType.getElementType())));
  }

  LogicalResult reinfer(Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return success();
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return op->emitOpError("cannot take the precision policy's types");
    for (auto [result, type] : llvm::zip_equal(op->getResults(), types)) {
      if (result.getType() != type)
        ++numValuesRetyped;
      result.setType(type);
    }
    return success();
  }
};

} // namespace
