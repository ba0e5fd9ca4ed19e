//===- AttentionCodegen.cpp - Tensor-core FlashAttention kernels ----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Fragment layouts are PTX's for mma.sync.m16n8k16 (MmaBuilding.h). Q (A of
// S = Q Kᵀ) is four matrices (rows +0/+8, columns +0/+8); K rows are Kᵀ's
// columns, read untransposed as B; V (B of O = P V, stored key-major) is read
// transposed; and the S accumulator of two adjacent 8-key tiles is, converted
// to 16 bits, the A fragment of P.
//
//===----------------------------------------------------------------------===//

#include "AttentionCodegen.h"
#include "KernelBuilding.h"
#include "MmaBuilding.h"
#include "memwall/Transforms/TileAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace memwall;

namespace {
/// Shapes of one flash_attention op.
struct AttentionShape {
  int64_t batch, heads, kvHeads, sq, sk, d, dv;
  Type element;
  explicit AttentionShape(FlashAttentionOp op) {
    RankedTensorType q = op.getQuery().getType();
    RankedTensorType k = op.getKey().getType();
    batch = q.getDimSize(0);
    heads = q.getDimSize(1);
    sq = q.getDimSize(2);
    d = q.getDimSize(3);
    kvHeads = k.getDimSize(1);
    sk = k.getDimSize(2);
    dv = op.getValue().getType().getDimSize(3);
    element = q.getElementType();
    // Verified IR has kvHeads > 0 and countable Q; checked regardless, as
    // the plan divides by these.
    group = kvHeads > 0 ? heads / kvHeads : 0;
    groupRows = (CheckedInt(group) * sq).saturated();
  }
  /// Query heads per KV head, and the query rows of one KV head: a block's
  /// rows are taken from these `group x Sq` rows (contiguous in Q, the
  /// output and the lse), so grouped-query heads share their K/V tiles.
  int64_t group, groupRows;
};

/// Bytes of a shared tile of `rows` rows of `width` 16-bit elements.
int64_t tileBytes(int64_t rows, int64_t width) {
  return rows * (width + kRowPad) * 2;
}
} // namespace

std::string memwall::whyNoAttentionKernel(FlashAttentionOp op) {
  AttentionShape s(op);
  if (std::string why = whyAttentionKernelCannotRun(s.element, s.d, s.dv);
      !why.empty())
    return why;
  // An fp8 KV cache is costed (read as stored) but not generated.
  if (op.getKey().getType().getElementType() != s.element)
    return "the attention kernel reads K and V of the query's type; an fp8 "
           "KV cache is not generated";
  int64_t blockKV = op.getBlockKv();
  if (blockKV <= 0 || blockKV % 16 != 0 || blockKV > 128)
    return "the attention kernel needs block_kv a multiple of 16, at most 128";
  int64_t blockQ = op.getBlockQ();
  if (blockQ <= 0 || blockQ % 16 != 0 || blockQ > 128)
    return "the attention kernel needs block_q a multiple of 16, at most 128";
  // Empty tensors launch no blocks; a softmax over no key has no value.
  if (s.kvHeads <= 0 || s.groupRows <= 0 || s.batch <= 0 || s.sk <= 0)
    return "the attention kernel needs at least one query row, key and "
           "key/value head";
  if (static_cast<int64_t>(op.getNumSplits()) > kMaxAttentionSplits)
    return "the attention kernel combines at most " +
           std::to_string(kMaxAttentionSplits) + " splits, got " +
           std::to_string(op.getNumSplits());
  AttentionKernelPlan plan = planAttentionKernel(op);
  if (std::string why = whyGridCannotLaunch(plan.grid); !why.empty())
    return "the attention kernel: " + why;
  // cp.async moves 16-byte chunks: every thread moves the same number.
  for (auto [rows, width] :
       {std::pair{plan.blockQ, s.d}, std::pair{plan.blockKV, s.d},
        std::pair{plan.blockKV, s.dv}})
    if (rows * width / 8 % plan.threads() != 0)
      return "the attention kernel's tile loads need " + std::to_string(rows) +
             "x" + std::to_string(width) + " tiles to split evenly over " +
             std::to_string(plan.threads()) + " threads";
  return "";
}

