//===- LayoutCodegen.h - data-movement kernels -------------------*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Kernels for the ops that move data rather than compute on it: transpose,
// slice, pad, concat, embedding (a row gather) and rope (a rotation of
// feature pairs).
// One thread per `width` consecutive output elements: 16-byte vectors when
// the innermost dimension is contiguous in the input and stays aligned,
// else single elements. docs/codegen.md, "Data-movement kernels".
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_LAYOUTCODEGEN_H
#define MEMWALL_LIB_TARGET_LAYOUTCODEGEN_H

#include "memwall/Analysis/FusionCost.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>

namespace memwall {

/// True for the ops emitLayoutKernel handles.
bool isLayoutOp(mlir::Operation *op);

/// True for a kv_cache_append that appends in place
/// (KVCacheAppendOp::canAppendInPlace): its kernel reads the update and
/// writes only the new rows of the cache's buffer.
bool appendsInPlace(mlir::Operation *op);

struct LayoutKernelPlan {
  /// Output elements per thread (one vector); a rope thread takes `width`
  /// pairs (i, i + D/2) of `heads` heads.
  int64_t width = 1;
  int64_t heads = 1;
  /// A transpose of the last two dims through shared memory: tiles of
  /// `tile` x `tile` elements, one per block, read and written in vectors
  /// of `width` (0: not tiled).
  int64_t tile = 0;
  int64_t threads = 256;
  std::array<int64_t, 3> grid{1, 1, 1};
};

LayoutKernelPlan planLayoutKernel(mlir::Operation *op);

/// The launch of a rope kernel: vectors of up to 16 bytes that every input
/// view keeps aligned, and `heads` heads per thread dividing every rope's.
LayoutKernelPlan planRopeKernel(const RopeViews &views);

/// Appends the rope kernel `name` (a lone rope or a rope fusion) to
/// `gpuModule`. Parameters (flat memrefs): the buffers the ropes' inputs are
/// read from (views.sources), the positions, then each rope's result.
mlir::gpu::GPUFuncOp emitRopeKernel(mlir::gpu::GPUModuleOp gpuModule,
                                    llvm::StringRef name,
                                    const RopeViews &views,
                                    const LayoutKernelPlan &plan);

/// Appends the kernel `name` for `op` to `gpuModule`. Parameters (flat
/// memrefs): the op's operands in order, then its result.
mlir::gpu::GPUFuncOp emitLayoutKernel(mlir::gpu::GPUModuleOp gpuModule,
                                      llvm::StringRef name, mlir::Operation *op,
                                      const LayoutKernelPlan &plan);

/// rope's math, shared by its own kernel and the GEMM epilogue that writes
/// q or k heads-split: `rotation(x, partner)` of element `column` (of D) of
/// a head at `position`, x cos θ ∓ partner sin θ in f32, θ = ±position ·
/// theta^(-2(column mod D/2)/D), the first half subtracting.
struct RopeRotation {
  RopeRotation(mlir::ImplicitLocOpBuilder &b, RopeOp rope, mlir::Value position,
               mlir::Value column);
  /// The column of `column`'s partner: column ± D/2.
  mlir::Value partnerColumn;
  mlir::Value rotate(mlir::Value x, mlir::Value partner) const;
  /// Both elements of a pair at once, `column` in the first half: x's
  /// result x cos θ - partner sin θ and the partner's partner cos θ + x sin θ
  /// (one sine and cosine for the two).
  std::pair<mlir::Value, mlir::Value> rotatePair(mlir::Value x,
                                                 mlir::Value partner) const;

  /// `positions[batch · S + s]` (positions [B, S]) or `positions[s]` ([S]),
  /// as f32.
  static mlir::Value loadPosition(mlir::ImplicitLocOpBuilder &b, RopeOp rope,
                                  mlir::Value positions, mlir::Value batch,
                                  mlir::Value s);

private:
  mlir::ImplicitLocOpBuilder &b;
  mlir::Value cosine, sine, signedSine;
};

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_LAYOUTCODEGEN_H
