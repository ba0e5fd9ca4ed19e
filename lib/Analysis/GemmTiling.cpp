//===- GemmTiling.cpp - Tiles of memwall's own GEMM kernel ----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Analysis/GemmTiling.h"
#include "memwall/Support/CheckedInt.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace memwall;

namespace {
/// K elements of one pipeline stage: two m16n8k16 steps.
constexpr int64_t kBlockK = 32;
/// The FFMA kernel (f32 operands): K elements per shared tile, and each
/// thread's square of outputs.
constexpr int64_t kSimtBlockK = 16;
constexpr int64_t kSimtThreadTile = 4;
/// Registers every thread needs beyond fragments and accumulators (tile
/// addresses, loop state, indices). With the fragments of both k16 steps of
/// a stage this keeps every configuration free of spills under .maxnreg
/// (ptxas -v on sm_80 and sm_90a, GemmKernelTest).
constexpr int64_t kBaseRegisters = 40;
/// Shared memory CUDA reserves per CTA (and takes off the SM's total for
/// the per-CTA maximum: 227 KiB of 228 on sm_90, 163 of 164 on sm_80).
constexpr int64_t kReservedSharedPerCTA = 1024;
/// Static shared memory of the wgmma kernels' mbarriers, which a CTA's
/// limit counts beside the dynamic bytes (ptxas reports 33 bytes for a
/// 3-stage ring; 256 bounds every ring and the warp-specialized kernel's
/// full, empty and done barriers).
constexpr int64_t kWgmmaStaticSharedBytes = 256;
/// Operand reuse at which a tile reaches half the tensor cores' rate: a
/// tile's efficiency is reuse / (reuse + this), reuse = bm bn / (bm + bn).
constexpr double kHalfEfficiencyReuse = 16;

bool isSimt(const GemmProblem &problem) {
  return problem.elementType && problem.elementType.isF32();
}

bool fail(std::string *whyNot, const std::string &why) {
  if (whyNot)
    *whyNot = why;
  return false;
}

/// Shared memory of the mma.sync or FFMA kernel's `shape`: the ring or the
/// accumulator tiles (one per rhs), whichever is larger, then (row-chunked)
/// the row buffer, 16-byte aligned.
int64_t getSharedBytes(const GemmProblem &problem, const GemmTileShape &shape,
                       int64_t rowBufferBytes) {
  int64_t blockK = isSimt(problem) ? kSimtBlockK : kBlockK;
  int64_t ringOrTile = std::max(
      shape.stages *
          getGemmStageBytes(problem, shape.blockM, shape.blockN, blockK),
      getGemmAccumulatorBytes(shape.blockM, shape.blockN, problem.rhsOperands));
  if (rowBufferBytes == 0)
    return ringOrTile;
  return (CheckedInt(llvm::alignTo(ringOrTile, 16)) + rowBufferBytes)
      .saturated();
}
} // namespace

