//===- KernelPatterns.cpp - configured ops to kernels and steps -----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KernelPatterns.h"

#include "AttentionCodegen.h"
#include "AttentionGradCodegen.h"
#include "DequantizeCodegen.h"
#include "GemmCodegen.h"
#include "KernelCodegen.h"
#include "LayoutCodegen.h"
#include "TrainingCodegen.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/FusionCost.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"

#include <algorithm>

using namespace mlir;
using namespace memwall;

void memwall::populateBufferTypeConversion(TypeConverter &converter) {
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([](RankedTensorType type) -> Type {
    return MemRefType::get(type.getShape(), type.getElementType());
  });
}

namespace {
/// Lowers the ops configured as `family`.
class StepLowering : public ConversionPattern {
public:
  StepLowering(const TypeConverter &converter, MLIRContext *ctx,
               KernelFamily family, const KernelLoweringState &state)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        family(family), state(state) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const final {
    auto config = op->getAttrOfType<KernelConfigAttr>(
        MemWallDialect::kKernelConfigAttrName);
    if (!config || config.getFamily() != family)
      return rewriter.notifyMatchFailure(op, "configured for another family");
    // The converted buffer of each value the op reads: its operands and,
    // inside a fusion, the body's arguments that stand for them.
    DenseMap<Value, Value> buffers;
    for (auto [operand, buffer] : llvm::zip_equal(op->getOperands(), operands))
      buffers[operand] = buffer;
    if (auto fusion = dyn_cast<FusionOp>(op))
      for (auto [argument, buffer] :
           llvm::zip_equal(fusion.getBodyBlock().getArguments(), operands))
        buffers[argument] = buffer;
    return lower(op, config, buffers, rewriter);
  }

protected:
  virtual LogicalResult lower(Operation *op, KernelConfigAttr config,
                              const DenseMap<Value, Value> &buffers,
                              ConversionPatternRewriter &rewriter) const = 0;

  /// A new buffer for `value`, named as the bundle names it.
  Value allocate(ConversionPatternRewriter &rewriter, Location loc,
                 Value value) const {
    return allocate(rewriter, loc, cast<RankedTensorType>(value.getType()),
                    state.bufferNames.lookup(value));
  }
  Value allocate(ConversionPatternRewriter &rewriter, Location loc,
                 RankedTensorType type, StringRef name) const {
    auto alloc = memref::AllocOp::create(
        rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()));
    alloc->setAttr(MemWallDialect::kBufferAttrName,
                   rewriter.getStringAttr(name));
    return alloc;
  }

  /// `count` i32 arrival counters of kernel `kernelName` (a split-K GEMM's,
  /// a split-keys attention's): a buffer zeroed at load that every launch
  /// leaves zero, so memwall-plan-arena keeps it for the whole bundle.
  Value allocateCounters(ConversionPatternRewriter &rewriter, Location loc,
                         int64_t count, StringRef kernelName) const {
    Value counters = allocate(
        rewriter, loc, RankedTensorType::get({count}, rewriter.getI32Type()),
        (kernelName + "_counters").str());
    counters.getDefiningOp()->setAttr(MemWallDialect::kCountersAttrName,
                                      rewriter.getUnitAttr());
    return counters;
  }

  /// The buffer of `append`'s result when it appends in place: its cache's
  /// buffer viewed at the appended length (ConvertToGPU gives the cache
  /// argument that buffer's pitch); null if the cache is no argument.
  Value viewAppendedCache(ConversionPatternRewriter &rewriter, Location loc,
                          KVCacheAppendOp append, Value result,
                          const DenseMap<Value, Value> &buffers) const {
    Value cache = buffers.lookup(append.getCache());
    if (!isa_and_nonnull<BlockArgument>(cache))
      return {};
    auto view = ViewOp::create(
        rewriter, loc, getTypeConverter()->convertType(append.getType()),
        cache);
    view->setAttr(MemWallDialect::kBufferAttrName,
                  rewriter.getStringAttr(state.bufferNames.lookup(result)));
    return view;
  }

  /// The source locations of `ops`, as the bundle lists them.
  static ArrayAttr locationsOf(Builder &b, ArrayRef<Operation *> ops) {
    SmallVector<Attribute> locs;
    for (Operation *op : ops)
      locs.push_back(b.getStringAttr(formatLocationForReport(op->getLoc())));
    return b.getArrayAttr(locs);
  }

  /// A step launching the kernel `config` names on `args`.
  void launch(ConversionPatternRewriter &rewriter, Location loc,
              KernelConfigAttr config, ValueRange args, ArrayAttr ops) const {
    launch(rewriter, loc, config.getName(), config.getGrid(), config.getBlock(),
           config.getSharedBytes(), args, ops, config.getPredictedTime());
  }
  /// A step launching kernel `name` (one of several an op lowers to).
  void launch(ConversionPatternRewriter &rewriter, Location loc, StringRef name,
              ArrayRef<int64_t> grid, ArrayRef<int64_t> block,
              int64_t sharedBytes, ValueRange args, ArrayAttr ops,
              double seconds) const {
    gpu::GPUModuleOp kernels = state.kernels;
    LaunchOp::create(rewriter, loc,
                     SymbolRefAttr::get(
                         kernels.getSymNameAttr(),
                         {FlatSymbolRefAttr::get(rewriter.getContext(), name)}),
                     args, rewriter.getDenseI64ArrayAttr(grid),
                     rewriter.getDenseI64ArrayAttr(block),
                     rewriter.getI64IntegerAttr(sharedBytes), ops,
                     rewriter.getF64FloatAttr(seconds));
  }

  KernelFamily family;
  const KernelLoweringState &state;
};

