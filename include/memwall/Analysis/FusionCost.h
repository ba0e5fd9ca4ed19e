//===- FusionCost.h - Cost and legality of a candidate kernel ---*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Decides whether a set of memwall ops can run as one kernel (of which kind,
// over which iteration space, reading which inputs in which broadcast
// pattern), the kernel's launch geometry and resource use, and its predicted
// time. memwall-fuse ranks candidate fusions by the time this predicts they
// save; codegen emits kernels with the geometry it chooses, so the model and
// the generated code agree.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_FUSIONCOST_H
#define MEMWALL_ANALYSIS_FUSIONCOST_H

#include "memwall/Analysis/CostResults.h"
#include "memwall/Analysis/GemmTiling.h"
#include "memwall/Analysis/StridedLayout.h"
#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Hardware/Roofline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/AnalysisManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace memwall {

/// How a kernel input is indexed from the kernel's iteration space.
enum class AccessPattern {
  /// The input has the iteration shape: element i at i.
  Full,
  /// The input matches the trailing dims of the iteration shape (a bias
  /// [D] over [rows, D]): element i at i % innerElements.
  Suffix,
  /// The input matches the leading dims and is 1 elsewhere (a per-row value
  /// [rows, 1]): element i at i / innerElements.
  Outer,
  /// One element for all.
  Scalar,
};

struct KernelInput {
  mlir::Value value;
  AccessPattern pattern = AccessPattern::Full;
  /// Suffix: elements of the input; Outer: elements each input element
  /// covers (the product of the iteration dims the input broadcasts over).
  int64_t innerElements = 1;
};

/// Launch geometry and resources of a generated elementwise or row kernel.
struct KernelGeometry {
  /// Elements per vector access (a 128-bit access for the narrowest type).
  int64_t vectorWidth = 1;
  int64_t threadsPerBlock = 1;
  /// Vectors each thread handles: per row (row kernels) or in total
  /// (elementwise kernels, unrolled).
  int64_t vectorsPerThread = 1;
  int64_t gridSize = 1;
  int64_t registersPerThread = 0;
  int64_t sharedBytes = 0;
  /// Resident threads per SM over the SM's maximum (2048).
  double occupancy = 0;
};

/// The GEMM call a matmul_epilogue group becomes (cuBLASLt's model:
/// D = act(op(A) op(B) + C + bias)).
struct GemmEpilogue {
  mlir::Value bias;     // [N], or null
  mlir::Value residual; // same shape as the result (beta = 1), or null
  enum class Activation { None, Relu, GeluTanh } activation = Activation::None;
};

/// A GEMM epilogue value written heads-split, as attention reads it: a
/// `reshape` of a `[.., S, N]` value of the matmul's shape to `[.., S, H, D]`
/// (N = H·D), a `transpose` swapping S and H to `[.., H, S, D]`, and
/// optionally a `rope` of that (Llama's q and k; v has none). Element (row,
/// column) of the GEMM, row = l·S + s and column = h·D + d, lands at
/// ((l·H + h)·S + s)·D + d. With a rope, a tile holds whole heads (its width
/// a multiple of D) so that each element finds its rotation partner d ± D/2
/// in the staged tile.
struct GemmHeadsLayout {
  ReshapeOp split;
  /// The transpose swapping S and H, or where one of them is 1 (a decode
  /// step's q, k and v) the reshape it canonicalizes to.
  mlir::Operation *heads = nullptr;
  RopeOp rope;
  /// The in-place KV-cache append of the layout's last value: the epilogue
  /// writes the rows into the cache's buffer, heads of `cacheRows` rows
  /// (the appended length) from row `cacheLength`.
  KVCacheAppendOp append;
  int64_t numHeads = 0, headDim = 0, seqLen = 0;
  int64_t cacheLength = 0, cacheRows = 0;

  /// The value the layout leaves the kernel as: the append's, the rope's or
  /// the transpose's result.
  mlir::Value getOutput() const;
};

