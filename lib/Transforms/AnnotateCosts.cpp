//===- AnnotateCosts.cpp - attach #memwall.cost to every op ---------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/FusionCost.h"
#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Transforms/Passes.h"

using namespace mlir;

namespace memwall {
#define GEN_PASS_DEF_ANNOTATECOSTS
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace memwall;

namespace {
struct AnnotateCostsPass
    : public memwall::impl::AnnotateCostsBase<AnnotateCostsPass> {
  using AnnotateCostsBase::AnnotateCostsBase;

  void runOnOperation() override {
    FailureOr<GPUTarget> target = getTargetOf(getOperation());
    if (failed(target))
      return signalPassFailure();
    getOperation().walk([&](CostOpInterface op) {
      RooflineEstimate estimate = estimateOpRoofline(op, *target);
      op->setAttr(
          MemWallDialect::kCostAttrName,
          CostAttr::get(op->getContext(), op.getFlops(), op.getBytesRead(),
                        op.getBytesWritten(), estimate.intensity,
                        estimate.memoryBound ? Bound::Memory : Bound::Compute,
                        estimate.timeSeconds));
      ++numOpsAnnotated;
    });
    // The attributes change no cost, buffer or kernel.
    markAnalysesPreserved<CostAnalysis, FusionCostAnalysis, MemoryLiveness>();
  }
};
} // namespace
