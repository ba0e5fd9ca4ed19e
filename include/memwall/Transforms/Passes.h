//===- Passes.h - memwall passes --------------------------------*- C++ -*-===//

#ifndef MEMWALL_TRANSFORMS_PASSES_H
#define MEMWALL_TRANSFORMS_PASSES_H

#include "memwall/Hardware/GPUTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace memwall {

class ReportSink;

#define GEN_PASS_DECL
#include "memwall/Transforms/Passes.h.inc"

/// memwall-roofline-report and memwall-remat handing their report, plots and
/// progress to `sink` (ReportSink.h) rather than to the file sink.
std::unique_ptr<mlir::Pass>
createRooflineReport(const RooflineReportOptions &options, ReportSink &sink);
std::unique_ptr<mlir::Pass> createRemat(const RematOptions &options,
                                        ReportSink &sink);

/// Checks memwall-precision's policy and KV-cache type names (empty: none),
/// for tools to refuse a typo before reading the model.
llvm::Error validatePrecisionOptions(llvm::StringRef policy,
                                     llvm::StringRef kvCacheDtype);

/// Whether `function` is a training step's forward: it returns exactly one
/// tensor<f32>, the loss memwall-autodiff differentiates.
bool returnsLoss(mlir::func::FuncOp function);

/// What memwall-fuse did to a function.
struct FusionCounts {
  unsigned kernelsFormed = 0;
  unsigned opsFused = 0;
  double predictedSecondsSaved = 0;
};

/// What memwall-fuse does, for a given target: fuses the ops of `function`
/// into memwall.fusion kernels and marks it memwall.fused.
FusionCounts fuseFunction(mlir::FunctionOpInterface function,
                          const GPUTarget &target);

/// fuseFunction on every function of `module`.
void fuseModule(mlir::ModuleOp module, const GPUTarget &target);

/// What memwall-tile-attention did: attention ops (forward and backward)
/// rewritten into their tiled form, and those left untiled with a warning.
struct AttentionTilingCounts {
  unsigned tiled = 0;
  unsigned untiled = 0;
};

/// What memwall-tile-attention does, for a given target: rewrites every
/// attention under `root` it can tile (warning at the others) and the
/// backward of each rewritten one.
AttentionTilingCounts tileAttention(mlir::Operation *root,
                                    const GPUTarget &target);

#define GEN_PASS_REGISTRATION
#include "memwall/Transforms/Passes.h.inc"

} // namespace memwall

#endif // MEMWALL_TRANSFORMS_PASSES_H
