//===- Shard.cpp - the tensor-parallel plan in MLIR's shard dialect -------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Writes the split ParallelLayout reads from the IR (Megatron's column- and
// row-parallel GEMMs) as shard.shard annotations of the function's
// arguments on a 1-D grid. Every other value's split is left to upstream's
// sharding-propagation, which reaches the same answer through memwall's
// sharding rules; shard-partition then writes the per-device program.
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/ParallelismAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace memwall {
#define GEN_PASS_DEF_SHARD
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace memwall;

namespace {
struct ShardPass : public memwall::impl::ShardBase<ShardPass> {
  using ShardBase::ShardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (tensorParallel < 1) {
      module.emitError() << "tensor-parallel must be at least 1, not "
                         << static_cast<int64_t>(tensorParallel);
      return signalPassFailure();
    }
    if (SymbolTable::lookupSymbolIn(module, grid)) {
      module.emitError() << "the grid symbol '" << grid
                         << "' is already taken; choose another with grid=";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        functions.push_back(function);
    for (func::FuncOp function : functions)
      if (failed(checkRules(function)))
        return signalPassFailure();

    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    auto gridOp = shard::GridOp::create(builder, module.getLoc(), grid,
                                        ArrayRef<int64_t>{tensorParallel});
    ParallelismOptions options;
    options.tensorParallel = tensorParallel;
    for (func::FuncOp function : functions) {
      const ParallelLayout &layout = getChildAnalysis<ParallelLayout>(function);
      if (failed(layout.check(options)))
        return signalPassFailure();
      annotateArguments(function, layout, gridOp);
    }
  }

  /// Every op must have a sharding rule for propagation and partitioning
  /// to cover it; say which one does not, and why.
  LogicalResult checkRules(func::FuncOp function) {
    WalkResult result = function.walk<WalkOrder::PreOrder>([](Operation *op) {
      if (isa<func::FuncOp, func::ReturnOp, shard::ShardingInterface>(op) ||
          isa<shard::ShardDialect>(op->getDialect()))
        return WalkResult::advance();
      InFlightDiagnostic diagnostic =
          op->emitError() << "'" << op->getName()
                          << "' has no sharding rule, so the plan cannot be "
                             "emitted in the shard dialect";
      if (isa<FusionOp>(op))
        diagnostic << " (shard before memwall-fuse)";
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// The weight `dequantize` scales: its input, or, when it makes the
  /// scales of other dequantizes (double quantization), theirs.
  static Value getScaledWeight(DequantizeOp dequantize) {
    for (Operation *user : dequantize->getUsers())
      if (auto outer = dyn_cast<DequantizeOp>(user);
          outer && outer.getScales() == dequantize.getResult())
        return getScaledWeight(outer);
    return dequantize.getInput();
  }

  /// Quantization scales (and the i8 absmax of double-quantized ones) split
  /// with the weight they scale, along its split dimension, where they hold
  /// more than one block along it and T divides them; else replicated.
  std::optional<int64_t> getScalesSplit(BlockArgument arg,
                                        const ParallelLayout &layout) {
    if (!isQuantizationMetadata(arg))
      return std::nullopt;
    std::optional<int64_t> dim;
    for (Operation *user : arg.getUsers()) {
      auto weight =
          dyn_cast<BlockArgument>(getScaledWeight(cast<DequantizeOp>(user)));
      std::optional<int64_t> split =
          weight ? layout.getTensorParallelDim(weight) : std::nullopt;
      if (!split || (dim && *dim != *split))
        return std::nullopt;
      dim = split;
    }
    int64_t extent = cast<RankedTensorType>(arg.getType()).getDimSize(*dim);
    if (extent == 1 || extent % tensorParallel != 0)
      return std::nullopt;
    return dim;
  }

  /// Each tensor argument gets one shard.shard, the sharding every use
  /// reads (shard-partition gives the argument its shard's type).
  void annotateArguments(func::FuncOp function, const ParallelLayout &layout,
                         shard::GridOp gridOp) {
    MLIRContext *context = &getContext();
    auto gridRef = FlatSymbolRefAttr::get(gridOp.getSymNameAttr());
    OpBuilder builder = OpBuilder::atBlockBegin(&function.getBody().front());
    // One shard.sharding per split dimension (-1: replicated).
    llvm::DenseMap<int64_t, Value> shardings;
    // Every split is read off the unannotated IR first (scales follow the
    // uses of their weight).
    SmallVector<std::pair<BlockArgument, int64_t>> splits;
    for (BlockArgument arg : function.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() == 0 || arg.use_empty())
        continue;
      std::optional<int64_t> split = layout.getTensorParallelDim(arg);
      if (!split)
        split = getScalesSplit(arg, layout);
      splits.emplace_back(arg, split.value_or(-1));
    }
    for (auto [arg, dim] : splits) {
      if (dim >= 0)
        ++numSplitArguments;
      Value &sharding = shardings[dim];
      if (!sharding) {
        SmallVector<shard::GridAxesAttr> splitAxes;
        if (dim >= 0) {
          splitAxes.assign(dim + 1, shard::GridAxesAttr::get(context, {}));
          splitAxes[dim] = shard::GridAxesAttr::get(context, {0});
        }
        sharding = shard::ShardingOp::create(builder, arg.getLoc(), gridRef,
                                             splitAxes);
      }
      auto shard = shard::ShardOp::create(builder, arg.getLoc(), arg, sharding);
      arg.replaceAllUsesExcept(shard.getResult(), shard);
    }
  }
};
} // namespace