/// The launch operand of a kernel parameter of type `param`: `buffer`, or
/// for a tensor map the descriptor nvgpu.tma.create.descriptor builds over
/// `buffer` viewed row-major with the map's rank (leading dims folded into
/// the outermost one, e.g. an lhs [B, T, K] as [B·T, K]) and cast to
/// unranked, the box from the map's type. memwall's bundle reads the tensor
/// map's global shape and strides back from that view.
static Value getLaunchOperand(OpBuilder &b, Location loc, Value buffer,
                              Type param) {
  auto mapType = dyn_cast<nvgpu::TensorMapDescriptorType>(param);
  if (!mapType)
    return buffer;
  auto type = cast<MemRefType>(buffer.getType());
  ArrayRef<int64_t> box = mapType.getTensor().getShape();
  int64_t inner = static_cast<int64_t>(box.size()) - 1;
  SmallVector<int64_t> shape(type.getShape().take_back(inner));
  shape.insert(shape.begin(), type.getNumElements() /
                                  std::max<int64_t>(1, computeProduct(shape)));
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  Type element = type.getElementType();
  Value view = memref::ReinterpretCastOp::create(
      b, loc, MemRefType::get(shape, element), buffer, /*offset=*/0, shape,
      strides);
  Value unranked = memref::CastOp::create(
      b, loc, UnrankedMemRefType::get(element, /*memorySpace=*/0), view);
  SmallVector<Value> boxSizes;
  for (int64_t size : box)
    boxSizes.push_back(arith::ConstantIndexOp::create(b, loc, size));
  return nvgpu::TmaCreateDescriptorOp::create(b, loc, mapType, unranked,
                                              boxSizes);
}

/// Fusions and lone ops run as one generated kernel (KernelCodegen.h):
/// the analysis the fusion cost model made, again.
class AnalyzedKernelLowering : public StepLowering {
public:
  using StepLowering::StepLowering;

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    FailureOr<KernelAnalysis> analysis = analyze(op);
    if (failed(analysis))
      return rewriter.notifyMatchFailure(op, "the configuration is stale");
    SmallVector<Value> outputs, results;
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      auto yield = cast<YieldOp>(fusion.getBodyBlock().getTerminator());
      outputs.assign(yield.getValues().begin(), yield.getValues().end());
      results.assign(fusion.getResults().begin(), fusion.getResults().end());
    } else {
      if (op->getNumResults() != 1)
        return rewriter.notifyMatchFailure(op, "one result per lone op");
      outputs.push_back(op->getResult(0));
      results.push_back(op->getResult(0));
    }
    if (analysis->kind == FusionKind::MatmulEpilogue)
      return lowerGemm(op, config, *analysis, buffers, results, rewriter);
    const GemmTiling &tiling = analysis->tiling;
    bool splitK = analysis->kind == FusionKind::Gemm && tiling.splitK > 1;
    if (splitK && config.getSplits() != tiling.splitK)
      return rewriter.notifyMatchFailure(op, "the configuration is stale");
    FailureOr<gpu::GPUFuncOp> kernel =
        analysis->kind == FusionKind::Gemm
            ? emitGemmKernel(state.kernels, config.getName(), *analysis,
                             outputs)
        : analysis->kind == FusionKind::Dequantize
            ? emitDequantizeKernel(state.kernels, config.getName(), *analysis)
            : emitKernel(state.kernels, config.getName(), *analysis, outputs);
    if (failed(kernel))
      return failure();
    SmallVector<Value> args, written;
    for (auto [input, param] :
         llvm::zip(analysis->inputs, kernel->getArgumentTypes()))
      args.push_back(getLaunchOperand(rewriter, op->getLoc(),
                                      buffers.lookup(input.value), param));
    for (auto [output, result] : llvm::zip_equal(outputs, results)) {
      Value buffer = allocateResult(rewriter, op->getLoc(), *analysis, output,
                                    result, buffers);
      if (!buffer)
        return rewriter.notifyMatchFailure(op, "the configuration is stale");
      // Written in place: the two parameters alias, so neither is noalias.
      if (Value reused = reusedOperand(result))
        for (auto [i, input] : llvm::enumerate(analysis->inputs))
          if (buffers.lookup(input.value) == buffers.lookup(reused)) {
            kernel->removeArgAttr(i, "llvm.noalias");
            kernel->removeArgAttr(args.size(), "llvm.noalias");
          }
      written.push_back(buffer);
      args.push_back(buffer);
    }
    if (splitK) {
      // The f32 partials [splitK, rhsOperands, M, N], an arena temporary,
      // and the tiles' arrival counters.
      const GemmProblem &problem = analysis->gemm;
      args.push_back(
          allocate(rewriter, op->getLoc(),
                   RankedTensorType::get({tiling.splitK, problem.rhsOperands,
                                          problem.m, problem.n},
                                         rewriter.getF32Type()),
                   (config.getName() + "_partials").str()));
      args.push_back(allocateCounters(rewriter, op->getLoc(),
                                      getGemmSplitKCounters(tiling),
                                      config.getName()));
    }
    launch(rewriter, op->getLoc(), config, args,
           locationsOf(rewriter, analysis->ops));
    rewriter.replaceOp(op, written);
    return success();
  }

  /// The buffer the kernel writes `result` (`output` in the op) to: a new
  /// one, or for a heads layout ending in an in-place KV-cache append, the
  /// cache's (null if that cache is no argument).
  Value allocateResult(ConversionPatternRewriter &rewriter, Location loc,
                       const KernelAnalysis &analysis, Value output,
                       Value result,
                       const DenseMap<Value, Value> &buffers) const {
    for (const GemmHeadsLayout &layout : analysis.headsLayouts)
      if (layout.append && layout.getOutput() == output)
        return viewAppendedCache(rewriter, loc, layout.append, result, buffers);
    if (Value reused = reusedOperand(result)) {
      auto view = ViewOp::create(
          rewriter, loc, getTypeConverter()->convertType(result.getType()),
          buffers.lookup(reused));
      view->setAttr(MemWallDialect::kBufferAttrName,
                    rewriter.getStringAttr(state.bufferNames.lookup(result)));
      return view;
    }
    return allocate(rewriter, loc, result);
  }

  /// The operand an elementwise kernel writes `result` over (it dies here),
  /// as the memory analysis counted it; null for a new buffer.
  Value reusedOperand(Value result) const {
    if (family != KernelFamily::Elementwise)
      return {};
    return getReusedOperand(cast<OpResult>(result));
  }

  virtual LogicalResult lowerGemm(Operation *op, KernelConfigAttr config,
                                  const KernelAnalysis &analysis,
                                  const DenseMap<Value, Value> &buffers,
                                  ArrayRef<Value> results,
                                  ConversionPatternRewriter &rewriter) const {
    return rewriter.notifyMatchFailure(op, "not a generated kernel");
  }

  FailureOr<KernelAnalysis> analyze(Operation *op) const {
    if (auto fusion = dyn_cast<FusionOp>(op))
      return analyzeFusion(fusion, state.target);
    // A dequantize kernel dequantizes its scales too.
    if (isa<DequantizeOp>(op))
      return analyzeOpKernel(op, state.target);
    return analyzeKernel({op}, state.target);
  }
};

