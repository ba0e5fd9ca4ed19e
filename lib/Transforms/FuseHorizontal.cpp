//===- FuseHorizontal.cpp - short AdamW updates as one launch -------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Horizontal fusion of the optimizer's launch-bound updates into
// multi-tensor kernels, under the step's peak. docs/fusion.md, "Multi-tensor
// AdamW".
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/FusionCost.h"
#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Transforms/OutlineKernel.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace memwall {
#define GEN_PASS_DEF_FUSEHORIZONTAL
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace memwall;

namespace {
/// Whether `adamw` alone would take longer to launch than to run.
bool isLaunchBound(AdamWOp adamw, const GPUTarget &target) {
  RooflineEstimate alone = estimateOpRoofline(adamw, target);
  return std::max(alone.computeSeconds, alone.memorySeconds) <
         target.launchSeconds();
}

/// Whether a result of one of `updates` is read at or before `position`
/// (other than by the return): the group, run at `position`, would come
/// after that reader.
bool readBefore(ArrayRef<Operation *> updates, Operation *position) {
  Block *block = position->getBlock();
  return llvm::any_of(updates, [&](Operation *update) {
    return llvm::any_of(update->getUsers(), [&](Operation *user) {
      Operation *top = block->findAncestorOpInBlock(*user);
      return top && !isa<func::ReturnOp>(top) &&
             !position->isBeforeInBlock(top);
    });
  });
}

struct FuseHorizontalPass
    : public memwall::impl::FuseHorizontalBase<FuseHorizontalPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    FailureOr<GPUTarget> target = getTargetOf(function);
    if (failed(target))
      return signalPassFailure();
    MemoryLiveness liveness(function);
    StepMemory memory(liveness);
    // The last group is the open one.
    SmallVector<SmallVector<Operation *>> groups;
    for (Operation &op : function.getBody().front().without_terminator()) {
      auto adamw = dyn_cast<AdamWOp>(&op);
      if (!adamw || !isLaunchBound(adamw, *target))
        continue;
      if (!groups.empty()) {
        SmallVector<Operation *> grown(groups.back());
        grown.push_back(adamw);
        // Time saved (one launch) is certain; legality (the launch's
        // parameters) and the peak decide.
        if (succeeded(analyzeKernel(grown, *target)) &&
            !readBefore(groups.back(), adamw)) {
          StepMemory::Merge merge = memory.plan(grown);
          if (memory.peakWith(merge) <= memory.getLimit()) {
            memory.apply(merge);
            groups.back() = std::move(grown);
            continue;
          }
          ++numGroupsEndedForMemory;
        }
      }
      groups.push_back({adamw});
    }
    for (ArrayRef<Operation *> group : groups) {
      if (group.size() < 2)
        continue;
      FailureOr<KernelAnalysis> kernel = analyzeKernel(group, *target);
      if (failed(kernel))
        continue;
      outlineKernel(*kernel);
      ++numKernelsFormed;
      numUpdatesFused += group.size();
    }
  }
};
} // namespace
