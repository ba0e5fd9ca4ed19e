//===- TrainingCodegen.h - kernels a training step adds ---------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The kernel families a backward pass and an optimizer step need beside the
// forward's (docs/codegen.md, "Training kernels"):
//  - fill: a splat constant (the loss seed dL/dL = 1, the zero gradient of
//    a weight the loss does not reach), one vector store per thread;
//  - column reduction: `reduce` over leading axes (a bias or norm weight's
//    gradient summed over the tokens, a broadcast's gradient), the rows
//    split over blocks that write fp32 partials, summed in split order by
//    the last block to arrive (deterministic: no float atomics);
//  - norm gradient: layer_norm_grad and rms_norm_grad, one block per run
//    of rows, each row in registers as the forward's row kernel holds it,
//    the weight (and bias) gradient accumulated per column in registers
//    over the block's rows and combined over blocks as a column reduction;
//  - optimizer: adamw, one vector of every state a thread, updated in place;
//  - embedding gradient: every table row summed from its positions in
//    position order (no float atomics);
//  - cross-entropy and its gradient: a block streams a row of logits.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_TRAININGCODEGEN_H
#define MEMWALL_LIB_TARGET_TRAININGCODEGEN_H

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Hardware/GPUTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <algorithm>
#include <array>
#include <string>

