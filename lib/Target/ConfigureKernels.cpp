//===- ConfigureKernels.cpp - choose each step's kernel and launch --------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the fusion cost model and the kernel planners chose for every op that
// becomes a step, as #memwall.kernel_config (as IREE's KernelConfig sets
// lowering configs): memwall-convert-to-gpu builds what it says.
//
//===----------------------------------------------------------------------===//

#include "memwall/Target/Passes.h"

#include "AttentionCodegen.h"
#include "AttentionGradCodegen.h"
#include "KernelBuilding.h"
#include "LayoutCodegen.h"
#include "TrainingCodegen.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/FusionCost.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

namespace memwall {
#define GEN_PASS_DEF_CONFIGUREKERNELS
#include "memwall/Target/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

namespace {
/// Configures the ops of one function in program order, numbering steps as
/// the bundle does.
class KernelConfigurator {
public:
  KernelConfigurator(const GPUTarget &target) : target(target) {}

  /// One error per distinct message, at its first op; the repeats are
  /// counted on the function (a training step repeats each unsupported op
  /// once per layer).
  LogicalResult configureFunction(func::FuncOp function) {
    bool ok = true;
    unsigned repeats = 0;
    {
      llvm::StringSet<> shown;
      ScopedDiagnosticHandler firstOfEach(
          function.getContext(), [&](Diagnostic &diag) {
            if (diag.getSeverity() != DiagnosticSeverity::Error ||
                shown.insert(diag.str()).second)
              return failure(); // pass it on
            ++repeats;
            return success();
          });
      for (Operation &op : function.getBody().front().without_terminator())
        if (failed(configure(&op)))
          ok = false;
    }
    if (repeats > 0)
      function.emitError() << "codegen cannot run " << repeats << " more op"
                           << (repeats == 1 ? "" : "s") << " of @"
                           << function.getName() << " for the reasons above";
    return success(ok);
  }

private:
  /// A dequantize runs only as the rhs prologue of memwall's GEMM: says why
  /// this one is not in one.
  LogicalResult explainUnfusedDequantize(DequantizeOp dequantize) {
    // The scales of a dequantize kernel run in that kernel.
    if (auto reader = dequantize->use_empty()
                          ? DequantizeOp()
                          : dyn_cast<DequantizeOp>(*dequantize->user_begin());
        reader && reader.getMaterialize() &&
        getScalesPrologue(reader) == dequantize)
      return dequantize.emitError(
          "codegen runs the dequantize of a dequantize kernel's scales only "
          "in that kernel; memwall-fuse puts it there (compile without "
          "--no-fuse)");
    auto diagnostic = dequantize.emitError(
        "codegen runs 'memwall.dequantize' only inside the generated GEMM of "
        "the one matmul that reads it as its rhs");
    Value result = dequantize.getResult();
    auto matmul = result.hasOneUse()
                      ? dyn_cast<MatmulOp>(*result.getUsers().begin())
                      : MatmulOp();
    if (!matmul || matmul.getRhs() != result)
      return diagnostic;
    std::string whyNot;
    if (failed(analyzeKernel({dequantize, matmul}, target, &whyNot)))
      return diagnostic << ", and that kernel cannot run: " << whyNot;
    return diagnostic << "; memwall-fuse puts it there (compile without "
                         "--no-fuse)";
  }

