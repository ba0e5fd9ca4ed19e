//===- AttentionCodegen.h - Tensor-core FlashAttention kernels -*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The kernels that run memwall.flash_attention (docs/codegen.md, "Attention
// kernel"): FlashAttention-2's forward on mma.sync m16n8k16 tensor cores,
// K/V tiles streamed into shared memory by cp.async, fragments read with
// ldmatrix. One block per (query block, batch x head, split); each warp owns
// 16 query rows. With split keys, the blocks write fp32 partial outputs and
// their log-sum-exps, and the last split of each block of rows to finish
// (an arrival counter per block of rows) combines them.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_ATTENTIONCODEGEN_H
#define MEMWALL_LIB_TARGET_ATTENTIONCODEGEN_H

#include "memwall/Analysis/FusionCost.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>
#include <string>

namespace memwall {

/// How the attention kernel runs one op.
struct AttentionKernelPlan {
  /// Query rows per block (a multiple of 16: one warp per 16 rows); the
  /// op's block_q, or fewer when the sequence is shorter.
  int64_t blockQ = 0;
  int64_t blockKV = 0;
  int64_t splits = 1;
  int64_t threads() const { return blockQ / 16 * 32; }
  std::array<int64_t, 3> grid{1, 1, 1};
  /// Dynamic shared memory: the Q, K and V tiles, rows padded by 16 bytes so
  /// that ldmatrix's eight row addresses fall in distinct banks.
  int64_t sharedBytes = 0;
};

/// Why the tensor-core kernel cannot run `op` ("" when it can).
std::string whyNoAttentionKernel(FlashAttentionOp op);

/// The launch of `op`'s kernels. Requires whyNoAttentionKernel(op) == "".
AttentionKernelPlan planAttentionKernel(FlashAttentionOp op);

/// Appends the forward kernel `name` of `views.attention` to `gpuModule`.
/// Parameters (flat memrefs): the buffers q, k and v are read from (their
/// views' sources), the mask if any, the output's buffer (written through
/// views.outputLayout) and the log-sum-exp; with splits then the fp32
/// partial outputs `[splits, B, Hq, Sq, Dv]`, partial log-sum-exps
/// `[splits, B, Hq, Sq]` and getAttentionCounters i32 arrival counters
/// (zero before the launch, left zero by it): each block writes its split's
/// partials, and the last split of a block of rows merges them all
/// (buildIfLastArrival).
mlir::gpu::GPUFuncOp emitAttentionKernel(mlir::gpu::GPUModuleOp gpuModule,
                                         llvm::StringRef name,
                                         const AttentionViews &views,
                                         const AttentionKernelPlan &plan);

/// An attention op's mask operand as the [B, Hq, Sq, Sk] mask it broadcasts
/// to (the forward's and the backward's kernels read it alike).
struct BroadcastMask {
  explicit BroadcastMask(mlir::RankedTensorType type);
  /// `score` (f32, in log2 units) with the mask element at (batch, head,
  /// query, key) of the flat `mask` buffer applied: plus the value · log2 e,
  /// or -inf where an i1 mask is false.
  mlir::Value apply(mlir::ImplicitLocOpBuilder &b, mlir::Value mask,
                    mlir::Value score, mlir::Value batch, mlir::Value head,
                    mlir::Value query, mlir::Value key) const;
  /// Element strides of the broadcast mask (0 along broadcast dimensions).
  std::array<int64_t, 4> strides{};
  mlir::Type element;
};

/// With splits: the arrival counters, one per block of query rows of a KV
/// head (grid.x x grid.y).
int64_t getAttentionCounters(const AttentionKernelPlan &plan);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_ATTENTIONCODEGEN_H