FailureOr<GemmProblem> memwall::getGemmProblem(MatmulOp matmul,
                                               std::string *whyNot) {
  auto refuse = [&](const std::string &why) {
    fail(whyNot, "the generated GEMM: " + why);
    return failure();
  };
  auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
  auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
  GemmProblem problem;
  problem.elementType = lhs.getElementType();
  if (!problem.elementType.isBF16() && !problem.elementType.isF16() &&
      !problem.elementType.isF32() && !isGemmFp8(problem.elementType)) {
    std::string type;
    llvm::raw_string_ostream os(type);
    os << problem.elementType;
    return refuse("takes bf16, f16, f32, f8E4M3FN or f8E5M2 operands, got " +
                  type);
  }
  problem.transposeLhs = matmul.getTransposeLhs();
  problem.transposeRhs = matmul.getTransposeRhs();
  if (isGemmFp8(problem.elementType)) {
    // wgmma reads fp8 from shared memory K-major only, and TMA needs rows of
    // a multiple of 16 bytes.
    if (rhs.getElementType() != problem.elementType)
      return refuse("multiplies fp8 operands of one format (lhs and rhs "
                    "both f8E4M3FN or both f8E5M2)");
    if (problem.transposeLhs || !problem.transposeRhs)
      return refuse("reads fp8 operands K-major only (lhs [M, K], rhs [N, "
                    "K] with transpose_rhs), as wgmma does");
    if (matmul.getDims().k % 16 != 0)
      return refuse("needs K a multiple of 16 for fp8 operands (16-byte "
                    "TMA rows), got " +
                    std::to_string(matmul.getDims().k));
  }
  MatmulOp::Dims dims = matmul.getDims();
  problem.m = dims.m;
  problem.n = dims.n;
  problem.k = dims.k;
  if (problem.m <= 0 || problem.n <= 0 || problem.k <= 0 || dims.batch <= 0)
    return refuse("empty products run no kernel");
  // cp.async moves 16-byte chunks from 16-byte-aligned rows (the FFMA
  // kernel loads single elements).
  bool chunked = !isSimt(problem);
  if (chunked && problem.k % 8 != 0)
    return refuse("needs K a multiple of 8, got " + std::to_string(problem.k));
  if (chunked && problem.transposeLhs && problem.m % 8 != 0)
    return refuse("needs M a multiple of 8 for an lhs stored [K, M], got " +
                  std::to_string(problem.m));
  if (chunked && !problem.transposeRhs && problem.n % 8 != 0)
    return refuse("needs N a multiple of 8 for an rhs stored [K, N], got " +
                  std::to_string(problem.n));
  if (DequantizeOp dequantize = getDequantizeAtUse(matmul.getRhs())) {
    Type stored = dequantize.getInput().getType().getElementType();
    if (!problem.elementType.isBF16() && !problem.elementType.isF16())
      return refuse("dequantizes weights to bf16 or f16 operands only");
    // 16-byte cp.async chunks: 16 elements of 1 byte, 32 of packed i4.
    bool packed = stored.isInteger(4);
    int64_t chunk = packed ? 32 : 16;
    int64_t contiguous = problem.transposeRhs ? problem.k : problem.n;
    if (contiguous % chunk != 0)
      return refuse(std::string("needs ") + (problem.transposeRhs ? "K" : "N") +
                    " a multiple of " + std::to_string(chunk) + " for " +
                    (packed ? "packed i4" : "1-byte") + " weights, got " +
                    std::to_string(contiguous));
    if (rhs.getRank() != 2)
      return refuse("dequantizes rank-2 weights only");
    problem.rhsStorageType = stored;
  }
  problem.wgmmaRequested = isGemmWgmmaRequested(matmul);
  problem.warpSpecializedRequested = isGemmWarpSpecializedRequested(matmul);
  problem.fp8FastAccumulation = isGemmFp8FastAccumulationRequested(matmul);

  ArrayRef<int64_t> lhsBatch = lhs.getShape().drop_back(2);
  ArrayRef<int64_t> rhsBatch = rhs.getShape().drop_back(2);
  int64_t lhsCount = CheckedInt::product(lhsBatch).saturated();
  int64_t rhsCount = CheckedInt::product(rhsBatch).saturated();
  int64_t lhsMatrix = (CheckedInt(problem.m) * problem.k).saturated();
  int64_t rhsMatrix = (CheckedInt(problem.k) * problem.n).saturated();
  if (rhsBatch.empty() && !problem.transposeLhs) {
    // A linear layer: the lhs batch is more rows of one GEMM.
    problem.m = (CheckedInt(problem.m) * lhsCount).saturated();
  } else if (rhsBatch.empty()) {
    problem.batch = lhsCount;
    problem.lhsBatchStride = lhsMatrix;
  } else if (lhsBatch.empty()) {
    problem.batch = rhsCount;
    problem.rhsBatchStride = rhsMatrix;
  } else if (lhsBatch == rhsBatch) {
    problem.batch = lhsCount;
    problem.lhsBatchStride = lhsMatrix;
    problem.rhsBatchStride = rhsMatrix;
  } else {
    return refuse("batch dims that broadcast are generated only for a rank-2 "
                  "operand");
  }
  return problem;
}

int64_t memwall::getGemmStageBytes(const GemmProblem &problem, int64_t blockM,
                                   int64_t blockN, int64_t blockK) {
  // The FFMA kernel stores both tiles K-major, rows padded by one element
  // (its transposing stores then hit distinct banks).
  if (isSimt(problem))
    return blockK * (blockM + 1 + problem.rhsOperands * (blockN + 1)) * 4;
  // Each operand tile is stored as it lies in memory, rows padded.
  int64_t lhsElements = problem.transposeLhs
                            ? blockK * (blockM + kGemmOperandRowPad)
                            : blockM * (blockK + kGemmOperandRowPad);
  int64_t rhsElements = problem.transposeRhs
                            ? blockN * (blockK + kGemmOperandRowPad)
                            : blockK * (blockN + kGemmOperandRowPad);
  return (lhsElements + problem.rhsOperands * rhsElements) * 2;
}

int64_t memwall::getGemmAccumulatorBytes(int64_t blockM, int64_t blockN,
                                         int64_t rhsOperands) {
  return rhsOperands * blockM * (blockN + kGemmAccumulatorRowPad) * 4;
}

