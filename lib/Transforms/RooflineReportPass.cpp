//===- RooflineReportPass.cpp - write the roofline report -----------------===//

#include "memwall/Analysis/CommunicationAnalysis.h"
#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/InferenceAnalysis.h"
#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Transforms/Passes.h"
#include "memwall/Transforms/Remat.h"

#include "llvm/Support/FormatVariadic.h"

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
    auto fail = [&](const llvm::Twine &message) {
      emitError(UnknownLoc::get(ctx)) << message;
      return failure();
    };
    llvm::Expected<MemoryOptions> parsed =
        parseMemoryOptions(budget, devices, zeroStage, offload);
    if (!parsed)
      return fail(llvm::toString(parsed.takeError()));
    budgetBytes = parsed->budgetBytes;
    sharding = parsed->sharding;
    if (!timeline.empty() && !llvm::StringRef(timeline).ends_with(".svg"))
      return fail("--timeline: '" + timeline + "' must be an .svg file");
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
    if (func::FuncOp function = getMainFunction(module)) {
      report.memory = simulateMemory(function, sharding);
      report.communication = analyzeCommunication(function, sharding, target);
      report.inference = analyzeInference(function, target);
      report.remat = readRematSummary(module);
      if (budgetBytes) {
        report.budget = planBudget(function, *report.memory, *budgetBytes,
                                   sharding, target);
        if (!report.budget->fits)
          warnOverBudget(function, report);
      }
    }
    if (!timeline.empty() && report.memory)
      if (llvm::Error error = writeMemoryTimeline(report, timeline)) {
        mlir::emitError(module.getLoc()) << llvm::toString(std::move(error));
        return signalPassFailure();
      }
    if (!measured.empty()) {
      llvm::Expected<MeasuredRun> run = readMeasuredRun(measured, report);
      if (!run) {
        mlir::emitError(module.getLoc()) << llvm::toString(run.takeError());
        return signalPassFailure();
      }
      report.measured = std::move(*run);
    }
    if (llvm::Error error = writeRooflineReport(report, output)) {
      // A location-only diagnostic: Operation::emitError would append the
      // whole module as a note.
      mlir::emitError(module.getLoc()) << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }

  /// One warning at the op where the peak occurs: what the peak is made of
  /// and the first fix that fits.
  void warnOverBudget(func::FuncOp function, const RooflineReport &report) {
    const MemorySummary &memory = *report.memory;
    Operation *peakOp = &function.getBody().front().front();
    for (auto [i, op] :
         llvm::enumerate(function.getBody().front().without_terminator()))
      if (static_cast<int64_t>(i) == memory.peakStep)
        peakOp = &op;
    auto gb = [](int64_t bytes) {
      return llvm::formatv("{0:f2} GB", bytes / 1e9).str();
    };
    InFlightDiagnostic warning = mlir::emitWarning(peakOp->getLoc())
                                 << "peak memory " << gb(memory.peakBytes)
                                 << " per device exceeds the budget of "
                                 << gb(report.budget->budgetBytes) << " (";
    bool first = true;
    for (unsigned b = 0; b < kNumMemoryBuckets; ++b) {
      if (memory.atPeak[b] == 0)
        continue;
      warning << (first ? "" : ", ")
              << stringifyMemoryBucket(static_cast<MemoryBucket>(b)) << " "
              << gb(memory.atPeak[b]);
      first = false;
    }
    warning << ")";
    for (const MemoryFix &fix : report.budget->fixes)
      if (fix.firstThatFits) {
        warning << "; first fix that fits: " << fix.description << " -> "
                << gb(fix.peakBytes) << ", step time x"
                << llvm::formatv("{0:f2}", fix.timeFactor).str();
        return;
      }
    warning << "; none of the fixes fits alone";
  }

  GPUTarget target;
  std::optional<int64_t> budgetBytes;
  ShardingOptions sharding;
};
} // namespace
