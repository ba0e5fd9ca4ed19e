//===- Remat.h - recomputation placement on training steps ------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The IR side of memwall-remat: the recomputation problem of a training step
// (RematSolver.h), applying a plan, and the summary the pass leaves on the
// module for the report.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_TRANSFORMS_REMAT_H
#define MEMWALL_TRANSFORMS_REMAT_H

#include "memwall/Analysis/RematResults.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace memwall {

/// The summary memwall-remat recorded on `module`, if any.
std::optional<RematSummary> readRematSummary(mlir::ModuleOp module);

/// Checks memwall-remat's solver name, time limit and Pareto file name.
llvm::Error validateRematOptions(const std::string &solver, double timeLimit,
                                 llvm::StringRef pareto);

} // namespace memwall

#endif // MEMWALL_TRANSFORMS_REMAT_H