  LogicalResult configure(Operation *op) {
    if (auto allReduce = dyn_cast<shard::AllReduceOp>(op))
      return configureAllReduce(allReduce);
    if (isa<ReshapeOp>(op))
      return attach(op, KernelFamily::View, "", {}, {}, 0, 0);
    if (auto attention = dyn_cast<FlashAttentionOp>(op))
      return configureAttention(op, attention);
    if (auto grad = dyn_cast<FlashAttentionGradOp>(op))
      return configureAttentionGrad(op, grad);
    if (isLayoutOp(op))
      return configureLayout(op);
    if (auto constant = dyn_cast<arith::ConstantOp>(op))
      return configureFill(constant);
    if (auto reduce = dyn_cast<ReduceOp>(op); reduce && isColumnReduction(op))
      return configureColumnReduction(reduce);
    if (isa<LayerNormGradOp, RmsNormGradOp>(op))
      return configureNormGrad(op);
    if (isa<AdamWOp>(op))
      return configureAdamW(op);
    if (auto embeddingGrad = dyn_cast<EmbeddingGradOp>(op))
      return configureEmbeddingGrad(embeddingGrad);
    if (isCrossEntropyKernelOp(op))
      return configureCrossEntropy(op);
    if (isLinearCrossEntropyOp(op))
      return configureLinearCrossEntropy(op);
    if (isa<AttentionOp>(op))
      return op->emitError("codegen runs attention only in its tiled form "
                           "(memwall.flash_attention); this one stayed "
                           "untiled");
    std::string whyNot;
    FailureOr<KernelAnalysis> analysis = failure();
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      analysis = analyzeFusion(fusion, target, &whyNot);
      if (failed(analysis))
        return op->emitError("codegen cannot run this fusion: ") << whyNot;
    } else if (isElementwiseOp(op) || isRowReductionOp(op) ||
               isa<MatmulOp>(op)) {
      analysis = analyzeKernel({op}, target, &whyNot);
      if (failed(analysis))
        return op->emitError("codegen cannot run '")
               << op->getName() << "': " << whyNot;
    } else if (auto dequantize = dyn_cast<DequantizeOp>(op);
               dequantize && dequantize.getMaterialize()) {
      analysis = analyzeOpKernel(op, target, &whyNot);
      if (failed(analysis))
        return op->emitError("codegen cannot run this dequantize kernel: ")
               << whyNot;
    } else if (auto dequantize = dyn_cast<DequantizeOp>(op)) {
      return explainUnfusedDequantize(dequantize);
    } else {
      return op->emitError("codegen does not support '")
             << op->getName() << "' yet";
    }
    if (analysis->kind == FusionKind::Horizontal)
      return configureAdamW(op);
    if (analysis->kind == FusionKind::Dequantize) {
      // A materialized dequantize: one vector of the result a thread.
      const KernelGeometry &geometry = analysis->geometry;
      std::array<int64_t, 3> grid = {geometry.gridSize, 1, 1};
      if (failed(checkGrid(op, grid)))
        return failure();
      return attach(op, KernelFamily::Dequantize, kernelName("dequantize"),
                    grid, {geometry.threadsPerBlock, 1, 1}, 0,
                    analysis->timeSeconds);
    }
    if (analysis->kind == FusionKind::MatmulEpilogue)
      return configureGemm(op, *analysis);
    if (analysis->kind == FusionKind::Attention)
      return configureAttention(op, analysis->attention->attention);
    if (analysis->kind == FusionKind::AttentionGrad)
      return configureAttentionGrad(op, analysis->attentionGrad->grad);
    if (analysis->kind == FusionKind::Rope) {
      // One data-movement kernel for the ropes, reading through the views.
      LayoutKernelPlan plan = planRopeKernel(*analysis->rope);
      if (failed(checkGrid(op, plan.grid)))
        return failure();
      return attach(op, KernelFamily::Layout, kernelName("rope"), plan.grid,
                    {plan.threads, 1, 1}, 0, analysis->timeSeconds);
    }
    if (analysis->kind == FusionKind::Gemm) {
      // memwall's own GEMM kernel with its epilogue (GemmCodegen.h), launched
      // as its tiling says (with split K, the last CTA of each tile sums the
      // splits in the same launch).
      const GemmTiling &tiling = analysis->tiling;
      if (failed(checkGrid(op, tiling.grid)))
        return failure();
      return attach(op, KernelFamily::GeneratedGemm, kernelName("gemm"),
                    tiling.grid, getGemmBlockSize(tiling), tiling.sharedBytes,
                    analysis->timeSeconds, tiling.splitK);
    }
    const KernelGeometry &geometry = analysis->geometry;
    std::array<int64_t, 3> grid{geometry.gridSize, 1, 1};
    if (failed(checkGrid(op, grid)))
      return failure();
    KernelFamily family = analysis->kind == FusionKind::Reduction
                              ? KernelFamily::RowReduction
                              : KernelFamily::Elementwise;
    return attach(op, family, kernelName(stringifyFusionKind(analysis->kind)),
                  grid, {geometry.threadsPerBlock, 1, 1}, 0,
                  analysis->timeSeconds);
  }