int64_t memwall::getGemmWgmmaSharedBytes(int64_t blockM, int64_t blockN,
                                         int64_t stages, bool warpSpecialized,
                                         bool rowChunked, int64_t rhsOperands) {
  int64_t ring = stages * (blockM + rhsOperands * blockN) * kGemmWgmmaRowBytes;
  int64_t dense = blockM * blockN * 4;
  int64_t staging =
      warpSpecialized ? dense + blockM * 2 * 4
      : rowChunked
          ? dense
          : getGemmAccumulatorBytes(blockM, blockN, rhsOperands) + dense;
  return kGemmWgmmaAlignmentSlack + std::max(ring, staging);
}

ArrayRef<GemmTileShape> memwall::getGemmWarpSpecializedTileShapes() {
  constexpr GemmVariant ws = GemmVariant::WgmmaWarpSpecialized;
  // warpsM = 8: the two consumer warpgroups' warps, stacked along M.
  static const GemmTileShape shapes[] = {
      {128, 256, 8, 1, 3, ws},
      {128, 256, 8, 1, 4, ws},
      {128, 128, 8, 1, 3, ws},
      {128, 128, 8, 1, 4, ws},
  };
  return shapes;
}

int64_t memwall::getGemmSplitKPartialElements(const GemmTiling &tiling,
                                              const GemmProblem &problem) {
  return (CheckedInt(tiling.splitK) * problem.rhsOperands * problem.m *
          problem.n)
      .saturated();
}

int64_t memwall::getGemmKStepsPerSplit(const GemmTiling &tiling,
                                       const GemmProblem &problem) {
  int64_t steps = llvm::divideCeil(problem.k, tiling.blockK);
  return llvm::divideCeil(steps, std::max<int64_t>(tiling.splitK, 1));
}

int64_t memwall::getGemmSplitKCounters(const GemmTiling &tiling) {
  return tiling.grid[0] * tiling.grid[1];
}

/// Splits K over grid.z where the tiles leave SMs idle (see
/// chooseGemmTiling).
static void splitKWhereSMsIdle(GemmTiling &tiling, const GemmProblem &problem,
                               const GPUTarget &target) {
  if (problem.batch != 1 || isSimt(problem) || isGemmRowChunked(tiling) ||
      (tiling.variant != GemmVariant::MmaSync &&
       tiling.variant != GemmVariant::Wgmma))
    return;
  int64_t tiles = tiling.grid[0] * tiling.grid[1];
  int64_t sms = std::max<int64_t>(target.smCount, 1);
  if (tiles >= sms)
    return;
  // Enough CTAs for every SM (a memory-bound GEMM streams from each), as
  // long as the partials' round trip (8 bytes per split and output) stays
  // within a quarter of the operands' traffic: skinny and decode shapes.
  int64_t steps = llvm::divideCeil(problem.k, tiling.blockK);
  int64_t outputs = problem.rhsOperands * problem.m * problem.n;
  // A dequantized rhs is read at its stored width (a byte, or half of one
  // for packed i4).
  int64_t lhsElementBits = problem.elementType.getIntOrFloatBitWidth();
  int64_t rhsElementBits = problem.rhsStorageType
                               ? problem.rhsStorageType.getIntOrFloatBitWidth()
                               : lhsElementBits;
  int64_t operandBytes =
      (problem.m * lhsElementBits / 8 +
       problem.rhsOperands * problem.n * rhsElementBits / 8) *
      problem.k;
  int64_t byTraffic = operandBytes / (4 * 8 * std::max<int64_t>(outputs, 1));
  int64_t splits = std::min<int64_t>({llvm::divideCeilSigned(sms, tiles),
                                      steps / kGemmMinKStepsPerSplit,
                                      kGemmMaxSplitK, byTraffic});
  if (splits < 2)
    return;
  tiling.splitK = splits;
  tiling.grid[2] = splits;
  double concurrent = static_cast<double>(tiling.ctasPerSM) * sms;
  double ctas = static_cast<double>(tiles * splits);
  tiling.waveEfficiency = ctas / (std::ceil(ctas / concurrent) * concurrent);
}

std::array<int64_t, 3> memwall::getGemmBlockSize(const GemmTiling &tiling) {
  if (tiling.variant == GemmVariant::WgmmaWarpSpecialized)
    return {128, (tiling.threads + tiling.producerThreads) / 128, 1};
  return {tiling.threads, 1, 1};
}

ArrayRef<GemmTileShape> memwall::getGemmWgmmaTileShapes() {
  constexpr GemmVariant wgmma = GemmVariant::Wgmma;
  static const GemmTileShape shapes[] = {
      {128, 128, 4, 1, 3, wgmma}, {128, 128, 4, 1, 4, wgmma},
      {64, 256, 4, 1, 3, wgmma},  {64, 256, 4, 1, 4, wgmma},
      {128, 64, 4, 1, 3, wgmma},  {128, 64, 4, 1, 4, wgmma},
      {64, 128, 4, 1, 3, wgmma},  {64, 128, 4, 1, 4, wgmma},
  };
  return shapes;
}