/// Elementwise kernels: vectorsPerThread 128-bit vectors per thread.
class ElementwiseLowering : public AnalyzedKernelLowering {
public:
  ElementwiseLowering(const TypeConverter &converter, MLIRContext *ctx,
                      const KernelLoweringState &state)
      : AnalyzedKernelLowering(converter, ctx, KernelFamily::Elementwise,
                               state) {}
};

/// Dequantize kernels (DequantizeCodegen.h): a materialized dequantize
/// writing the dequantized weight, 16 bytes a thread.
class DequantizeLowering : public AnalyzedKernelLowering {
public:
  DequantizeLowering(const TypeConverter &converter, MLIRContext *ctx,
                     const KernelLoweringState &state)
      : AnalyzedKernelLowering(converter, ctx, KernelFamily::Dequantize,
                               state) {}
};

/// Row reductions: one block per row, warp shuffles then shared memory.
class RowReductionLowering : public AnalyzedKernelLowering {
public:
  RowReductionLowering(const TypeConverter &converter, MLIRContext *ctx,
                       const KernelLoweringState &state)
      : AnalyzedKernelLowering(converter, ctx, KernelFamily::RowReduction,
                               state) {}
};

/// memwall's own GEMM with its fused epilogue (GemmCodegen.h): a kernel
/// launched with the tiling's dynamic shared memory.
class GeneratedGemmLowering : public AnalyzedKernelLowering {
public:
  GeneratedGemmLowering(const TypeConverter &converter, MLIRContext *ctx,
                        const KernelLoweringState &state)
      : AnalyzedKernelLowering(converter, ctx, KernelFamily::GeneratedGemm,
                               state) {}
};

/// Matmuls (with their epilogue) run as one cuBLASLt call: a step, no
/// kernel.
class GemmLowering : public AnalyzedKernelLowering {
public:
  GemmLowering(const TypeConverter &converter, MLIRContext *ctx,
               const KernelLoweringState &state)
      : AnalyzedKernelLowering(converter, ctx, KernelFamily::Gemm, state) {}

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    // A batched call (KernelAnalysis::batchedMatmuls) is the fusion's
    // matmuls alone, lowered as configured: the analysis that chose it
    // needs the function's arguments, which the conversion is replacing.
    auto fusion = dyn_cast<FusionOp>(op);
    GemmConfigAttr gemm = config.getGemm();
    if (fusion && gemm && gemm.getBatch() > 1 &&
        fusion.getBodyBlock().getOperations().size() > 2 &&
        llvm::all_of(fusion.getBodyBlock().without_terminator(),
                     llvm::IsaPred<MatmulOp>))
      return lowerBatchedGemm(fusion, config, buffers, rewriter);
    return AnalyzedKernelLowering::lower(op, config, buffers, rewriter);
  }

  LogicalResult lowerGemm(Operation *op, KernelConfigAttr config,
                          const KernelAnalysis &analysis,
                          const DenseMap<Value, Value> &buffers,
                          ArrayRef<Value> results,
                          ConversionPatternRewriter &rewriter) const override {
    auto matmul = cast<MatmulOp>(analysis.anchor);
    const GemmEpilogue &epilogue = analysis.epilogue;
    Value bias = epilogue.bias ? buffers.lookup(epilogue.bias) : Value();
    Value residual =
        epilogue.residual ? buffers.lookup(epilogue.residual) : Value();
    Value d = allocate(rewriter, op->getLoc(), results.front());
    GemmOp::create(rewriter, op->getLoc(),
                   rewriter.getStringAttr(config.getName()),
                   buffers.lookup(matmul.getLhs()),
                   buffers.lookup(matmul.getRhs()), residual, bias, d,
                   config.getGemm(), locationsOf(rewriter, analysis.ops),
                   rewriter.getF64FloatAttr(config.getPredictedTime()));
    rewriter.replaceOp(op, d);
    return success();
  }

private:
  LogicalResult lowerBatchedGemm(FusionOp fusion, KernelConfigAttr config,
                                 const DenseMap<Value, Value> &buffers,
                                 ConversionPatternRewriter &rewriter) const;
};