AttentionKernelPlan memwall::planAttentionKernel(FlashAttentionOp op) {
  AttentionShape s(op);
  AttentionKernelPlan plan;
  // Few rows per KV head (a decode step: Sq = 1 per query head) run fewer
  // warps than block_q / 16; powers of two keep the tile loads even over the
  // threads.
  int64_t blockQ = std::max<int64_t>(op.getBlockQ(), 1);
  // (Comparing first: PowerOf2Ceil of a row count near 2^63 is 0.)
  plan.blockQ =
      s.groupRows >= blockQ
          ? blockQ
          : std::min<int64_t>(
                blockQ, llvm::PowerOf2Ceil(std::max<int64_t>(s.groupRows, 16)));
  plan.blockKV = op.getBlockKv();
  plan.splits = op.getNumSplits();
  // Counts past int64 saturate, so whyNoAttentionKernel's grid limits refuse
  // them.
  plan.grid = {static_cast<int64_t>(llvm::divideCeil(
                   std::max<int64_t>(s.groupRows, 0), plan.blockQ)),
               (CheckedInt(s.batch) * s.kvHeads).saturated(), plan.splits};
  plan.sharedBytes = tileBytes(plan.blockQ, s.d) +
                     tileBytes(plan.blockKV, s.d) +
                     tileBytes(plan.blockKV, s.dv);
  return plan;
}

namespace {
class AttentionKernelBuilder : IndexArithmetic {
public:
  AttentionKernelBuilder(gpu::GPUModuleOp gpuModule,
                         const AttentionViews &views,
                         const AttentionKernelPlan &plan)
      : IndexArithmetic(b),
        b(FlashAttentionOp(views.attention).getLoc(), gpuModule.getContext()),
        op(views.attention), views(views), s(op), plan(plan) {
    b.setInsertionPointToEnd(gpuModule.getBody());
  }

  gpu::GPUFuncOp buildForward(StringRef name) {
    bool partial = plan.splits > 1;
    Type outType = partial ? b.getF32Type() : s.element;
    int64_t rows = s.batch * s.heads * s.sq;
    int64_t outRows = plan.splits * rows;
    SmallVector<Type> params;
    for (Value source : views.sources)
      params.push_back(flat(getNumElements(source.getType()), s.element));
    if (Value maskOperand = op.getMask()) {
      auto maskType = cast<RankedTensorType>(maskOperand.getType());
      params.push_back(
          flat(getNumElements(maskType), maskType.getElementType()));
    }
    params.push_back(flat(getNumElements(views.output.getType()), s.element));
    params.push_back(flat(rows, b.getF32Type()));
    if (partial) {
      params.push_back(flat(outRows * s.dv, outType));
      params.push_back(flat(outRows, b.getF32Type()));
      params.push_back(flat(getAttentionCounters(plan), b.getI32Type()));
    }
    gpu::GPUFuncOp func = createKernel(b, name, params, plan.threads());
    Block &entry = func.getBody().front();
    unsigned firstOutput = op.getMask() ? 4 : 3;
    Value query = entry.getArgument(0), key = entry.getArgument(1),
          value = entry.getArgument(2),
          finalOut = entry.getArgument(firstOutput),
          finalLse = entry.getArgument(firstOutput + 1);
    // With splits each block writes its split's partials.
    Value out = finalOut, lse = finalLse;
    if (partial) {
      out = entry.getArgument(firstOutput + 2);
      lse = entry.getArgument(firstOutput + 3);
    }
    if (op.getMask())
      mask = entry.getArgument(3);

    tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value lane = arith::RemUIOp::create(b, tid, idx(32));
    Value warp = arith::DivUIOp::create(b, tid, idx(32));
    group = arith::DivUIOp::create(b, lane, idx(4));
    quad = arith::RemUIOp::create(b, lane, idx(4));
    laneMatrix = arith::DivUIOp::create(b, lane, idx(8));
    laneRow = arith::RemUIOp::create(b, lane, idx(8));

    Value queryBlock = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    // Block (x, y, z): rows [x·Bq, x·Bq + Bq) of the group x Sq query rows
    // of KV head y (batch-major), keys of split z.
    batchKvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    Value split = gpu::BlockIdOp::create(b, gpu::Dimension::z);
    blockFirstRow = mul(queryBlock, plan.blockQ);
    Value queryRowBase = add(mul(batchKvHead, s.groupRows), blockFirstRow);
    Value keyRowBase = mul(batchKvHead, s.sk);
    // Query indices (row mod Sq) of the block's rows range over
    // [minQuery, maxQuery]: everything when the block spans two heads.
    Value lastRow = arith::SubIOp::create(
        b,
        arith::MinUIOp::create(b, add(blockFirstRow, idx(plan.blockQ)),
                               idx(s.groupRows)),
        idx(1));
    Value spansHeads =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ne, div(lastRow, s.sq),
                              div(blockFirstRow, s.sq));
    minQuery = arith::SelectOp::create(b, spansHeads, idx(0),
                                       rem(blockFirstRow, s.sq));
    maxQuery = arith::SelectOp::create(b, spansHeads, idx(s.sq - 1),
                                       rem(lastRow, s.sq));