std::string memwall::whyNotWgmmaGemm(const GemmProblem &problem,
                                     const GPUTarget &target) {
  if (target.smArch != "sm_90a")
    return "wgmma needs sm_90a, the target is " + target.smArch;
  return whyNotWgmmaGemm(problem);
}

int64_t memwall::getGemmWgmmaBlockK(Type elementType) {
  return kGemmWgmmaRowBytes / (elementType.getIntOrFloatBitWidth() / 8);
}

bool memwall::isGemmFp8(Type elementType) {
  return isa_and_nonnull<Float8E4M3FNType, Float8E5M2Type>(elementType);
}

bool memwall::isGemmFp8Promoted(const GemmProblem &problem) {
  return isGemmFp8(problem.elementType) && !problem.fp8FastAccumulation;
}

int64_t memwall::getGemmAccumulatorSets(const GemmProblem &problem) {
  return problem.rhsOperands * (isGemmFp8Promoted(problem) ? 2 : 1);
}

std::string memwall::whyNotWgmmaGemm(const GemmProblem &problem) {
  if (!problem.elementType ||
      !(problem.elementType.isBF16() || problem.elementType.isF16() ||
        isGemmFp8(problem.elementType)))
    return "wgmma runs bf16, f16 or fp8 operands";
  if (problem.transposeLhs)
    return "wgmma reads lhs K-major: lhs must be [M, K]";
  if (problem.batch != 1)
    return "the wgmma kernel runs one GEMM (batched operands run on "
           "mma.sync)";
  if (problem.rhsStorageType)
    return "the wgmma kernel multiplies tiles as TMA lands them: a "
           "dequantized rhs runs on mma.sync";
  // A heads-merged lhs loads through a 4-D tensor map over [B, H, S, D]:
  // a k-step's 64 columns within one head, a tile's rows within one
  // sequence.
  int64_t blockK = getGemmWgmmaBlockK(problem.elementType);
  if (problem.lhsHeads &&
      (problem.lhsHeadDim % blockK != 0 || problem.lhsSeqLen % 64))
    return "the wgmma kernel reads a heads-merged lhs through a [B, H, S, "
           "D] tensor map: D must be a multiple of " +
           std::to_string(blockK) +
           " and S of 64, got D = " + std::to_string(problem.lhsHeadDim) +
           ", S = " + std::to_string(problem.lhsSeqLen);
  return "";
}

/// The flag `name` the nearest of `op` and its ancestors sets (a unit
/// attribute or true: on, false: off), `absent` when none does.
static bool getNearestFlag(Operation *op, StringRef name, bool absent) {
  for (; op; op = op->getParentOp())
    if (Attribute attr = op->getAttr(name)) {
      auto flag = dyn_cast<BoolAttr>(attr);
      return !flag || flag.getValue();
    }
  return absent;
}

bool memwall::isGemmWgmmaRequested(Operation *op) {
  return getNearestFlag(op, kGemmWgmmaAttrName, /*absent=*/true);
}

bool memwall::isGemmWarpSpecializedRequested(Operation *op) {
  return getNearestFlag(op, kGemmWarpSpecializedAttrName, /*absent=*/false);
}

bool memwall::isGemmFp8FastAccumulationRequested(Operation *op) {
  return getNearestFlag(op, kGemmFp8FastAccumulationAttrName,
                        /*absent=*/false);
}

// Measured on an H100 SXM (docs/PERFORMANCE.md, 2026-11-24): the mma.sync
// kernel's rate over the wgmma kernel's on the same GEMMs (8192^3 0.59,
// 16384x4096x4096 0.53, GPT-2 MLP fc 0.75 and proj 0.70, 65536x1024x1024
// with GELU 0.68): the median.
constexpr double kMmaSyncOnHopperRelative = 0.68;

double memwall::getGemmVariantRelativeRate(const GemmTiling &tiling,
                                           const GPUTarget &target) {
  if (tiling.variant != GemmVariant::MmaSync)
    return 1;
  return getSmArchNumber(target.smArch) >= 90 ? kMmaSyncOnHopperRelative : 1;
}

int64_t memwall::getGemmRowBufferBytes(int64_t blockM, int64_t columns,
                                       int64_t elementBytes) {
  return (CheckedInt(blockM) * (CheckedInt(columns) + kGemmRowBufferPad) *
          elementBytes)
      .saturated();
}