  /// A data-movement kernel: transpose, slice, embedding, rope,
  /// kv_cache_append.
  LogicalResult configureLayout(Operation *op) {
    LayoutKernelPlan plan = planLayoutKernel(op);
    if (failed(checkGrid(op, plan.grid)))
      return failure();
    return attach(op, KernelFamily::Layout,
                  kernelName(op->getName().stripDialect()), plan.grid,
                  {plan.threads, 1, 1}, 0, predictedSeconds(op));
  }

  /// A splat constant: a fill kernel writing it (TrainingCodegen.h).
  LogicalResult configureFill(arith::ConstantOp constant) {
    if (std::string why = whyNoFillKernel(constant); !why.empty())
      return constant.emitError(why);
    FlatKernelPlan plan = planFillKernel(constant);
    if (failed(checkGrid(constant, plan.grid)))
      return failure();
    KernelWork work;
    work.bytesWritten = static_cast<double>(
        getTensorByteSize(cast<RankedTensorType>(constant.getType())));
    return attach(constant, KernelFamily::Fill, kernelName("fill"), plan.grid,
                  {plan.threads, 1, 1}, 0,
                  estimateKernelTime(work, target).timeSeconds);
  }

  /// A reduce over leading axes: the column-reduction kernel, its rows
  /// split over grid.y (TrainingCodegen.h).
  LogicalResult configureColumnReduction(ReduceOp reduce) {
    ColumnReductionPlan plan = planColumnReduction(reduce, target);
    if (failed(checkGrid(reduce, plan.grid)))
      return failure();
    return attach(reduce, KernelFamily::ColumnReduction,
                  kernelName("column_reduction"), plan.grid,
                  {plan.threads(), 1, 1}, 0, predictedSeconds(reduce));
  }

  /// layer_norm_grad / rms_norm_grad: rows in registers, the parameter
  /// gradients summed over blocks (TrainingCodegen.h).
  LogicalResult configureNormGrad(Operation *op) {
    if (std::string why = whyNoNormGradKernel(op, target); !why.empty())
      return op->emitError("codegen cannot run '")
             << op->getName() << "': " << why;
    NormGradPlan plan = planNormGradKernel(op, target);
    if (failed(checkGrid(op, plan.grid())))
      return failure();
    return attach(op, KernelFamily::NormGrad,
                  kernelName(op->getName().stripDialect()), plan.grid(),
                  {plan.threads, 1, 1}, 0, predictedSeconds(op));
  }

  /// adamw, or a horizontal fusion of them: one kernel updating each
  /// parameter's state in place.
  LogicalResult configureAdamW(Operation *op) {
    SmallVector<AdamWOp> updates = getOptimizerUpdates(op);
    for (AdamWOp adamw : updates)
      if (std::string why = whyNoAdamWKernel(adamw); !why.empty())
        return adamw.emitError(why);
    AdamWKernelPlan plan = planAdamWKernel(updates);
    if (failed(checkGrid(op, plan.grid)))
      return failure();
    return attach(
        op, KernelFamily::Optimizer,
        kernelName(isa<FusionOp>(op) ? "multi_tensor_adamw" : "adamw"),
        plan.grid, {plan.threads, 1, 1}, 0, predictedSeconds(op));
  }

  /// embedding_grad: each table row summed from its positions in order.
  LogicalResult configureEmbeddingGrad(EmbeddingGradOp op) {
    if (std::string why = whyNoEmbeddingGradKernel(op); !why.empty())
      return op.emitError("codegen cannot run '")
             << op->getName() << "': " << why;
    EmbeddingGradPlan plan = planEmbeddingGradKernel(op);
    if (failed(checkGrid(op, plan.grid)))
      return failure();
    return attach(op, KernelFamily::EmbeddingGrad, kernelName("embedding_grad"),
                  plan.grid, {plan.threads, 1, 1}, 0, predictedSeconds(op));
  }

