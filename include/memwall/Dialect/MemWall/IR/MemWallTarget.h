//===- MemWallTarget.h - the GPU target carried in the IR -------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A module names the GPU it is compiled and predicted for in its
// `memwall.target` attribute (#memwall.target<...>, set by
// memwall-set-target). Passes read it with getTargetOf; there is no
// process-wide target.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_DIALECT_MEMWALL_IR_MEMWALLTARGET_H
#define MEMWALL_DIALECT_MEMWALL_IR_MEMWALLTARGET_H

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Hardware/GPUTarget.h"

namespace memwall {

/// The attribute, on a module (or any op), that holds its target.
constexpr llvm::StringLiteral kTargetAttrName = "memwall.target";

/// `target` as an attribute: every figure, so that getTarget() gives back a
/// target equal to it field by field.
TargetAttr getTargetAttr(mlir::MLIRContext *ctx, const GPUTarget &target);

/// The target in the `memwall.target` attribute of `op` or of its nearest
/// ancestor that has one; h100-sxm (kDefaultGPUTargetName) when none does.
/// An attribute that is not a #memwall.target is one error at `op`.
mlir::FailureOr<GPUTarget> getTargetOf(mlir::Operation *op);

/// The attribute, on a module, that says which kernel runs its matmuls:
/// "auto" (the faster by the cost model), "cublaslt" or "memwall" (the
/// generated GEMM wherever it can run). Set by memwall-set-target{gemm=...}.
constexpr llvm::StringLiteral kGemmBackendAttrName = "memwall.gemm";

/// The unit attribute, on a module (or any ancestor of a matmul), that opts
/// the generated GEMM into its sm_90a wgmma + TMA kernel (GemmTiling.h) where
/// the target is sm_90a. That is the default since it ran on an H100
/// (docs/PERFORMANCE.md: 1.7x the mma.sync kernel's rate on large GEMMs);
/// `memwall.gemm_wgmma = false` keeps a module (or op) on mma.sync.
constexpr llvm::StringLiteral kGemmWgmmaAttrName = "memwall.gemm_wgmma";

/// The unit attribute, on a module (or any ancestor of a matmul), that opts
/// the sm_90a wgmma kernel into its warp-specialized form (GemmTiling.h,
/// GemmVariant::WgmmaWarpSpecialized): a TMA producer warpgroup and two
/// consumer warpgroups on 128x256 and 128x128 tiles. Opt-in until it has run
/// on an H100; `memwall.gemm_warp_specialized = false` turns it off below an
/// ancestor that turned it on.
constexpr llvm::StringLiteral kGemmWarpSpecializedAttrName =
    "memwall.gemm_warp_specialized";

/// The unit attribute, on a module (or any ancestor of a matmul), that lets
/// the generated fp8 GEMM accumulate at the tensor cores' fp8 precision
/// over the whole K (cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM, PyTorch's
/// `_scaled_mm(use_fast_accum=True)`, Transformer Engine's forward GEMMs).
/// Off by default: every k-step's partial sum is promoted into an f32
/// accumulator on the CUDA cores (docs/codegen.md, "fp8 GEMMs"), at the cost
/// of a second accumulator set and a wait per k-step.
constexpr llvm::StringLiteral kGemmFp8FastAccumulationAttrName =
    "memwall.gemm_fp8_fast_accumulation";

/// The GEMM backend policy of `op`'s nearest ancestor that names one; Auto
/// when none does (or the attribute is not one of the three names, which
/// memwall-set-target never writes).
GemmBackend getGemmBackendOf(mlir::Operation *op);

} // namespace memwall

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLTARGET_H