/// The heads layouts among `ops` (a kernel's, in program order; at most one
/// per product, e.g. a dual GEMM's k and v): none when `ops` hold no
/// reshape, transpose or rope; failure, with why, when they hold ones that
/// are not that pattern (a reshape other than splitting N, another
/// permutation, a rope of another value, a value of the pattern read by
/// another op of the kernel, more layouts than products).
llvm::FailureOr<llvm::SmallVector<GemmHeadsLayout, 2>>
matchGemmHeadsLayouts(llvm::ArrayRef<mlir::Operation *> ops,
                      mlir::ArrayRef<int64_t> resultShape, int64_t products,
                      std::string *whyNot = nullptr);

/// A GEMM's lhs read through a heads merge, as attention's output reaches
/// the output projection: a `transpose` of a kernel input `[.., H, S, D]`
/// to `[.., S, H, D]` and a `reshape` to `[.., S, H·D]`, the matmul's lhs,
/// which the kernel folds into its lhs addressing (GemmProblem::lhsHeads).
struct GemmLhsHeadsMerge {
  TransposeOp heads;
  ReshapeOp merge;
  int64_t numHeads = 0, headDim = 0, seqLen = 0;
};

/// The heads merge making `matmul`'s lhs among `ops`, if `ops` hold its
/// transpose and reshape (neither read by another op of the kernel); none
/// when they hold no transpose of a kernel input; failure, with why, when
/// such a transpose is not that pattern.
llvm::FailureOr<std::optional<GemmLhsHeadsMerge>>
matchGemmLhsHeadsMerge(llvm::ArrayRef<mlir::Operation *> ops, MatmulOp matmul,
                       std::string *whyNot = nullptr);

/// The heads merge starting at `op`: a transpose and the reshape that is its
/// one user (memwall-fuse may fold them into the lhs of the GEMM the
/// reshape feeds, as one step); empty otherwise.
llvm::SmallVector<mlir::Operation *, 2>
getGemmHeadsMergeOps(mlir::Operation *op);

/// Whether `op` may end a GEMM's epilogue as part of a heads layout.
bool isGemmHeadsLayoutOp(mlir::Operation *op);

/// The heads split starting at `op`: a reshape and the transpose that is its
/// one user (what memwall-fuse may fold into the epilogue of the GEMM
/// computing the reshape's input, as one step); empty otherwise. (Where S or
/// H is 1 the transpose is a reshape, a view memwall-fuse looks through.)
llvm::SmallVector<mlir::Operation *, 2>
getGemmHeadsSplitOps(mlir::Operation *op);

/// The layout ops starting at `op` that memwall-fuse folds into a GEMM or
/// an attention kernel as one step: a heads split, a heads merge, a rope, a
/// slice or a concat; empty otherwise.
llvm::SmallVector<mlir::Operation *, 2> getLayoutStep(mlir::Operation *op);

/// Whether `op` runs only inside another kernel when fused: a layout op a
/// GEMM or attention kernel may fold in (getLayoutStep).
bool isFoldableLayoutOp(mlir::Operation *op);

/// The predicted time of layout ops each run as its own kernel (a reshape,
/// a view, as none): what folding them into a GEMM saves.
double predictLayoutKernelsSeconds(llvm::ArrayRef<mlir::Operation *> ops,
                                   const GPUTarget &target);

/// A flash_attention kernel with the layout ops around it folded into its
/// addressing: q, k and v read from the kernel inputs they are views of
/// (e.g. slices of GPT-2's packed QKV projection, split into heads and
/// transposed to [B, H, S, D]), and the output written where a heads merge
/// (a transpose back to [B, S, H, D] and a reshape to [B, S, H·D]) puts it,
/// so none of those layout ops runs as a kernel.
struct AttentionViews {
  FlashAttentionOp attention;
  /// Per q, k and v: the kernel input read, and where element (b, h, s, d)
  /// of the operand lies in it (the D stride is 1).
  std::array<mlir::Value, 3> sources;
  std::array<StridedLayout, 3> operands;
  /// The kernel output holding attention's result, and where element
  /// (b, h, s, d) of the result lands in it (the D stride is 1).
  mlir::Value output;
  StridedLayout outputLayout;
};

/// The attention kernel `ops` describe: one flash_attention and reshapes,
/// transposes and slices that make its q, k and v from kernel inputs or
/// take its output to a kernel output, each read by the next alone. Fails,
/// with why, for any other op, a view that is no strided view of its source
/// (StridedLayout::reshaped), or one the kernel's 16-byte tile copies (4
/// bytes for the output's stores) cannot address.
llvm::FailureOr<AttentionViews>
matchAttentionViews(llvm::ArrayRef<mlir::Operation *> ops,
                    std::string *whyNot = nullptr);

