//===- GemmCodegen.cpp - Tensor-core GEMM with a fused epilogue -----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Block (x, y, z) computes the blockM x blockN tile at rows y·blockM,
// columns x·blockN of GEMM z; its warps split the tile warpsM x warpsN, each
// warp holding its part of the tile as m16n8 f32 accumulator fragments.
//
// Main loop: K advances blockK (two k16 steps) at a time through a ring of
// `stages` shared-memory slots. Each operand tile is stored as it lies in
// memory (lhs [M, K] or [K, M], rhs [N, K] or [K, N]), rows padded by 16
// bytes so that the eight rows of one ldmatrix fall in distinct banks, and
// read with ldmatrix, transposed when the tile's rows are K (MmaBuilding.h
// gives the fragment layouts). cp.async fills slot (k + stages - 1) while
// slot k is multiplied; rows past M or N and columns past K are zero-filled
// (K, and the strided dim of a [K, ·] operand, are multiples of 8, so a
// 16-byte chunk is all in or all out). Per k-step: wait until at most
// stages - 2 copy groups are pending (k's has landed), one barrier (every
// thread's copies are visible, and every warp is done with the slot the
// next copies overwrite), issue the next copies, multiply.
//
// Epilogue: the accumulators go to shared memory (the ring's bytes, rows
// padded by 8 floats), then each thread takes row-major runs of `width`
// elements of the tile (scalar shared-memory accesses: the PTX pipeline
// lowers vector ops before it maps GPU address spaces), adds the matmul's bias,
// evaluates the elementwise ops with ElementwiseEmitter at flat index (z·M +
// row)·N + column and stores every output with one vector store per run; runs
// past M or N are skipped. With a layer_norm or rms_norm in the epilogue
// (the tile then holds whole rows) this runs twice around per-row
// statistics: pass 1 up to the norm's input, written back to the tile; one
// warp per row puts mean and 1/sqrt(var + eps) in the row's padding; pass 2
// the norm and the ops after it.
//
// Row-chunked (a norm over N wider than the tile; isGemmRowChunked, grid.x
// = 1): the block owns blockM whole rows and runs the main loop and pass 1
// once per blockN-wide column chunk (A's tile is re-read each time),
// writing the norm's input, in its tensor's element type, to a row buffer
// [blockM, N + pad] after the ring's bytes. Then one warp per row computes
// the statistics from the buffer (mean, then the centred variance, each a
// loop over the row's columns), and pass 2 runs over [blockM, N] from it.
// In a thread-block cluster (sm_90+, tiling.clusterN > 1 CTAs along x, the
// whole grid.x) CTA x owns columns x·rowChunks·blockN.. of the rows and
// only those in its buffer; each sum over a row is this CTA's partial,
// written to an exchange array in shared memory, a cluster barrier, then
// the sum of every CTA's partial read through distributed shared memory
// (mapa + ld.shared::cluster) in rank order, so every CTA gets the same
// statistics bit for bit. A last cluster barrier keeps each CTA's shared
// memory alive until the others have read it.
//
// A dual GEMM (KernelAnalysis::siblingMatmul: two matmuls of one lhs, e.g.
// Llama's gate and up projections) has a second rhs ring filled in the same
// cp.async group, multiplies every ldmatrix'd A fragment by both rhs into
// two accumulator sets, and stages both tiles for the epilogue, which reads
// each product (plus its bias) as a value.
//
// Split K (tiling.splitK > 1: skinny and decode shapes whose tiles leave SMs
// idle), in one kernel, as CUTLASS's serial split-K and stream-K fix-ups:
// block z runs the main loop over its own k-steps (the last split's steps
// past K are zero-filled as any) and writes its staged tiles, unrounded f32,
// to [splitK, rhsOperands, M, N] partials (a dual GEMM writes both
// products); each thread fences its writes (membar.gl), a barrier, then
// thread 0 adds 1 to the tile's arrival counter. The block that sees
// splitK - 1 arrived before it is the tile's last: it sets the counter back
// to 0 (the counters are zero at load and after every launch), learns it is
// last through the barrier's reduction (bar.red.or), fences, sums every
// split's partials in split order into its staged tiles (the same sum
// whichever block arrives last) and runs the epilogue as above.
//
// f32 operands (exact fp32, as PyTorch without TF32): the FFMA kernel. Each
// k-step of 16 is loaded (coalesced, zeros past the edges) into K-major
// shared tiles, a barrier, each thread accumulates a 4x4 square of the tile
// with fma.rn.f32, a barrier; the epilogue is the same.
//
//===----------------------------------------------------------------------===//

#include "GemmCodegen.h"
#include "DequantizeCodegen.h"
#include "ElementwiseEmitter.h"
#include "GemmWgmmaCodegen.h"
#include "KernelBuilding.h"
#include "LayoutCodegen.h"
#include "MmaBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>
#include <functional>

using namespace mlir;
using namespace memwall;

namespace {
/// The FFMA kernel's outputs per thread along M and along N.
constexpr int64_t kThreadTile = 4;

/// Elements per epilogue vector: the widest run of up to 8 (128 bits of a
/// 16-bit output) that never straddles a row or a broadcast epilogue
/// input's period (the matmul's operands are not read by the epilogue).
int64_t getEpilogueWidth(const KernelAnalysis &analysis) {
  auto matmul = cast<MatmulOp>(analysis.anchor);
  auto sibling = dyn_cast_or_null<MatmulOp>(analysis.siblingMatmul);
  int64_t width = 8;
  auto divides = [&](int64_t extent) { return extent % width == 0; };
  while (width > 1) {
    bool fits = divides(analysis.gemm.n);
    // A heads-split store must not straddle heads, nor a rope's vector the
    // halves it pairs.
    for (GemmHeadsLayout heads : analysis.headsLayouts)
      fits = fits && divides(heads.rope ? heads.headDim / 2 : heads.headDim);
    for (const KernelInput &input : analysis.inputs)
      if (input.value != matmul.getLhs() && input.value != matmul.getRhs() &&
          (!sibling || input.value != sibling.getRhs()) &&
          (input.pattern == AccessPattern::Suffix ||
           input.pattern == AccessPattern::Outer))
        fits = fits && divides(input.innerElements);
    if (fits)
      break;
    width /= 2;
  }
  return width;
}

/// One operand's ring of `rows` x `columns` shared tiles and its source: a
/// row-major matrix of `rowLimit` rows of `columnLimit` elements starting at
/// element `base` (this block's batch).
struct OperandTile {
  Value ring, source, base;
  int64_t rows, columns;
  int64_t rowLimit, columnLimit;
  /// Elements per 16-byte cp.async chunk (16 for 1-byte stored weights, 32
  /// for packed i4).
  int64_t chunkElements = 8;
  /// Packed i4 weights: 2 (the source and the ring hold bytes, element c of
  /// a row in byte c / 2, the even one in the low nibble); 1 otherwise.
  int64_t elementsPerByte = 1;
  /// An rhs dequantized in the main loop: its dequantize (the ring holds
  /// the stored bytes) and the tile mma.sync reads; null otherwise.
  DequantizeOp dequantize;
  Value dequantized;
  /// A heads-merged lhs (GemmProblem::lhsHeads): the source is [B, H, S,
  /// D], the tile's rows and columns B·S and H·D; 0 otherwise.
  int64_t heads = 0, headDim = 0, seqLen = 0;
};

/// Row padding of a ring of 1-byte stored weights: 16 bytes, as the 16-bit
/// rings' kGemmOperandRowPad elements.
constexpr int64_t kStoredRowPad = 16;

class GemmKernelBuilder : IndexArithmetic {
public:
  GemmKernelBuilder(gpu::GPUModuleOp gpuModule, const KernelAnalysis &analysis,
                    ArrayRef<Value> outputs)
      : IndexArithmetic(b),
        b(analysis.anchor->getLoc(), gpuModule.getContext()),
        analysis(analysis), problem(analysis.gemm), tiling(analysis.tiling),
        outputs(outputs), element(problem.elementType),
        matmul(cast<MatmulOp>(analysis.anchor)),
        sibling(dyn_cast_or_null<MatmulOp>(analysis.siblingMatmul)),
        rhsDequantize(getDequantizeAtUse(matmul.getRhs())),
        siblingDequantize(sibling ? getDequantizeAtUse(sibling.getRhs())
                                  : DequantizeOp()),
        emitter(b, analysis.inputs, getEpilogueWidth(analysis)) {
    b.setInsertionPointToEnd(gpuModule.getBody());
  }

  FailureOr<gpu::GPUFuncOp> build(StringRef name) {
    if (std::string why = whyCannotBuild(); !why.empty())
      return matmul.emitError("cannot generate the GEMM kernel: ") << why;
    // Split K: the partials and the tiles' arrival counters follow the
    // outputs.
    SmallVector<Type> params;
    for (const KernelInput &input : analysis.inputs)
      params.push_back(parameterType(input.value));
    for (Value output : outputs)
      params.push_back(flatMemRefType(output));
    if (isSplitK()) {
      params.push_back(MemRefType::get(
          {getGemmSplitKPartialElements(tiling, problem)}, b.getF32Type()));
      params.push_back(
          MemRefType::get({getGemmSplitKCounters(tiling)}, b.getI32Type()));
    }
    gpu::GPUFuncOp func =
        createKernel(b, name, params, getGemmBlockSize(tiling));
    // The register budget the tiling's occupancy assumes (.maxnreg).
    func->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
                  b.getI32IntegerAttr(tiling.registersPerThread));
    // A cluster's size is the kernel's (.reqnctapercluster): a plain launch
    // groups the CTAs, and mapa/barrier.cluster need no launch attribute.
    if (tiling.clusterN > 1)
      func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                    b.getDenseI32ArrayAttr(
                        {static_cast<int32_t>(tiling.clusterN), 1, 1}));
    Block &entry = func.getBody().front();
    unsigned afterInputs = analysis.inputs.size();
    for (auto [i, input] : llvm::enumerate(analysis.inputs))
      emitter.setMemRef(input.value, entry.getArgument(i));
    for (auto [i, output] : llvm::enumerate(outputs))
      emitter.setMemRef(output, entry.getArgument(afterInputs + i));
    if (isSplitK()) {
      partials = entry.getArgument(afterInputs + outputs.size());
      counters = entry.getArgument(afterInputs + outputs.size() + 1);
    }

    tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    // The warp-specialized kernel's blocks are 128 x warpgroups: consumers
    // are threads 0..255 of the row-major linear index.
    if (isWarpSpecialized())
      tid = add(tid, mul(gpu::ThreadIdOp::create(b, gpu::Dimension::y), 128));
    Value lane = rem(tid, 32);
    Value warp = div(tid, 32);
    laneMatrix = div(lane, 8);
    laneRow = rem(lane, 8);
    warpRow = mul(div(warp, tiling.warpsN), warpTileM());
    warpColumn = mul(rem(warp, tiling.warpsN), warpTileN());
    tileColumn =
        mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), tiling.blockN);
    tileRow = mul(gpu::BlockIdOp::create(b, gpu::Dimension::y), tiling.blockM);
    batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
    kBase = idx(0);
    if (isSplitK()) {
      // One GEMM (batch 1); grid.z is the split.
      split = batch;
      batch = idx(0);
      kBase = mul(split, kSteps() * tiling.blockK);
    }

    if (isGemmRowChunked(tiling)) {
      buildRowChunkedKernel();
    } else if (isSplitK()) {
      buildAnyMainLoop();
      SmallVector<Value, 2> tiles = stageAccumulatorTiles();
      writePartials(tiles);
      // The tile's last block sums the splits and runs the epilogue.
      Value tileIndex =
          add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::y), tiling.grid[0]),
              gpu::BlockIdOp::create(b, gpu::Dimension::x));
      OpBuilder::InsertionGuard guard(b);
      buildIfLastArrival(b, counters, tileIndex, tid, tiling.splitK);
      for (auto [product, tile] : llvm::enumerate(tiles))
        sumPartials(tile, product);
      syncThreads();
      buildEpilogue(tiles);
    } else {
      buildAnyMainLoop();
      buildEpilogue(stageAccumulatorTiles());
    }
    // The warp-specialized epilogue ran in the consumers' branch.
    if (wgmmaLoop.producerSplit)
      b.setInsertionPointAfter(wgmmaLoop.producerSplit);
    gpu::ReturnOp::create(b);
    return func;
  }

