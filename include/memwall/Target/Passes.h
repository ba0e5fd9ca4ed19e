//===- Passes.h - memwall codegen passes ------------------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compile path, model to bundle, as passes; memwall-lower-to-bundle
// (memwall/Pipelines.h) runs them in order.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_TARGET_PASSES_H
#define MEMWALL_TARGET_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace arith {
class ArithDialect;
}
namespace gpu {
class GPUDialect;
}
namespace math {
class MathDialect;
}
namespace memref {
class MemRefDialect;
}
namespace scf {
class SCFDialect;
}
namespace vector {
class VectorDialect;
}
namespace LLVM {
class LLVMDialect;
}
namespace NVVM {
class NVVMDialect;
}
namespace nvgpu {
class NVGPUDialect;
}
} // namespace mlir

namespace memwall {
class MemWallDialect;

#define GEN_PASS_DECL
#include "memwall/Target/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "memwall/Target/Passes.h.inc"

} // namespace memwall

#endif // MEMWALL_TARGET_PASSES_H