    // Shared tiles, viewed in the dynamic shared memory.
    SharedMemoryCarver carver(b);
    auto tile = [&](int64_t rows, int64_t width) {
      return carver.paddedTile(rows, width, s.element);
    };
    Value queryTile = tile(plan.blockQ, s.d);
    keyTile = tile(plan.blockKV, s.d);
    valueTile = tile(plan.blockKV, s.dv);

    // Key blocks this block reads: its split's range, and with causal
    // masking none beyond the last query row's diagonal.
    int64_t keyBlocks = llvm::divideCeil(s.sk, plan.blockKV);
    int64_t perSplit = llvm::divideCeil(keyBlocks, plan.splits);
    Value blockBegin = mul(split, perSplit);
    Value blockEnd = arith::MinUIOp::create(b, add(blockBegin, idx(perSplit)),
                                            idx(keyBlocks));
    if (op.getCausal()) {
      Value visible = arith::CeilDivUIOp::create(
          b, add(maxQuery, idx(s.sk - s.sq + 1)), idx(plan.blockKV));
      blockEnd = arith::MinUIOp::create(b, blockEnd, visible);
    }
    // With a sliding window, none before the block's least query's window:
    // its first key is minQuery + (Sk - Sq) - W + 1 when that is positive.
    if (std::optional<uint64_t> window = op.getWindow()) {
      Value windowEnd = add(minQuery, idx(s.sk - s.sq + 1));
      Value clipped = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt,
                                            windowEnd, idx(*window));
      Value firstKey = arith::SelectOp::create(
          b, clipped, arith::SubIOp::create(b, windowEnd, idx(*window)),
          idx(0));
      blockBegin =
          arith::MaxUIOp::create(b, blockBegin, div(firstKey, plan.blockKV));
    }
    // An empty range (a causal split past the diagonal, or before the
    // window) runs no iteration.
    blockBegin = arith::MinUIOp::create(b, blockBegin, blockEnd);

    Value queryRows = arith::SubIOp::create(
        b, idx(s.groupRows),
        arith::MinUIOp::create(b, blockFirstRow, idx(s.groupRows)));
    Value qToken = loadTile(queryTile, query, views.operands[0], queryRowBase,
                            queryRows, plan.blockQ, s.d);
    loadKeys(key, keyRowBase, blockBegin, blockEnd);
    waitAll(qToken);

    // This warp's 16 query rows as A fragments, kept in registers.
    Value warpRow = mul(warp, 16);
    SmallVector<std::array<Value, 4>> queryFragments;
    for (int64_t kt = 0; kt < s.d / 16; ++kt) {
      Value row = add(add(warpRow, mul(rem(laneMatrix, 2), 8)), laneRow);
      Value column = add(idx(kt * 16), mul(div(laneMatrix, 2), 8));
      queryFragments.push_back(ldmatrix(queryTile, row, column, false));
    }

