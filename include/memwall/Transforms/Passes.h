//===- Passes.h - memwall passes --------------------------------*- C++ -*-===//

#ifndef MEMWALL_TRANSFORMS_PASSES_H
#define MEMWALL_TRANSFORMS_PASSES_H

#include "memwall/Hardware/GPUTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
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

/// Sets the target that passes use when their `target` and `target-file`
/// options are both empty (memwall-opt forwards --target / --target-file).
/// `launchMode`, when set, overrides the target's launch mode (memwall-opt
/// --launch=stream|graph).
void setDefaultPassTarget(llvm::StringRef targetName,
                          llvm::StringRef targetFile,
                          std::optional<LaunchMode> launchMode = std::nullopt);

/// The target named by `targetName` / `targetFile`; when both are empty, the
/// default set above, and h100-sxm when none was set.
llvm::Expected<GPUTarget> resolveTargetOrDefault(llvm::StringRef targetName,
                                                 llvm::StringRef targetFile);

/// Resolves a pass's target options against the default set above; emits a
/// diagnostic on `ctx` and fails for an unknown name or a bad file.
mlir::FailureOr<GPUTarget> resolvePassTarget(mlir::MLIRContext *ctx,
                                             llvm::StringRef targetName,
                                             llvm::StringRef targetFile);

/// Checks memwall-precision's policy and KV-cache type names (empty: none),
/// for tools to refuse a typo before reading the model.
llvm::Error validatePrecisionOptions(llvm::StringRef policy,
                                     llvm::StringRef kvCacheDtype);

/// Whether `function` is a training step's forward: it returns exactly one
/// tensor<f32>, the loss memwall-autodiff differentiates.
bool returnsLoss(mlir::func::FuncOp function);

/// What memwall-fuse does, for a given target: fuses every function of
/// `module` and marks it memwall.fused.
void fuseModule(mlir::ModuleOp module, const GPUTarget &target);

/// What memwall-tile-attention does, for a given target: rewrites every
/// attention under `root` it can tile (warning at the others) and the
/// backward of each rewritten one.
void tileAttention(mlir::Operation *root, const GPUTarget &target);

#define GEN_PASS_REGISTRATION
#include "memwall/Transforms/Passes.h.inc"

} // namespace memwall

#endif // MEMWALL_TRANSFORMS_PASSES_H
