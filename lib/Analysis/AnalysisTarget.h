//===- AnalysisTarget.h - the target memwall's analyses predict for -*- C++ -*-//
//
// The one place the analysis classes take their GPU target from.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_ANALYSIS_ANALYSISTARGET_H
#define MEMWALL_LIB_ANALYSIS_ANALYSISTARGET_H

#include "memwall/Hardware/GPUTarget.h"

#include "mlir/IR/Operation.h"

namespace memwall {

/// The target the IR at `op` is compiled and predicted for. Emits an error
/// at `op` and fails when the IR names no usable target.
mlir::FailureOr<GPUTarget> getAnalysisTarget(mlir::Operation *op);

} // namespace memwall

#endif // MEMWALL_LIB_ANALYSIS_ANALYSISTARGET_H