/// A flash_attention_grad kernel with the layout ops around it folded into
/// its addressing, as the forward's (AttentionViews): q, k, v, the output
/// and its gradient read through views of kernel inputs (the forward's
/// packed QKV projection and heads-merged output, the heads split of the
/// output's gradient), and dq, dk and dv written through heads merges, into
/// one packed [B, S, 3·H·D] gradient when a concat of the three takes them
/// (the gradient of the forward's slices), so no transpose, slice or concat
/// runs as a kernel in attention's backward.
struct AttentionGradViews {
  FlashAttentionGradOp grad;
  /// Per q, k, v, out and its gradient: the kernel input read, and where
  /// element (b, h, s, d) of the operand lies in it (the D stride is 1).
  std::array<mlir::Value, 5> sources;
  std::array<StridedLayout, 5> operands;
  /// Per dq, dk and dv: the kernel output holding it (one value for all
  /// three when a concat packs them), and where element (b, h, s, d) of the
  /// gradient lands in it (the D stride is 1).
  std::array<mlir::Value, 3> outputs;
  std::array<StridedLayout, 3> outputLayouts;
};

/// The attention-backward kernel `ops` describe: one flash_attention_grad,
/// reshapes, transposes and slices making its operands from kernel inputs,
/// and transposes, reshapes and at most one concat taking its gradients to
/// kernel outputs (a concat only of the three gradients). Fails, with why,
/// as matchAttentionViews does.
llvm::FailureOr<AttentionGradViews>
matchAttentionGradViews(llvm::ArrayRef<mlir::Operation *> ops,
                        std::string *whyNot = nullptr);

/// One rope, or two sharing their positions (q and k), in one kernel, each
/// reading its input through views (e.g. the heads split of a projection)
/// and writing its result [B, H, S, D] row-major or through a heads merge
/// (the backward's inverse ropes, whose gradients the projections' GEMMs
/// read [B, S, H·D]), so the transposes run as no kernel.
struct RopeViews {
  llvm::SmallVector<RopeOp, 2> ropes;
  /// Per rope: the kernel input read, and where element (b, h, s, d) of the
  /// rope's input lies in it (the D stride is 1).
  llvm::SmallVector<mlir::Value, 2> sources;
  llvm::SmallVector<StridedLayout, 2> inputs;
  /// Per rope: the kernel output holding its result, and where element
  /// (b, h, s, d) of the result lands in it (the D stride is 1).
  llvm::SmallVector<mlir::Value, 2> outputs;
  llvm::SmallVector<StridedLayout, 2> outputLayouts;
};

/// The rope kernel `ops` describe: one or two ropes of one element type,
/// head dim and positions, reshapes, transposes and slices making their
/// inputs from kernel inputs, and reshapes and transposes taking their
/// results to kernel outputs, each read by the next alone. Fails, with why,
/// otherwise (as matchAttentionViews; the views must allow 4-byte accesses).
llvm::FailureOr<RopeViews> matchRopeViews(llvm::ArrayRef<mlir::Operation *> ops,
                                          std::string *whyNot = nullptr);