private:
  /// Either wgmma main loop (plain or warp-specialized).
  bool isWgmma() const { return isGemmWgmmaVariant(tiling); }
  bool isWarpSpecialized() const {
    return tiling.variant == GemmVariant::WgmmaWarpSpecialized;
  }
  bool isSplitK() const { return tiling.splitK > 1; }

  /// The tensor the main loop reads the lhs from: the matmul's lhs, or the
  /// [B, H, S, D] input of a heads merge (GemmProblem::lhsHeads).
  Value lhsSource() {
    if (const std::optional<GemmLhsHeadsMerge> &merge = analysis.lhsHeadsMerge)
      return GemmLhsHeadsMerge(*merge).heads.getInput();
    return matmul.getLhs();
  }

  /// A barrier of every thread that runs the epilogue: the CTA's, or the
  /// warp-specialized kernel's consumer warpgroups' (its producer never
  /// reaches the epilogue).
  void syncThreads() {
    if (isWarpSpecialized())
      buildGemmConsumerBarrier(b);
    else
      gpu::BarrierOp::create(b);
  }

  /// A kernel input's parameter: a flat memref, or for the wgmma kernel's
  /// operands a tensor map (the host builds it with
  /// nvgpu.tma.create.descriptor).
  Type parameterType(Value input) {
    if (isWgmma() && (input == lhsSource() || input == matmul.getRhs() ||
                      (sibling && input == sibling.getRhs())))
      return getGemmWgmmaOperandMapType(b.getContext(), problem, tiling,
                                        input == lhsSource());
    return flatMemRefType(input);
  }

  int64_t warpTileM() const { return tiling.blockM / tiling.warpsM; }
  int64_t warpTileN() const { return tiling.blockN / tiling.warpsN; }
  /// K-steps the main loop runs: all, or one split's.
  int64_t kSteps() const {
    return isSplitK() ? getGemmKStepsPerSplit(tiling, problem)
                      : llvm::divideCeil(problem.k, tiling.blockK);
  }
  /// Rows and columns of one ring slot of each operand, as in memory.
  std::pair<int64_t, int64_t> lhsTileShape() const {
    return problem.transposeLhs ? std::pair{tiling.blockK, tiling.blockM}
                                : std::pair{tiling.blockM, tiling.blockK};
  }
  std::pair<int64_t, int64_t> rhsTileShape() const {
    return problem.transposeRhs ? std::pair{tiling.blockN, tiling.blockK}
                                : std::pair{tiling.blockK, tiling.blockN};
  }

  /// `ring`, `stepsBefore`: the wgmma ring a row-chunked CTA keeps across
  /// its chunks' main loops, and the k-steps it ran before this one.
  void buildAnyMainLoop(const GemmWgmmaRing *ring = nullptr,
                        Value stepsBefore = Value()) {
    if (element.isF32()) {
      buildSimtMainLoop();
    } else if (isWgmma()) {
      wgmmaLoop = buildGemmWgmmaMainLoop(
          b, problem, tiling, emitter.getMemRef(lhsSource()),
          emitter.getMemRef(matmul.getRhs()), tid, tileRow, tileColumn, kBase,
          kSteps(), ring, stepsBefore,
          sibling ? emitter.getMemRef(sibling.getRhs()) : Value());
      shared = wgmmaLoop.shared;
    } else {
      buildMainLoop();
    }
  }

  /// The dynamic shared memory, created once (the row-chunked kernel runs
  /// the main loop once per chunk).
  void createSharedMemory() {
    if (shared)
      return;
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    shared = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                           workgroup));
  }

  /// Why the analysis is not one this builder can emit ("" when it is).
  std::string whyCannotBuild() {
    if (!element || (!element.isBF16() && !element.isF16() &&
                     !element.isF32() && !isGemmFp8(element)))
      return "operands must be bf16, f16, f32 or fp8";
    if (isGemmFp8(element) && !isWgmma())
      return "fp8 operands run on the wgmma kernels only";
    if (isSplitK() && (problem.batch != 1 || element.isF32() ||
                       isGemmRowChunked(tiling) || isWarpSpecialized()))
      return "split K runs one bf16/f16 GEMM (or dual GEMM), not "
             "row-chunked, on the mma.sync or plain wgmma kernel";
    if (isWgmma()) {
      if (std::string why = whyCannotBuildGemmWgmma(problem, tiling);
          !why.empty())
        return why;
      if (sibling && isWarpSpecialized())
        return "the warp-specialized kernel has no dual (two-rhs) main loop";
      if (isGemmRowChunked(tiling) && isWarpSpecialized())
        return "the warp-specialized kernel has no row-chunk loop";
    } else if (element.isF32()) {
      if (tiling.blockM % kThreadTile != 0 ||
          tiling.blockN % kThreadTile != 0 || tiling.stages != 1 ||
          tiling.threads !=
              tiling.blockM / kThreadTile * (tiling.blockN / kThreadTile) ||
          tiling.blockK * tiling.blockM % tiling.threads != 0 ||
          tiling.blockK * tiling.blockN % tiling.threads != 0)
        return "the tiling is not one of the FFMA kernel's";
    } else {
      if (tiling.blockM % (16 * tiling.warpsM) != 0 ||
          tiling.blockN % (16 * tiling.warpsN) != 0 ||
          tiling.blockK % 16 != 0 || tiling.stages < 2 ||
          tiling.threads != tiling.warpsM * tiling.warpsN * 32)
        return "the tiling is not one of mma.sync tiles";
      if (problem.k % 8 != 0)
        return "K must be a multiple of 8";
      auto lhs = lhsTileShape(), rhs = rhsTileShape();
      for (auto [rows, columns] : {lhs, rhs})
        if (rows * columns / 8 % tiling.threads != 0)
          return "operand tiles must split evenly over the threads";
    }
    if (tiling.blockM * tiling.blockN / emitter.getWidth() % tiling.threads !=
        0)
      return "the epilogue's vectors must split evenly over the threads";
    if (problem.rhsOperands != (sibling ? 2 : 1))
      return "the problem's rhs count must match the analysis' matmuls";
    if (sibling && element.isF32())
      return "a dual GEMM runs on the tensor-core kernel only";
    int64_t ring =
        tiling.stages *
        getGemmStageBytes(problem, tiling.blockM, tiling.blockN, tiling.blockK);
    int64_t ringOrTile =
        std::max(ring, getGemmAccumulatorBytes(tiling.blockM, tiling.blockN,
                                               problem.rhsOperands));
    if (isGemmRowChunked(tiling))
      ringOrTile = llvm::alignTo(ringOrTile, 16) + tiling.rowBufferBytes;
    if (!isWgmma() && ringOrTile > tiling.sharedBytes)
      return "the tiling's shared memory is too small";
    auto inputIndex = [&](Value value) {
      return llvm::find_if(analysis.inputs, [&](const KernelInput &input) {
        return input.value == value;
      });
    };
    if (sibling && static_cast<bool>(rhsDequantize) !=
                       static_cast<bool>(siblingDequantize))
      return "a dual GEMM dequantizes both rhs or neither";
    for (DequantizeOp dequantize : {rhsDequantize, siblingDequantize}) {
      if (!dequantize)
        continue;
      if (std::string why = whyCannotDequantizeRhs(dequantize); !why.empty())
        return why;
      // Double-quantized scales: their codes and scales are the inputs.
      DequantizeOp scalesDequantize = getScalesPrologue(dequantize);
      if (scalesDequantize &&
          !llvm::is_contained(analysis.ops, scalesDequantize.getOperation()))
        scalesDequantize = DequantizeOp();
      bool scalesAreInputs =
          scalesDequantize
              ? inputIndex(scalesDequantize.getInput()) !=
                        analysis.inputs.end() &&
                    inputIndex(scalesDequantize.getScales()) !=
                        analysis.inputs.end()
              : inputIndex(dequantize.getScales()) != analysis.inputs.end();
      if (inputIndex(dequantize.getInput()) == analysis.inputs.end() ||
          !scalesAreInputs ||
          (dequantize.getZeroPoints() &&
           inputIndex(dequantize.getZeroPoints()) == analysis.inputs.end()))
        return "the dequantize's weights, scales and zero points must be "
               "kernel inputs";
    }
    for (MatmulOp product : {matmul, sibling}) {
      if (!product)
        continue;
      if (inputIndex(lhsSource()) == analysis.inputs.end() ||
          (inputIndex(product.getRhs()) == analysis.inputs.end() &&
           !getDequantizeAtUse(product.getRhs())))
        return "the matmul's operands must be kernel inputs";
      if (Value bias = product.getBias()) {
        auto it = inputIndex(bias);
        if (it == analysis.inputs.end() ||
            it->pattern != AccessPattern::Suffix)
          return "the matmul's bias must be a kernel input indexed by column";
      }
    }
    if (sibling && sibling.getLhs() != matmul.getLhs())
      return "a dual GEMM's matmuls must share their lhs";
    Operation *norm = getRowNorm();
    ArrayRef<GemmHeadsLayout> layouts = analysis.headsLayouts;
    const std::optional<GemmLhsHeadsMerge> &merge = analysis.lhsHeadsMerge;
    for (Operation *op : analysis.ops)
      if (op != matmul && op != sibling && op != norm &&
          !isa<DequantizeOp, ElementwiseOpInterface>(op) &&
          !((!layouts.empty() || merge) && isGemmHeadsLayoutOp(op)))
        return "the epilogue may hold elementwise ops, one layer_norm or "
               "rms_norm and heads layouts only";
    if (merge &&
        (element.isF32() || problem.transposeLhs || problem.batch != 1 ||
         problem.lhsHeads != merge->numHeads ||
         problem.lhsHeadDim != merge->headDim ||
         problem.lhsSeqLen != merge->seqLen ||
         problem.lhsHeadDim * element.getIntOrFloatBitWidth() / 8 % 16 != 0))
      return "a heads-merged lhs runs on the tensor-core kernels, one GEMM, "
             "heads whose rows are whole 16-byte chunks";
    if (!layouts.empty() &&
        (norm || problem.batch != 1 ||
         static_cast<int64_t>(layouts.size()) > problem.rhsOperands))
      return "heads-split epilogues run on one GEMM without a norm, at most "
             "one per product";
    for (GemmHeadsLayout heads : layouts) {
      if (heads.numHeads * heads.headDim != problem.n ||
          problem.m % heads.seqLen != 0)
        return "a heads layout must split N into heads and M into sequences";
      if (heads.rope && (tiling.blockN % heads.headDim != 0 ||
                         heads.headDim % (2 * emitter.getWidth()) != 0))
        return "a rope in the epilogue needs whole heads in a tile and "
               "vectors within a head's half";
    }
    if (isGemmRowChunked(tiling) && !norm)
      return "only a norm in the epilogue runs row-chunked";
    if (norm && sibling)
      return "a dual GEMM's epilogue may not hold a norm";
    if (norm) {
      if (isGemmRowChunked(tiling)) {
        int64_t bufferBytes = getRowBufferType().getIntOrFloatBitWidth() / 8;
        GemmRowChunking chunking =
            getGemmRowChunking(problem.n, tiling.blockM, tiling.blockN,
                               tiling.clusterN, bufferBytes);
        if (tiling.clusterN < 1 || tiling.rowChunks != chunking.rowChunks ||
            tiling.grid[0] != tiling.clusterN ||
            tiling.rowBufferBytes != chunking.rowBufferBytes)
          return "a row-chunked norm needs one CTA (or one cluster along x) "
                 "per block of rows, ceil(N / clusterN / blockN) chunks and a "
                 "row buffer of blockM x (its columns + pad) elements of the "
                 "norm input's type";

      } else if (problem.n > tiling.blockN) {
        return "a norm in the epilogue needs whole rows in one tile (N <= "
               "blockN) or a row-chunked tiling";
      }
      if (tiling.blockM % (tiling.threads / 32) != 0)
        return "a norm in the epilogue needs the tile's rows to split evenly "
               "over the warps";
      Operation *input = norm->getOperand(0).getDefiningOp();
      if (!llvm::is_contained(analysis.ops, input))
        return "a norm in the epilogue must normalize a value it computes";
      // Pass 2 knows the norm's input and result, kernel inputs and what it
      // computes after the norm.
      for (Operation *op : analysis.ops) {
        if (op == matmul || !norm->isBeforeInBlock(op))
          continue;
        for (Value operand : op->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (def && llvm::is_contained(analysis.ops, def) && def != norm &&
              def != input && !norm->isBeforeInBlock(def))
            return "ops after a norm in the epilogue may read only the norm's "
                   "input and result, kernel inputs and later ops";
        }
      }
      for (Operation *op : analysis.ops)
        if (op != norm && isa<LayerNormOp, RmsNormOp>(op))
          return "the epilogue may hold one norm";
    }
    return "";
  }

  /// Why the rhs prologue of `dequantize` cannot be built ("" when it can).
  std::string whyCannotDequantizeRhs(DequantizeOp dequantize) {
    Type stored = dequantize.getInput().getType().getElementType();
    if (std::string why = whyNoDequantizeCode(dequantize); !why.empty())
      return why;
    if (isWgmma() || element.isF32())
      return "the rhs prologue runs in the mma.sync kernel's main loop";
    if (problem.rhsStorageType != stored || problem.batch != 1 ||
        dequantize.getScales().getType().getRank() != 2)
      return "the rhs prologue dequantizes one rank-2 weight the problem "
             "names";
    auto [rows, columns] = rhsTileShape();
    int64_t chunk = getStoredChunkElements(stored);
    if (columns % chunk != 0 || rows * columns / chunk % tiling.threads != 0 ||
        rows * columns % tiling.threads != 0)
      return "the stored rhs tile must split into 16-byte chunks (8-byte "
             "ones of packed i4) evenly over the threads";
    if (getDequantizedRhsOffset(problem.rhsOperands - 1) +
            rows * (columns + kGemmOperandRowPad) *
                element.getIntOrFloatBitWidth() / 8 >
        tiling.stages * getGemmStageBytes(problem, tiling.blockM, tiling.blockN,
                                          tiling.blockK))
      return "the stored ring and the dequantized tile must fit in the ring's "
             "shared memory (3 or more stages)";
    return "";
  }

  /// Bytes of the lhs ring (the rhs ring follows it).
  int64_t getLhsRingBytes() const {
    auto [rows, columns] = lhsTileShape();
    return tiling.stages * rows * (columns + kGemmOperandRowPad) * 2;
  }

  /// Where rhs `index`'s ring (the matmul's 0, a dual's sibling's 1)
  /// starts: after the lhs ring and the rings before it.
  int64_t getRhsRingOffset(int64_t index) const {
    auto [rows, columns] = rhsTileShape();
    return getLhsRingBytes() +
           index * tiling.stages * rows * (columns + kGemmOperandRowPad) * 2;
  }

  /// Where rhs `index`'s dequantized tile starts: after its stored ring
  /// (1-byte elements, rows padded by kStoredRowPad), inside the bytes its
  /// 16-bit ring would take.
  int64_t getDequantizedRhsOffset(int64_t index) const {
    auto [rows, columns] = rhsTileShape();
    return getRhsRingOffset(index) +
           tiling.stages * rows * (columns + kStoredRowPad);
  }

  /// Elements of one cp.async chunk of the stored rhs tile: 16 bytes of 1-byte
  /// weights; of packed i4, 16 bytes (32 elements) where those split evenly
  /// over the threads, else 8 bytes (cp.async.ca: .cg moves 16 only).
  int64_t getStoredChunkElements(Type stored) const {
    if (!stored.isInteger(4))
      return 16;
    auto [rows, columns] = rhsTileShape();
    return columns % 32 == 0 && rows * columns / 32 % tiling.threads == 0 ? 32
                                                                          : 16;
  }

  /// Element `column` of a packed i4 ring row, sign-extended to i8: the
  /// low nibble of byte column / 2 for an even column, the high one for an
  /// odd column.
  Value loadPackedI4(Value ring, Value slot, Value row, Value column) {
    return DequantizeEmitter::unpackI4(
        b,
        memref::LoadOp::create(b, ring, ValueRange{slot, row, div(column, 2)}),
        rem(column, 2));
  }

  /// Where k-step `step`'s tile of an operand starts in it (row, column):
  /// `kIsRow`, the tile's rows are K; `firstOther`, its first row or
  /// column along M or N.
  std::pair<Value, Value> tileOrigin(Value step, bool kIsRow,
                                     Value firstOther) {
    Value firstK = add(mul(step, tiling.blockK), kBase);
    return kIsRow ? std::pair{firstK, firstOther}
                  : std::pair{firstOther, firstK};
  }

  /// Whether (row, column) lies inside `tile`'s operand.
  Value insideOperand(const OperandTile &tile, Value row, Value column) {
    return arith::AndIOp::create(b, less(row, tile.rowLimit),
                                 less(column, tile.columnLimit));
  }

  /// The rhs prologue: k-step `step`'s stored tile of `tile` in ring
  /// slot `slot` to its dequantized tile, each element (minus its block's
  /// zero point, if any) times its block's scale in f32 and rounded once to
  /// the operand type (as memwall.dequantize is defined). Thread t takes
  /// elements t, t + threads, ... of the tile.
  void dequantizeRhsSlot(const OperandTile &tile, Value slot, Value step) {
    DequantizeOp dequantize = tile.dequantize;
    auto [firstRow, firstColumn] =
        tileOrigin(step, /*kIsRow=*/!problem.transposeRhs, tileColumn);
    ArrayRef<int64_t> scaleShape = dequantize.getScales().getType().getShape();
    int64_t blockRows = tile.rowLimit / scaleShape[0];
    int64_t blockColumns = tile.columnLimit / scaleShape[1];
    DequantizeEmitter dequantizer(b, emitter, dequantize);
    int64_t perThread = tile.rows * tile.columns / tiling.threads;
    for (int64_t i = 0; i < perThread; ++i) {
      Value flat = add(tid, i * tiling.threads);
      Value row = div(flat, tile.columns);
      Value column = rem(flat, tile.columns);
      Value stored = tile.elementsPerByte == 2
                         ? loadPackedI4(tile.ring, slot, row, column)
                         : Value(memref::LoadOp::create(
                               b, tile.ring, ValueRange{slot, row, column}));
      Value sourceRow = add(firstRow, row);
      Value sourceColumn = add(firstColumn, column);
      // Past the weight's edge the stored byte is a zero fill: any scale
      // and zero point (past K the lhs is zero-filled too, so (0 - z) s
      // multiplies zeros; past N no output is stored).
      Value valid = insideOperand(tile, sourceRow, sourceColumn);
      Value scaleIndex = arith::SelectOp::create(
          b, valid,
          add(mul(div(sourceRow, blockRows), scaleShape[1]),
              div(sourceColumn, blockColumns)),
          idx(0));
      Value product = dequantizer.dequantizeElement(stored, scaleIndex);
      memref::StoreOp::create(b, arith::TruncFOp::create(b, element, product),
                              tile.dequantized,
                              ValueRange{idx(0), row, column});
    }
  }

  /// Issues the copies of k-step `step` of one operand into ring slot
  /// `slot`. `kIsRow`: the operand's tile rows are K (columns otherwise);
  /// `firstOther` is the tile's first row or column along M or N.
  void loadOperand(const OperandTile &tile, Value slot, Value step, bool kIsRow,
                   Value firstOther, SmallVectorImpl<Value> &tokens) {
    auto [firstRow, firstColumn] = tileOrigin(step, kIsRow, firstOther);
    int64_t chunk = tile.chunkElements;
    int64_t chunksPerRow = tile.columns / chunk;
    // Packed i4: the ring and the source are addressed in bytes.
    int64_t perByte = tile.elementsPerByte;
    int64_t perThread = tile.rows * chunksPerRow / tiling.threads;
    auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
    for (int64_t i = 0; i < perThread; ++i) {
      Value chunkIndex = add(tid, i * tiling.threads);
      Value row = div(chunkIndex, chunksPerRow);
      Value column = mul(rem(chunkIndex, chunksPerRow), chunk);
      Value sourceRow = add(firstRow, row);
      Value sourceColumn = add(firstColumn, column);
      Value valid = insideOperand(tile, sourceRow, sourceColumn);
      Value at =
          add(tile.base, add(mul(sourceRow, tile.columnLimit), sourceColumn));
      // A heads-merged lhs: row l·S + s, column h·D + d of [B, H, S, D].
      if (tile.heads)
        at = headsIndex(sourceRow, sourceColumn, tile.heads, tile.headDim,
                        tile.seqLen, tile.seqLen);
      // A zero-filled chunk reads nothing; it names the operand's start.
      Value sourceIndex = arith::SelectOp::create(b, valid, at, idx(0));
      Value sourceElements =
          arith::SelectOp::create(b, valid, idx(chunk / perByte), idx(0));
      if (perByte != 1) {
        sourceIndex = div(sourceIndex, perByte);
        column = div(column, perByte);
      }
      // L1 bypass (.cg) moves 16-byte chunks only.
      int64_t chunkBytes =
          chunk / perByte *
          cast<MemRefType>(tile.ring.getType()).getElementTypeBitWidth() / 8;
      tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
          b, tokenType, tile.ring, ValueRange{slot, row, column}, tile.source,
          ValueRange{sourceIndex}, b.getIndexAttr(chunk / perByte),
          sourceElements, chunkBytes == 16 ? b.getUnitAttr() : UnitAttr()));
    }
  }

  /// Copies k-step `step` of both operands into `slot` as one group.
  Value loadStage(Value slot, Value step) {
    SmallVector<Value> tokens;
    loadOperand(lhsTile, slot, step, problem.transposeLhs, tileRow, tokens);
    loadOperand(rhsTile, slot, step, !problem.transposeRhs, tileColumn, tokens);
    if (sibling)
      loadOperand(siblingRhsTile, slot, step, !problem.transposeRhs, tileColumn,
                  tokens);
    return nvgpu::DeviceAsyncCreateGroupOp::create(
        b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
  }

  /// Multiplies ring slot `slot` into the accumulators ([set][mi][ni] m16n8
  /// fragments of this warp's tile, one set per rhs): each A fragment is
  /// loaded once for every rhs.
  void multiplySlot(Value slot, Value rhsSlot,
                    SmallVectorImpl<std::array<Value, 4>> &acc) {
    int64_t tilesM = warpTileM() / 16, tilesN = warpTileN() / 8;
    // Lane offsets inside a 16x16 block: the matrix pairs ldmatrix.x4
    // addresses with (laneMatrix % 2) along one dim, (laneMatrix / 2) along
    // the other.
    Value low = add(mul(rem(laneMatrix, 2), 8), laneRow);
    Value lowColumn = mul(rem(laneMatrix, 2), 8);
    Value high = add(mul(div(laneMatrix, 2), 8), laneRow);
    Value highColumn = mul(div(laneMatrix, 2), 8);
    for (int64_t ks = 0; ks < tiling.blockK / 16; ++ks) {
      SmallVector<std::array<Value, 4>> a;
      for (int64_t mi = 0; mi < tilesM; ++mi) {
        Value m = add(warpRow, mi * 16);
        // A's four matrices: (m +0, k +0), (m +8, k +0), (m +0, k +8),
        // (m +8, k +8).
        if (problem.transposeLhs)
          a.push_back(ldmatrixX4(
              b, lhsTile.ring,
              ValueRange{slot, add(high, ks * 16), add(m, lowColumn)},
              /*transpose=*/true, element));
        else
          a.push_back(ldmatrixX4(
              b, lhsTile.ring,
              ValueRange{slot, add(m, low), add(highColumn, ks * 16)},
              /*transpose=*/false, element));
      }
      for (int64_t pair = 0; pair < tilesN / 2; ++pair) {
        Value n = add(warpColumn, pair * 16);
        for (auto [set, rhs] : llvm::enumerate(getRhsTiles())) {
          // B's four matrices: (n +0, k +0), (n +0, k +8), (n +8, k +0),
          // (n +8, k +8): b0, b1 of n-tile 2·pair, then of 2·pair + 1.
          std::array<Value, 4> bFragments =
              problem.transposeRhs
                  ? ldmatrixX4(b, rhsRing(*rhs),
                               ValueRange{rhsSlot, add(n, high),
                                          add(lowColumn, ks * 16)},
                               /*transpose=*/false, element)
                  : ldmatrixX4(b, rhsRing(*rhs),
                               ValueRange{rhsSlot, add(low, ks * 16),
                                          add(n, highColumn)},
                               /*transpose=*/true, element);
          int64_t first = static_cast<int64_t>(set) * tilesM * tilesN;
          for (int64_t mi = 0; mi < tilesM; ++mi)
            for (int64_t half = 0; half < 2; ++half) {
              std::array<Value, 4> &c =
                  acc[first + mi * tilesN + 2 * pair + half];
              c = mmaM16N8K16(b, a[mi],
                              {bFragments[2 * half], bFragments[2 * half + 1]},
                              c, element);
            }
        }
      }
    }
  }

  /// What mma.sync reads of `rhs`: its ring, or the dequantized tile.
  static Value rhsRing(const OperandTile &rhs) {
    return rhs.dequantized ? rhs.dequantized : rhs.ring;
  }

  /// The rhs rings: the matmul's, then a dual GEMM's sibling's.
  SmallVector<const OperandTile *, 2> getRhsTiles() const {
    SmallVector<const OperandTile *, 2> tiles{&rhsTile};
    if (sibling)
      tiles.push_back(&siblingRhsTile);
    return tiles;
  }

  void buildMainLoop() {
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    createSharedMemory();
    auto ring = [&](std::pair<int64_t, int64_t> shape, int64_t offset,
                    Type type = {}, int64_t stages = 0, int64_t pad = 0) {
      auto ringType =
          MemRefType::get({stages ? stages : tiling.stages, shape.first,
                           shape.second + (pad ? pad : kGemmOperandRowPad)},
                          type ? type : element, AffineMap(), workgroup);
      return memref::ViewOp::create(b, ringType, shared, idx(offset),
                                    ValueRange{});
    };
    auto [rhsRows, rhsColumns] = rhsTileShape();
    auto [lhsRows, lhsColumns] = lhsTileShape();
    int64_t lhsColumnLimit = problem.transposeLhs ? problem.m : problem.k;
    int64_t rhsColumnLimit = problem.transposeRhs ? problem.k : problem.n;
    lhsTile = {ring(lhsTileShape(), 0),
               emitter.getMemRef(lhsSource()),
               mul(batch, problem.lhsBatchStride),
               lhsRows,
               lhsColumns,
               problem.transposeLhs ? problem.k : problem.m,
               lhsColumnLimit};
    lhsTile.heads = problem.lhsHeads;
    lhsTile.headDim = problem.lhsHeadDim;
    lhsTile.seqLen = problem.lhsSeqLen;
    // The sibling's rhs has the same shape and layout; its ring follows.
    auto rhsOperand = [&](MatmulOp product, DequantizeOp dequantize,
                          int64_t index) {
      OperandTile tile{ring(rhsTileShape(), getRhsRingOffset(index)),
                       Value(),
                       mul(batch, problem.rhsBatchStride),
                       rhsRows,
                       rhsColumns,
                       problem.transposeRhs ? problem.n : problem.k,
                       rhsColumnLimit};
      if (!dequantize) {
        tile.source = emitter.getMemRef(product.getRhs());
        return tile;
      }
      // The ring holds the stored bytes; one dequantized tile follows it.
      bool packed = problem.rhsStorageType.isInteger(4);
      tile.ring = ring(rhsTileShape(), getRhsRingOffset(index),
                       packed ? b.getI8Type() : problem.rhsStorageType, 0,
                       kStoredRowPad);
      tile.source = emitter.getMemRef(dequantize.getInput());
      tile.chunkElements = getStoredChunkElements(problem.rhsStorageType);
      tile.elementsPerByte = packed ? 2 : 1;
      tile.dequantize = dequantize;
      tile.dequantized =
          ring(rhsTileShape(), getDequantizedRhsOffset(index), element, 1);
      return tile;
    };
    rhsTile = rhsOperand(matmul, rhsDequantize, 0);
    if (sibling)
      siblingRhsTile = rhsOperand(sibling, siblingDequantize, 1);

    // Prologue: k-steps 0 .. stages - 2 in flight.
    Value pending;
    for (int64_t s = 0; s + 1 < tiling.stages; ++s)
      pending = loadStage(idx(s), idx(s));

    int64_t fragments =
        problem.rhsOperands * (warpTileM() / 16) * (warpTileN() / 8);
    SmallVector<Value> init(fragments * 4, f32Constant(b, 0));
    auto loop = scf::ForOp::create(b, idx(0), idx(kSteps()), idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value step = loop.getInductionVar();
      SmallVector<std::array<Value, 4>> acc(fragments);
      for (auto [i, value] : llvm::enumerate(loop.getRegionIterArgs()))
        acc[i / 4][i % 4] = value;
      // The wait counts this thread's groups; the token only orders it.
      nvgpu::DeviceAsyncWaitOp::create(b, pending,
                                       b.getI32IntegerAttr(tiling.stages - 2));
      syncThreads();
      Value next = add(step, tiling.stages - 1);
      loadStage(rem(next, tiling.stages), next);
      Value slot = rem(step, tiling.stages), rhsSlot = slot;
      if (rhsDequantize) {
        // Every warp finished the previous k-step's tile at the barrier
        // above; this one is complete at the next.
        for (const OperandTile *rhs : getRhsTiles())
          dequantizeRhsSlot(*rhs, slot, step);
        syncThreads();
        rhsSlot = idx(0);
      }
      multiplySlot(slot, rhsSlot, acc);
      SmallVector<Value> results;
      for (const std::array<Value, 4> &fragment : acc)
        results.append(fragment.begin(), fragment.end());
      scf::YieldOp::create(b, results);
    }
    accumulators.assign(loop.getResults().begin(), loop.getResults().end());
    // The accumulator tile overwrites the ring: every copy (the zero-filled
    // ones past K included) must have landed and every warp be done.
    nvgpu::DeviceAsyncWaitOp::create(b, pending, b.getI32IntegerAttr(0));
    syncThreads();
  }

  /// FFMA kernel: copies k-step `firstK` of one operand into its K-major
  /// shared tile (`width` elements along M or N per k), zeros past K and
  /// `otherLimit`. `kIsRow`: the operand's rows in memory are K. Threads
  /// walk memory's contiguous dim, so the global loads coalesce.
  void loadSimtTile(Value tile, Value source, Value base, bool kIsRow,
                    Value firstK, Value firstOther, int64_t otherLimit,
                    int64_t width) {
    int64_t blockK = tiling.blockK;
    int64_t rowStride = kIsRow ? otherLimit : problem.k;
    int64_t perThread = blockK * width / tiling.threads;
    for (int64_t i = 0; i < perThread; ++i) {
      Value e = add(tid, i * tiling.threads);
      Value k = kIsRow ? div(e, width) : rem(e, blockK);
      Value other = kIsRow ? rem(e, width) : div(e, blockK);
      Value globalK = add(firstK, k);
      Value globalOther = add(firstOther, other);
      Value valid = arith::AndIOp::create(b, less(globalK, problem.k),
                                          less(globalOther, otherLimit));
      Value at = kIsRow ? add(mul(globalK, rowStride), globalOther)
                        : add(mul(globalOther, rowStride), globalK);
      at = arith::SelectOp::create(b, valid, add(base, at), idx(0));
      Value value = memref::LoadOp::create(b, source, ValueRange{at});
      value = arith::SelectOp::create(b, valid, value, f32Constant(b, 0));
      memref::StoreOp::create(b, value, tile, ValueRange{k, other});
    }
  }

  /// The exact-fp32 kernel: each thread accumulates a kThreadTile square
  /// of the tile with FFMA from K-major shared tiles (load, barrier,
  /// multiply, barrier per k-step).
  void buildSimtMainLoop() {
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    createSharedMemory();
    int64_t blockK = tiling.blockK;
    auto tileView = [&](int64_t width, int64_t offset) {
      auto type = MemRefType::get({blockK, width + 1}, b.getF32Type(),
                                  AffineMap(), workgroup);
      return memref::ViewOp::create(b, type, shared, idx(offset), ValueRange{});
    };
    Value lhsShared = tileView(tiling.blockM, 0);
    Value rhsShared = tileView(tiling.blockN, blockK * (tiling.blockM + 1) * 4);
    int64_t threadsN = tiling.blockN / kThreadTile;
    threadRow = mul(div(tid, threadsN), kThreadTile);
    threadColumn = mul(rem(tid, threadsN), kThreadTile);
    Value lhs = emitter.getMemRef(lhsSource());
    Value rhs = emitter.getMemRef(matmul.getRhs());
    Value lhsBase = mul(batch, problem.lhsBatchStride);
    Value rhsBase = mul(batch, problem.rhsBatchStride);

    SmallVector<Value> init(kThreadTile * kThreadTile, f32Constant(b, 0));
    auto loop = scf::ForOp::create(b, idx(0), idx(kSteps()), idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value firstK = mul(loop.getInductionVar(), blockK);
      loadSimtTile(lhsShared, lhs, lhsBase, problem.transposeLhs, firstK,
                   tileRow, problem.m, tiling.blockM);
      loadSimtTile(rhsShared, rhs, rhsBase, !problem.transposeRhs, firstK,
                   tileColumn, problem.n, tiling.blockN);
      syncThreads();
      SmallVector<Value> acc(loop.getRegionIterArgs());
      for (int64_t k = 0; k < blockK; ++k) {
        SmallVector<Value> a, bValues;
        for (int64_t i = 0; i < kThreadTile; ++i) {
          a.push_back(memref::LoadOp::create(
              b, lhsShared, ValueRange{idx(k), add(threadRow, i)}));
          bValues.push_back(memref::LoadOp::create(
              b, rhsShared, ValueRange{idx(k), add(threadColumn, i)}));
        }
        for (int64_t i = 0; i < kThreadTile; ++i)
          for (int64_t j = 0; j < kThreadTile; ++j) {
            Value &c = acc[i * kThreadTile + j];
            c = math::FmaOp::create(b, a[i], bValues[j], c);
          }
      }
      // The next k-step overwrites the tiles.
      syncThreads();
      scf::YieldOp::create(b, acc);
    }
    accumulators.assign(loop.getResults().begin(), loop.getResults().end());
  }

  /// Writes the tensor-core kernel's C fragments `values` (one accumulator
  /// set) to the f32 `tile`: fragment (mi, ni) holds c0, c1 at row g,
  /// columns 2t, 2t + 1 and c2, c3 at row g + 8.
  void stageFragments(Value tile, ArrayRef<Value> values) {
    int64_t tilesN = warpTileN() / 8;
    Value lane = rem(tid, 32);
    Value fragmentRow = add(warpRow, div(lane, 4));
    Value fragmentColumn = add(warpColumn, mul(rem(lane, 4), 2));
    for (int64_t i = 0; i * 4 < static_cast<int64_t>(values.size()); ++i) {
      Value row = add(fragmentRow, i / tilesN * 16);
      Value column = add(fragmentColumn, i % tilesN * 8);
      for (int64_t e = 0; e < 4; ++e)
        memref::StoreOp::create(
            b, values[4 * i + e], tile,
            ValueRange{add(row, e / 2 * 8), add(column, e % 2)});
    }
  }

  /// Writes the FFMA kernel's kThreadTile square to the f32 `tile`.
  void stageThreadTile(Value tile) {
    for (int64_t i = 0; i < kThreadTile; ++i)
      for (int64_t j = 0; j < kThreadTile; ++j)
        memref::StoreOp::create(
            b, accumulators[i * kThreadTile + j], tile,
            ValueRange{add(threadRow, i), add(threadColumn, j)});
  }

  /// The f32 accumulator tiles in shared memory (the ring's bytes, rows
  /// padded; a dual GEMM's sibling's after the matmul's), written from the
  /// accumulators; every thread's part is visible on return.
  SmallVector<Value, 2> stageAccumulatorTiles() {
    // The warp-specialized main loop staged them itself (dense rows).
    if (isWarpSpecialized())
      return {wgmmaLoop.stagedTile};
    // Row-chunked, the epilogue reads the dense tile itself: the row buffer
    // needs the bytes a padded copy would take.
    if (isWgmma() && isGemmRowChunked(tiling))
      return {storeGemmWgmmaAccumulators(b, tiling, wgmmaLoop.accumulators,
                                         wgmmaLoop.shared, 0)};
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    int64_t rowLength = tiling.blockN + kGemmAccumulatorRowPad;
    Value tile = memref::ViewOp::create(
        b,
        MemRefType::get({tiling.blockM, rowLength}, b.getF32Type(), AffineMap(),
                        workgroup),
        shared, idx(0), ValueRange{});
    // Scalar shared-memory accesses: the kernels-to-PTX pipeline lowers
    // vector ops before it maps GPU address spaces.
    // A dual GEMM stages its sibling's accumulators in a second tile.
    Value siblingTile;
    ArrayRef<Value> products = accumulators;
    if (sibling) {
      siblingTile = memref::ViewOp::create(
          b, cast<MemRefType>(tile.getType()), shared,
          idx(getGemmAccumulatorBytes(tiling.blockM, tiling.blockN)),
          ValueRange{});
      products = products.take_front(accumulators.size() / 2);
    }
    if (element.isF32()) {
      stageThreadTile(tile);
    } else if (isWgmma()) {
      // Each product through the dense tile after the padded ones (a dual's
      // second accumulators follow its first).
      ArrayRef<Value> sets = wgmmaLoop.accumulators;
      int64_t perSet = sets.size() / problem.rhsOperands;
      int64_t dense = problem.rhsOperands *
                      getGemmAccumulatorBytes(tiling.blockM, tiling.blockN);
      stageGemmWgmmaAccumulators(b, tiling, sets.take_front(perSet),
                                 wgmmaLoop.shared, tid, tile, dense);
      if (sibling) {
        // Every thread's copy of the first product is done before the
        // second's stores reuse the dense tile.
        gpu::BarrierOp::create(b);
        stageGemmWgmmaAccumulators(b, tiling, sets.drop_front(perSet),
                                   wgmmaLoop.shared, tid, siblingTile, dense);
      }
    } else {
      stageFragments(tile, products);
      if (sibling)
        stageFragments(
            siblingTile,
            ArrayRef<Value>(accumulators).drop_front(products.size()));
    }
    syncThreads();
    if (sibling)
      return {tile, siblingTile};
    return {tile};
  }

  /// Split K: every element of the tile inside M x N, thread t taking
  /// elements t, t + threads, ... in row-major order (consecutive threads,
  /// consecutive columns: coalesced); `body` gets the tile's row and column
  /// and the element's flat index in an M x N matrix, `valid` whether it is
  /// inside.
  void forEachTileElement(
      function_ref<void(Value row, Value column, Value flat, Value valid)>
          body) {
    int64_t passes = tiling.blockM * tiling.blockN / tiling.threads;
    auto loop = scf::ForOp::create(b, idx(0), idx(passes), idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value element = add(mul(loop.getInductionVar(), tiling.threads), tid);
    Value row = div(element, tiling.blockN);
    Value column = rem(element, tiling.blockN);
    Value globalRow = add(tileRow, row), globalColumn = add(tileColumn, column);
    Value valid = arith::AndIOp::create(b, less(globalRow, problem.m),
                                        less(globalColumn, problem.n));
    // Clamped inside, so that even an invalid element's index is in range.
    Value flat = arith::SelectOp::create(
        b, valid, add(mul(globalRow, problem.n), globalColumn), idx(0));
    body(row, column, flat, valid);
  }

  /// The partials are [splitK, rhsOperands, M, N]: where product
  /// `product` of split `split` starts.
  Value partialsAt(Value split, int64_t product) {
    int64_t matrix = problem.m * problem.n;
    return add(mul(split, problem.rhsOperands * matrix), product * matrix);
  }

  /// The split kernel's staged tiles (one per product), unrounded f32, to
  /// its split's partials.
  void writePartials(ArrayRef<Value> tiles) {
    for (auto [product, tile] : llvm::enumerate(tiles)) {
      Value base = partialsAt(split, product);
      forEachTileElement([&](Value row, Value column, Value flat, Value valid) {
        auto inside = scf::IfOp::create(b, valid, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(inside.thenBlock());
        Value value = memref::LoadOp::create(b, tile, ValueRange{row, column});
        memref::StoreOp::create(b, value, partials,
                                ValueRange{add(base, flat)});
      });
    }
  }

  /// The last block's staged tile of product `product`: each element the
  /// sum of the splits' partials (in split order), 0 outside M x N.
  void sumPartials(Value tile, int64_t product) {
    int64_t splits = tiling.splitK;
    forEachTileElement([&](Value row, Value column, Value flat, Value valid) {
      Value sum = f32Constant(b, 0);
      for (int64_t s = 0; s < splits; ++s) {
        Value value = memref::LoadOp::create(
            b, partials, ValueRange{add(partialsAt(idx(s), product), flat)});
        sum = arith::AddFOp::create(b, sum, value);
      }
      sum = arith::SelectOp::create(b, valid, sum, f32Constant(b, 0));
      memref::StoreOp::create(b, sum, tile, ValueRange{row, column});
    });
  }

  /// The epilogue's ops other than the matmul and the norm, split at the
  /// norm.
  void splitAtNorm(Operation *norm, SmallVectorImpl<Operation *> &beforeNorm,
                   SmallVectorImpl<Operation *> &afterNorm) {
    for (Operation *op : analysis.ops) {
      if (op == matmul || op == sibling || op == norm ||
          isa<DequantizeOp>(op) || isGemmHeadsLayoutOp(op))
        continue;
      (norm && norm->isBeforeInBlock(op) ? afterNorm : beforeNorm)
          .push_back(op);
    }
  }

  /// Whether pass 2 computes `output`: the norm, the ops after it, or the
  /// rope of a heads layout.
  bool isComputedAfterNorm(Value output, Operation *norm,
                           ArrayRef<Operation *> afterNorm) {
    Operation *def = output.getDefiningOp();
    if (auto append = dyn_cast_or_null<KVCacheAppendOp>(def))
      def = append.getUpdate().getDefiningOp();
    if (isa_and_nonnull<RopeOp>(def))
      return true;
    return norm && (def == norm || llvm::is_contained(afterNorm, def));
  }

  /// What pass 2 reads back from the staged tiles, one per tile: the norm's
  /// input, or each rope's (a dual GEMM's second in the second product's
  /// tile, which pass 1 has read by then).
  SmallVector<Value, 2> getPassTwoInputs(Operation *norm) {
    if (norm)
      return {norm->getOperand(0)};
    SmallVector<Value, 2> inputs;
    for (GemmHeadsLayout heads : getRopeLayouts())
      inputs.push_back(heads.rope.getInput());
    return inputs;
  }

  /// Where the element at tile (row, column) of `output` is stored: `flat`
  /// for a value in the matmul's layout, its [.., H, S, D] index for a heads
  /// layout's output, and in a KV cache appended in place, row L + s of
  /// its head of L + S rows.
  Value outputIndex(Value output, Value row, Value column, Value flat) {
    const GemmHeadsLayout *layout =
        llvm::find_if(analysis.headsLayouts, [&](GemmHeadsLayout heads) {
          return output == heads.getOutput();
        });
    if (layout == analysis.headsLayouts.end())
      return flat;
    return headsIndex(add(tileRow, row), add(tileColumn, column),
                      layout->numHeads, layout->headDim, layout->seqLen,
                      layout->append ? layout->cacheRows : layout->seqLen,
                      layout->cacheLength);
  }

  /// The index in [.., H, S, D] of GEMM element (row, column), row = l·S +
  /// s, column = h·D + d: ((l·H + h)·S + s)·D + d. A heads split's store and
  /// a heads merge's load. Heads of `headRows` rows whose first `firstRow`
  /// rows are taken (a KV cache appended to) hold it at ((l·H + h)·headRows
  /// + firstRow + s)·D + d.
  Value headsIndex(Value row, Value column, int64_t heads, int64_t headDim,
                   int64_t seqLen, int64_t headRows, int64_t firstRow = 0) {
    Value headRow = add(
        mul(add(mul(div(row, seqLen), heads), div(column, headDim)), headRows),
        add(rem(row, seqLen), idx(firstRow)));
    return add(mul(headRow, headDim), rem(column, headDim));
  }

  /// The heads layouts with a rope, in order: the i-th keeps its input in
  /// the i-th staged tile for pass 2.
  SmallVector<GemmHeadsLayout, 2> getRopeLayouts() {
    SmallVector<GemmHeadsLayout, 2> ropes;
    for (GemmHeadsLayout heads : analysis.headsLayouts)
      if (heads.rope)
        ropes.push_back(heads);
    return ropes;
  }

  /// Pass 2 of a rope in the epilogue at one vector: each element rotated
  /// with its partner half a head away in the staged tile (both rounded to
  /// the rope input's type by pass 1), stored heads-split.
  void buildRopePass(GemmHeadsLayout heads, Value tile, Value row, Value column,
                     Value flat) {
    RopeOp rope = heads.rope;
    Value globalRow = add(tileRow, row);
    Value d = rem(add(tileColumn, column), heads.headDim);
    Value position = RopeRotation::loadPosition(
        b, rope, emitter.getMemRef(rope.getPositions()),
        div(globalRow, heads.seqLen), rem(globalRow, heads.seqLen));
    Value headStart = arith::SubIOp::create(b, column, d);
    Lanes x = readTile(tile, row, column), y;
    for (int64_t l = 0; l < emitter.getWidth(); ++l) {
      RopeRotation rotation(b, rope, position, add(d, l));
      Value partner = memref::LoadOp::create(
          b, tile, ValueRange{row, add(headStart, rotation.partnerColumn)});
      y.push_back(rotation.rotate(x[l], partner));
    }
    emitter.storeOutput(heads.getOutput(), y,
                        outputIndex(heads.getOutput(), row, column, flat));
  }

  /// Pass 1 over the staged `tiles` (one per rhs) at columns tileColumn..:
  /// the product(s), bias(es) and the ops before any norm; outputs known by
  /// then are stored, and the norm's input goes to `keepNormInput(row,
  /// column, lanes)` (tile coordinates).
  void buildPassOne(
      ArrayRef<Value> tiles, Operation *norm, ArrayRef<Operation *> beforeNorm,
      ArrayRef<Operation *> afterNorm,
      function_ref<void(size_t tile, Value row, Value column, const Lanes &x)>
          keepNormInput) {
    forEachVector(tiling.blockN, [&](Value row, Value column, Value flat) {
      DenseMap<Value, Lanes> lanes;
      Lanes product = readProduct(matmul, tiles[0], row, column, flat, lanes);
      // Ahead of a norm, which magnifies every difference by 1/σ, the product
      // is rounded to its element type as the unfused graph stores it.
      if (norm)
        for (Value &lane : product)
          lane = emitter.toF32(
              emitter.fromF32(lane, matmul.getType().getElementType()));
      lanes[matmul.getResult()] = std::move(product);
      if (sibling) {
        product = readProduct(sibling, tiles[1], row, column, flat, lanes);
        lanes[sibling.getResult()] = std::move(product);
      }
      emitter.evaluate(beforeNorm, flat, lanes);
      // A heads layout's reshape and transpose move elements, not values.
      for (GemmHeadsLayout heads : analysis.headsLayouts) {
        Lanes moved = lanes.lookup(heads.split.getInput());
        lanes[heads.split.getResult()] = moved;
        lanes[heads.heads->getResult(0)] = moved;
        if (heads.append && !heads.rope)
          lanes[heads.append.getResult()] = moved;
      }
      for (Value output : outputs)
        if (!isComputedAfterNorm(output, norm, afterNorm))
          emitter.storeOutput(output, emitter.lanesOf(output, flat, lanes),
                              outputIndex(output, row, column, flat));
      for (auto [tile, kept] : llvm::enumerate(getPassTwoInputs(norm)))
        keepNormInput(tile, row, column, emitter.lanesOf(kept, flat, lanes));
    });
  }

  /// Pass 2 at one vector: the norm of `x` with the row's statistics from
  /// the accumulator tile's padding, the ops after it, and their outputs.
  void buildPassTwo(Value tile, Operation *norm,
                    ArrayRef<Operation *> afterNorm, Value row, Value flat,
                    const Lanes &x) {
    DenseMap<Value, Lanes> lanes;
    lanes[norm->getOperand(0)] = x;
    auto [statistics, column] = statisticsOf(tile);
    Value mean =
        memref::LoadOp::create(b, statistics, ValueRange{row, idx(column)});
    Value rstd =
        memref::LoadOp::create(b, statistics, ValueRange{row, idx(column + 1)});
    Lanes weight = emitter.lanesOf(norm->getOperand(1), flat, lanes);
    Lanes normBias;
    if (auto layerNorm = dyn_cast<LayerNormOp>(norm))
      if (Value bias = layerNorm.getBias())
        normBias = emitter.lanesOf(bias, flat, lanes);
    Lanes y;
    for (auto [l, value] : llvm::enumerate(x)) {
      Value v = arith::MulFOp::create(
          b, arith::SubFOp::create(b, value, mean), rstd);
      v = arith::MulFOp::create(b, v, weight[l]);
      if (!normBias.empty())
        v = arith::AddFOp::create(b, v, normBias[l]);
      y.push_back(v);
    }
    lanes[norm->getResult(0)] = y;
    emitter.evaluate(afterNorm, flat, lanes);
    for (Value output : outputs)
      if (isComputedAfterNorm(output, norm, afterNorm))
        emitter.storeOutput(output, emitter.lanesOf(output, flat, lanes),
                            flat);
  }

  /// The epilogue over the staged tiles (one per product, every thread's
  /// part visible).
  void buildEpilogue(ArrayRef<Value> tiles) {
    Value tile = tiles.front();
    Operation *norm = getRowNorm();
    SmallVector<Operation *> beforeNorm, afterNorm;
    splitAtNorm(norm, beforeNorm, afterNorm);
    // Pass 1; a norm's or rope's input goes back to a tile, rounded to its
    // tensor's element type as the unfused graph would store it.
    SmallVector<Value, 2> kept = getPassTwoInputs(norm);
    buildPassOne(tiles, norm, beforeNorm, afterNorm,
                 [&](size_t into, Value row, Value column, const Lanes &x) {
                   Type type =
                       cast<ShapedType>(kept[into].getType()).getElementType();
                   for (int64_t l = 0; l < emitter.getWidth(); ++l)
                     memref::StoreOp::create(
                         b, emitter.toF32(emitter.fromF32(x[l], type)),
                         tiles[into], ValueRange{row, add(column, l)});
                 });
    if (!norm && !kept.empty()) {
      // Every element of the tiles is kept before any is rotated.
      syncThreads();
      forEachVector(tiling.blockN, [&](Value row, Value column, Value flat) {
        for (auto [into, heads] : llvm::enumerate(getRopeLayouts()))
          buildRopePass(heads, tiles[into], row, column, flat);
      });
    }
    if (!norm)
      return;

    // Each row's statistics into its padding, then pass 2: the norm and the
    // ops after it.
    syncThreads();
    buildRowStatistics(tile, norm);
    syncThreads();
    forEachVector(tiling.blockN, [&](Value row, Value column, Value flat) {
      buildPassTwo(tile, norm, afterNorm, row, flat,
                   readTile(tile, row, column));
    });
  }

  /// Rows wider than the tile (N > blockN): the CTA (or each CTA of a
  /// cluster, for its columns) runs the main loop and pass 1 once per
  /// blockN-wide column chunk (re-reading A's tile), keeping the norm's
  /// input in the row buffer [blockM, columns + pad] of its tensor's element
  /// type after the ring; then the row statistics from the buffer (combined
  /// across the cluster) and pass 2 over its columns.
  void buildRowChunkedKernel() {
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    createSharedMemory();
    Operation *norm = getRowNorm();
    SmallVector<Operation *> beforeNorm, afterNorm;
    splitAtNorm(norm, beforeNorm, afterNorm);
    Type bufferType = getRowBufferType();
    GemmRowChunking chunking = getGemmRowChunking(
        problem.n, tiling.blockM, tiling.blockN, tiling.clusterN,
        bufferType.getIntOrFloatBitWidth() / 8);
    int64_t columns = chunking.bufferColumns;
    // The wgmma kernel's ring (and shared memory, from its aligned byte on)
    // serves every chunk.
    std::optional<GemmWgmmaRing> ring;
    int64_t sharedSize = tiling.sharedBytes;
    if (isWgmma()) {
      ring = buildGemmWgmmaRing(b, problem, tiling, tid);
      shared = ring->shared;
      sharedSize -= kGemmWgmmaAlignmentSlack;
    }
    Value rowBuffer = memref::ViewOp::create(
        b,
        MemRefType::get({tiling.blockM, columns + kGemmRowBufferPad},
                        bufferType, AffineMap(), workgroup),
        shared, idx(sharedSize - tiling.rowBufferBytes), ValueRange{});
    // Each row's padding holds its statistics (and a cluster's partials).
    int64_t elementBytes = bufferType.getIntOrFloatBitWidth() / 8;
    rowStatistics = memref::ViewOp::create(
        b,
        MemRefType::get(
            {tiling.blockM, (columns + kGemmRowBufferPad) * elementBytes / 4},
            b.getF32Type(), AffineMap(), workgroup),
        shared, idx(sharedSize - tiling.rowBufferBytes), ValueRange{});
    rowStatisticsColumn = columns * elementBytes / 4;
    // This CTA's first column: its rank in the cluster (grid.x) times its
    // share.
    Value sliceBegin =
        mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), columns);

    auto chunks = scf::ForOp::create(b, idx(0), idx(tiling.rowChunks), idx(1));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(chunks.getBody());
      Value chunkColumn = mul(chunks.getInductionVar(), tiling.blockN);
      tileColumn = add(sliceBegin, chunkColumn);
      if (ring)
        buildAnyMainLoop(&*ring, mul(chunks.getInductionVar(), kSteps()));
      else
        buildAnyMainLoop();
      buildPassOne(stageAccumulatorTiles(), norm, beforeNorm, afterNorm,
                   [&](size_t, Value row, Value column, const Lanes &x) {
                     Value bufferColumn = add(chunkColumn, column);
                     for (int64_t l = 0; l < emitter.getWidth(); ++l)
                       memref::StoreOp::create(
                           b, emitter.fromF32(x[l], bufferType), rowBuffer,
                           ValueRange{row, add(bufferColumn, l)});
                   });
      // Every warp is done with the tile before the next chunk's copies
      // overwrite it; after the last chunk the row buffer is complete. TMA
      // writes through the async proxy: this thread's accesses to the ring's
      // bytes are ordered before the next chunk's loads by a proxy fence.
      if (ring)
        NVVM::FenceProxyOp::create(
            b, NVVM::ProxyKind::async_shared,
            NVVM::SharedSpaceAttr::get(b.getContext(),
                                       NVVM::SharedSpace::shared_cta));
      syncThreads();
    }
    tileColumn = sliceBegin;

    // The statistics go to the row buffer's padding (statisticsOf).
    RowBufferSlice slice{rowBuffer, sliceBegin, columns};
    if (tiling.clusterN > 1)
      buildClusterRowStatistics(slice, norm);
    else
      buildRowBufferStatistics(slice, norm);
    syncThreads();
    forEachVector(columns, [&](Value row, Value column, Value flat) {
      Lanes x;
      for (int64_t l = 0; l < emitter.getWidth(); ++l)
        x.push_back(emitter.toF32(memref::LoadOp::create(
            b, rowBuffer, ValueRange{row, add(column, l)})));
      buildPassTwo(rowStatistics, norm, afterNorm, row, flat, x);
    });
    // No CTA leaves (and frees the shared memory the others read) before
    // every CTA has read the exchange: the arrive came after the reads.
    if (tiling.clusterN > 1)
      NVVM::ClusterWaitOp::create(b, /*aligned=*/b.getUnitAttr());
  }

  /// The norm input's element type (of the row buffer): what the unfused
  /// graph would store for it.
  Type getRowBufferType() {
    Operation *norm = getRowNorm();
    return norm ? cast<RankedTensorType>(norm->getOperand(0).getType())
                      .getElementType()
                : Type();
  }

  /// The layer_norm or rms_norm of the epilogue, or null.
  Operation *getRowNorm() {
    for (Operation *op : analysis.ops)
      if (isa<LayerNormOp, RmsNormOp>(op))
        return op;
    return nullptr;
  }

  /// `product`'s result at (row, column) of its staged `tile`, plus its
  /// bias.
  Lanes readProduct(MatmulOp product, Value tile, Value row, Value column,
                    Value flat, DenseMap<Value, Lanes> &lanes) {
    Lanes result = readTile(tile, row, column);
    if (Value bias = product.getBias()) {
      Lanes biasLanes = emitter.lanesOf(bias, flat, lanes);
      for (auto [value, biasValue] : llvm::zip_equal(result, biasLanes))
        value = arith::AddFOp::create(b, value, biasValue);
    }
    return result;
  }

  Lanes readTile(Value tile, Value row, Value column) {
    Lanes lanes;
    for (int64_t l = 0; l < emitter.getWidth(); ++l)
      lanes.push_back(
          memref::LoadOp::create(b, tile, ValueRange{row, add(column, l)}));
    return lanes;
  }

  /// Runs `body` at every run of `width` elements of the block's rows and
  /// `columns` columns from tileColumn, inside M x N: thread t takes runs t,
  /// t + threads, ... in row-major order.
  void
  forEachVector(int64_t columns,
                function_ref<void(Value row, Value column, Value flat)> body) {
    int64_t width = emitter.getWidth();
    int64_t vectorsPerRow = columns / width;
    int64_t vectors = tiling.blockM * vectorsPerRow;
    int64_t passes = llvm::divideCeil(vectors, tiling.threads);
    auto loop = scf::ForOp::create(b, idx(0), idx(passes), idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value vectorIndex = add(mul(loop.getInductionVar(), tiling.threads), tid);
    Value row = div(vectorIndex, vectorsPerRow);
    Value column = mul(rem(vectorIndex, vectorsPerRow), width);
    Value globalRow = add(tileRow, row);
    Value globalColumn = add(tileColumn, column);
    Value valid = arith::AndIOp::create(b, less(globalRow, problem.m),
                                        less(globalColumn, problem.n));
    // The last pass of a run count the threads do not divide.
    if (vectors % tiling.threads != 0)
      valid = arith::AndIOp::create(b, valid, less(vectorIndex, vectors));
    auto guardValid = scf::IfOp::create(b, valid, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guardValid.thenBlock());
    Value flat = add(mul(add(mul(batch, problem.m), globalRow), problem.n),
                     globalColumn);
    body(row, column, flat);
  }

  /// Sum over the warp, in every lane.
  Value warpSum(Value x) {
    for (int64_t offset = 16; offset >= 1; offset /= 2) {
      Value other =
          gpu::ShuffleOp::create(b, x, offset, 32, gpu::ShuffleMode::XOR)
              .getShuffleResult();
      x = arith::AddFOp::create(b, x, other);
    }
    return x;
  }

  /// One warp per row: the mean (0 for rms_norm) and 1/sqrt(variance +
  /// epsilon) (of the mean square for rms_norm) of the norm's input over
  /// the row's N columns, written to columns blockN and blockN + 1.
  void buildRowStatistics(Value tile, Operation *norm) {
    int64_t warps = tiling.threads / 32;
    Value lane = rem(tid, 32);
    Value warp = div(tid, 32);
    auto loop =
        scf::ForOp::create(b, idx(0), idx(tiling.blockM / warps), idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value row = add(mul(loop.getInductionVar(), warps), warp);
    // This lane's columns lane, lane + 32, ...; columns past N read 0.
    SmallVector<Value> values, valid;
    for (int64_t c = 0; c < problem.n; c += 32) {
      Value column = add(lane, c);
      valid.push_back(less(column, problem.n));
      Value at = arith::SelectOp::create(b, valid.back(), column, idx(0));
      Value v = memref::LoadOp::create(b, tile, ValueRange{row, at});
      values.push_back(
          arith::SelectOp::create(b, valid.back(), v, f32Constant(b, 0)));
    }
    Value count = f32Constant(b, static_cast<double>(problem.n));
    auto sumOf = [&](function_ref<Value(Value)> transform) {
      Value partial = f32Constant(b, 0);
      for (auto [v, isValid] : llvm::zip(values, valid))
        partial = arith::AddFOp::create(
            b, partial,
            arith::SelectOp::create(b, isValid, transform(v),
                                    f32Constant(b, 0)));
      return arith::DivFOp::create(b, warpSum(partial), count);
    };
    Value mean = f32Constant(b, 0);
    double epsilon = getEpsilon(norm);
    if (isa<LayerNormOp>(norm))
      mean = sumOf([](Value v) { return v; });
    Value variance = sumOf([&](Value v) {
      Value d = arith::SubFOp::create(b, v, mean);
      return Value(arith::MulFOp::create(b, d, d));
    });
    storeRowStatistics(tile, row, lane, mean, variance, epsilon);
  }

  /// Lane 0 writes the row's mean and 1/sqrt(variance + epsilon) to the
  /// tile's columns blockN and blockN + 1.
  void storeRowStatistics(Value tile, Value row, Value lane, Value mean,
                          Value variance, double epsilon) {
    Value rstd = math::RsqrtOp::create(
        b, arith::AddFOp::create(b, variance, f32Constant(b, epsilon)));
    Value isFirst =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, idx(0));
    auto store = scf::IfOp::create(b, isFirst, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    auto [statistics, column] = statisticsOf(tile);
    memref::StoreOp::create(b, mean, statistics, ValueRange{row, idx(column)});
    memref::StoreOp::create(b, rstd, statistics,
                            ValueRange{row, idx(column + 1)});
  }

  /// Where a norm's row statistics (mean, 1/σ) go: the accumulator tile's
  /// padding columns blockN and blockN + 1, or the warp-specialized
  /// kernel's statistics tile (its staged tile has no padding).
  std::pair<Value, int64_t> statisticsOf(Value tile) {
    if (rowStatistics)
      return {rowStatistics, rowStatisticsColumn};
    if (wgmmaLoop.statistics)
      return {wgmmaLoop.statistics, 0};
    return {tile, tiling.blockN};
  }

  /// A CTA's part of its rows in the row buffer: columns sliceBegin ..
  /// sliceBegin + columns of N (those past N hold nothing).
  struct RowBufferSlice {
    Value buffer, sliceBegin;
    int64_t columns;
  };

  /// Runs `body(row, lane)` for each of the block's rows inside M, one warp
  /// per row (uniform per warp, so shuffles in `body` stay convergent).
  void forEachRowOfWarps(function_ref<void(Value row, Value lane)> body) {
    int64_t warps = tiling.threads / 32;
    Value lane = rem(tid, 32);
    Value warp = div(tid, 32);
    auto loop = scf::ForOp::create(
        b, idx(0), idx(llvm::divideCeil(tiling.blockM, warps)), idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value row = add(mul(loop.getInductionVar(), warps), warp);
    Value inside = arith::AndIOp::create(b, less(row, tiling.blockM),
                                         less(add(tileRow, row), problem.m));
    auto rowGuard = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
    b.setInsertionPointToStart(rowGuard.thenBlock());
    body(row, lane);
  }

  /// x -> (x - mean)^2, the variance pass's term.
  std::function<Value(Value)> centredSquare(Value mean) {
    return [this, mean](Value x) {
      Value d = arith::SubFOp::create(b, x, mean);
      return Value(arith::MulFOp::create(b, d, d));
    };
  }

  /// Sum of transform(x) over the slice's columns of `row` inside N, in
  /// every lane of the warp: lane l adds columns l, l + 32, ... (uniform
  /// trip count; columns past N add nothing), then a warp sum.
  Value sumOverSlice(const RowBufferSlice &slice, Value row, Value lane,
                     function_ref<Value(Value)> transform) {
    auto columns =
        scf::ForOp::create(b, idx(0), idx(llvm::alignTo(slice.columns, 32)),
                           idx(32), ValueRange{f32Constant(b, 0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(columns.getBody());
      Value column = add(columns.getInductionVar(), lane);
      Value valid =
          arith::AndIOp::create(b, less(column, slice.columns),
                                less(add(slice.sliceBegin, column), problem.n));
      Value at = arith::SelectOp::create(b, valid, column, idx(0));
      Value x = emitter.toF32(
          memref::LoadOp::create(b, slice.buffer, ValueRange{row, at}));
      Value term =
          arith::SelectOp::create(b, valid, transform(x), f32Constant(b, 0));
      scf::YieldOp::create(b, ValueRange{arith::AddFOp::create(
                                  b, columns.getRegionIterArgs()[0], term)});
    }
    return warpSum(columns.getResult(0));
  }

  /// The row-chunked kernel's statistics: one warp per row (rows past M
  /// skipped), exact two passes over the row buffer's N columns (the mean,
  /// then the centred variance; the mean square for rms_norm); written as
  /// buildRowStatistics writes them.
  void buildRowBufferStatistics(const RowBufferSlice &slice, Operation *norm) {
    forEachRowOfWarps([&](Value row, Value lane) {
      Value count = f32Constant(b, static_cast<double>(problem.n));
      Value mean = f32Constant(b, 0);
      if (isa<LayerNormOp>(norm))
        mean = arith::DivFOp::create(
            b, sumOverSlice(slice, row, lane, [](Value x) { return x; }),
            count);
      Value variance = arith::DivFOp::create(
          b, sumOverSlice(slice, row, lane, centredSquare(mean)), count);
      storeRowStatistics(rowStatistics, row, lane, mean, variance,
                         getEpsilon(norm));
    });
  }

  /// The same statistics in a cluster: each sum over a row is this CTA's
  /// partial (over its slice), which lane 0 writes to the row's padding
  /// (rowStatistics, column rowStatisticsColumn + 2 + pass);
  /// after a cluster barrier lane r < clusterN reads CTA r's partial
  /// through distributed shared memory and a warp sum adds them, the same
  /// order in every CTA. Ends with this CTA's arrive at the last barrier
  /// (its reads of the others' shared memory are done); the kernel waits on
  /// it at its end.
  void buildClusterRowStatistics(const RowBufferSlice &slice, Operation *norm) {
    Value count = f32Constant(b, static_cast<double>(problem.n));
    bool layerNorm = isa<LayerNormOp>(norm);
    auto writePartial = [&](int64_t pass, Value row, Value lane, Value sum) {
      Value isFirst =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, idx(0));
      auto store = scf::IfOp::create(b, isFirst, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(store.thenBlock());
      memref::StoreOp::create(
          b, sum, rowStatistics,
          ValueRange{row, idx(rowStatisticsColumn + 2 + pass)});
    };
    auto clusterMean = [&](int64_t pass, Value row, Value lane) {
      return arith::DivFOp::create(
          b, warpSum(readClusterPartial(pass, row, lane)), count);
    };
    auto clusterBarrier = [&] {
      NVVM::ClusterArriveOp::create(b, /*aligned=*/b.getUnitAttr());
      NVVM::ClusterWaitOp::create(b, /*aligned=*/b.getUnitAttr());
    };
    if (layerNorm) {
      forEachRowOfWarps([&](Value row, Value lane) {
        writePartial(0, row, lane,
                     sumOverSlice(slice, row, lane, [](Value x) { return x; }));
      });
      clusterBarrier();
    }
    forEachRowOfWarps([&](Value row, Value lane) {
      Value mean =
          layerNorm ? Value(clusterMean(0, row, lane)) : f32Constant(b, 0);
      writePartial(1, row, lane,
                   sumOverSlice(slice, row, lane, centredSquare(mean)));
    });
    clusterBarrier();
    forEachRowOfWarps([&](Value row, Value lane) {
      Value mean =
          layerNorm ? Value(clusterMean(0, row, lane)) : f32Constant(b, 0);
      storeRowStatistics(rowStatistics, row, lane, mean,
                         clusterMean(1, row, lane), getEpsilon(norm));
    });
    NVVM::ClusterArriveOp::create(b, /*aligned=*/b.getUnitAttr());
  }

  /// Lane r < clusterN: CTA r's partial sum of `pass` for `row`, through
  /// distributed shared memory (mapa of this CTA's address to CTA r's); 0 in
  /// the other lanes.
  Value readClusterPartial(int64_t pass, Value row, Value lane) {
    int64_t rowFloats = cast<MemRefType>(rowStatistics.getType()).getDimSize(1);
    Value base =
        memref::ExtractAlignedPointerAsIndexOp::create(b, rowStatistics);
    Value address = add(
        base, mul(add(mul(row, rowFloats), rowStatisticsColumn + 2 + pass), 4));
    auto sharedPtr = LLVM::LLVMPointerType::get(
        b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
    auto clusterPtr = LLVM::LLVMPointerType::get(
        b.getContext(),
        static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster));
    Value local = LLVM::IntToPtrOp::create(
        b, sharedPtr,
        arith::IndexCastOp::create(b, b.getI64Type(), address).getResult());
    Value inCluster = less(lane, tiling.clusterN);
    Value rank = arith::IndexCastOp::create(
        b, b.getI32Type(),
        arith::SelectOp::create(b, inCluster, lane, idx(0)).getResult());
    Value remote = NVVM::MapaOp::create(b, clusterPtr, local, rank);
    Value partial = LLVM::LoadOp::create(b, b.getF32Type(), remote);
    return arith::SelectOp::create(b, inCluster, partial, f32Constant(b, 0));
  }

  static double getEpsilon(Operation *norm) {
    if (auto layerNorm = dyn_cast<LayerNormOp>(norm))
      return layerNorm.getEpsilon().convertToDouble();
    return cast<RmsNormOp>(norm).getEpsilon().convertToDouble();
  }

  ImplicitLocOpBuilder b;
  const KernelAnalysis &analysis;
  const GemmProblem &problem;
  const GemmTiling &tiling;
  ArrayRef<Value> outputs;
  Type element;
  MatmulOp matmul;
  /// A dual GEMM's second matmul (same lhs), or null.
  MatmulOp sibling;
  /// The dequantizes making the matmul's and the sibling's rhs in the
  /// kernel, or null: their rings hold the stored weights, dequantized per
  /// k-step (OperandTile::dequantized).
  DequantizeOp rhsDequantize, siblingDequantize;
  ElementwiseEmitter emitter;
  OperandTile lhsTile, rhsTile, siblingRhsTile;
  SmallVector<Value> accumulators;
  GemmWgmmaMainLoop wgmmaLoop;
  Value shared, tid, laneMatrix, laneRow, warpRow, warpColumn, tileRow,
      tileColumn, batch, threadRow, threadColumn;
  /// Split K: the [splitK, rhsOperands, M, N] f32 partials, the tiles'
  /// arrival counters, this block's split and its first K (0 without split
  /// K).
  Value partials, counters, split, kBase;
  /// Row-chunked: the row buffer's rows as f32 and the column of each row's
  /// padding, where its statistics (mean, 1/sigma) and, in a cluster, its
  /// partial sums (the next two columns) live.
  Value rowStatistics;
  int64_t rowStatisticsColumn = 0;
};
} // namespace

FailureOr<gpu::GPUFuncOp>
memwall::emitGemmKernel(gpu::GPUModuleOp gpuModule, StringRef name,
                        const KernelAnalysis &analysis,
                        ArrayRef<Value> outputs) {
  if (!isa_and_nonnull<MatmulOp>(analysis.anchor))
    return emitError(gpuModule.getLoc(),
                     "the GEMM kernel's anchor must be a memwall.matmul");
  return GemmKernelBuilder(gpuModule, analysis, outputs).build(name);
}