GemmRowChunking memwall::getGemmRowChunking(int64_t n, int64_t blockM,
                                            int64_t blockN, int64_t clusterN,
                                            int64_t elementBytes) {
  GemmRowChunking chunking;
  clusterN = std::max<int64_t>(clusterN, 1);
  chunking.rowChunks = llvm::divideCeil(llvm::divideCeil(n, clusterN),
                                        std::max<int64_t>(blockN, 1));
  // Rows of a whole multiple of 8 columns keep every row's padding (its
  // statistics) 16-byte aligned.
  chunking.bufferColumns = clusterN == 1
                               ? static_cast<int64_t>(llvm::alignTo(n, 8))
                               : chunking.rowChunks * blockN;
  chunking.rowBufferBytes =
      getGemmRowBufferBytes(blockM, chunking.bufferColumns, elementBytes);
  return chunking;
}

ArrayRef<GemmTileShape> memwall::getGemmTileShapes() {
  static const GemmTileShape shapes[] = {
      {128, 256, 2, 4, 3}, {128, 256, 2, 4, 4}, {128, 128, 2, 2, 3},
      {128, 128, 2, 2, 4}, {128, 64, 2, 2, 3},  {128, 64, 2, 2, 4},
      {64, 128, 2, 2, 3},  {64, 128, 2, 2, 4},  {64, 64, 2, 2, 3},
      {64, 64, 2, 2, 4},
  };
  return shapes;
}

GemmTileShape memwall::getGemmSimtTileShape() { return {64, 64, 2, 4, 1}; }