  /// cross_entropy / cross_entropy_grad: a block streaming each row.
  LogicalResult configureCrossEntropy(Operation *op) {
    if (std::string why = whyNoCrossEntropyKernel(op); !why.empty())
      return op->emitError("codegen cannot run '")
             << op->getName() << "': " << why;
    CrossEntropyPlan plan = planCrossEntropyKernel(op);
    if (failed(checkGrid(op, plan.grid())))
      return failure();
    return attach(op, KernelFamily::CrossEntropy,
                  kernelName(op->getName().stripDialect()), plan.grid(),
                  {plan.threads, 1, 1}, 0, predictedSeconds(op));
  }

  /// linear_cross_entropy(_grad): GEMMs and row kernels per chunk of the
  /// vocabulary, named after this step (TrainingCodegen.h); the launch
  /// recorded is the first chunk's row kernel's.
  LogicalResult configureLinearCrossEntropy(Operation *op) {
    if (std::string why = whyNoLinearCrossEntropyKernels(op); !why.empty())
      return op->emitError("codegen cannot run '")
             << op->getName() << "': " << why;
    LinearCrossEntropyPlan plan = planLinearCrossEntropy(op);
    const CrossEntropyPlan &row = plan.chunkKernels.front();
    if (failed(checkGrid(op, row.grid())) ||
        failed(checkGrid(op, plan.narrow.grid)))
      return failure();
    return attach(op, KernelFamily::CrossEntropy,
                  kernelName(op->getName().stripDialect()), row.grid(),
                  {row.threads, 1, 1}, 0, predictedSeconds(op));
  }

  /// The op's own cost as one kernel on the target.
  double predictedSeconds(Operation *op) const {
    return estimateOpRoofline(cast<CostOpInterface>(op), target).timeSeconds;
  }

  /// The tensor-core attention kernel of `op` (`attention` alone or the
  /// attention fusion holding it); with split keys its last split per block
  /// of rows combines the partials in the same launch.
  LogicalResult configureAttention(Operation *step, FlashAttentionOp op) {
    if (std::string why = whyNoAttentionKernel(op); !why.empty())
      return op.emitError("codegen cannot run this attention: ") << why;
    AttentionKernelPlan plan = planAttentionKernel(op);
    return attach(
        step, KernelFamily::Attention, kernelName("attention"), plan.grid,
        {plan.threads(), 1, 1}, plan.sharedBytes,
        estimateOpRoofline(cast<CostOpInterface>(op.getOperation()), target)
            .timeSeconds,
        plan.splits);
  }

  /// Attention's backward (AttentionGradCodegen.h) of `op` (alone or the
  /// attention_grad fusion holding it): one launch of key and query blocks.
  LogicalResult configureAttentionGrad(Operation *step,
                                       FlashAttentionGradOp op) {
    if (std::string why = whyNoAttentionGradKernel(op); !why.empty())
      return op.emitError("codegen cannot run attention's backward with ")
             << why;
    AttentionGradKernelPlan plan = planAttentionGradKernel(op);
    if (failed(checkGrid(op, plan.grid)))
      return failure();
    return attach(step, KernelFamily::Attention, kernelName("attention_grad"),
                  plan.grid, {plan.threads, 1, 1}, plan.sharedBytes,
                  predictAttentionGradKernelSeconds(op, target));
  }

