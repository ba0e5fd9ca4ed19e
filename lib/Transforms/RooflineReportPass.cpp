//===- RooflineReportPass.cpp - write the roofline report -----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/CommunicationAnalysis.h"
#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/InferenceAnalysis.h"
#include "memwall/Analysis/InferenceFixes.h"
#include "memwall/Analysis/MemoryAnalysis.h"
#include "memwall/Analysis/ParallelismAnalysis.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Report/ReportSink.h"
#include "memwall/Support/Units.h"
#include "memwall/Transforms/Passes.h"
#include "memwall/Transforms/Remat.h"

#include "llvm/ADT/StringExtras.h"
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
  RooflineReportPass(const RooflineReportOptions &options, ReportSink &sink)
      : RooflineReportBase(options), sink(&sink) {}

  LogicalResult initialize(MLIRContext *ctx) override {
    // Reject a bad path before any work is done.
    if (!getReportFormatForPath(output)) {
      emitError(UnknownLoc::get(ctx))
          << "cannot choose a report format for '" << output
          << "': use a .json, .txt or .svg file, or - for text on stdout";
      return failure();
    }
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
    llvm::Expected<ParallelismOptions> plan = parseParallelismOptions(
        tensorParallel, sequenceParallel, pipelineParallel, pipelineSchedule,
        virtualStages, microBatches, expertParallel);
    if (!plan)
      return fail(llvm::toString(plan.takeError()));
    parallel = *plan;
    if (!timeline.empty() && !llvm::StringRef(timeline).ends_with(".svg"))
      return fail("--timeline: '" + timeline + "' must be an .svg file");
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(verifyCountableTotals(module)))
      return signalPassFailure();
    // The costs are the pass manager's cached CostAnalysis (the same one
    // memwall-test-print-cost-analysis prints).
    const CostAnalysis &costs = getAnalysis<CostAnalysis>();
    FailureOr<GPUTarget> moduleTarget = costs.getTarget();
    if (failed(moduleTarget))
      return signalPassFailure();
    target = std::move(*moduleTarget);
    RooflineReport report = buildRooflineReport(target, costs.getModuleCost());
    if (report.modelName.empty()) {
      if (auto fileLoc = dyn_cast<FileLineColLoc>(module.getLoc()))
        report.modelName = fileLoc.getFilename().str();
      else
        report.modelName = formatLocationForReport(module.getLoc());
    }
    if (func::FuncOp function = getMainFunction(module)) {
      report.memory =
          getChildAnalysis<MemoryLiveness>(function).simulate(sharding);
      report.communication = analyzeCommunication(function, sharding, target);
      // A split step: one device's memory, its data-parallel traffic and
      // the other kinds of communication.
      if (isSplit()) {
        const ParallelLayout &layout =
            getChildAnalysis<ParallelLayout>(function);
        if (failed(layout.check(parallel)))
          return signalPassFailure();
        MemorySummary memory;
        CommunicationSummary dataParallel;
        report.parallelism =
            layout.evaluate(parallel, sharding, target, &memory, &dataParallel);
        report.memory = std::move(memory);
        if (report.communication)
          report.communication = std::move(dataParallel);
      }
      report.inference = analyzeInference(function, target);
      report.remat = readRematSummary(module);
      bool warned = false;
      if (budgetBytes) {
        report.budget = plan(function, report, *budgetBytes);
        if (!report.budget->fits) {
          warnOverBudget(function, report);
          warned = true;
        }
      }
      // Over the device's memory, budget or not.
      int64_t capacity = static_cast<int64_t>(target.memoryCapacityBytes);
      if (!warned && capacity > 0 && report.memory->peakBytes > capacity)
        warnOverCapacity(function, report, capacity);
      if (maxBatch) {
        int64_t limit = budgetBytes.value_or(capacity);
        if (limit > 0)
          report.capacity =
              findMaxBatch(function, sharding, target, limit,
                           budgetBytes ? "budget" : "capacity");
      }
    }
    if (!timeline.empty() && report.memory)
      if (llvm::Error error = sink->emitMemoryTimeline(report, timeline)) {
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
    if (llvm::Error error = sink->emitRooflineReport(report, output)) {
      // A location-only diagnostic: Operation::emitError would append the
      // whole module as a note.
      mlir::emitError(module.getLoc()) << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }

  /// Whether the step is split beyond data parallelism (or micro-batched).
  bool isSplit() const {
    return !parallel.isSingleDevice() || parallel.sequenceParallel ||
           parallel.microBatches > 1;
  }

  /// Training fixes for a training step, serving fixes for inference. A
  /// training step also gets the best tensor/pipeline/expert-parallel
  /// plans; one already split gets only those (the single-device fixes do
  /// not compose with its plan).
  BudgetSummary plan(func::FuncOp function, const RooflineReport &report,
                     int64_t limitBytes) {
    const MemorySummary &memory = *report.memory;
    if (!memory.training)
      return planInferenceBudget(function, memory, limitBytes, sharding,
                                 target);
    BudgetSummary budget =
        isSplit() ? compareWithBudget(memory, limitBytes)
                  : planBudget(function, memory, limitBytes, sharding, target);
    if (budget.fits)
      return budget;
    double base = 0;
    if (report.parallelism)
      base = report.parallelism->stepSeconds;
    else if (report.communication)
      base = report.communication->stepSeconds;
    appendParallelPlanFixes(budget, getChildAnalysis<ParallelLayout>(function),
                            sharding, parallel, target, base);
    return budget;
  }

  /// One warning at the function: the peak exceeds the target's memory.
  static std::string formatBytes(int64_t bytes) {
    return formatSI(bytes, "B");
  }

  /// " (weights 13.48 GB, ...)": the buckets the peak is made of.
  static void appendPeakBuckets(InFlightDiagnostic &warning,
                                const MemorySummary &memory) {
    llvm::ListSeparator separator;
    warning << " (";
    for (unsigned b = 0; b < kNumMemoryBuckets; ++b)
      if (memory.atPeak[b] != 0)
        warning << StringRef(separator)
                << stringifyMemoryBucket(static_cast<MemoryBucket>(b)) << " "
                << formatBytes(memory.atPeak[b]);
    warning << ")";
  }

  void warnOverCapacity(func::FuncOp function, const RooflineReport &report,
                        int64_t capacity) {
    const MemorySummary &memory = *report.memory;
    auto gb = formatBytes;
    InFlightDiagnostic warning =
        mlir::emitWarning(function.getLoc())
        << "peak memory " << gb(memory.peakBytes) << " per device exceeds the "
        << gb(capacity) << " of " << target.name;
    appendPeakBuckets(warning, memory);
    BudgetSummary fixes = plan(function, report, capacity);
    for (const MemoryFix &fix : fixes.fixes)
      if (fix.firstThatFits) {
        warning << "; first fix that fits: " << fix.description << " -> "
                << gb(fix.peakBytes);
        return;
      }
    warning << "; none of the fixes fits alone";
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
    auto gb = formatBytes;
    InFlightDiagnostic warning = mlir::emitWarning(peakOp->getLoc())
                                 << "peak memory " << gb(memory.peakBytes)
                                 << " per device exceeds the budget of "
                                 << gb(report.budget->budgetBytes);
    appendPeakBuckets(warning, memory);
    for (const MemoryFix &fix : report.budget->fixes)
      if (fix.firstThatFits) {
        warning << "; first fix that fits: " << fix.description << " -> "
                << gb(fix.peakBytes) << ", step time x"
                << llvm::formatv("{0:f2}", fix.timeFactor).str();
        return;
      }
    warning << "; none of the fixes fits alone";
  }

  /// Where the report and the timeline go.
  ReportSink *sink = &getFileReportSink();
  ParallelismOptions parallel;
  GPUTarget target;
  std::optional<int64_t> budgetBytes;
  ShardingOptions sharding;
};
} // namespace

std::unique_ptr<Pass>
memwall::createRooflineReport(const RooflineReportOptions &options,
                              ReportSink &sink) {
  return std::make_unique<RooflineReportPass>(options, sink);
}