/// Sibling matmuls as one strided-batched call: the weights (function
/// arguments) and the products (new buffers) each stacked side by side in
/// the arena, the shared lhs read by every batch.
LogicalResult
GemmLowering::lowerBatchedGemm(FusionOp fusion, KernelConfigAttr config,
                               const DenseMap<Value, Value> &buffers,
                               ConversionPatternRewriter &rewriter) const {
  Location loc = fusion.getLoc();
  Operation *yield = fusion.getBodyBlock().getTerminator();
  SmallVector<Operation *> matmuls;
  for (Operation &op : fusion.getBodyBlock().without_terminator())
    matmuls.push_back(&op);
  if (static_cast<int64_t>(matmuls.size()) != config.getGemm().getBatch())
    return rewriter.notifyMatchFailure(fusion, "the configuration is stale");
  SmallVector<Value> weights, products, replacements(fusion->getNumResults());
  for (Operation *op : matmuls) {
    Value weight = buffers.lookup(cast<MatmulOp>(op).getRhs());
    auto yielded = llvm::find_if(yield->getOpOperands(), [&](OpOperand &use) {
      return use.get() == op->getResult(0);
    });
    if (!isa_and_nonnull<BlockArgument>(weight) ||
        yielded == yield->getOpOperands().end())
      return rewriter.notifyMatchFailure(fusion, "the configuration is stale");
    Value result = fusion->getResult(yielded->getOperandNumber());
    weights.push_back(weight);
    products.push_back(allocate(rewriter, loc, result));
    replacements[cast<OpResult>(result).getResultNumber()] = products.back();
  }
  if (llvm::is_contained(replacements, Value()))
    return rewriter.notifyMatchFailure(fusion, "the configuration is stale");
  auto stack = [&](ArrayRef<Value> sources, StringRef what) -> Value {
    auto view = StackViewOp::create(
        rewriter, loc,
        StackViewOp::getStackedType(cast<MemRefType>(sources[0].getType()),
                                    sources.size()),
        sources);
    view->setAttr(MemWallDialect::kBufferAttrName,
                  rewriter.getStringAttr(config.getName() + "_" + what));
    return view;
  };
  auto anchor = cast<MatmulOp>(matmuls.front());
  GemmOp::create(rewriter, loc, rewriter.getStringAttr(config.getName()),
                 buffers.lookup(anchor.getLhs()), stack(weights, "weights"),
                 Value(), Value(), stack(products, "products"),
                 config.getGemm(), locationsOf(rewriter, matmuls),
                 rewriter.getF64FloatAttr(config.getPredictedTime()));
  rewriter.replaceOp(fusion, replacements);
  return success();
}