  /// A cuBLASLt matmul with the epilogue the analysis found.
  LogicalResult configureGemm(Operation *op, const KernelAnalysis &analysis) {
    auto matmul = cast<MatmulOp>(analysis.anchor);
    auto lhs = matmul.getLhs().getType(), rhs = matmul.getRhs().getType();
    auto out = matmul.getType();
    MatmulOp::Dims dims = matmul.getDims();
    bool transA = matmul.getTransposeLhs(), transB = matmul.getTransposeRhs();
    auto batchOf = [](RankedTensorType type) {
      int64_t batch = 1;
      for (int64_t d : type.getShape().drop_back(2))
        batch *= d;
      return batch;
    };
    int64_t lhsBatch = batchOf(lhs), rhsBatch = batchOf(rhs),
            outBatch = batchOf(out);
    int64_t m, batch = 1, strideA = 0, strideB = 0, strideC = 0, strideD = 0;
    auto pitchOf = [](RankedTensorType type) {
      return StackViewOp::getPitch(
          MemRefType::get(type.getShape(), type.getElementType()));
    };
    if (!analysis.batchedMatmuls.empty()) {
      // Sibling products of one lhs (every row) and stacked weights: batch
      // i multiplies weight i into result i, a pitch apart each.
      m = dims.m * outBatch;
      batch = analysis.batchedMatmuls.size();
      strideB = pitchOf(rhs);
      strideD = pitchOf(out);
    } else if (rhsBatch == 1 && !transA) {
      // A weight shared by every batch: one GEMM over all rows.
      m = dims.m * outBatch;
    } else {
      if ((lhsBatch != 1 && lhsBatch != outBatch) ||
          (rhsBatch != 1 && rhsBatch != outBatch))
        return matmul.emitError("codegen supports batch dimensions that are "
                                "either all broadcast or all present");
      m = dims.m;
      batch = outBatch;
      strideA = lhsBatch == 1 ? 0 : dims.m * dims.k;
      strideB = rhsBatch == 1 ? 0 : dims.k * dims.n;
      strideD = dims.m * dims.n;
    }
    const GemmEpilogue &epilogue = analysis.epilogue;
    if (epilogue.residual)
      strideC = strideD;
    std::string activation =
        epilogue.activation == GemmEpilogue::Activation::Relu
            ? "relu"
            : (epilogue.activation == GemmEpilogue::Activation::GeluTanh
                   ? "gelu"
                   : "");
    std::string epilogueName;
    if (activation.empty())
      epilogueName = epilogue.bias ? "bias" : "none";
    else
      epilogueName = epilogue.bias ? activation + "_bias" : activation;
    MLIRContext *ctx = op->getContext();
    auto gemm = GemmConfigAttr::get(
        ctx, m, dims.n, dims.k, batch, strideA, strideB, strideC, strideD,
        BoolAttr::get(ctx, transA), BoolAttr::get(ctx, transB), epilogueName);
    op->setAttr(MemWallDialect::kKernelConfigAttrName,
                KernelConfigAttr::get(
                    ctx, KernelFamily::Gemm, "gemm" + std::to_string(steps),
                    nullptr, nullptr, 0,
                    FloatAttr::get(Float64Type::get(ctx), analysis.timeSeconds),
                    1, gemm));
    ++steps;
    return success();
  }

  /// The name of the next kernel step.
  std::string kernelName(StringRef what) const {
    return "kernel" + std::to_string(steps) + "_" + what.str();
  }

  static KernelConfigAttr configAttr(MLIRContext *ctx, KernelFamily family,
                                     StringRef name, ArrayRef<int64_t> grid,
                                     ArrayRef<int64_t> block,
                                     int64_t sharedBytes, double seconds,
                                     int64_t splits) {
    auto array = [&](ArrayRef<int64_t> values) {
      return values.empty() ? DenseI64ArrayAttr()
                            : DenseI64ArrayAttr::get(ctx, values);
    };
    return KernelConfigAttr::get(
        ctx, family, name, array(grid), array(block), sharedBytes,
        family == KernelFamily::View
            ? FloatAttr()
            : FloatAttr::get(Float64Type::get(ctx), seconds),
        splits, GemmConfigAttr());
  }

  /// Attaches a one-kernel configuration (or a view's) to `op`; `splits`
  /// for a kernel that splits K or keys over grid.z.
  /// A per-device program's sum over its grid (memwall-partition): a
  /// collective step memwall-run runs through NCCL, timed on the target's
  /// link for the group's devices.
  LogicalResult configureAllReduce(shard::AllReduceOp allReduce) {
    auto type = dyn_cast<RankedTensorType>(allReduce.getInput().getType());
    if (!type || type != allReduce.getResult().getType() ||
        !isa<Float32Type, BFloat16Type, Float16Type>(type.getElementType()))
      return allReduce.emitError("codegen runs 'shard.all_reduce' on f32, "
                                 "bf16 or f16 tensors of one type only");
    if (allReduce.getReduction() != shard::ReductionKind::Sum)
      return allReduce.emitError("codegen runs 'shard.all_reduce' as a sum "
                                 "only, not ")
             << shard::stringifyReductionKind(allReduce.getReduction());
    SymbolTableCollection symbols;
    shard::GridOp grid =
        shard::getGridOrNull(allReduce, allReduce.getGridAttr(), symbols);
    if (!grid)
      return allReduce.emitError("'shard.all_reduce' names no grid");
    int64_t devices =
        shard::collectiveProcessGroupSize(allReduce.getGridAxes(), grid);
    if (devices <= 0)
      return allReduce.emitError("codegen needs a grid of static shape");
    double seconds = target.allReduceSeconds(
        static_cast<double>(getTensorByteSize(type)), devices);
    // The group's size is the step's one launch dimension.
    return attach(allReduce, KernelFamily::Collective,
                  "all_reduce" + std::to_string(steps), {devices, 1, 1},
                  {1, 1, 1}, 0, seconds);
  }