namespace memwall {

/// One vector of `width` elements per thread over a flat iteration space
/// (fill).
struct FlatKernelPlan {
  int64_t elements = 0;
  int64_t width = 1;
  int64_t threads = 256;
  std::array<int64_t, 3> grid{1, 1, 1};
};

/// Why codegen cannot fill `constant` ("" when it can): only splat tensors
/// of a float (bf16, f16, f32) or integer element type.
std::string whyNoFillKernel(mlir::arith::ConstantOp constant);
FlatKernelPlan planFillKernel(mlir::arith::ConstantOp constant);
/// Parameters: the result.
void emitFillKernel(mlir::gpu::GPUModuleOp gpuModule, llvm::StringRef name,
                    mlir::arith::ConstantOp constant,
                    const FlatKernelPlan &plan);

/// A reduce over leading axes as `rows` x `columns` (the kept trailing dims
/// flattened): thread `t` of a block of 256 sums vector `t mod threadsX` of
/// the block's columns over the rows `≡ t / threadsX (mod threadsY)` of its
/// split (grid.y), the block then sums its threadsY partials in order.
struct ColumnReductionPlan {
  int64_t rows = 0, columns = 0;
  /// Columns per thread (one vector load).
  int64_t width = 1;
  int64_t threadsX = 1, threadsY = 256;
  /// Splits of the rows (grid.y), each `rowsPerSplit` rows; with more than
  /// one, fp32 partials [splits, columns] and one counter per grid.x block.
  int64_t splits = 1, rowsPerSplit = 0;
  std::array<int64_t, 3> grid{1, 1, 1};
  int64_t threads() const { return threadsX * threadsY; }
};

/// Whether `op` is a reduce over leading axes only (including all of
/// them), which the column-reduction kernel runs; a reduce over the last
/// axis alone is a row reduction.
bool isColumnReduction(mlir::Operation *op);
ColumnReductionPlan planColumnReduction(ReduceOp reduce,
                                        const GPUTarget &target);
/// Parameters: the input, the result, then with splits the partials and
/// the counters.
void emitColumnReductionKernel(mlir::gpu::GPUModuleOp gpuModule,
                               llvm::StringRef name, ReduceOp reduce,
                               const ColumnReductionPlan &plan);

/// layer_norm_grad / rms_norm_grad: `blocks` blocks of `threads` threads,
/// each taking `rowsPerBlock` consecutive rows, thread `t` holding the
/// vectors at columns (k·threads + t)·width, k < vectorsPerThread.
struct NormGradPlan {
  int64_t rows = 0, columns = 0;
  int64_t width = 1, threads = 32, vectorsPerThread = 1;
  int64_t blocks = 1, rowsPerBlock = 0;
  /// Per-parameter gradients: 1 (weight) or 2 (weight and bias).
  int64_t parameterGrads = 1;
  int64_t registersPerThread = 0;
  std::array<int64_t, 3> grid() const { return {blocks, 1, 1}; }
};

/// Why codegen cannot run the norm gradient `op` ("" when it can).
std::string whyNoNormGradKernel(mlir::Operation *op, const GPUTarget &target);
NormGradPlan planNormGradKernel(mlir::Operation *op, const GPUTarget &target);
/// Parameters: input, weight, grad, then the op's results, then with more
/// than one block the fp32 partials [blocks, parameterGrads, columns] and
/// one counter.
void emitNormGradKernel(mlir::gpu::GPUModuleOp gpuModule, llvm::StringRef name,
                        mlir::Operation *op, const NormGradPlan &plan);

/// Why codegen cannot run `adamw` ("" when it can): it updates its state in
/// place, so param, exp_avg, exp_avg_sq and master must be function
/// arguments (buffers the step owns for good).
std::string whyNoAdamWKernel(AdamWOp adamw);
/// AdamW over one or more parameters in one launch (one update, or a
/// horizontal fusion's): update `u` owns blocks [firstBlock, firstBlock +
/// blocks) of grid.x, each thread one vector of `width` of its elements.
struct AdamWKernelPlan {
  struct Segment {
    int64_t elements = 0, width = 1, firstBlock = 0, blocks = 0;
  };
  llvm::SmallVector<Segment> segments;
  int64_t threads = 256;
  std::array<int64_t, 3> grid{1, 1, 1};
};
AdamWKernelPlan planAdamWKernel(llvm::ArrayRef<AdamWOp> updates);
/// Parameters: `parameters` (the values the updates read: an update's
/// operands, or a horizontal fusion's body arguments), in order; the kernel
/// writes each param, its moments and master where it read them.
void emitAdamWKernel(mlir::gpu::GPUModuleOp gpuModule, llvm::StringRef name,
                     llvm::ArrayRef<AdamWOp> updates,
                     mlir::ValueRange parameters, const AdamWKernelPlan &plan);

/// embedding_grad, deterministic: block `b` owns table rows
/// [b·rowsPerBlock, (b+1)·rowsPerBlock) and walks every position in order,
/// a tile of `threads` ids at a time; the positions holding its ids are
/// compacted in order (a block scan) and their gradient rows added to f32
/// sums in registers (thread `t` holds columns (k·threads + t)·width), so a
/// row's sum is in position order and every row, zero or not, is written
/// once.
struct EmbeddingGradPlan {
  int64_t rows = 0, columns = 0, positions = 0;
  int64_t width = 1, threads = 32, vectorsPerThread = 1;
  int64_t rowsPerBlock = 1;
  std::array<int64_t, 3> grid{1, 1, 1};
};

/// Why codegen cannot run `op` ("" when it can).
std::string whyNoEmbeddingGradKernel(EmbeddingGradOp op);
EmbeddingGradPlan planEmbeddingGradKernel(EmbeddingGradOp op);
/// Parameters: grad, indices, the table gradient.
void emitEmbeddingGradKernel(mlir::gpu::GPUModuleOp gpuModule,
                             llvm::StringRef name, EmbeddingGradOp op,
                             const EmbeddingGradPlan &plan);

/// cross_entropy and cross_entropy_grad: one block per position streaming
/// its row of logits (never held whole: V is a vocabulary), the log-sum-exp
/// from each thread's online max and sum of exp combined over the block.
/// The loss of a mean or sum is summed over rows, in row order, by the last
/// block to arrive; the gradient reads the row a second time.
struct CrossEntropyPlan {
  int64_t rows = 0, vocab = 0;
  int64_t width = 1, threads = 32;
  /// cross_entropy with mean or sum: per-row losses and counted flags in
  /// fp32 partials [2, rows], and one counter.
  bool reducesRows = false;
  std::array<int64_t, 3> grid() const { return {rows, 1, 1}; }
};

bool isCrossEntropyKernelOp(mlir::Operation *op);
/// Why codegen cannot run `op` ("" when it can).
std::string whyNoCrossEntropyKernel(mlir::Operation *op);
CrossEntropyPlan planCrossEntropyKernel(mlir::Operation *op);
/// Parameters: logits, labels, (the loss gradient,) the result, then with
/// reducesRows the partials and the counter.
void emitCrossEntropyKernel(mlir::gpu::GPUModuleOp gpuModule,
                            llvm::StringRef name, mlir::Operation *op,
                            const CrossEntropyPlan &plan);

/// linear_cross_entropy and linear_cross_entropy_grad (the fused head,
/// docs/codegen.md "The fused linear cross-entropy"): per chunk of
/// `chunkColumns` vocabulary columns (LinearHeadDims::getChunkColumns), a
/// cuBLASLt GEMM writes the chunk's [rows, columns] logits into a buffer of
/// their own and a row kernel (a CrossEntropyPlan whose `vocab` is the
/// chunk's columns) reads them. The forward folds each chunk into running
/// per-row max, sum of exp and label logit (f32 [3, rows]); its last chunk
/// writes the log-sum-exp and the loss. The backward turns the chunk's
/// recomputed logits into their gradient in place, then one GEMM writes
/// the chunk's rows of dW and one accumulates dH in an f32 [rows, hidden]
/// buffer (C = D, bf16/f16 A and B), narrowed to dH's type at the end.
struct LinearCrossEntropyPlan {
  int64_t rows = 0, vocab = 0, hidden = 0;
  int64_t chunkColumns = 0, chunks = 0;
  /// The row kernel of each chunk.
  llvm::SmallVector<CrossEntropyPlan> chunkKernels;
  /// The backward of a mean with ignore_index: one block counts the counted
  /// positions first (an f32 [1] every chunk kernel reads).
  bool countsLabels = false;
  /// The backward's narrowing of the f32 dH accumulator.
  FlatKernelPlan narrow;

