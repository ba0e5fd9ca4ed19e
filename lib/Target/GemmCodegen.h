//===- GemmCodegen.h - Tensor-core GEMM with a fused epilogue ---*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall's own GEMM kernel (sm_80 and later): mma.sync.m16n8k16 on
// bf16/f16 operands with f32 accumulators, operands staged through a
// multi-stage cp.async ring and read with ldmatrix, and the kernel's
// elementwise ops run on the accumulator tile before it is written
// (docs/codegen.md). f32 operands run on an exact-fp32 FFMA kernel with the
// same epilogue.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_GEMMCODEGEN_H
#define MEMWALL_LIB_TARGET_GEMMCODEGEN_H

#include "memwall/Analysis/FusionCost.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace memwall {

/// Appends the GEMM kernel of `analysis` (anchor: the matmul; ops: the
/// matmul and its elementwise epilogue, optionally with one layer_norm or
/// rms_norm over N when the tiling holds whole rows, in one tile or
/// row-chunked; gemm and tiling set) to `gpuModule`
/// as `name`. Parameters: the analysis' inputs in order, then `outputs`, all
/// flat 1-D memrefs. Launch it with grid tiling.grid, tiling.threads threads
/// and tiling.sharedBytes bytes of dynamic shared memory. Fails (with an
/// error at the matmul) on an analysis the kernel cannot run.
///
/// With split K (tiling.splitK > 1) block z multiplies split z's k-steps
/// (getGemmKStepsPerSplit from z times that), and the last block of each
/// tile sums the splits and runs the epilogue; two parameters follow the
/// outputs: the [splitK, rhsOperands, M, N] f32 partials and the tiles'
/// arrival counters (getGemmSplitKCounters i32, zero before the launch and
/// left zero by it).
mlir::FailureOr<mlir::gpu::GPUFuncOp>
emitGemmKernel(mlir::gpu::GPUModuleOp gpuModule, llvm::StringRef name,
               const KernelAnalysis &analysis,
               llvm::ArrayRef<mlir::Value> outputs);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_GEMMCODEGEN_H