    // Loop state: per row pair (g, g+8) the running max (in log2 units of
    // the scaled score) and this thread's part of the running sum; the
    // output accumulator's C fragments.
    const float negInf = -std::numeric_limits<float>::infinity();
    int64_t outTiles = s.dv / 8;
    SmallVector<Value> init{f32(negInf), f32(negInf), f32(0), f32(0)};
    for (int64_t i = 0; i < outTiles * 4; ++i)
      init.push_back(f32(0));
    // Scores in log2 units: exp(x) = exp2(x · log2 e).
    double scaleLog2 = op.getScale().convertToDouble() * M_LOG2E;
    Value firstRow = add(add(blockFirstRow, warpRow), group);

    auto loop = scf::ForOp::create(b, blockBegin, blockEnd, idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value block = loop.getInductionVar();
      ValueRange state = loop.getRegionIterArgs();
      Value firstKey = mul(block, plan.blockKV);
      Value keyRows = arith::SubIOp::create(b, idx(s.sk), firstKey);
      Value vToken =
          loadTile(valueTile, value, views.operands[2],
                   add(keyRowBase, firstKey), keyRows, plan.blockKV, s.dv);

      // S = Q Kᵀ for this warp's 16 rows and the block's keys.
      int64_t keyTiles = plan.blockKV / 8;
      SmallVector<std::array<Value, 4>> scores(keyTiles);
      for (auto &tileScores : scores)
        tileScores = {f32(0), f32(0), f32(0), f32(0)};
      for (int64_t pair = 0; pair < keyTiles / 2; ++pair)
        for (int64_t kt = 0; kt < s.d / 16; ++kt) {
          Value row =
              add(add(idx(pair * 16), mul(div(laneMatrix, 2), 8)), laneRow);
          Value column = add(idx(kt * 16), mul(rem(laneMatrix, 2), 8));
          std::array<Value, 4> k = ldmatrix(keyTile, row, column, false);
          scores[2 * pair] =
              mma(queryFragments[kt], {k[0], k[1]}, scores[2 * pair]);
          scores[2 * pair + 1] =
              mma(queryFragments[kt], {k[2], k[3]}, scores[2 * pair + 1]);
        }
      for (auto &tileScores : scores)
        for (Value &x : tileScores)
          x = arith::MulFOp::create(b, x, f32(scaleLog2));
      if (mask)
        addMask(scores, firstKey, firstRow);
      maskScores(scores, firstKey, firstRow);

      // Online softmax, per row pair.
      SmallVector<Value> newMax(2), alpha(2), newSum(2);
      SmallVector<std::array<Value, 4>> probabilities(keyTiles);
      for (int r = 0; r < 2; ++r) {
        Value rowMax = state[r];
        for (auto &tileScores : scores)
          for (int e = 0; e < 2; ++e)
            rowMax =
                arith::MaximumFOp::create(b, rowMax, tileScores[2 * r + e]);
        rowMax = quadReduce(rowMax, /*sum=*/false);
        newMax[r] = rowMax;
        // A row with no visible key yet keeps max -inf: subtract 0 instead
        // so that exp2 gives 0, not NaN.
        Value isEmpty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                              rowMax, f32(negInf));
        Value reference = arith::SelectOp::create(b, isEmpty, f32(0), rowMax);
        alpha[r] = math::Exp2Op::create(
            b, arith::SubFOp::create(b, state[r], reference));
        Value sum = arith::MulFOp::create(b, state[2 + r], alpha[r]);
        for (auto [t, tileScores] : llvm::enumerate(scores))
          for (int e = 0; e < 2; ++e) {
            Value p = math::Exp2Op::create(
                b, arith::SubFOp::create(b, tileScores[2 * r + e], reference));
            probabilities[t][2 * r + e] = p;
            sum = arith::AddFOp::create(b, sum, p);
          }
        newSum[r] = sum;
      }
      SmallVector<Value> accumulator(state.begin() + 4, state.end());
      for (int64_t i = 0; i < outTiles; ++i)
        for (int e = 0; e < 4; ++e)
          accumulator[4 * i + e] =
              arith::MulFOp::create(b, accumulator[4 * i + e], alpha[e / 2]);

