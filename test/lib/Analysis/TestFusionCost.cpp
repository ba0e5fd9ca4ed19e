//===- TestFusionCost.cpp - print FusionCostAnalysis ----------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-test-print-fusion-cost: prints, for every memwall.fusion and every
// other kernel candidate, the kernel FusionCostAnalysis (FusionCost.h) found
// (kind, iteration space, launch geometry, predicted time) or why the ops
// cannot run as one kernel.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"

#include "memwall/Analysis/CostAnalysis.h"
#include "memwall/Analysis/FusionCost.h"

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace memwall;

namespace {
struct TestPrintFusionCostPass
    : public PassWrapper<TestPrintFusionCostPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPrintFusionCostPass)

  StringRef getArgument() const final {
    return "memwall-test-print-fusion-cost";
  }
  StringRef getDescription() const final {
    return "Print the kernel FusionCostAnalysis finds for every fusion and "
           "kernel candidate";
  }

  void runOnOperation() override {
    const FusionCostAnalysis &analysis = getAnalysis<FusionCostAnalysis>();
    if (failed(analysis.getTarget()))
      return signalPassFailure();
    llvm::raw_ostream &os = llvm::outs();
    getOperation().walk([&](Operation *op) {
      if (!isKernelCandidate(op))
        return;
      os << op->getName() << " at " << formatLocationForReport(op->getLoc())
         << ": ";
      const KernelAnalysis *kernel = analysis.lookup(op);
      if (!kernel) {
        os << "no kernel: " << analysis.getWhyNot(op) << "\n";
        return;
      }
      os << llvm::formatv(
          "{0} kernel of {1} ops over [{2}], {3} inputs, {4} outputs; ",
          stringifyFusionKind(kernel->kind), kernel->ops.size(),
          llvm::join(llvm::map_range(
                         kernel->iterationShape,
                         [](int64_t d) { return std::to_string(d); }),
                     "x"),
          kernel->inputs.size(), kernel->outputs.size());
      // A matmul epilogue is a cuBLASLt call: no geometry of memwall's.
      const KernelGeometry &g = kernel->geometry;
      if (kernel->kind == FusionKind::MatmulEpilogue)
        os << "cuBLASLt; ";
      else
        os << llvm::formatv("{0} threads x {1} blocks, vector {2}, {3} "
                            "vectors/thread, {4} registers, occupancy "
                            "{5:f2}; ",
                            g.threadsPerBlock, g.gridSize, g.vectorWidth,
                            g.vectorsPerThread, g.registersPerThread,
                            g.occupancy);
      os << llvm::formatv("{0} FLOP, {1} B; {2:e3} s\n", kernel->flops,
                          kernel->bytesRead + kernel->bytesWritten,
                          kernel->timeSeconds);
    });
    markAllAnalysesPreserved();
  }
};
} // namespace

void memwall::test::registerTestFusionCostPass() {
  PassRegistration<TestPrintFusionCostPass>();
}