  int64_t firstColumn(int64_t chunk) const { return chunk * chunkColumns; }
  int64_t columns(int64_t chunk) const {
    return std::min(chunkColumns, vocab - firstColumn(chunk));
  }
};

bool isLinearCrossEntropyOp(mlir::Operation *op);
/// Why codegen cannot run `op` ("" when it can): the weight must be [V, D]
/// (transpose_weight: a chunk is a run of its rows, which the GEMMs read
/// and write in place) of a type cuBLASLt takes.
std::string whyNoLinearCrossEntropyKernels(mlir::Operation *op);
LinearCrossEntropyPlan planLinearCrossEntropy(mlir::Operation *op);
/// The row kernel of `chunk`. Forward parameters: logits [rows, columns],
/// labels, state (f32 [3, rows]), and for the last chunk lse, result, then
/// for a mean or sum the partials (f32 [2, rows]) and the counter. Backward:
/// logits (turned into their gradient in place), labels, lse, grad, then with
/// countsLabels the count.
void emitLinearCrossEntropyChunkKernel(mlir::gpu::GPUModuleOp gpuModule,
                                       llvm::StringRef name,
                                       mlir::Operation *op,
                                       const LinearCrossEntropyPlan &plan,
                                       int64_t chunk);
/// The backward's label count (countsLabels). Parameters: labels, count.
void emitCountLabelsKernel(mlir::gpu::GPUModuleOp gpuModule,
                           llvm::StringRef name, mlir::Operation *op,
                           const LinearCrossEntropyPlan &plan);
/// `plan.narrow.elements` f32 values rounded to `type`. Parameters: the f32
/// input, the result.
void emitNarrowKernel(mlir::gpu::GPUModuleOp gpuModule, llvm::StringRef name,
                      mlir::Location loc, const FlatKernelPlan &plan,
                      mlir::Type type);

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_TRAININGCODEGEN_H
