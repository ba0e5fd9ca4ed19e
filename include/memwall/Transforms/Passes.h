//===- Passes.h - memwall passes --------------------------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

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

#define GEN_PASS_REGISTRATION
#include "memwall/Transforms/Passes.h.inc"

} // namespace memwall

#endif // MEMWALL_TRANSFORMS_PASSES_H