/// A set of ops that can run as one kernel.
struct KernelAnalysis {
  FusionKind kind = FusionKind::Elementwise;
  /// The row reduction (Reduction) or matmul (MatmulEpilogue, Gemm); null
  /// for Elementwise.
  mlir::Operation *anchor = nullptr;
  /// Gemm: a second matmul with the anchor's lhs, result shape and operand
  /// layouts (a dual GEMM, e.g. Llama's gate and up projections): each lhs
  /// tile is loaded once for both products, and the epilogue reads both
  /// results. Null otherwise; the anchor is the earlier of the two.
  mlir::Operation *siblingMatmul = nullptr;
  /// MatmulEpilogue with siblings: the matmuls (the anchor first) of one
  /// strided-batched cuBLASLt call over weights the arena places side by
  /// side (memwall.stack_view), e.g. Llama's q, k and v projections.
  llvm::SmallVector<mlir::Operation *, 3> batchedMatmuls;
  /// Ops in program order.
  llvm::SmallVector<mlir::Operation *> ops;
  /// Values read from memory, in order of first use, each once.
  llvm::SmallVector<KernelInput> inputs;
  /// Values written to memory: results used outside the set.
  llvm::SmallVector<mlir::Value> outputs;
  /// Elementwise: the common result shape; Reduction: the row op's input
  /// shape (the last dim is the row); MatmulEpilogue, Gemm: the matmul's
  /// result.
  llvm::SmallVector<int64_t> iterationShape;
  /// MatmulEpilogue: the cuBLASLt call.
  GemmEpilogue epilogue;
  /// Gemm: values the epilogue writes heads-split (and rotated).
  llvm::SmallVector<GemmHeadsLayout, 2> headsLayouts;
  /// Gemm: the heads merge the main loop reads its lhs through.
  std::optional<GemmLhsHeadsMerge> lhsHeadsMerge;
  /// Attention: the flash_attention (also the anchor) and how it reads its
  /// operands and writes its output.
  std::optional<AttentionViews> attention;
  /// AttentionGrad: the flash_attention_grad (also the anchor) and how it
  /// reads its operands and writes its gradients.
  std::optional<AttentionGradViews> attentionGrad;
  /// Rope: the ropes and how they read their inputs.
  std::optional<RopeViews> rope;
  /// Gemm: the problem memwall's generated GEMM solves and its tiling (the
  /// launch: tiling.grid x tiling.threads, tiling.sharedBytes dynamic).
  GemmProblem gemm;
  GemmTiling tiling;
  /// For a kernel with a matmul: which GEMM kernel runs it and why, e.g.
  /// "memwall gemm (12.3 us) over cuBLASLt (15.0 us)" or "cuBLASLt: the
  /// generated GEMM: needs K a multiple of 8, got 30".
  std::string gemmChoice;
  KernelGeometry geometry;

  int64_t flops = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  MathPrecision precision = MathPrecision::FP32;
  /// The kernel for the time model (Roofline.h): its FLOPs and traffic, a
  /// GEMM's shape class, and for generated kernels the bandwidth fraction
  /// their occupancy sustains.
  KernelWork work;
  /// estimateKernelTime(work).
  RooflineEstimate estimate;
  /// estimate.timeSeconds.
  double timeSeconds = 0;
};

/// The kernel parameter space every CUDA launch has (4 KiB; larger only
/// with CUDA 12.1+ on Volta and newer), and what one buffer takes of it (a
/// bare pointer: kernels use the bare-pointer calling convention).
inline constexpr int64_t kMaxKernelParameterBytes = 4096;
inline constexpr int64_t kKernelPointerParameterBytes = 8;

/// Maximum registers per thread before the kernel spills (sm_80 / sm_90).
inline constexpr int64_t kMaxRegistersPerThread = 255;

/// Analyzes `ops` (any order; ops of one block) as one kernel. Ops that are
/// not elementwise, a row reduction or a float matmul, more than one anchor,
/// values of another shape, an input broadcast codegen cannot index, a matmul
/// epilogue neither cuBLASLt nor the generated GEMM can apply, or an
/// estimated register count above kMaxRegistersPerThread make it fail with
/// the reason in `whyNot`. Values defined outside `ops` are inputs; results
/// used outside are outputs. A kernel with a matmul runs on cuBLASLt
/// (MatmulEpilogue) or memwall's generated GEMM (Gemm) as the module's
/// `memwall.gemm` says (getGemmBackendOf): with `auto` the faster of the two
/// that can run it, cuBLASLt on a tie.
llvm::FailureOr<KernelAnalysis>
analyzeKernel(llvm::ArrayRef<mlir::Operation *> ops, const GPUTarget &target,
              std::string *whyNot = nullptr);

/// The kernel a memwall.fusion's body describes (inputs are its block
/// arguments, outputs its yielded values).
llvm::FailureOr<KernelAnalysis> analyzeFusion(FusionOp fusion,
                                              const GPUTarget &target,
                                              std::string *whyNot = nullptr);

