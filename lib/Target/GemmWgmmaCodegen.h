//===- GemmWgmmaCodegen.h - The sm_90a GEMM main loop -----------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The main loop of memwall's GEMM kernel on sm_90a (GemmVariant::Wgmma):
// lhs and rhs tiles by TMA into 128B-swizzled shared memory, a ring of
// stages each completing on its own mbarrier, and wgmma.mma_async (through
// nvgpu.warpgroup.mma) from one warpgroup, or (GemmVariant::
// WgmmaWarpSpecialized) a TMA producer warpgroup feeding two consumer
// warpgroups. GemmCodegen.cpp builds the rest of the kernel (parameters,
// epilogue) around it.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_GEMMWGMMACODEGEN_H
#define MEMWALL_LIB_TARGET_GEMMWGMMACODEGEN_H

#include "memwall/Analysis/GemmTiling.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <string>

namespace memwall {

/// The type of the lhs (`isLhs`) or rhs kernel parameter of the wgmma
/// kernel: a 128B-swizzled, zero-filling tensor map over the operand as a
/// 2-D row-major matrix (lhs [M, K]; rhs [N, K] or [K, N]) whose box is one
/// ring stage's tile (blockM x 64, blockN x 64, or 64 x 64 of [K, N], which
/// a stage loads blockN / 64 times).
mlir::nvgpu::TensorMapDescriptorType
getGemmWgmmaOperandMapType(mlir::MLIRContext *context,
                           const GemmProblem &problem,
                           const GemmTiling &tiling, bool isLhs);

/// Why the wgmma main loop cannot be built for `problem` with `tiling` (""
/// when it can).
std::string whyCannotBuildGemmWgmma(const GemmProblem &problem,
                                    const GemmTiling &tiling);

/// What the main loop leaves to the epilogue.
struct GemmWgmmaMainLoop {
  /// The kernel's shared memory from its first 1024-byte aligned byte on
  /// (tiling.sharedBytes - kGemmWgmmaAlignmentSlack bytes).
  mlir::Value shared;
  /// blockM / 64 accumulators of 64 x blockN, rows 64·i.. of the tile
  /// (none for the warp-specialized kernel: see stagedTile).
  llvm::SmallVector<mlir::Value> accumulators;
  /// Warp-specialized: the scf.if that splits the producer warpgroup (then)
  /// from the consumers (else), and the warpgroup index (threadIdx.y). The
  /// main loop leaves the builder in the consumers' branch, where the
  /// epilogue runs.
  mlir::Operation *producerSplit = nullptr;
  mlir::Value warpgroup;
  /// Warp-specialized: the accumulators, already staged (blockM x blockN
  /// f32, dense, visible to every consumer thread), and a blockM x 2 f32
  /// tile for a norm's row statistics.
  mlir::Value stagedTile, statistics;
};

/// The plain wgmma kernel's ring, kept by a CTA that runs several main
/// loops (the row-chunked kernel, one per column chunk): the shared memory
/// from its first 1024-byte aligned byte on and the slots' mbarriers,
/// initialized once.
struct GemmWgmmaRing {
  mlir::Value shared, barriers;
};
GemmWgmmaRing buildGemmWgmmaRing(mlir::ImplicitLocOpBuilder &b,
                                 const GemmProblem &problem,
                                 const GemmTiling &tiling, mlir::Value tid);

/// Emits the main loop at `b`'s insertion point: the tile at rows `tileRow`,
/// columns `tileColumn` of the product, the operands read through the
/// tensor-map parameters `lhsMap` and `rhsMap`; `tid` is the thread index.
/// The loop runs `kSteps` k-steps from K index `firstK` (split K; the steps
/// past K read zeros). With `ring` (plain kernel only) it runs on that ring
/// after `stepsBefore` k-steps went through it: each k-step's slot and
/// mbarrier phase continue from there. With `siblingRhsMap` (plain kernel) it
/// is a dual GEMM: a second rhs ring after the first, loaded in the same
/// stage, and its accumulators after the first rhs's in `accumulators`.
GemmWgmmaMainLoop buildGemmWgmmaMainLoop(
    mlir::ImplicitLocOpBuilder &b, const GemmProblem &problem,
    const GemmTiling &tiling, mlir::Value lhsMap, mlir::Value rhsMap,
    mlir::Value tid, mlir::Value tileRow, mlir::Value tileColumn,
    mlir::Value firstK, int64_t kSteps, const GemmWgmmaRing *ring = nullptr,
    mlir::Value stepsBefore = mlir::Value(),
    mlir::Value siblingRhsMap = mlir::Value());

/// The warp-specialized kernel's barrier of its 256 consumer threads (named
/// barrier 1: the producer warpgroup does not take part).
void buildGemmConsumerBarrier(mlir::ImplicitLocOpBuilder &b);

/// Stores the (plain wgmma kernel's) accumulators to a dense blockM x blockN
/// f32 tile at byte `offset` of `loop.shared` (nvgpu.warpgroup.mma.store),
/// then a barrier; returns the tile.
mlir::Value storeGemmWgmmaAccumulators(mlir::ImplicitLocOpBuilder &b,
                                       const GemmTiling &tiling,
                                       llvm::ArrayRef<mlir::Value> accumulators,
                                       mlir::Value shared, int64_t offset);

/// Writes the (plain wgmma kernel's) accumulators to `tile` (blockM x
/// (blockN + pad) f32 at the start of `loop.shared`) through a dense staging
/// tile after it, as nvgpu.warpgroup.mma.store writes only dense 64 x blockN
/// destinations (a barrier between the two; the caller's barrier follows the
/// copy).
void stageGemmWgmmaAccumulators(mlir::ImplicitLocOpBuilder &b,
                                const GemmTiling &tiling,
                                llvm::ArrayRef<mlir::Value> accumulators,
                                mlir::Value shared, mlir::Value tid,
                                mlir::Value tile, int64_t denseOffset);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_GEMMWGMMACODEGEN_H
