//===- RooflineReportPass.cpp - write the roofline report -----------------===//

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Transforms/Passes.h"

using namespace mlir;

namespace memwall {
#define GEN_PASS_DEF_ROOFLINEREPORT
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace memwall;

namespace {
struct RooflineReportPass
    : public memwall::impl::RooflineReportBase<RooflineReportPass> {
  using RooflineReportBase::RooflineReportBase;

  LogicalResult initialize(MLIRContext *ctx) override {
    // Reject a bad path before any work is done.
    if (!getReportFormatForPath(output)) {
      emitError(UnknownLoc::get(ctx))
          << "cannot choose a report format for '" << output
          << "': use a .json, .txt or .svg file, or - for text on stdout";
      return failure();
    }
    FailureOr<GPUTarget> resolved =
        resolvePassTarget(ctx, targetName, targetFile);
    if (failed(resolved))
      return failure();
    target = std::move(*resolved);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    RooflineReport report = buildRooflineReport(module, target);
    if (report.modelName.empty()) {
      if (auto fileLoc = dyn_cast<FileLineColLoc>(module.getLoc()))
        report.modelName = fileLoc.getFilename().str();
      else
        report.modelName = formatLocationForReport(module.getLoc());
    }
    if (llvm::Error error = writeRooflineReport(report, output)) {
      // A location-only diagnostic: Operation::emitError would append the
      // whole module as a note.
      mlir::emitError(module.getLoc()) << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }

  GPUTarget target;
};
} // namespace