/// The dequantize that runs as `matmul`'s rhs prologue, in the matmul's
/// kernel whether fused or not: the one making its rhs in its block, read
/// by nothing else and not `materialize`d; null otherwise.
DequantizeOp getRhsPrologue(MatmulOp matmul);
/// The dequantize making `dequantize`'s scales, when it runs in the same
/// rhs prologue (double quantization, NF4: the main loop dequantizes the
/// scales it loads): in the same block, read by nothing else; else null.
DequantizeOp getScalesPrologue(DequantizeOp dequantize);
/// Why the arithmetic of `dequantize` (with its scales' dequantize, double
/// quantization) has no generated code, in a GEMM's prologue or a
/// dequantize kernel; "" when it has: i8, i4 or 8-bit-float codes of a
/// rank-2 weight, a codebook only for i4 codes, double-quantized scales
/// stored as i8 with scales of their own and no zero points or codebook.
std::string whyNoDequantizeCode(DequantizeOp dequantize);
/// The dequantize kernel of a `materialize`d `dequantize` (FusionKind::
/// Dequantize): it and the dequantize of its scales, where one makes them.
llvm::SmallVector<mlir::Operation *, 2>
getDequantizeKernelOps(DequantizeOp dequantize);
/// For every dequantize kernel of `function`'s body whose weight one matmul
/// reads, why it is one: its predicted time and the matmul's on the written
/// weight against the matmul dequantizing in its main loop (priced in an
/// unfused copy of the function with the `materialize` dropped), or why
/// the main loop cannot. The function is not changed.
std::vector<FusionRefusal> explainDequantizeKernels(mlir::func::FuncOp function,
                                                    const GPUTarget &target);

/// For every kernel of `function`'s body holding a matmul (a matmul, or a
/// fusion with one) and every elementwise or row-reduction kernel reading
/// its result, and every transpose or slice kernel left making an operand of
/// attention or a rope (or taking attention's output), why memwall-fuse left
/// them apart: analyzeKernel's reason the merged kernel cannot run (e.g. a
/// view attention cannot index), or its predicted time against theirs. The
/// function is not changed (the kernels are merged in an unfused copy).
std::vector<FusionRefusal>
explainUnfusedGemmConsumers(mlir::func::FuncOp function,
                            const GPUTarget &target);

/// Whether codegen runs `op` as a generated kernel or a cuBLASLt call, so
/// that its cost is a KernelAnalysis: a fusion, an elementwise op, a row
/// reduction or a matmul.
bool isKernelCandidate(mlir::Operation *op);

/// The kernel codegen runs `op` as: analyzeFusion for a fusion, analyzeKernel
/// of the op alone for another candidate; fails for any other op (whyNot
/// says "not a kernel candidate").
llvm::FailureOr<KernelAnalysis> analyzeOpKernel(mlir::Operation *op,
                                                const GPUTarget &target,
                                                std::string *whyNot = nullptr);

/// The kernel of every memwall.fusion and every other kernel candidate under
/// an op (fusion bodies included), on the IR's target: what the cost model,
/// the report and codegen time. Obtained with
/// `getAnalysis<FusionCostAnalysis>()`; the IR must not change while its
/// KernelAnalysis values (which point into it) are used.
class FusionCostAnalysis {
public:
  FusionCostAnalysis(mlir::Operation *root);

  /// The target the kernels were analyzed for; failure when the IR names no
  /// usable target (the error was emitted at construction).
  mlir::FailureOr<GPUTarget> getTarget() const;

  /// `op`'s kernel, or null when `op` is not a kernel candidate or the
  /// candidate is not legal as one kernel (getWhyNot says why).
  const KernelAnalysis *lookup(mlir::Operation *op) const;
  /// Why `op` is no kernel ("" for a kernel).
  llvm::StringRef getWhyNot(mlir::Operation *op) const;

  /// Kernel candidates analyzed (legal or not), for statistics and tests.
  size_t size() const { return kernels.size(); }

  bool isInvalidated(const mlir::AnalysisManager::PreservedAnalyses &pa) {
    return !pa.isPreserved<FusionCostAnalysis>();
  }

private:
  struct Entry {
    std::optional<KernelAnalysis> kernel;
    std::string whyNot;
  };
  std::optional<GPUTarget> target;
  llvm::DenseMap<mlir::Operation *, Entry> kernels;
};

} // namespace memwall

#endif // MEMWALL_ANALYSIS_FUSIONCOST_H
