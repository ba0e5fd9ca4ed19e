//===- TestCostAnalysis.cpp - print CostAnalysis --------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-test-print-cost-analysis: prints each kernel of the module as
// CostAnalysis (CostAnalysis.h) estimates it, and whether the analysis came
// from the pass manager's cache. The pass changes nothing and preserves
// every analysis, so a second instance in the same pipeline reuses it.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"

#include "memwall/Analysis/CostAnalysis.h"

#include "mlir/Pass/Pass.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace memwall;

namespace {
struct TestPrintCostAnalysisPass
    : public PassWrapper<TestPrintCostAnalysisPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPrintCostAnalysisPass)

  StringRef getArgument() const final {
    return "memwall-test-print-cost-analysis";
  }
  StringRef getDescription() const final {
    return "Print the kernels CostAnalysis estimates, and whether it was "
           "cached";
  }

  void runOnOperation() override {
    bool cached = getCachedAnalysis<CostAnalysis>().has_value();
    const CostAnalysis &analysis = getAnalysis<CostAnalysis>();
    FailureOr<GPUTarget> target = analysis.getTarget();
    if (failed(target))
      return signalPassFailure();
    llvm::raw_ostream &os = llvm::outs();
    const ModuleCost &cost = analysis.getModuleCost();
    os << "cost analysis (" << (cached ? "cached" : "computed") << ") of '"
       << cost.modelName << "' on " << target->name << ": " << cost.ops.size()
       << " kernels, " << cost.params << " params (" << cost.paramBytes
       << " B)\n";
    for (const OpRecord &op : cost.ops)
      os << llvm::formatv("  #{0} {1} at {2}: {3} FLOP, {4} B read, {5} B "
                          "written, {6} {7}-bound, {8:e3} s ({9})\n",
                          op.id, op.op, op.loc, op.flops, op.bytesRead,
                          op.bytesWritten, op.category,
                          op.estimate.memoryBound ? "memory" : "compute",
                          op.estimate.timeSeconds,
                          stringifyMathPrecision(op.precision));
    if (cost.fusion)
      os << llvm::formatv("  fusion: {0} -> {1} kernels, {2} B saved, "
                          "{3:e3} s -> {4:e3} s\n",
                          cost.fusion->kernelsBefore,
                          cost.fusion->kernelsAfter, cost.fusion->bytesSaved,
                          cost.fusion->timeBeforeSeconds,
                          cost.fusion->timeAfterSeconds);
    markAllAnalysesPreserved();
  }
};
} // namespace

void memwall::test::registerTestCostAnalysisPass() {
  PassRegistration<TestPrintCostAnalysisPass>();
}