  LogicalResult attach(Operation *op, KernelFamily family, StringRef name,
                       ArrayRef<int64_t> grid, ArrayRef<int64_t> block,
                       int64_t sharedBytes, double seconds,
                       int64_t splits = 1) {
    op->setAttr(MemWallDialect::kKernelConfigAttrName,
                configAttr(op->getContext(), family, name, grid, block,
                           sharedBytes, seconds, splits));
    if (family != KernelFamily::View)
      ++steps;
    return success();
  }

  /// Fails, at `op`, unless CUDA can launch `grid`.
  static LogicalResult checkGrid(Operation *op,
                                 const std::array<int64_t, 3> &grid) {
    if (std::string why = whyGridCannotLaunch(grid); !why.empty())
      return op->emitError("codegen cannot run '")
             << op->getName() << "': " << why;
    return success();
  }

  const GPUTarget &target;
  /// Steps configured so far: the next step's number.
  int64_t steps = 0;
};

/// Moves each AdamW update (or horizontal fusion of them) after the last
/// other reader of the state it updates in place (param, moments, master):
/// SSA lets a step read a weight after its update was computed (memwall-fuse
/// and remat order the backward freely), but the kernel overwrites the
/// weight's buffer. Fails, at the update, when a user of its results comes
/// before that reader.
LogicalResult sinkInPlaceUpdates(func::FuncOp function) {
  Block &body = function.getBody().front();
  SmallVector<Operation *> updates;
  for (Operation &op : body.without_terminator())
    if (!getOptimizerUpdates(&op).empty())
      updates.push_back(&op);
  for (Operation *update : updates) {
    Operation *lastReader = nullptr;
    auto aliasing = cast<AliasingOpInterface>(update);
    for (unsigned result = 0; result < update->getNumResults(); ++result) {
      Value state = aliasing.getAliasedOperand(result);
      if (!state)
        continue;
      for (Operation *user : state.getUsers()) {
        if (user == update)
          continue;
        Operation *top = body.findAncestorOpInBlock(*user);
        if (top && update->isBeforeInBlock(top) &&
            (!lastReader || lastReader->isBeforeInBlock(top)))
          lastReader = top;
      }
    }
    if (!lastReader)
      continue;
    for (Operation *user : update->getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (top && !isa<func::ReturnOp>(top) && !lastReader->isBeforeInBlock(top))
        return update->emitError("codegen updates AdamW's state in place, but "
                                 "its result is used before the last read of "
                                 "the state it overwrites");
    }
    update->moveAfter(lastReader);
  }
  return success();
}

struct ConfigureKernelsPass
    : public memwall::impl::ConfigureKernelsBase<ConfigureKernelsPass> {
  void runOnOperation() override {
    // Appends in place are pinned before the lowering, which sees the
    // function's arguments while it converts them.
    getOperation().walk([](KVCacheAppendOp append) {
      if (append.canAppendInPlace())
        append->setAttr(MemWallDialect::kInPlaceAttrName,
                        UnitAttr::get(append.getContext()));
    });
    // AdamW updates in place: after every other reader of its state.
    if (failed(sinkInPlaceUpdates(getOperation())))
      return signalPassFailure();
    FailureOr<GPUTarget> target = getTargetOf(getOperation());
    if (failed(target) ||
        failed(KernelConfigurator(*target).configureFunction(getOperation())))
      signalPassFailure();
  }
};
} // namespace