      // V has landed; every warp is done with K: load the next key block.
      waitAll(vToken);
      loadKeys(key, keyRowBase, add(block, idx(1)), blockEnd);

      // O += P V.
      for (int64_t kt = 0; kt < keyTiles / 2; ++kt) {
        std::array<Value, 4> a = {
            pack(probabilities[2 * kt][0], probabilities[2 * kt][1]),
            pack(probabilities[2 * kt][2], probabilities[2 * kt][3]),
            pack(probabilities[2 * kt + 1][0], probabilities[2 * kt + 1][1]),
            pack(probabilities[2 * kt + 1][2], probabilities[2 * kt + 1][3])};
        for (int64_t pair = 0; pair < outTiles / 2; ++pair) {
          Value row =
              add(add(idx(kt * 16), mul(rem(laneMatrix, 2), 8)), laneRow);
          Value column = add(idx(pair * 16), mul(div(laneMatrix, 2), 8));
          std::array<Value, 4> v = ldmatrix(valueTile, row, column, true);
          for (int half = 0; half < 2; ++half) {
            int64_t t = 2 * pair + half;
            std::array<Value, 4> c;
            for (int e = 0; e < 4; ++e)
              c[e] = accumulator[4 * t + e];
            c = mma(a, {v[2 * half], v[2 * half + 1]}, c);
            for (int e = 0; e < 4; ++e)
              accumulator[4 * t + e] = c[e];
          }
        }
      }
      // The next key block has landed; every warp is done with V.
      waitAll(nullptr);
      SmallVector<Value> next{newMax[0], newMax[1], newSum[0], newSum[1]};
      next.append(accumulator);
      scf::YieldOp::create(b, next);
    }

    // Epilogue: normalise and store the rows this block owns.
    ValueRange results = loop.getResults();
    for (int r = 0; r < 2; ++r) {
      Value sum = quadReduce(results[2 + r], /*sum=*/true);
      Value positive =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, sum, f32(0));
      Value inverse = arith::SelectOp::create(
          b, positive, arith::DivFOp::create(b, f32(1), sum), f32(0));
      // lse = ln(2^max · sum) of the scaled scores.
      Value rowLse = arith::SelectOp::create(
          b, positive,
          arith::AddFOp::create(
              b, arith::MulFOp::create(b, results[r], f32(M_LN2)),
              math::LogOp::create(b, sum)),
          f32(negInf));
      Value row = add(firstRow, idx(8 * r));
      Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                            idx(s.groupRows));
      auto guard = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPointToStart(guard.thenBlock());
      // Row index in the (split-major) output: split 0's rows are the
      // result's [B, Hq, Sq] rows, written through the output's layout
      // when there are no partials.
      Value resultRow = add(mul(batchKvHead, s.groupRows), row);
      Value outRow = add(mul(split, s.batch * s.heads * s.sq), resultRow);
      Value outStart =
          partial ? mul(outRow, s.dv) : rowStart(views.outputLayout, resultRow);
      for (int64_t t = 0; t < outTiles; ++t) {
        SmallVector<Value> pairValues;
        for (int e = 0; e < 2; ++e) {
          Value x =
              arith::MulFOp::create(b, results[4 + 4 * t + 2 * r + e], inverse);
          pairValues.push_back(
              outType.isF32() ? x
                              : Value(arith::TruncFOp::create(b, outType, x)));
        }
        Value column = add(idx(t * 8), mul(quad, 2));
        Value vector = vector::FromElementsOp::create(
            b, VectorType::get({2}, outType), pairValues);
        alignedVectorStore(b, vector, out, add(outStart, column));
      }
      Value firstOfQuad =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quad, idx(0));
      auto store = scf::IfOp::create(b, firstOfQuad, false);
      b.setInsertionPointToStart(store.thenBlock());
      memref::StoreOp::create(b, rowLse, lse, ValueRange{outRow});
    }
    if (partial) {
      // The last split of this block's rows to finish merges every split's
      // partials into the result, element by element.
      Value tileIndex = add(mul(batchKvHead, plan.grid[0]), queryBlock);
      OpBuilder::InsertionGuard insertion(b);
      buildIfLastArrival(b, entry.getArgument(firstOutput + 4), tileIndex, tid,
                         plan.splits);
      int64_t elements = plan.blockQ * s.dv;
      auto loop = scf::ForOp::create(
          b, idx(0), idx(llvm::divideCeil(elements, plan.threads())), idx(1));
      b.setInsertionPointToStart(loop.getBody());
      Value local = add(mul(loop.getInductionVar(), plan.threads()), tid);
      Value row = add(blockFirstRow, div(local, s.dv));
      Value inside = arith::AndIOp::create(
          b, less(local, elements),
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                idx(s.groupRows)));
      auto guard = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
      b.setInsertionPointToStart(guard.thenBlock());
      Value resultRow = add(mul(batchKvHead, s.groupRows), row);
      combineElement(out, lse, finalOut, finalLse,
                     add(mul(resultRow, s.dv), rem(local, s.dv)));
    }
    gpu::ReturnOp::create(b);
    return func;
  }

  /// Output element `element` (flat in [B, Hq, Sq, Dv]) merged from the
  /// splits' partials by their log-sum-exps, written through the output's
  /// layout; the row's first element writes its log-sum-exp.
  void combineElement(Value partialOut, Value partialLse, Value out, Value lse,
                      Value element) {
    int64_t rows = s.batch * s.heads * s.sq;
    Value row = div(element, s.dv);
    const float negInf = -std::numeric_limits<float>::infinity();
    SmallVector<Value> splitLse;
    Value maxLse = f32(negInf);
    for (int64_t i = 0; i < plan.splits; ++i) {
      splitLse.push_back(memref::LoadOp::create(
          b, partialLse, ValueRange{add(row, idx(i * rows))}));
      maxLse = arith::MaximumFOp::create(b, maxLse, splitLse.back());
    }
    // Splits that saw no key (lse -inf) weigh 0; so does everything when no
    // split saw one.
    Value isEmpty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, maxLse,
                                          f32(negInf));
    Value reference = arith::SelectOp::create(b, isEmpty, f32(0), maxLse);
    Value weightSum = f32(0), total = f32(0);
    for (int64_t i = 0; i < plan.splits; ++i) {
      Value weight = math::ExpOp::create(
          b, arith::SubFOp::create(b, splitLse[i], reference));
      weightSum = arith::AddFOp::create(b, weightSum, weight);
      Value partial = memref::LoadOp::create(
          b, partialOut, ValueRange{add(element, idx(i * rows * s.dv))});
      total = arith::AddFOp::create(b, total,
                                    arith::MulFOp::create(b, weight, partial));
    }
    Value positive =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, weightSum, f32(0));
    Value result = arith::SelectOp::create(
        b, positive, arith::DivFOp::create(b, total, weightSum), f32(0));
    Value outAt = add(rowStart(views.outputLayout, row), rem(element, s.dv));
    memref::StoreOp::create(b, arith::TruncFOp::create(b, s.element, result),
                            out, ValueRange{outAt});
    Value firstOfRow = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, element, idx(s.dv)), idx(0));
    auto store = scf::IfOp::create(b, firstOfRow, false);
    b.setInsertionPointToStart(store.thenBlock());
    Value rowLse = arith::SelectOp::create(
        b, positive,
        arith::AddFOp::create(b, reference, math::LogOp::create(b, weightSum)),
        f32(negInf));
    memref::StoreOp::create(b, rowLse, lse, ValueRange{row});
  }

