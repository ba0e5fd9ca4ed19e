//===- AnnotateCosts.cpp - attach #memwall.cost to every op ---------------===//

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/FusionCost.h"
#include "memwall/Analysis/MemoryAnalysis.h"
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

  LogicalResult initialize(MLIRContext *ctx) override {
    FailureOr<GPUTarget> resolved =
        resolvePassTarget(ctx, targetName, targetFile);
    if (failed(resolved))
      return failure();
    target = std::move(*resolved);
    return success();
  }

  void runOnOperation() override {
    getOperation().walk([&](CostOpInterface op) {
      RooflineEstimate estimate = estimateOpRoofline(op, target);
      op->setAttr(
          MemWallDialect::kCostAttrName,
          CostAttr::get(op->getContext(), op.getFlops(), op.getBytesRead(),
                        op.getBytesWritten(), estimate.intensity,
                        estimate.memoryBound ? Bound::Memory : Bound::Compute,
                        estimate.timeSeconds));
    });
    // The attributes change no cost, buffer or kernel.
    markAnalysesPreserved<CostAnalysis, FusionCostAnalysis, MemoryLiveness>();
  }

  GPUTarget target;
};
} // namespace