FailureOr<GemmTiling>
memwall::getGemmTiling(const GemmProblem &problem, const GPUTarget &target,
                       int64_t epilogueValues, const GemmTileShape &shape,
                       std::string *whyNot, int64_t rowBufferElementBytes) {
  GemmTiling tiling;
  tiling.blockM = shape.blockM;
  tiling.blockN = shape.blockN;
  bool simt = isSimt(problem);
  bool warpSpecialized =
      !simt && shape.variant == GemmVariant::WgmmaWarpSpecialized;
  bool wgmma =
      warpSpecialized || (!simt && shape.variant == GemmVariant::Wgmma);
  tiling.variant = simt ? GemmVariant::Simt : shape.variant;
  if (wgmma) {
    if (std::string why = whyNotWgmmaGemm(problem, target); !why.empty()) {
      fail(whyNot, why);
      return failure();
    }
  }
  if (!wgmma && isGemmFp8(problem.elementType)) {
    fail(whyNot, "fp8 operands run on the wgmma kernels only");
    return failure();
  }
  tiling.blockK = simt    ? kSimtBlockK
                  : wgmma ? getGemmWgmmaBlockK(problem.elementType)
                          : kBlockK;
  tiling.warpsM = shape.warpsM;
  tiling.warpsN = shape.warpsN;
  tiling.stages = shape.stages;
  tiling.threads = shape.warpsM * shape.warpsN * 32;
  if (warpSpecialized)
    tiling.producerThreads = 128;
  // Whole rows wider than the tile: one CTA loops over the row's column
  // chunks, the norm's input kept in a row buffer after the ring.
  bool rowChunked = rowBufferElementBytes > 0 && problem.n > shape.blockN;
  if (warpSpecialized && problem.rhsOperands != 1) {
    fail(whyNot, "the warp-specialized kernel has no dual (two-rhs) main "
                 "loop");
    return failure();
  }
  if (wgmma && problem.lhsHeads && problem.lhsSeqLen % shape.blockM != 0) {
    fail(whyNot, "a heads-merged lhs tile must lie within one sequence: S = " +
                     std::to_string(problem.lhsSeqLen) + " is no multiple of " +
                     std::to_string(shape.blockM) + " rows");
    return failure();
  }
  if (shape.blockN % problem.epilogueColumnGroup != 0) {
    fail(whyNot, "a rope in the epilogue needs whole heads of " +
                     std::to_string(problem.epilogueColumnGroup) +
                     " columns in a tile, but the tile is " +
                     std::to_string(shape.blockN) + " wide");
    return failure();
  }
  if (rowChunked) {
    if (warpSpecialized) {
      fail(whyNot, "the warp-specialized kernel has no row-chunk loop: a "
                   "norm over N = " +
                       std::to_string(problem.n) + " needs whole rows in one " +
                       std::to_string(shape.blockM) + "x" +
                       std::to_string(shape.blockN) + " tile");
      return failure();
    }
    GemmRowChunking chunking =
        getGemmRowChunking(problem.n, shape.blockM, shape.blockN,
                           shape.clusterN, rowBufferElementBytes);
    tiling.rowChunks = chunking.rowChunks;
    tiling.rowBufferBytes = chunking.rowBufferBytes;
    tiling.clusterN = shape.clusterN;
    if (shape.clusterN > 1) {
      if (getSmArchNumber(target.smArch) < 90 ||
          shape.clusterN > kGemmMaxClusterN) {
        fail(whyNot, "clusters of " + std::to_string(shape.clusterN) +
                         " CTAs need sm_90 or later (at most " +
                         std::to_string(kGemmMaxClusterN) +
                         "), the target is " + target.smArch);
        return failure();
      }
      // Every CTA of the cluster owns columns of the row.
      if ((shape.clusterN - 1) * chunking.bufferColumns >= problem.n) {
        fail(whyNot, "a cluster of " + std::to_string(shape.clusterN) +
                         " CTAs leaves one without columns of N = " +
                         std::to_string(problem.n));
        return failure();
      }
    }
  } else if (shape.clusterN > 1) {
    fail(whyNot, "only a row-chunked tiling runs in a cluster");
    return failure();
  }
  // The row buffer follows the ring (or the wgmma kernel's staging).
  tiling.sharedBytes =
      wgmma ? (CheckedInt(getGemmWgmmaSharedBytes(
                   shape.blockM, shape.blockN, shape.stages, warpSpecialized,
                   rowChunked, problem.rhsOperands)) +
               tiling.rowBufferBytes)
                  .saturated()
            : getSharedBytes(problem, shape, tiling.rowBufferBytes);
  auto tileName = [&] {
    return std::to_string(shape.blockM) + "x" + std::to_string(shape.blockN) +
           " tile";
  };
  int64_t staticShared = wgmma ? kWgmmaStaticSharedBytes : 0;
  int64_t sharedLimit = static_cast<int64_t>(target.sharedMemoryPerSMBytes) -
                        kReservedSharedPerCTA - staticShared;
  if (tiling.sharedBytes > sharedLimit) {
    std::string rowBuffer =
        !rowChunked ? ""
        : shape.clusterN > 1
            ? " (" + std::to_string(tiling.rowBufferBytes) +
                  " of them the row buffer of " + std::to_string(shape.blockM) +
                  " rows of " +
                  std::to_string(tiling.rowChunks * shape.blockN) +
                  " of N = " + std::to_string(problem.n) +
                  ", in a cluster of " + std::to_string(shape.clusterN) + ")"
            : " (" + std::to_string(tiling.rowBufferBytes) +
                  " of them the row buffer of " + std::to_string(shape.blockM) +
                  " rows of N = " + std::to_string(problem.n) + ")";
    fail(whyNot,
         "a " + tileName() + " needs " + std::to_string(tiling.sharedBytes) +
             " bytes of shared memory" + rowBuffer + ", more than the " +
             std::to_string(std::max<int64_t>(sharedLimit, 0)) +
             " a CTA can have");
    return failure();
  }

  // Registers: the warp tile's f32 accumulators (one set per rhs) and the
  // fragments of a stage's two k16 steps in the main loop; the epilogue's
  // live f32 values of one 8-element vector after it (the accumulators are
  // in shared memory then).
  int64_t rhsOperands = problem.rhsOperands;
  int64_t warpTileM = shape.blockM / shape.warpsM;
  int64_t warpTileN = shape.blockN / shape.warpsN;
  int64_t fragments = warpTileM / 16 * 4 + rhsOperands * (warpTileN / 8 * 2);
  int64_t mainLoop = rhsOperands * (warpTileM * warpTileN / 32) +
                     kBlockK / 16 * fragments + kBaseRegisters;
  // FFMA: the thread's outputs and one k's row and column of operands.
  if (simt)
    mainLoop = rhsOperands * kSimtThreadTile * kSimtThreadTile +
               (1 + rhsOperands) * kSimtThreadTile + kBaseRegisters;
  // wgmma: the warpgroup's accumulators (and the fp8 partials promoted
  // into them); the operands stay in shared memory.
  if (wgmma)
    mainLoop = getGemmAccumulatorSets(problem) * shape.blockM * shape.blockN /
                   tiling.threads +
               kBaseRegisters;
  int64_t epilogue =
      kBaseRegisters +
      (CheckedInt(std::max<int64_t>(epilogueValues, 1)) * 8).saturated();
  tiling.registersPerThread = llvm::alignTo(std::max(mainLoop, epilogue), 8);
  if (warpSpecialized) {
    // The consumers run the main loop and the epilogue after setmaxnreg.inc;
    // every thread launches with the 384-thread share.
    if (tiling.registersPerThread > kGemmWarpSpecializedConsumerRegisters) {
      fail(whyNot, "a warp-specialized " + tileName() + " needs an estimated " +
                       std::to_string(tiling.registersPerThread) +
                       " registers per consumer thread (at most " +
                       std::to_string(kGemmWarpSpecializedConsumerRegisters) +
                       ")");
      return failure();
    }
    tiling.registersPerThread = kGemmWarpSpecializedLaunchRegisters;
  }
  if (mainLoop > 255) {
    int64_t sets = wgmma ? getGemmAccumulatorSets(problem) : rhsOperands;
    fail(whyNot, "a " + tileName() + " holds " + std::to_string(sets) +
                     " accumulator sets in an estimated " +
                     std::to_string(mainLoop) +
                     " registers per thread (at most 255)");
    return failure();
  }
  if (tiling.registersPerThread > 255) {
    fail(whyNot, "its epilogue keeps " + std::to_string(epilogueValues) +
                     " values per element live, an estimated " +
                     std::to_string(tiling.registersPerThread) +
                     " registers per thread (at most 255)");
    return failure();
  }

  int64_t tilesN =
      rowChunked ? shape.clusterN : llvm::divideCeil(problem.n, shape.blockN);
  int64_t tilesM = llvm::divideCeil(problem.m, shape.blockM);
  tiling.grid = {tilesN, tilesM, problem.batch};
  if (tilesN > std::numeric_limits<int32_t>::max() || tilesM > 65535 ||
      problem.batch > 65535 || problem.batch < 1) {
    fail(whyNot, "its grid (" + std::to_string(tilesN) + ", " +
                     std::to_string(tilesM) + ", " +
                     std::to_string(problem.batch) +
                     ") exceeds CUDA's limits (2^31 - 1, 65535, 65535)");
    return failure();
  }

  int64_t bySharedMemory =
      static_cast<int64_t>(target.sharedMemoryPerSMBytes) /
      (tiling.sharedBytes + staticShared + kReservedSharedPerCTA);
  int64_t launched = tiling.threads + tiling.producerThreads;
  int64_t byRegisters =
      kRegistersPerSM / (tiling.registersPerThread * launched);
  tiling.ctasPerSM = std::min({bySharedMemory, byRegisters,
                               kMaxThreadsPerSM / launched, kMaxCTAsPerSM});
  tiling.occupancy =
      static_cast<double>(tiling.ctasPerSM * launched) / kMaxThreadsPerSM;
  double tiles = static_cast<double>(tilesN) * tilesM * problem.batch;
  double concurrent =
      static_cast<double>(tiling.ctasPerSM) * std::max(target.smCount, 1u);
  double waves = std::ceil(tiles / concurrent);
  tiling.waveEfficiency = tiles / (waves * concurrent);
  return tiling;
}

