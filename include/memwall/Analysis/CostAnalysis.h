//===- CostAnalysis.h - Roofline costs of memwall IR ------------*- C++ -*-===//
//
// Evaluates CostOpInterface ops against a GPUTarget and collects a module's
// per-op roofline report.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_COSTANALYSIS_H
#define MEMWALL_ANALYSIS_COSTANALYSIS_H

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Report/RooflineReport.h"

#include "mlir/IR/BuiltinOps.h"

namespace memwall {

/// The time model's estimate of `op` running as its own kernel on
/// `target`: ops codegen runs as generated kernels or cuBLASLt calls (and
/// fusions) through the fusion cost model's kernel analysis, geometry
/// included; any other op from its CostOpInterface kernel work.
RooflineEstimate estimateOpRoofline(CostOpInterface op,
                                    const GPUTarget &target);
/// The kernel work estimateOpRoofline times.
KernelWork getOpKernelWork(CostOpInterface op, const GPUTarget &target);

/// The report's kernel category of `op` (OpRecord::category) given its
/// kernel work.
std::string getTimeCategory(CostOpInterface op, const KernelWork &work);

/// Parameter count and bytes: the elements of every function argument tagged
/// `memwall.kind = #memwall.arg_kind<weight>`, over all functions.
struct ParameterSummary {
  int64_t params = 0;
  int64_t bytes = 0;
};
ParameterSummary summarizeParameters(mlir::ModuleOp module);

/// Fails, with one error at the op or function where a running total stops
/// fitting int64, when the module's FLOPs, bytes moved, parameters or a
/// function's buffer bytes (arguments and every result) are more than
/// memwall can count. Every aggregate memwall reports (totals, memory
/// peaks, sharded states, arenas, fusion groups) sums subsets of these, so
/// passes and tools that aggregate run this first.
mlir::LogicalResult verifyCountableTotals(mlir::ModuleOp module);

/// Formats a location for reports: "file:line:col" for file locations, the
/// name for name locations ("layers.0.attn.qkv"), "?" when unknown.
std::string formatLocationForReport(mlir::Location loc);

/// The roofline report of every CostOpInterface op in `module`, in program
/// order.
RooflineReport buildRooflineReport(mlir::ModuleOp module,
                                   const GPUTarget &target);

} // namespace memwall

#endif // MEMWALL_ANALYSIS_COSTANALYSIS_H