/// Data movement (LayoutCodegen.h): one thread per output vector; ropes
/// (alone or as a rope fusion) a run of pairs of a few heads per thread.
class LayoutLowering : public StepLowering {
public:
  LayoutLowering(const TypeConverter &converter, MLIRContext *ctx,
                 const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::Layout, state) {}

protected:
  LogicalResult lowerRopes(FusionOp fusion, KernelConfigAttr config,
                           const DenseMap<Value, Value> &buffers,
                           ConversionPatternRewriter &rewriter) const;

  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    if (auto fusion = dyn_cast<FusionOp>(op))
      return lowerRopes(fusion, config, buffers, rewriter);
    emitLayoutKernel(state.kernels, config.getName(), op, planLayoutKernel(op));
    SmallVector<Value> args;
    Value result;
    if (appendsInPlace(op)) {
      auto append = cast<KVCacheAppendOp>(op);
      result = viewAppendedCache(rewriter, op->getLoc(), append,
                                 append.getResult(), buffers);
      if (!result)
        return rewriter.notifyMatchFailure(op, "the configuration is stale");
      args.push_back(buffers.lookup(append.getUpdate()));
    } else {
      for (Value operand : op->getOperands())
        args.push_back(buffers.lookup(operand));
      result = allocate(rewriter, op->getLoc(), op->getResult(0));
    }
    args.push_back(result);
    launch(rewriter, op->getLoc(), config, args, locationsOf(rewriter, {op}));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A rope fusion: one kernel rotating its ropes, reading their inputs and
/// writing their results through the views (LayoutCodegen.h,
/// emitRopeKernel).
LogicalResult
LayoutLowering::lowerRopes(FusionOp fusion, KernelConfigAttr config,
                           const DenseMap<Value, Value> &buffers,
                           ConversionPatternRewriter &rewriter) const {
  SmallVector<Operation *> ops;
  for (Operation &inner : fusion.getBodyBlock().without_terminator())
    ops.push_back(&inner);
  FailureOr<RopeViews> views = matchRopeViews(ops);
  if (failed(views))
    return rewriter.notifyMatchFailure(fusion, "the configuration is stale");
  Location loc = fusion.getLoc();
  SmallVector<Value> args;
  for (Value source : views->sources)
    args.push_back(buffers.lookup(source));
  args.push_back(buffers.lookup(RopeOp(views->ropes.front()).getPositions()));
  Operation *yield = fusion.getBodyBlock().getTerminator();
  SmallVector<Value> written;
  for (auto [yielded, result] :
       llvm::zip_equal(yield->getOperands(), fusion->getResults())) {
    // k's new rows go into its cache's own buffer.
    auto append = yielded.getDefiningOp<KVCacheAppendOp>();
    Value buffer =
        append ? viewAppendedCache(rewriter, loc, append, result, buffers)
               : allocate(rewriter, loc, result);
    if (!buffer)
      return rewriter.notifyMatchFailure(fusion, "the configuration is stale");
    written.push_back(buffer);
  }
  for (Value output : views->outputs)
    for (auto [yielded, buffer] :
         llvm::zip_equal(yield->getOperands(), written))
      if (yielded == output)
        args.push_back(buffer);
  if (args.size() != 2 * views->ropes.size() + 1)
    return rewriter.notifyMatchFailure(fusion, "the configuration is stale");
  emitRopeKernel(state.kernels, config.getName(), *views,
                 planRopeKernel(*views));
  launch(rewriter, loc, config, args, locationsOf(rewriter, ops));
  rewriter.replaceOp(fusion, written);
  return success();
}

/// The tensor-core attention kernel (AttentionCodegen.h), and with split
/// keys fp32 partials per split and the kernel that combines them.
class AttentionLowering : public StepLowering {
public:
  AttentionLowering(const TypeConverter &converter, MLIRContext *ctx,
                    const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::Attention, state) {}

protected:
  LogicalResult lowerBackward(Operation *op, KernelConfigAttr config,
                              ArrayRef<Operation *> ops,
                              ArrayRef<Value> yielded, ArrayRef<Value> results,
                              const DenseMap<Value, Value> &buffers,
                              ConversionPatternRewriter &rewriter) const;

  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    // A lone flash_attention, or an attention fusion reading and writing
    // through views.
    SmallVector<Operation *> ops{op};
    SmallVector<Value> results(op->getResults()), yielded(op->getResults());
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      ops.clear();
      for (Operation &inner : fusion.getBodyBlock().without_terminator())
        ops.push_back(&inner);
      yielded.assign(fusion.getBodyBlock().getTerminator()->operand_begin(),
                     fusion.getBodyBlock().getTerminator()->operand_end());
    }
    if (llvm::any_of(ops, llvm::IsaPred<FlashAttentionGradOp>))
      return lowerBackward(op, config, ops, yielded, results, buffers,
                           rewriter);
    FailureOr<AttentionViews> views = matchAttentionViews(ops);
    if (failed(views))
      return rewriter.notifyMatchFailure(op, "the configuration is stale");
    FlashAttentionOp attention = views->attention;
    AttentionKernelPlan plan = planAttentionKernel(attention);
    emitAttentionKernel(state.kernels, config.getName(), *views, plan);
    Location loc = op->getLoc();
    SmallVector<Value> args;
    for (Value source : views->sources)
      args.push_back(buffers.lookup(source));
    if (Value mask = attention.getMask())
      args.push_back(buffers.lookup(mask));
    Value out, lse;
    SmallVector<Value> written;
    for (auto [value, result] : llvm::zip_equal(yielded, results)) {
      written.push_back(allocate(rewriter, loc, result));
      if (value == views->output)
        out = written.back();
      else if (value == attention.getLse())
        lse = written.back();
    }
    if (!out || !lse)
      return rewriter.notifyMatchFailure(op, "the configuration is stale");
    args.append({out, lse});
    if (plan.splits > 1) {
      // Split keys: fp32 partials per split and the blocks' arrival
      // counters; the last split of each block of rows merges them.
      ArrayRef<int64_t> outShape = attention.getResult().getType().getShape();
      SmallVector<int64_t> partialShape{plan.splits};
      partialShape.append(outShape.begin(), outShape.end());
      Type f32 = rewriter.getF32Type();
      args.push_back(allocate(rewriter, loc,
                              RankedTensorType::get(partialShape, f32),
                              (config.getName() + "_partial_out").str()));
      partialShape.pop_back();
      args.push_back(allocate(rewriter, loc,
                              RankedTensorType::get(partialShape, f32),
                              (config.getName() + "_partial_lse").str()));
      args.push_back(allocateCounters(rewriter, loc, getAttentionCounters(plan),
                                      config.getName()));
    }
    launch(rewriter, loc, config, args, locationsOf(rewriter, ops));
    rewriter.replaceOp(op, written);
    return success();
  }
};

