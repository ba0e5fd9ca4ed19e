//===- GemmTiling.h - Tiles of memwall's own GEMM kernel --------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The GEMM a memwall.matmul asks of the generated tensor-core kernel
// (lib/Target/GemmCodegen.cpp), and the tile configuration that kernel runs
// with: CTA tile, warp grid, cp.async pipeline depth, launch geometry and
// resources. The fusion cost model and codegen both read this, so the
// predicted and the generated kernel agree.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_GEMMTILING_H
#define MEMWALL_ANALYSIS_GEMMTILING_H

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Hardware/GPUTarget.h"

#include "mlir/IR/Types.h"
#include "llvm/Support/LogicalResult.h"

#include <array>
#include <cstdint>
#include <string>

namespace memwall {

/// The GEMM a memwall.matmul asks of the generated kernel: `batch`
/// independent products of an M x K lhs and a K x N rhs, each operand row-
/// or column-major.
struct GemmProblem {
  /// Independent GEMMs, on grid.z.
  int64_t batch = 1;
  /// lhs batch dims are folded into m when rhs is rank 2 (and lhs is not
  /// transposed).
  int64_t m = 0, n = 0, k = 0;
  /// Operand type: bf16 or f16 (tensor cores, fp32 accumulation), fp8
  /// (f8E4M3FN or f8E5M2: the wgmma kernels only, fp32 accumulation), or
  /// f32 (the exact-fp32 FFMA kernel).
  mlir::Type elementType;
  /// lhs is [K, M] (else [M, K]); rhs is [N, K] (else [K, N]).
  bool transposeLhs = false, transposeRhs = false;
  /// Elements between consecutive GEMMs' operands; 0 = broadcast operand.
  int64_t lhsBatchStride = 0, rhsBatchStride = 0;
  /// The rhs as stored when a memwall.dequantize in the kernel makes it
  /// (i8 or fp8 weights with block scales; the main loop dequantizes each
  /// tile in shared memory), else null.
  mlir::Type rhsStorageType;
  /// Products of the shared lhs: 1, or 2 for a dual GEMM (a second rhs of
  /// the same shape and layout, with its own accumulators).
  int64_t rhsOperands = 1;
  /// The wgmma kernel may run it (kGemmWgmmaAttrName, on unless an
  /// enclosing op sets it false): chooseGemmTiling tries its shapes first
  /// where whyNotWgmmaGemm allows.
  bool wgmmaRequested = false;
  /// The wgmma kernel's warp-specialized form is asked for
  /// (kGemmWarpSpecializedAttrName): chooseGemmTiling tries its shapes
  /// before the plain wgmma kernel's.
  bool warpSpecializedRequested = false;
  /// fp8 operands accumulate over the whole K at the tensor cores' fp8
  /// precision (kGemmFp8FastAccumulationAttrName); false: each k-step's
  /// partial is promoted into an f32 accumulator (a second accumulator set).
  bool fp8FastAccumulation = false;
  /// Columns the epilogue reads together (a rotary embedding's head dim: each
  /// element's partner is half a head away): a tile's width must be a
  /// multiple. 1 when the epilogue is elementwise.
  int64_t epilogueColumnGroup = 1;
  /// The lhs is read through a heads merge (attention's output, stored [B,
  /// H, S, D], as the [B·S, H·D] matrix a transpose and reshape would make):
  /// element (m, k) at ((m / S · H + k / D) · S + m % S) · D + k % D. All 0
  /// when the lhs is stored as read.
  int64_t lhsHeads = 0, lhsHeadDim = 0, lhsSeqLen = 0;
};

/// The problem, or failure with why the generated kernel cannot run it
/// (int operands; fp8 operands of two formats, not K-major (lhs [M, K], rhs
/// [N, K]) or K not a multiple of 16; K not a multiple of 8 or a
/// strided operand's rows not 16-byte aligned; batch dims that broadcast
/// other than a rank-2 operand; an rhs dequantized from storage whose rows
/// are not 16-byte chunks: 16 elements of 1 byte, 32 of packed i4). f32
/// operands run on the FFMA kernel (exact fp32, CUDA cores: cost it at the FP32
/// peak, not the tensor cores').
llvm::FailureOr<GemmProblem> getGemmProblem(MatmulOp matmul,
                                            std::string *whyNot = nullptr);

/// The main loop the generated GEMM runs (docs/codegen.md).
enum class GemmVariant {
  /// mma.sync.m16n8k16 on ldmatrix fragments of a cp.async ring (sm_80 and
  /// later).
  MmaSync,
  /// sm_90a: wgmma.mma_async m64nNk16 from 128B-swizzled shared tiles that
  /// TMA loads, completing on one mbarrier per ring stage.
  Wgmma,
  /// f32 operands: exact-fp32 FFMA on CUDA cores.
  Simt,
  /// sm_90a, warp-specialized (CUTLASS's "cooperative" sm90 kernel): a
  /// producer warpgroup issues the TMA loads, each ring slot with a "full"
  /// and an "empty" mbarrier, while two consumer warpgroups (setmaxnreg
  /// moves registers to them) each own 64 rows of a 128-row tile. The block
  /// is 128 x 3 threads: threadIdx.y is the warpgroup, consumers first.
  WgmmaWarpSpecialized,
};

/// Tile configuration, launch geometry and resources of the generated GEMM.
struct GemmTiling {
  GemmVariant variant = GemmVariant::MmaSync;
  /// CTA tile (blockM x blockN, blockK per pipeline stage), the warp grid
  /// over it and the cp.async ring depth.
  int64_t blockM = 0, blockN = 0, blockK = 0, warpsM = 0, warpsN = 0,
          stages = 0;
  /// `threads` compute (and run the epilogue); a warp-specialized kernel
  /// launches `producerThreads` more that only issue TMA loads.
  /// registersPerThread is the launch's .maxnreg (what every thread has
  /// before setmaxnreg moves registers).
  int64_t threads = 0, sharedBytes = 0, registersPerThread = 0;
  int64_t producerThreads = 0;
  /// (N tiles, M tiles, batch).
  std::array<int64_t, 3> grid{1, 1, 1};
  /// Resident threads / 2048.
  double occupancy = 0;
  /// Tiles / (waves x concurrent CTAs): wave quantization.
  double waveEfficiency = 0;
  /// CTAs resident on one SM.
  int64_t ctasPerSM = 0;
  /// Row-chunked whole-row epilogue (a norm over N > blockN): each CTA owns
  /// blockM whole rows (grid.x = 1) and runs the main loop once per
  /// blockN-wide column chunk, keeping the norm's input in a shared-memory
  /// row buffer of rowBufferBytes (included in sharedBytes, after the
  /// ring/accumulator bytes). 1 and 0 otherwise.
  int64_t rowChunks = 1;
  int64_t rowBufferBytes = 0;
  /// Row-chunked across a thread-block cluster (sm_90+; 1 = no cluster):
  /// grid.x = clusterN CTAs, one cluster, share each block of rows; CTA x
  /// owns columns [x, x + 1) x rowChunks x blockN of them, keeps only those
  /// in its row buffer, and the CTAs add up their rows' partial sums through
  /// distributed shared memory (getGemmRowChunking).
  int64_t clusterN = 1;
  /// Split-K (skinny and decode shapes, whose tiles leave SMs idle): grid.z
  /// splits the K loop (batch 1), each CTA multiplying
  /// getGemmKStepsPerSplit k-steps into f32 partial tiles of a [splitK,
  /// rhsOperands, M, N] buffer; the last CTA of each tile to finish (an
  /// arrival counter per tile) sums the partials and runs the epilogue. 1
  /// otherwise.
  int64_t splitK = 1;
};

/// Whether `tiling` runs the row-chunked whole-row epilogue (a row buffer;
/// possibly one chunk per CTA of a cluster).
inline bool isGemmRowChunked(const GemmTiling &tiling) {
  return tiling.rowBufferBytes > 0;
}

/// Elements of the split-K partials: splitK x rhsOperands x M x N f32.
int64_t getGemmSplitKPartialElements(const GemmTiling &tiling,
                                     const GemmProblem &problem);

/// K-steps (of blockK) each split multiplies: ceil(ceil(K / blockK) /
/// splitK); the last split's steps past K read zeros.
int64_t getGemmKStepsPerSplit(const GemmTiling &tiling,
                              const GemmProblem &problem);

/// The split-K kernel's arrival counters: one i32 per tile (grid.x x
/// grid.y), zero before a launch and left zero by it.
int64_t getGemmSplitKCounters(const GemmTiling &tiling);

/// The most splits chooseGemmTiling gives K, and the fewest k-steps a split
/// keeps (enough to fill the ring).
inline constexpr int64_t kGemmMaxSplitK = 16;
inline constexpr int64_t kGemmMinKStepsPerSplit = 4;

/// The launch's block: (threads, 1, 1), or for the warp-specialized kernel
/// (128, warpgroups, 1), one warpgroup per y.
std::array<int64_t, 3> getGemmBlockSize(const GemmTiling &tiling);

/// Whether the fp8 main loop promotes every k-step's partial sum into f32
/// accumulators (fp8 operands without fp8FastAccumulation).
bool isGemmFp8Promoted(const GemmProblem &problem);

/// The f32 accumulator sets a thread holds in the main loop: one per rhs,
/// twice that when promoting fp8 partial sums.
int64_t getGemmAccumulatorSets(const GemmProblem &problem);

/// Whether `tiling` runs a wgmma main loop (plain or warp-specialized).
inline bool isGemmWgmmaVariant(const GemmTiling &tiling) {
  return tiling.variant == GemmVariant::Wgmma ||
         tiling.variant == GemmVariant::WgmmaWarpSpecialized;
}

/// Padding, in 16-bit elements, of every operand row in shared memory: 16
/// bytes put the eight rows one ldmatrix reads in distinct banks.
inline constexpr int64_t kGemmOperandRowPad = 8;
/// Padding, in f32 elements, of every row of the accumulator tile staged in
/// shared memory for the epilogue: a warp's fragment stores hit each bank
/// at most twice.
inline constexpr int64_t kGemmAccumulatorRowPad = 8;

/// Padding, in elements, of every row of the row-chunked epilogue's row
/// buffer: 16 bytes of a 16-bit row keep each row's start 16-byte aligned.
inline constexpr int64_t kGemmRowBufferPad = 8;

/// How a row-chunked tile of blockM x blockN splits whole rows of N
/// columns over `clusterN` CTAs (1: one CTA owns them).
struct GemmRowChunking {
  /// Column chunks each CTA runs the main loop for.
  int64_t rowChunks = 1;
  /// Columns of each CTA's row buffer: N rounded up to a multiple of 8
  /// alone, else rowChunks x blockN (the last CTA's run past N).
  int64_t bufferColumns = 0;
  /// The row buffer: blockM x (bufferColumns + pad) elements of the norm
  /// input's type. Each row's padding (16 bytes or more) holds 4 f32: the
  /// row's mean and 1/sigma, and in a cluster this CTA's partial sums (of
  /// the mean's and the variance's pass) that the others read.
  int64_t rowBufferBytes = 0;
};
GemmRowChunking getGemmRowChunking(int64_t n, int64_t blockM, int64_t blockN,
                                   int64_t clusterN, int64_t elementBytes);

/// Bytes of the row-chunked epilogue's row buffer: blockM rows of `columns`
/// (+ padding) elements of `elementBytes` bytes (the norm input's type).
int64_t getGemmRowBufferBytes(int64_t blockM, int64_t columns,
                              int64_t elementBytes);

/// The largest thread-block cluster chooseGemmTiling spreads a row over:
/// CUDA's portable cluster size (larger ones need an opt-in per kernel).
inline constexpr int64_t kGemmMaxClusterN = 8;

/// Bytes of one pipeline stage (the lhs tile and every rhs tile) and of the
/// staged f32 accumulator tiles (one per rhs); the kernel's shared memory is
/// max(stages x stage bytes, accumulator bytes).
int64_t getGemmStageBytes(const GemmProblem &problem, int64_t blockM,
                          int64_t blockN, int64_t blockK);
int64_t getGemmAccumulatorBytes(int64_t blockM, int64_t blockN,
                                int64_t rhsOperands = 1);

/// One tile configuration chooseGemmTiling considers.
struct GemmTileShape {
  int64_t blockM, blockN, warpsM, warpsN, stages;
  GemmVariant variant = GemmVariant::MmaSync;
  /// CTAs of a cluster sharing whole rows (row-chunked only; sm_90+).
  int64_t clusterN = 1;
};

/// Every tile configuration the kernel can be generated with, largest tile
/// first: 128x256 (2x4 warps), 128x128, 128x64, 64x128, 64x64 (2x2 warps),
/// each with a 3- or a 4-stage ring (blockK = 32): the tensor-core kernel's.
llvm::ArrayRef<GemmTileShape> getGemmTileShapes();

/// The tiling `shape` gives `problem` on `target` (grid, resources,
/// occupancy, wave efficiency), or failure when it does not fit (shared
/// memory per CTA, registers, grid limits). `rowBufferElementBytes` > 0
/// with N > blockN: the row-chunked whole-row epilogue, its row buffer in
/// elements of that size.
llvm::FailureOr<GemmTiling> getGemmTiling(const GemmProblem &problem,
                                          const GPUTarget &target,
                                          int64_t epilogueValues,
                                          const GemmTileShape &shape,
                                          std::string *whyNot = nullptr,
                                          int64_t rowBufferElementBytes = 0);

/// The work chooseGemmTiling weighs a tiling by: the busiest SM's tiles
/// (rowChunks per row-chunked CTA), each weighed by the tile's operand reuse
/// over its outputs (rhsOperands x blockN columns); lower is faster.
double getGemmTilingCost(const GemmTiling &tiling, const GemmProblem &problem,
                         const GPUTarget &target);

/// The FFMA kernel's tile (f32 operands): 64x64 outputs, 256 threads each
/// computing a 4x4 square, K in steps of 16 through shared memory (stages =
/// 1: load, barrier, multiply, barrier).
GemmTileShape getGemmSimtTileShape();

/// Chooses the tiling for `problem` on `target` (wave quantization,
/// occupancy, shared memory per SM); `epilogueValues` = per-element values
/// the epilogue keeps live (for the register estimate). Among the shapes that
/// fit it takes the one whose busiest SM has the least work, work weighed by
/// the tile's operand reuse; a deeper ring only when K is long (at least 8
/// k-steps) and it costs no resident CTA. With `problem.wgmmaRequested` on
/// sm_90a the wgmma kernel's shapes come first, the mma.sync ones only when
/// none fits (fp8 operands: never; refused, naming why wgmma cannot run
/// them). `wholeRows`: the epilogue holds a
/// layer_norm or rms_norm over N, so one CTA must own whole rows: a tile
/// with blockN >= N, else (N beyond the widest tile) a row-chunked tiling
/// whose ring/accumulator and row buffer (elements of
/// `rowBufferElementBytes`, the operands' size when 0) fit the shared memory
/// of a CTA, weighed as every tile by its busiest SM's work and operand
/// reuse (A's tile is re-read once per chunk); on sm_90+ also spread over a
/// cluster of 2, 4 or 8 CTAs (each holding its share of the row), the
/// smaller cluster on a tie; refused, naming the bytes, when none fits. Then,
/// where the chosen tiles are fewer than the SMs (batch 1, bf16/f16, not
/// row-chunked, not warp-specialized), K is split over grid.z: ceil(SMs /
/// tiles) splits (every SM gets a CTA), each at least kGemmMinKStepsPerSplit
/// k-steps, at most kGemmMaxSplitK, and at most as many as keep the f32
/// partials' round trip within a quarter of the operands' bytes (so only skinny
/// and decode shapes split).
llvm::FailureOr<GemmTiling> chooseGemmTiling(const GemmProblem &problem,
                                             const GPUTarget &target,
                                             int64_t epilogueValues,
                                             std::string *whyNot = nullptr,
                                             bool wholeRows = false,
                                             int64_t rowBufferElementBytes = 0);

/// The wgmma kernel (sm_90a, bf16/f16/fp8): one consumer warpgroup holds
/// the tile as blockM / 64 accumulators of 64 x blockN; K advances one
/// 128-byte swizzle span of each operand row per ring stage: 64 16-bit
/// elements, 128 fp8 ones (getGemmWgmmaBlockK).
inline constexpr int64_t kGemmWgmmaRowBytes = 128;
int64_t getGemmWgmmaBlockK(mlir::Type elementType);

/// Whether the GEMM's operands are fp8 (f8E4M3FN or f8E5M2): wgmma
/// m64nNk32 on sm_90a, both operands K-major.
bool isGemmFp8(mlir::Type elementType);
/// Shared memory the wgmma kernel asks beyond its tiles, to align them to the
/// 1024-byte period of the 128B swizzle (the dynamic shared memory base is
/// only 16-byte aligned behind the static mbarriers).
inline constexpr int64_t kGemmWgmmaAlignmentSlack = 1024;

/// The wgmma kernels' shared memory: the alignment slack, then the larger of
/// the ring (unpadded swizzled tiles) and the epilogue's staging: the padded
/// accumulator tile and the dense tile warpgroup.mma.store writes, or for the
/// warp-specialized kernel only the dense tile (the epilogue reads it) and
/// blockM x 2 f32 of norm statistics, or row-chunked only the dense tile
/// (the statistics live in the row buffer's padding). A row-chunked
/// kernel's row buffer comes on top. A dual GEMM (`rhsOperands` = 2) has a
/// second rhs ring and a second padded accumulator tile.
int64_t getGemmWgmmaSharedBytes(int64_t blockM, int64_t blockN, int64_t stages,
                                bool warpSpecialized, bool rowChunked = false,
                                int64_t rhsOperands = 1);

/// Every tile configuration of the wgmma kernel, largest first: 128x128,
/// 64x256, 128x64, 64x128 (one warpgroup, accumulators of at most 128 f32
/// registers per thread), each with a 3- or a 4-stage ring.
llvm::ArrayRef<GemmTileShape> getGemmWgmmaTileShapes();

/// The warp-specialized wgmma kernel's shapes, largest first: 128x256 and
/// 128x128 (two consumer warpgroups of 64 rows each, accumulators of
/// blockN / 2 f32 registers per thread), each with a 3- or a 4-stage ring.
llvm::ArrayRef<GemmTileShape> getGemmWarpSpecializedTileShapes();

/// Registers per thread of the warp-specialized kernel: at launch (the
/// .maxnreg every thread starts with, 384 threads on 64K registers), the
/// producer's after setmaxnreg.dec and the consumers' after setmaxnreg.inc
/// (together the launch's registers).
inline constexpr int64_t kGemmWarpSpecializedLaunchRegisters = 168;
inline constexpr int64_t kGemmWarpSpecializedProducerRegisters = 40;
inline constexpr int64_t kGemmWarpSpecializedConsumerRegisters = 232;

/// Why the wgmma kernel cannot run `problem` on `target` ("" when it can):
/// it needs sm_90a, bf16/f16/fp8 operands, lhs [M, K] (K-major for wgmma's A
/// from shared memory) and one GEMM (batch 1; lhs batch dims folded into M
/// are fine). rhs may be [N, K] or [K, N] (wgmma's transposed B); a dual
/// GEMM runs on the plain kernel (two accumulator sets: 128x64 and 64x128
/// tiles).
std::string whyNotWgmmaGemm(const GemmProblem &problem,
                            const GPUTarget &target);
/// The same without the target: what the problem alone rules out.
std::string whyNotWgmmaGemm(const GemmProblem &problem);

/// Whether the wgmma kernel may run `op`: the nearest kGemmWgmmaAttrName
/// (MemWallTarget.h) on it or an ancestor, true when none says.
bool isGemmWgmmaRequested(mlir::Operation *op);

/// Whether the warp-specialized wgmma kernel is asked for `op`: the nearest
/// kGemmWarpSpecializedAttrName on it or an ancestor, false when none says.
bool isGemmWarpSpecializedRequested(mlir::Operation *op);

/// Whether fp8 fast accumulation is asked for `op`: the nearest
/// kGemmFp8FastAccumulationAttrName on it or an ancestor, false when none
/// says.
bool isGemmFp8FastAccumulationRequested(mlir::Operation *op);

/// The generated kernel's rate relative to the target's
/// generated_gemm_efficiency, which is that of the kernel memwall prefers
/// there: mma.sync on sm_90+ (where wgmma is preferred) runs at the measured
/// ratio of the two kernels (kMmaSyncOnHopperRelative), everything else 1
/// (the warp-specialized kernel has not run on a GPU: it is priced as the
/// plain wgmma kernel, an assumption, not a measurement).
double getGemmVariantRelativeRate(const GemmTiling &tiling,
                                  const GPUTarget &target);

} // namespace memwall

#endif // MEMWALL_ANALYSIS_GEMMTILING_H