private:
  MemRefType flat(int64_t elements, Type element) {
    return flatMemRefType(elements, element);
  }
  Value f32(double value) { return f32Constant(b, value); }

  Value rowStart(const StridedLayout &layout, Value row) {
    return stridedRowStart(b, layout, row);
  }

  /// loadTileAsync over this block's threads; the token is the last group.
  Value loadTile(Value tile, Value source, const StridedLayout &layout,
                 Value firstRow, Value validRows, int64_t rows, int64_t width) {
    lastToken = loadTileAsync(b, tile, source, layout, firstRow, validRows,
                              rows, width, tid, plan.threads());
    return lastToken;
  }

  /// Loads key block `block` (zeros when it is not below `end`, so that
  /// every iteration issues the same copies).
  void loadKeys(Value key, Value keyRowBase, Value block, Value end) {
    Value firstKey = mul(block, plan.blockKV);
    Value inRange =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, block, end);
    Value rows = arith::SelectOp::create(
        b, inRange,
        arith::SubIOp::create(b, idx(s.sk),
                              arith::MinUIOp::create(b, firstKey, idx(s.sk))),
        idx(0));
    Value firstRow =
        add(keyRowBase, arith::MinUIOp::create(b, firstKey, idx(s.sk - 1)));
    loadTile(keyTile, key, views.operands[1], firstRow, rows, plan.blockKV,
             s.d);
  }

  /// Waits for every outstanding copy of this thread, then for every
  /// thread's (the barrier makes the tiles visible block-wide).
  void waitAll(Value token) {
    nvgpu::DeviceAsyncWaitOp::create(b, token ? token : lastToken,
                                     b.getI32IntegerAttr(0));
    gpu::BarrierOp::create(b);
  }

  /// Four 8x8 matrices of `tile`; this lane addresses row `row`, column
  /// `column`.
  std::array<Value, 4> ldmatrix(Value tile, Value row, Value column,
                                bool transpose) {
    return ldmatrixX4(b, tile, ValueRange{row, column}, transpose, s.element);
  }

  Value pack(Value x, Value y) { return packPair(b, x, y, s.element); }

  std::array<Value, 4> mma(const std::array<Value, 4> &a,
                           std::array<Value, 2> bRegisters,
                           const std::array<Value, 4> &c) {
    return mmaM16N8K16(b, a, bRegisters, c, s.element);
  }

  Value quadReduce(Value x, bool sum) { return memwall::quadReduce(b, x, sum); }

  /// Adds the mask operand (broadcast to [B, Hq, Sq, Sk]) to the scores, in
  /// log2 units; an i1 mask hides (-inf) where it is false. Padded rows and
  /// keys read the last valid element (maskScores hides those keys).
  void addMask(SmallVectorImpl<std::array<Value, 4>> &scores, Value firstKey,
               Value firstRow) {
    BroadcastMask broadcast(cast<RankedTensorType>(op.getMask().getType()));
    Value batchIndex = div(batchKvHead, s.kvHeads);
    Value firstHead = mul(rem(batchKvHead, s.kvHeads), s.group);
    for (int64_t t = 0; t < static_cast<int64_t>(scores.size()); ++t)
      for (int e = 0; e < 4; ++e) {
        Value key = arith::MinUIOp::create(
            b, add(add(firstKey, idx(t * 8 + e % 2)), mul(quad, 2)),
            idx(s.sk - 1));
        Value row = arith::MinUIOp::create(b, add(firstRow, idx(8 * (e / 2))),
                                           idx(s.groupRows - 1));
        Value head = add(firstHead, div(row, s.sq));
        scores[t][e] = broadcast.apply(b, mask, scores[t][e], batchIndex, head,
                                       rem(row, s.sq), key);
      }
  }

  /// Sets to -inf the scores of keys past the sequence and, with causal
  /// masking, above the bottom-right-aligned diagonal (and with a window,
  /// W or more keys below it). Only blocks that hold such keys pay for the
  /// comparisons.
  void maskScores(SmallVectorImpl<std::array<Value, 4>> &scores, Value firstKey,
                  Value firstRow) {
    bool ragged = s.sk % plan.blockKV != 0;
    if (!ragged && !op.getCausal())
      return;
    std::optional<uint64_t> window = op.getWindow();
    // The block needs masking if it holds keys past Sk or past the
    // diagonal of this block's first row.
    Value lastKey = add(firstKey, idx(plan.blockKV - 1));
    Value needsMask =
        arith::CmpIOp::create(b, arith::CmpIPredicate::uge, lastKey, idx(s.sk));
    if (op.getCausal()) {
      Value diagonal = add(minQuery, idx(s.sk - s.sq));
      needsMask = arith::OrIOp::create(
          b, needsMask,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, lastKey,
                                diagonal));
    }
    // Key k is before query i's window when k + W < i + (Sk - Sq) + 1; the
    // block's first key is for its last query.
    if (window)
      needsMask = arith::OrIOp::create(
          b, needsMask,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                add(firstKey, idx(*window)),
                                add(maxQuery, idx(s.sk - s.sq + 1))));
    SmallVector<Type> types(scores.size() * 4, b.getF32Type());
    SmallVector<Value> flatScores;
    for (auto &tileScores : scores)
      flatScores.append(tileScores.begin(), tileScores.end());
    auto branch = scf::IfOp::create(b, types, needsMask, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      const float negInf = -std::numeric_limits<float>::infinity();
      SmallVector<Value> masked;
      for (int64_t t = 0; t < static_cast<int64_t>(scores.size()); ++t)
        for (int e = 0; e < 4; ++e) {
          Value key = add(add(firstKey, idx(t * 8 + e % 2)), mul(quad, 2));
          Value hidden = arith::CmpIOp::create(b, arith::CmpIPredicate::uge,
                                               key, idx(s.sk));
          if (op.getCausal()) {
            Value query = rem(add(firstRow, idx(8 * (e / 2))), s.sq);
            hidden = arith::OrIOp::create(
                b, hidden,
                arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, key,
                                      add(query, idx(s.sk - s.sq))));
            if (window)
              hidden = arith::OrIOp::create(
                  b, hidden,
                  arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                        add(key, idx(*window)),
                                        add(query, idx(s.sk - s.sq + 1))));
          }
          masked.push_back(arith::SelectOp::create(b, hidden, f32(negInf),
                                                   flatScores[4 * t + e]));
        }
      scf::YieldOp::create(b, masked);
      b.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(b, flatScores);
    }
    for (int64_t t = 0; t < static_cast<int64_t>(scores.size()); ++t)
      for (int e = 0; e < 4; ++e)
        scores[t][e] = branch.getResult(4 * t + e);
  }

  ImplicitLocOpBuilder b;
  FlashAttentionOp op;
  const AttentionViews &views;
  AttentionShape s;
  const AttentionKernelPlan &plan;
  Value tid, group, quad, laneMatrix, laneRow;
  Value keyTile, valueTile, lastToken, blockFirstRow, mask, batchKvHead,
      minQuery, maxQuery;
};
} // namespace