/// A splat constant: a fill kernel writing a new buffer.
class FillLowering : public StepLowering {
public:
  FillLowering(const TypeConverter &converter, MLIRContext *ctx,
               const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::Fill, state) {}

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    auto constant = cast<arith::ConstantOp>(op);
    emitFillKernel(state.kernels, config.getName(), constant,
                   planFillKernel(constant));
    Value result = allocate(rewriter, op->getLoc(), constant.getResult());
    launch(rewriter, op->getLoc(), config, {result},
           locationsOf(rewriter, {op}));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A reduce over leading axes; with split rows an fp32 partials workspace
/// and the splits' arrival counters.
class ColumnReductionLowering : public StepLowering {
public:
  ColumnReductionLowering(const TypeConverter &converter, MLIRContext *ctx,
                          const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::ColumnReduction, state) {}

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    auto reduce = cast<ReduceOp>(op);
    ColumnReductionPlan plan = planColumnReduction(reduce, state.target);
    emitColumnReductionKernel(state.kernels, config.getName(), reduce, plan);
    Location loc = op->getLoc();
    Value result = allocate(rewriter, loc, reduce.getResult());
    SmallVector<Value> args{buffers.lookup(reduce.getInput()), result};
    if (plan.splits > 1) {
      args.push_back(
          allocate(rewriter, loc,
                   RankedTensorType::get({plan.splits * plan.columns},
                                         rewriter.getF32Type()),
                   (config.getName() + "_partials").str()));
      args.push_back(
          allocateCounters(rewriter, loc, plan.grid[0], config.getName()));
    }
    launch(rewriter, loc, config, args, locationsOf(rewriter, {op}));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// layer_norm_grad / rms_norm_grad: the gradients in new buffers; with
/// several blocks fp32 partials of the parameter gradients and a counter.
class NormGradLowering : public StepLowering {
public:
  NormGradLowering(const TypeConverter &converter, MLIRContext *ctx,
                   const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::NormGrad, state) {}

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    NormGradPlan plan = planNormGradKernel(op, state.target);
    emitNormGradKernel(state.kernels, config.getName(), op, plan);
    Location loc = op->getLoc();
    SmallVector<Value> args, results;
    for (Value operand : op->getOperands())
      args.push_back(buffers.lookup(operand));
    for (Value result : op->getResults())
      results.push_back(allocate(rewriter, loc, result));
    args.append(results);
    if (plan.blocks > 1) {
      args.push_back(
          allocate(rewriter, loc,
                   RankedTensorType::get(
                       {plan.blocks * plan.parameterGrads * plan.columns},
                       rewriter.getF32Type()),
                   (config.getName() + "_partials").str()));
      args.push_back(allocateCounters(rewriter, loc, 1, config.getName()));
    }
    launch(rewriter, loc, config, args, locationsOf(rewriter, {op}));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// adamw (or a horizontal fusion of them) updates in place: each new state
/// is a view of its operand's buffer (a function argument), which the kernel
/// reads and writes.
class OptimizerLowering : public StepLowering {
public:
  OptimizerLowering(const TypeConverter &converter, MLIRContext *ctx,
                    const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::Optimizer, state) {}

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op->getLoc();
    SmallVector<Value> args;
    for (Value operand : op->getOperands())
      args.push_back(buffers.lookup(operand));
    auto aliasing = cast<AliasingOpInterface>(op);
    SmallVector<Value> results;
    for (OpResult result : op->getResults()) {
      Value buffer =
          buffers.lookup(aliasing.getAliasedOperand(result.getResultNumber()));
      if (!isa_and_nonnull<BlockArgument>(buffer))
        return rewriter.notifyMatchFailure(op, "the configuration is stale");
      auto view = ViewOp::create(
          rewriter, loc, getTypeConverter()->convertType(result.getType()),
          buffer);
      view->setAttr(MemWallDialect::kBufferAttrName,
                    rewriter.getStringAttr(state.bufferNames.lookup(result)));
      results.push_back(view);
    }
    // A fusion's updates read its body's arguments, one per operand.
    auto fusion = dyn_cast<FusionOp>(op);
    ValueRange parameters =
        fusion ? ValueRange(fusion.getBodyBlock().getArguments())
               : ValueRange(op->getOperands());
    SmallVector<AdamWOp> updates = getOptimizerUpdates(op);
    emitAdamWKernel(state.kernels, config.getName(), updates, parameters,
                    planAdamWKernel(updates));
    SmallVector<Operation *> sources;
    for (AdamWOp adamw : updates)
      sources.push_back(adamw);
    launch(rewriter, loc, config, args, locationsOf(rewriter, sources));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// embedding_grad: the table gradient in a new buffer, every row written.
class EmbeddingGradLowering : public StepLowering {
public:
  EmbeddingGradLowering(const TypeConverter &converter, MLIRContext *ctx,
                        const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::EmbeddingGrad, state) {}

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    auto grad = cast<EmbeddingGradOp>(op);
    emitEmbeddingGradKernel(state.kernels, config.getName(), grad,
                            planEmbeddingGradKernel(grad));
    Value table = allocate(rewriter, op->getLoc(), grad.getResult());
    launch(rewriter, op->getLoc(), config,
           {buffers.lookup(grad.getGrad()), buffers.lookup(grad.getIndices()),
            table},
           locationsOf(rewriter, {op}));
    rewriter.replaceOp(op, table);
    return success();
  }
};

/// cross_entropy / cross_entropy_grad: the result in a new buffer; a
/// reduced loss's per-row partials and their counter.
class CrossEntropyLowering : public StepLowering {
public:
  CrossEntropyLowering(const TypeConverter &converter, MLIRContext *ctx,
                       const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::CrossEntropy, state) {}

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    if (isLinearCrossEntropyOp(op))
      return lowerLinear(op, config, buffers, rewriter);
    CrossEntropyPlan plan = planCrossEntropyKernel(op);
    emitCrossEntropyKernel(state.kernels, config.getName(), op, plan);
    Location loc = op->getLoc();
    SmallVector<Value> args;
    for (Value operand : op->getOperands())
      args.push_back(buffers.lookup(operand));
    Value result = allocate(rewriter, loc, op->getResult(0));
    args.push_back(result);
    if (plan.reducesRows) {
      args.push_back(allocate(
          rewriter, loc,
          RankedTensorType::get({2 * plan.rows}, rewriter.getF32Type()),
          (config.getName() + "_partials").str()));
      args.push_back(allocateCounters(rewriter, loc, 1, config.getName()));
    }
    launch(rewriter, loc, config, args, locationsOf(rewriter, {op}));
    rewriter.replaceOp(op, result);
    return success();
  }

private:
  LogicalResult lowerLinear(Operation *op, KernelConfigAttr config,
                            const DenseMap<Value, Value> &buffers,
                            ConversionPatternRewriter &rewriter) const;
};

/// linear_cross_entropy(_grad) (TrainingCodegen.h, LinearCrossEntropyPlan):
/// per chunk of vocabulary columns, cuBLASLt GEMMs reading and writing
/// windows of the weight (and its gradient) and row kernels, named after
/// the configured step.
LogicalResult
CrossEntropyLowering::lowerLinear(Operation *op, KernelConfigAttr config,
                                  const DenseMap<Value, Value> &buffers,
                                  ConversionPatternRewriter &rewriter) const {
  MLIRContext *ctx = op->getContext();
  Location loc = op->getLoc();
  LinearCrossEntropyPlan plan = planLinearCrossEntropy(op);
  bool backward = isa<LinearCrossEntropyGradOp>(op);
  Value hidden = buffers.lookup(op->getOperand(0)),
        weight = buffers.lookup(op->getOperand(1)),
        labels = buffers.lookup(op->getOperand(2));
  auto element =
      cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
  Type f32 = rewriter.getF32Type();
  int64_t elementBytes = getElementByteSize(element);
  MathPrecision precision = cast<CostOpInterface>(op).getMathPrecision();
  ArrayAttr ops = locationsOf(rewriter, {op});
  std::string base = config.getName().str();
  auto stepName = [&](StringRef what, int64_t chunk) {
    return base + "_" + what.str() + std::to_string(chunk);
  };
  auto temporary = [&](ArrayRef<int64_t> shape, Type type, StringRef name) {
    return allocate(rewriter, loc, RankedTensorType::get(shape, type), name);
  };
  // Rows [first, first + columns) of a [V, D] buffer, in place.
  auto rowsOf = [&](Value matrix, int64_t chunk, StringRef what) -> Value {
    auto type = MemRefType::get(
        {plan.columns(chunk), plan.hidden}, element,
        StridedLayoutAttr::get(ctx, plan.firstColumn(chunk) * plan.hidden,
                               {plan.hidden, 1}));
    auto view = ViewOp::create(rewriter, loc, type, matrix);
    view->setAttr(MemWallDialect::kBufferAttrName,
                  rewriter.getStringAttr(stepName(what, chunk)));
    return view;
  };
  // D (M x N) = op(A) op(B) [+ C], one cuBLASLt call, timed as a
  // cuBLAS-class GEMM of the op's precision.
  auto gemm = [&](StringRef name, Value a, Value b, Value c, Value d, int64_t m,
                  int64_t n, int64_t k, bool transA, bool transB) {
    int64_t outBytes =
        getElementByteSize(cast<MemRefType>(d.getType()).getElementType());
    KernelWork work;
    work.flops = 2.0 * m * n * k;
    work.bytesRead = static_cast<double>((m * k + k * n) * elementBytes +
                                         (c ? m * n * outBytes : 0));
    work.bytesWritten = static_cast<double>(m * n * outBytes);
    work.precision = precision;
    work.unit = ComputeUnit::Gemm;
    work.gemmShape = classifyGemm(1, m, n, k);
    auto call = GemmConfigAttr::get(ctx, m, n, k, 1, 0, 0, 0, 0,
                                    BoolAttr::get(ctx, transA),
                                    BoolAttr::get(ctx, transB), "none");
    GemmOp::create(rewriter, loc, rewriter.getStringAttr(name), a, b, c,
                   Value(), d, call, ops,
                   rewriter.getF64FloatAttr(
                       estimateKernelTime(work, state.target).timeSeconds));
  };
  // A memory-bound row kernel's time: `bytes` moved.
  auto rowSeconds = [&](double bytes) {
    KernelWork work;
    work.bytesRead = bytes;
    return estimateKernelTime(work, state.target).timeSeconds;
  };
  // The chunk's logits: a buffer of their own, which the arena reuses
  // across chunks.
  auto chunkLogits = [&](int64_t chunk, Value weightRows) {
    Value logits = temporary({plan.rows, plan.columns(chunk)}, element,
                             stepName("logits", chunk));
    gemm(stepName("gemm_logits", chunk), hidden, weightRows, Value(), logits,
         plan.rows, plan.columns(chunk), plan.hidden, /*transA=*/false,
         /*transB=*/true);
    return logits;
  };
  auto rowLaunch = [&](int64_t chunk, ValueRange args, double bytes) {
    const CrossEntropyPlan &row = plan.chunkKernels[chunk];
    std::string name = stepName("rows", chunk);
    emitLinearCrossEntropyChunkKernel(state.kernels, name, op, plan, chunk);
    launch(rewriter, loc, name, row.grid(), {row.threads, 1, 1}, 0, args, ops,
           rowSeconds(bytes));
  };
  double logitBytes = static_cast<double>(plan.rows) * elementBytes;

  if (!backward) {
    Value state = temporary({3, plan.rows}, f32, base + "_state");
    Value loss = allocate(rewriter, loc, op->getResult(0));
    Value lse = allocate(rewriter, loc, op->getResult(1));
    SmallVector<Value> reduction;
    if (plan.chunkKernels.back().reducesRows) {
      reduction.push_back(temporary({2 * plan.rows}, f32, base + "_partials"));
      reduction.push_back(allocateCounters(rewriter, loc, 1, base));
    }
    for (int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
      Value logits = chunkLogits(chunk, rowsOf(weight, chunk, "weight_rows"));
      SmallVector<Value> args{logits, labels, state};
      if (chunk + 1 == plan.chunks) {
        args.append({lse, loss});
        args.append(reduction);
      }
      rowLaunch(chunk, args, logitBytes * plan.columns(chunk));
    }
    rewriter.replaceOp(op, {loss, lse});
    return success();
  }

  auto grad = cast<LinearCrossEntropyGradOp>(op);
  Value lse = buffers.lookup(grad.getLse()),
        lossGrad = buffers.lookup(grad.getGrad());
  Value hiddenGrad = allocate(rewriter, loc, grad.getHiddenGrad());
  Value weightGrad = allocate(rewriter, loc, grad.getWeightGrad());
  Value accumulator =
      temporary({plan.rows, plan.hidden}, f32, base + "_hidden_grad_f32");
  Value count;
  if (plan.countsLabels) {
    count = temporary({1}, f32, base + "_count");
    std::string name = base + "_count_labels";
    emitCountLabelsKernel(state.kernels, name, op, plan);
    launch(rewriter, loc, name, {1, 1, 1}, {256, 1, 1}, 0, {labels, count}, ops,
           rowSeconds(static_cast<double>(plan.rows) * 8));
  }
  for (int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
    int64_t columns = plan.columns(chunk);
    Value weightRows = rowsOf(weight, chunk, "weight_rows");
    Value logits = chunkLogits(chunk, weightRows);
    SmallVector<Value> args{logits, labels, lse, lossGrad};
    if (count)
      args.push_back(count);
    rowLaunch(chunk, args, 2 * logitBytes * columns);
    // dW's rows of the chunk: dlogits^T (columns x rows) · hidden.
    gemm(stepName("gemm_weight_grad", chunk), logits, hidden, Value(),
         rowsOf(weightGrad, chunk, "weight_grad_rows"), columns, plan.hidden,
         plan.rows, /*transA=*/true, /*transB=*/false);
    // dH += dlogits (rows x columns) · the chunk's weight rows, in f32.
    gemm(stepName("gemm_hidden_grad", chunk), logits, weightRows,
         chunk == 0 ? Value() : accumulator, accumulator, plan.rows,
         plan.hidden, columns, /*transA=*/false, /*transB=*/false);
  }
  std::string narrow = base + "_narrow";
  emitNarrowKernel(state.kernels, narrow, loc, plan.narrow, element);
  launch(rewriter, loc, narrow, plan.narrow.grid, {plan.narrow.threads, 1, 1},
         0, {accumulator, hiddenGrad}, ops,
         rowSeconds(static_cast<double>(plan.rows) * plan.hidden *
                    (4 + elementBytes)));
  rewriter.replaceOp(op, {hiddenGrad, weightGrad});
  return success();
}

/// Attention's backward (AttentionGradCodegen.h): the kernel reads q, k, v,
/// the output and its gradient through their views and writes dq, dk and dv
/// through theirs, into one buffer per distinct output.
LogicalResult AttentionLowering::lowerBackward(
    Operation *op, KernelConfigAttr config, ArrayRef<Operation *> ops,
    ArrayRef<Value> yielded, ArrayRef<Value> results,
    const DenseMap<Value, Value> &buffers,
    ConversionPatternRewriter &rewriter) const {
  FailureOr<AttentionGradViews> views = matchAttentionGradViews(ops);
  if (failed(views))
    return rewriter.notifyMatchFailure(op, "the configuration is stale");
  emitAttentionGradKernel(state.kernels, config.getName(), *views,
                          planAttentionGradKernel(views->grad));
  Location loc = op->getLoc();
  SmallVector<Value> args;
  for (Value source : getAttentionGradSources(*views))
    args.push_back(buffers.lookup(source));
  args.push_back(buffers.lookup(views->grad.getLse()));
  if (Value mask = views->grad.getMask())
    args.push_back(buffers.lookup(mask));
  SmallVector<Value> written;
  DenseMap<Value, Value> outputBuffers;
  for (auto [value, result] : llvm::zip_equal(yielded, results)) {
    written.push_back(allocate(rewriter, loc, result));
    outputBuffers[value] = written.back();
  }
  for (Value output : getAttentionGradOutputs(*views)) {
    Value buffer = outputBuffers.lookup(output);
    if (!buffer)
      return rewriter.notifyMatchFailure(op, "the configuration is stale");
    args.push_back(buffer);
  }
  launch(rewriter, loc, config, args, locationsOf(rewriter, ops));
  rewriter.replaceOp(op, written);
  return success();
}

/// A reshape names its input's bytes under another shape.
class ViewLowering : public StepLowering {
public:
  ViewLowering(const TypeConverter &converter, MLIRContext *ctx,
               const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::View, state) {}

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    auto reshape = cast<ReshapeOp>(op);
    Type type = getTypeConverter()->convertType(reshape.getType());
    auto view = ViewOp::create(rewriter, op->getLoc(), type,
                               buffers.lookup(reshape.getInput()));
    view->setAttr(
        MemWallDialect::kBufferAttrName,
        rewriter.getStringAttr(state.bufferNames.lookup(reshape.getResult())));
    rewriter.replaceOp(op, view);
    return success();
  }
};
/// A shard.all_reduce of a per-device program: a collective step
/// (memwall-run runs it through NCCL) into a new buffer.
class CollectiveLowering : public StepLowering {
public:
  CollectiveLowering(const TypeConverter &converter, MLIRContext *ctx,
                     const KernelLoweringState &state)
      : StepLowering(converter, ctx, KernelFamily::Collective, state) {}

protected:
  LogicalResult lower(Operation *op, KernelConfigAttr config,
                      const DenseMap<Value, Value> &buffers,
                      ConversionPatternRewriter &rewriter) const override {
    auto allReduce = cast<shard::AllReduceOp>(op);
    Location loc = op->getLoc();
    Value output = allocate(rewriter, loc, allReduce.getResult());
    AllReduceOp::create(rewriter, loc, rewriter.getStringAttr(config.getName()),
                        buffers.lookup(allReduce.getInput()), output,
                        rewriter.getI64IntegerAttr(config.getGrid()[0]),
                        locationsOf(rewriter, {op}),
                        rewriter.getF64FloatAttr(config.getPredictedTime()));
    rewriter.replaceOp(op, output);
    return success();
  }
};
} // namespace

void memwall::populateKernelLoweringPatterns(const TypeConverter &converter,
                                             RewritePatternSet &patterns,
                                             const KernelLoweringState &state) {
  patterns.add<ElementwiseLowering, RowReductionLowering, GemmLowering,
               GeneratedGemmLowering, LayoutLowering, AttentionLowering,
               ViewLowering, FillLowering, ColumnReductionLowering,
               NormGradLowering, OptimizerLowering, EmbeddingGradLowering,
               CrossEntropyLowering, CollectiveLowering, DequantizeLowering>(
      converter, patterns.getContext(), state);
}
