//===- CodegenTarget.h - the target codegen compiles for --------*- C++ -*-===//

#ifndef MEMWALL_LIB_TARGET_CODEGENTARGET_H
#define MEMWALL_LIB_TARGET_CODEGENTARGET_H

#include "memwall/Hardware/GPUTarget.h"

#include "mlir/IR/Operation.h"

namespace memwall {

/// The GPU target of the module holding `op`: the one place codegen's
/// passes read their target. Emits a diagnostic and fails without one.
mlir::FailureOr<GPUTarget> getCodegenTarget(mlir::Operation *op);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_CODEGENTARGET_H