gpu::GPUFuncOp memwall::emitAttentionKernel(gpu::GPUModuleOp gpuModule,
                                            StringRef name,
                                            const AttentionViews &views,
                                            const AttentionKernelPlan &plan) {
  return AttentionKernelBuilder(gpuModule, views, plan).buildForward(name);
}

memwall::BroadcastMask::BroadcastMask(RankedTensorType type)
    : element(type.getElementType()) {
  SmallVector<int64_t> shape(4 - type.getRank(), 1);
  shape.append(type.getShape().begin(), type.getShape().end());
  SmallVector<int64_t> rowMajor = computeStrides(shape);
  // Broadcast dimensions (size 1) do not move.
  for (int64_t i = 0; i < 4; ++i)
    strides[i] = shape[i] == 1 ? 0 : rowMajor[i];
}

Value memwall::BroadcastMask::apply(ImplicitLocOpBuilder &b, Value mask,
                                    Value score, Value batch, Value head,
                                    Value query, Value key) const {
  Value at = indexConstant(b, 0);
  for (auto [index, stride] :
       llvm::zip_equal(std::array<Value, 4>{batch, head, query, key}, strides))
    if (stride != 0)
      at = arith::AddIOp::create(
          b, at, arith::MulIOp::create(b, index, indexConstant(b, stride)));
  Value m = memref::LoadOp::create(b, mask, ValueRange{at});
  if (element.isInteger(1))
    return arith::SelectOp::create(
        b, m, score, f32Constant(b, -std::numeric_limits<double>::infinity()));
  if (!element.isF32())
    m = arith::ExtFOp::create(b, b.getF32Type(), m);
  return arith::AddFOp::create(
      b, score, arith::MulFOp::create(b, m, f32Constant(b, M_LOG2E)));
}

int64_t memwall::getAttentionCounters(const AttentionKernelPlan &plan) {
  return plan.grid[0] * plan.grid[1];
}
