//===- AttentionGradCodegen.h - attention's backward kernel -----*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// flash_attention_grad as one launch of two kinds of blocks, FlashAttention-2's
// backward without atomics: a key block of a KV head accumulates its dK and dV
// over every query block of the head's query heads (grouped-query heads sum
// there), and a query block of a query head accumulates its dQ over the key
// blocks, each recomputing P = exp(scale·QKᵀ − lse) and dS = P∘(dO·Vᵀ − D),
// D = rowsum(dO∘O), from tiles in shared memory. Causal blocks past the
// diagonal are skipped. bf16 and f16 operands with head dims the forward's
// kernel takes (multiples of 16, at most 128) run every product on tensor
// cores (mma.sync, AttentionGradMmaCodegen.cpp); others (f32) run on CUDA
// cores in f32 (FFMA from shared memory). Operands and gradients are read
// and written through the views of AttentionGradViews. docs/codegen.md,
// "Attention's backward".
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_ATTENTIONGRADCODEGEN_H
#define MEMWALL_LIB_TARGET_ATTENTIONGRADCODEGEN_H

#include "memwall/Analysis/FusionCost.h"
#include "memwall/Hardware/GPUTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>
#include <string>

namespace memwall {

struct AttentionGradKernelPlan {
  int64_t batch = 0, queryHeads = 0, kvHeads = 0, querySeq = 0, keySeq = 0;
  int64_t headDim = 0, valueDim = 0;
  /// Whether the products run on tensor cores (mma.sync).
  bool tensorCores = false;
  /// Rows of a query or key tile (on tensor cores, 16 per warp).
  int64_t tile = 32;
  int64_t threads = 128;
  /// Dynamic shared memory of a block (the CUDA-core form's is static).
  int64_t sharedBytes = 0;
  int64_t queryTiles = 0, keyTiles = 0;
  /// The op's masking: causal, and a sliding window (0 for none).
  bool causal = false;
  int64_t window = 0;
  /// grid.x: the key blocks, then the query blocks of each query head of
  /// the KV head; grid.y: batch x KV heads.
  std::array<int64_t, 3> grid{1, 1, 1};
};

/// Why the kernel cannot run `op` ("" when it can).
std::string whyNoAttentionGradKernel(FlashAttentionGradOp op);
AttentionGradKernelPlan planAttentionGradKernel(FlashAttentionGradOp op);

/// The kernel's predicted time on `target`: its traffic, and on tensor cores
/// the products it runs (6d + 4dv per pair instead of FlashAttention-2's
/// 3d + 2dv: a query block recomputes S and dP, no atomics, and P and dS
/// enter their products as two 16-bit terms each), on CUDA cores the op's
/// FLOPs at the FP32 rate.
double predictAttentionGradKernelSeconds(FlashAttentionGradOp op,
                                         const GPUTarget &target);

/// The distinct buffers the kernel reads q, k, v, the output and its
/// gradient from (views.sources, first use first), and the distinct values
/// it writes dq, dk and dv into (views.outputs).
llvm::SmallVector<mlir::Value, 5>
getAttentionGradSources(const AttentionGradViews &views);
llvm::SmallVector<mlir::Value, 3>
getAttentionGradOutputs(const AttentionGradViews &views);

/// Appends the kernel `name` to `gpuModule`. Parameters (flat memrefs): the
/// sources, the log-sum-exp, the mask (if the op has one), then the outputs.
void emitAttentionGradKernel(mlir::gpu::GPUModuleOp gpuModule,
                             llvm::StringRef name,
                             const AttentionGradViews &views,
                             const AttentionGradKernelPlan &plan);

/// The buffers a kernel of attention's backward was handed.
struct AttentionGradParams {
  /// The parameter of each of views.sources and views.outputs.
  llvm::DenseMap<mlir::Value, mlir::Value> memrefs;
  mlir::Value lse, mask;
};

/// Creates the kernel `name` at `b`'s insertion point with the parameters
/// emitAttentionGradKernel documents (and `workgroup` attributions), binds
/// them into `params`, and leaves `b` at the start of its body.
mlir::gpu::GPUFuncOp createAttentionGradKernel(
    mlir::ImplicitLocOpBuilder &b, llvm::StringRef name,
    const AttentionGradViews &views, const AttentionGradKernelPlan &plan,
    mlir::TypeRange workgroup, AttentionGradParams &params);

/// The split of the grid both forms share: sets `batch` and `kvHead` from
/// grid.y, then builds `keyBlock(key tile)` in the key blocks and
/// `queryBlock(query block of the KV head)` in the others, and the return.
void buildAttentionGradBlocks(mlir::ImplicitLocOpBuilder &b,
                              const AttentionGradKernelPlan &plan,
                              mlir::Value &batch, mlir::Value &kvHead,
                              llvm::function_ref<void(mlir::Value)> keyBlock,
                              llvm::function_ref<void(mlir::Value)> queryBlock);

/// The causal and sliding-window skipping both forms share, as tile ranges
/// [begin, end): the query tiles that see keys from j0 (rows at or after
/// j0 - (Sk - Sq) when causal; with a window W, before
/// j0 + tile - 1 + W - (Sk - Sq)), and the key tiles queries from i0 see
/// (keys up to i0 + tile - 1 + Sk - Sq when causal; with a window, from
/// i0 + Sk - Sq - W + 1).
std::pair<mlir::Value, mlir::Value>
buildQueryTilesSeeing(mlir::ImplicitLocOpBuilder &b,
                      const AttentionGradKernelPlan &plan, mlir::Value j0);
std::pair<mlir::Value, mlir::Value>
buildKeyTilesSeen(mlir::ImplicitLocOpBuilder &b,
                  const AttentionGradKernelPlan &plan, mlir::Value i0);

/// Whether key `key` is visible to query `query` by the op's causal mask
/// and window (true without either); both are in range.
mlir::Value buildSeenByMask(mlir::ImplicitLocOpBuilder &b,
                            const AttentionGradKernelPlan &plan,
                            mlir::Value key, mlir::Value query);

/// The tensor-core form emitAttentionGradKernel emits when
/// plan.tensorCores (AttentionGradMmaCodegen.cpp).
void emitAttentionGradMmaKernel(mlir::gpu::GPUModuleOp gpuModule,
                                llvm::StringRef name,
                                const AttentionGradViews &views,
                                const AttentionGradKernelPlan &plan);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_ATTENTIONGRADCODEGEN_H