double memwall::getGemmTilingCost(const GemmTiling &tiling,
                                  const GemmProblem &problem,
                                  const GPUTarget &target) {
  // Work of the busiest SM: its tiles, each weighed by how well the tile
  // reuses its operands (a dual GEMM's tile is blockM x 2 blockN of outputs
  // from one lhs tile; a row-chunked CTA computes rowChunks tiles,
  // re-reading A's tile for each).
  double tiles =
      static_cast<double>(tiling.grid[0]) * tiling.grid[1] * tiling.grid[2];
  double perSM = std::ceil(tiles / std::max(target.smCount, 1u));
  int64_t outputColumns = problem.rhsOperands * tiling.blockN;
  double reuse = static_cast<double>(tiling.blockM * outputColumns) /
                 (tiling.blockM + outputColumns);
  double efficiency = reuse / (reuse + kHalfEfficiencyReuse);
  return perSM * tiling.blockM * outputColumns * tiling.rowChunks / efficiency;
}

FailureOr<GemmTiling>
memwall::chooseGemmTiling(const GemmProblem &problem, const GPUTarget &target,
                          int64_t epilogueValues, std::string *whyNot,
                          bool wholeRows, int64_t rowBufferElementBytes) {
  // Whole rows beyond the widest tile: every tile, row-chunked.
  int64_t widest = getGemmSimtTileShape().blockN;
  if (!isSimt(problem))
    for (const GemmTileShape &shape : getGemmTileShapes())
      widest = std::max(widest, shape.blockN);
  bool rowChunked = wholeRows && problem.n > widest;
  int64_t rowBytes = 0;
  if (rowChunked)
    rowBytes = rowBufferElementBytes > 0
                   ? rowBufferElementBytes
                   : problem.elementType.getIntOrFloatBitWidth() / 8;
  auto holdsRows = [&](const GemmTileShape &shape) {
    return !wholeRows || rowChunked || shape.blockN >= problem.n;
  };
  std::string rowsWhy = "a norm in the epilogue needs whole rows in one "
                        "tile, but N = " +
                        std::to_string(problem.n) + " exceeds every tile";
  if (isSimt(problem)) {
    FailureOr<GemmTiling> tiling =
        getGemmTiling(problem, target, epilogueValues, getGemmSimtTileShape(),
                      whyNot, rowBytes);
    if (failed(tiling) && whyNot)
      *whyNot = "the generated GEMM has no tile that fits: " + *whyNot;
    return tiling;
  }
  std::optional<GemmTiling> best;
  double bestCost = std::numeric_limits<double>::infinity();
  // Row-chunked, the refusal names the smallest shared memory any tile
  // needs.
  std::string firstWhy, smallestWhy;
  int64_t smallestBytes = std::numeric_limits<int64_t>::max();
  // The wgmma kernel's shapes first when asked for; mma.sync's when none of
  // them fits.
  // Row-chunked on sm_90+, each kernel's shapes run alone and in clusters
  // of 2, 4 and 8 CTAs, smaller clusters first (they win ties).
  SmallVector<GemmTileShape> shapes;
  int64_t largestCluster =
      rowChunked && getSmArchNumber(target.smArch) >= 90 ? kGemmMaxClusterN : 1;
  auto addShapes = [&](ArrayRef<GemmTileShape> kernelShapes) {
    for (int64_t clusterN = 1; clusterN <= largestCluster; clusterN *= 2)
      for (GemmTileShape shape : kernelShapes) {
        shape.clusterN = clusterN;
        shapes.push_back(shape);
      }
  };
  std::string whyNotWgmma = whyNotWgmmaGemm(problem, target);
  if (problem.wgmmaRequested && whyNotWgmma.empty()) {
    if (problem.warpSpecializedRequested && !rowChunked &&
        problem.rhsOperands == 1)
      addShapes(getGemmWarpSpecializedTileShapes());
    addShapes(getGemmWgmmaTileShapes());
  }
  // mma.sync multiplies 16-bit operands: fp8 runs on wgmma or not at all.
  if (isGemmFp8(problem.elementType)) {
    if (!problem.wgmmaRequested)
      whyNotWgmma = "the wgmma kernel is turned off (memwall.gemm_wgmma)";
    if (shapes.empty()) {
      fail(whyNot, "the generated GEMM: fp8 operands run on the wgmma kernel "
                   "only, and " +
                       whyNotWgmma);
      return failure();
    }
  } else {
    addShapes(getGemmTileShapes());
  }
  for (const GemmTileShape &shape : shapes) {
    if (best && shape.variant != best->variant)
      break;
    bool wgmma = shape.variant == GemmVariant::Wgmma ||
                 shape.variant == GemmVariant::WgmmaWarpSpecialized;
    int64_t kSteps = llvm::divideCeil(
        problem.k, wgmma ? getGemmWgmmaBlockK(problem.elementType) : kBlockK);
    if (!holdsRows(shape)) {
      if (firstWhy.empty())
        firstWhy = rowsWhy;
      continue;
    }
    std::string why;
    FailureOr<GemmTiling> tiling =
        getGemmTiling(problem, target, epilogueValues, shape, &why, rowBytes);
    if (failed(tiling)) {
      if (firstWhy.empty())
        firstWhy = why;
      if (wgmma)
        continue;
      int64_t bytes = getSharedBytes(
          problem, shape,
          rowChunked ? getGemmRowChunking(problem.n, shape.blockM, shape.blockN,
                                          shape.clusterN, rowBytes)
                           .rowBufferBytes
                     : 0);
      if (bytes < smallestBytes) {
        smallestBytes = bytes;
        smallestWhy = why;
      }
      continue;
    }
    if (shape.stages == 4) {
      // A 4-stage ring only for long K, and only when it keeps as many
      // CTAs resident as the 3-stage one (the shape just before it).
      if (kSteps < 8 || !best || best->blockM != shape.blockM ||
          best->blockN != shape.blockN || best->clusterN != shape.clusterN ||
          tiling->ctasPerSM < best->ctasPerSM)
        continue;
      best = *tiling;
      continue;
    }
    double cost = getGemmTilingCost(*tiling, problem, target);
    if (cost < bestCost) {
      bestCost = cost;
      best = *tiling;
    }
  }
  if (!best) {
    fail(whyNot,
         "the generated GEMM has no tile that fits: " +
             (rowChunked ? "a norm over N = " + std::to_string(problem.n) +
                               " needs whole rows in one CTA" +
                               (getSmArchNumber(target.smArch) >= 90
                                    ? " or a cluster of at most " +
                                          std::to_string(kGemmMaxClusterN)
                                    : std::string()) +
                               ", and " + smallestWhy
                         : firstWhy));
    return failure();
  }
  splitKWhereSMsIdle(*best, problem, target);
  return *best;
}
