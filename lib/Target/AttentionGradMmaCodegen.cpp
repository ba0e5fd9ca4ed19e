//===- AttentionGradMmaCodegen.cpp - attention's backward on tensor cores -===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The bf16/f16 form of attention's backward (AttentionGradCodegen.h): the
// same key and query blocks, every product on mma.sync.m16n8k16 with f32
// accumulators (MmaBuilding.h). Each warp owns 16 rows of the block's tile
// (keys in a key block, queries in a query block) and keeps their
// accumulators in registers; the streamed tiles (Q, dO and O for a key
// block, K and V for a query block) arrive by cp.async. Every score product
// is "16 owned rows times the streamed rows": a key block computes Sᵀ = K Qᵀ
// and dPᵀ = V dOᵀ, so Pᵀ and dSᵀ are already, in registers, the A operands
// of dV += Pᵀ dO and dK += dSᵀ Q, as P is of O = P V in the forward; a query
// block computes S = Q Kᵀ, dP = dO Vᵀ and dQ += dS K. P and dS are rounded
// to the operands' type for those products (as FlashAttention-2 does).
//
//===----------------------------------------------------------------------===//

#include "AttentionCodegen.h"
#include "AttentionGradCodegen.h"
#include "KernelBuilding.h"
#include "MmaBuilding.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace memwall;

namespace {
enum Operand { Q = 0, K = 1, V = 2, Out = 3, DOut = 4 };

/// Accumulator fragments of a 16-row strip: four f32s per 8-column tile.
using Strip = SmallVector<std::array<Value, 4>>;

class AttentionGradMmaBuilder : public IndexArithmetic {
public:
  AttentionGradMmaBuilder(gpu::GPUModuleOp gpuModule,
                          const AttentionGradViews &views,
                          const AttentionGradKernelPlan &plan)
      : IndexArithmetic(b), grad(views.grad),
        b(grad.getLoc(), gpuModule.getContext()), views(views), plan(plan) {
    b.setInsertionPointToEnd(gpuModule.getBody());
    element = grad.getQuery().getType().getElementType();
  }

  void build(StringRef name) {
    AttentionGradParams params;
    createAttentionGradKernel(b, name, views, plan, {}, params);
    memrefs = std::move(params.memrefs);
    lse = params.lse;
    mask = params.mask;

    // Five tiles of `tile` rows and two f32 row statistics, in the dynamic
    // shared memory (plan.sharedBytes).
    SharedMemoryCarver carver(b);
    for (int which : {Q, K, V, Out, DOut})
      tiles[which] = carver.paddedTile(plan.tile, width(which), element);
    lseRows = carver.next({plan.tile}, b.getF32Type());
    deltaRows = carver.next({plan.tile}, b.getF32Type());

    tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value lane = rem(tid, 32);
    warpRow = mul(div(tid, 32), 16);
    group = div(lane, 4);
    quad = rem(lane, 4);
    laneMatrix = div(lane, 8);
    laneRow = rem(lane, 8);
    buildAttentionGradBlocks(
        b, plan, batch, kvHead, [&](Value keyTile) { buildKeyBlock(keyTile); },
        [&](Value block) { buildQueryBlock(block); });
  }

private:
  Value f32(double value) { return f32Constant(b, value); }
  int64_t width(int which) const {
    return which == Q || which == K ? plan.headDim : plan.valueDim;
  }
  /// The sequence operand `which` runs along.
  int64_t sequence(int which) const {
    return which == K || which == V ? plan.keySeq : plan.querySeq;
  }
  int64_t heads(int which) const {
    return which == K || which == V ? plan.kvHeads : plan.queryHeads;
  }

  /// Issues the copy of rows [first, first + tile) of head `head` of
  /// operand `which` into its tile (rows past the sequence as zeros).
  void loadRows(int which, Value head, Value first) {
    int64_t seq = sequence(which);
    Value row = add(mul(add(mul(batch, heads(which)), head), seq),
                    arith::MinUIOp::create(b, first, idx(seq - 1)));
    Value validRows = arith::SubIOp::create(
        b, idx(seq), arith::MinUIOp::create(b, first, idx(seq)));
    lastToken =
        loadTileAsync(b, tiles[which], memrefs.lookup(views.sources[which]),
                      views.operands[which], row, validRows, plan.tile,
                      width(which), tid, plan.threads);
  }

  /// Waits for every copy this thread issued (the wait counts groups, not
  /// the token), then for every thread's.
  void waitAll() {
    nvgpu::DeviceAsyncWaitOp::create(b, lastToken, b.getI32IntegerAttr(0));
    gpu::BarrierOp::create(b);
  }

  /// The query rows [i0, i0 + tile) of head `head`: each one's log-sum-exp
  /// in log2 units (-inf past the sequence) and D = rowsum(dO ∘ O), from the
  /// dO and O tiles, into shared memory. Ends with a barrier.
  void buildRowStatistics(Value head, Value i0) {
    int64_t quads = plan.threads / 4;
    int64_t columns = plan.valueDim / 4;
    Value firstColumn = mul(rem(tid, 4), columns);
    for (int64_t r = 0; r < plan.tile / quads; ++r) {
      Value row = add(div(tid, 4), r * quads);
      Value sum =
          buildLoop(
              b, idx(0), idx(columns), {f32(0.0)},
              [&](Value c, ValueRange acc) -> SmallVector<Value> {
                Value column = add(firstColumn, c);
                auto at = [&](int which) -> Value {
                  Value x = memref::LoadOp::create(b, tiles[which],
                                                   ValueRange{row, column});
                  return arith::ExtFOp::create(b, b.getF32Type(), x);
                };
                return {math::FmaOp::create(b, at(Out), at(DOut), acc[0])};
              })
              .front();
      sum = quadReduce(b, sum, /*sum=*/true);
      buildGuarded(b, less(rem(tid, 4), 1), [&] {
        memref::StoreOp::create(b, sum, deltaRows, ValueRange{row});
      });
    }
    buildGuarded(b, less(tid, plan.tile), [&] {
      Value row = add(i0, tid);
      Value valid = less(row, plan.querySeq);
      Value safeRow = arith::SelectOp::create(b, valid, row, idx(0));
      Value at = add(mul(add(mul(batch, plan.queryHeads), head), plan.querySeq),
                     safeRow);
      Value l = memref::LoadOp::create(b, lse, ValueRange{at});
      l = arith::MulFOp::create(b, l, f32(M_LOG2E));
      l = arith::SelectOp::create(
          b, valid, l, f32(-std::numeric_limits<double>::infinity()));
      memref::StoreOp::create(b, l, lseRows, ValueRange{tid});
    });
    gpu::BarrierOp::create(b);
  }

  /// C[16 x tile] = A Bᵀ: A is this warp's 16 rows of tile `a`, B every row
  /// of tile `bTile`, both `depth` wide.
  Strip multiplyRows(int a, int bTile, int64_t depth) {
    Strip c = zeros(plan.tile);
    for (int64_t kt = 0; kt < depth / 16; ++kt) {
      Value row = add(add(warpRow, mul(rem(laneMatrix, 2), 8)), laneRow);
      Value column = add(idx(kt * 16), mul(div(laneMatrix, 2), 8));
      std::array<Value, 4> aFragment =
          ldmatrixX4(b, tiles[a], ValueRange{row, column}, false, element);
      for (int64_t pair = 0; pair < plan.tile / 16; ++pair) {
        Value bRow =
            add(add(idx(pair * 16), mul(div(laneMatrix, 2), 8)), laneRow);
        Value bColumn = add(idx(kt * 16), mul(rem(laneMatrix, 2), 8));
        std::array<Value, 4> bFragment = ldmatrixX4(
            b, tiles[bTile], ValueRange{bRow, bColumn}, false, element);
        c[2 * pair] = mmaM16N8K16(b, aFragment, {bFragment[0], bFragment[1]},
                                  c[2 * pair], element);
        c[2 * pair + 1] =
            mmaM16N8K16(b, aFragment, {bFragment[2], bFragment[3]},
                        c[2 * pair + 1], element);
      }
    }
    return c;
  }

  /// The A fragment of columns [16kt, 16kt + 16) of strip `a`, rounded to
  /// the operands' type; with `residual`, what that rounding left out
  /// (x − round(x), rounded in turn).
  std::array<Value, 4> aFragment(const Strip &a, int64_t kt, bool residual) {
    const std::array<Value, 4> &left = a[2 * kt], &right = a[2 * kt + 1];
    std::array<Value, 4> x = {left[0], left[2], right[0], right[2]};
    std::array<Value, 4> y = {left[1], left[3], right[1], right[3]};
    std::array<Value, 4> fragment;
    for (int i = 0; i < 4; ++i) {
      if (residual) {
        auto rest = [&](Value v) -> Value {
          Value rounded = arith::TruncFOp::create(b, element, v);
          return arith::SubFOp::create(
              b, v, arith::ExtFOp::create(b, b.getF32Type(), rounded));
        };
        x[i] = rest(x[i]);
        y[i] = rest(y[i]);
      }
      fragment[i] = packPair(b, x[i], y[i], element);
    }
    return fragment;
  }

  /// acc[16 x width] += A B: A is `a` (16 x tile accumulator fragments:
  /// P or dS), B every row of tile `bTile`. A enters as two terms in the
  /// operands' type, round(a) and round(a − round(a)), so it keeps about
  /// twice the type's mantissa: rounded once (FlashAttention-2), dS, which
  /// has both signs, put dK and dQ 1.7 bf16 ulps off the reference, and P
  /// put dV at the check's limit.
  void accumulate(Strip &acc, const Strip &a, int bTile) {
    for (int64_t kt = 0; kt < plan.tile / 16; ++kt) {
      std::array<std::array<Value, 4>, 2> terms{aFragment(a, kt, false),
                                                aFragment(a, kt, true)};
      for (int64_t pair = 0; pair < static_cast<int64_t>(acc.size()) / 2;
           ++pair) {
        Value row = add(add(idx(kt * 16), mul(rem(laneMatrix, 2), 8)), laneRow);
        Value column = add(idx(pair * 16), mul(div(laneMatrix, 2), 8));
        std::array<Value, 4> bFragment =
            ldmatrixX4(b, tiles[bTile], ValueRange{row, column}, true, element);
        for (const std::array<Value, 4> &term : terms)
          for (int half = 0; half < 2; ++half)
            acc[2 * pair + half] = mmaM16N8K16(
                b, term, {bFragment[2 * half], bFragment[2 * half + 1]},
                acc[2 * pair + half], element);
      }
    }
  }

  /// The row (of the block's tile: the warp's 16 rows start at warpRow) and
  /// the column (of the streamed tile) of element `e` of accumulator
  /// fragment `n`.
  Value fragmentRow(int e) { return add(add(warpRow, group), 8 * (e / 2)); }
  Value fragmentColumn(int64_t n, int e) {
    return add(mul(quad, 2), n * 8 + e % 2);
  }

  /// P and dS of the strips `scores` (q·k) and `dp` (dO·v) of head `head`,
  /// in place: P = exp(scale·q·k + mask − lse), dS = P ∘ (dP − D), for the
  /// query and key `pairOf(n, e)` (within the tiles from i0 and j0) of
  /// each element, and P = 0 where the pair is hidden (only computed in
  /// blocks that may hide one).
  void buildProbabilities(
      Strip &scores, Strip &dp, Value head, Value i0, Value j0,
      function_ref<std::pair<Value, Value>(int64_t, int)> pairOf) {
    double scaleLog2 = grad.getScale().convertToDouble() * M_LOG2E;
    std::optional<BroadcastMask> broadcast;
    if (mask)
      broadcast.emplace(cast<RankedTensorType>(grad.getMask().getType()));
    SmallVector<Value> flat;
    for (auto [n, fragment] : llvm::enumerate(scores))
      for (int e = 0; e < 4; ++e) {
        auto [query, key] = pairOf(n, e);
        Value x = arith::MulFOp::create(b, fragment[e], f32(scaleLog2));
        if (broadcast) {
          // Padded rows and keys read a valid element (hidden below).
          x = broadcast->apply(
              b, mask, x, batch, head,
              arith::MinUIOp::create(b, add(i0, query), idx(plan.querySeq - 1)),
              arith::MinUIOp::create(b, add(j0, key), idx(plan.keySeq - 1)));
        }
        Value l = memref::LoadOp::create(b, lseRows, ValueRange{query});
        fragment[e] = math::Exp2Op::create(b, arith::SubFOp::create(b, x, l));
        flat.push_back(fragment[e]);
      }
    // A mask may hide every key of a row (lse -inf) in any block.
    Value needsMask =
        mask ? arith::ConstantIntOp::create(b, b.getI1Type(), 1).getResult()
             : tileNeedsMask(i0, j0);
    SmallVector<Type> types(flat.size(), b.getF32Type());
    auto branch = scf::IfOp::create(b, types, needsMask, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      SmallVector<Value> masked;
      for (int64_t n = 0; n < static_cast<int64_t>(scores.size()); ++n)
        for (int e = 0; e < 4; ++e) {
          auto [query, key] = pairOf(n, e);
          Value l = memref::LoadOp::create(b, lseRows, ValueRange{query});
          // A row that saw no key (lse -inf) has P = 0; a NaN stays.
          Value none = arith::CmpFOp::create(
              b, arith::CmpFPredicate::OEQ, l,
              f32(-std::numeric_limits<double>::infinity()));
          Value off = arith::OrIOp::create(
              b, isHidden(add(j0, key), add(i0, query)), none);
          masked.push_back(
              arith::SelectOp::create(b, off, f32(0), flat[4 * n + e]));
        }
      scf::YieldOp::create(b, masked);
      b.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(b, flat);
    }
    for (auto [n, fragment] : llvm::enumerate(scores))
      for (int e = 0; e < 4; ++e) {
        fragment[e] = branch.getResult(4 * n + e);
        Value d = memref::LoadOp::create(b, deltaRows,
                                         ValueRange{pairOf(n, e).first});
        dp[n][e] = arith::MulFOp::create(b, fragment[e],
                                         arith::SubFOp::create(b, dp[n][e], d));
      }
  }

  /// Whether key `key` is hidden from query `query`: past either sequence
  /// or, causal, above the bottom-right-aligned diagonal.
  Value isHidden(Value key, Value query) {
    Value hidden =
        arith::OrIOp::create(b,
                             arith::CmpIOp::create(b, arith::CmpIPredicate::uge,
                                                   key, idx(plan.keySeq)),
                             arith::CmpIOp::create(b, arith::CmpIPredicate::uge,
                                                   query, idx(plan.querySeq)));
    if (!plan.causal)
      return hidden;
    Value seen = buildSeenByMask(b, plan, key, query);
    return arith::OrIOp::create(
        b, hidden,
        arith::XOrIOp::create(b, seen, arith::ConstantIntOp::create(b, 1, 1)));
  }

  /// Whether the tiles of queries from i0 and keys from j0 hold a pair
  /// isHidden may hide: a tile past a sequence's end, or (causal) keys
  /// beyond the diagonal of the first query.
  Value tileNeedsMask(Value i0, Value j0) {
    Value needs = arith::OrIOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ugt,
                              add(i0, idx(plan.tile)), idx(plan.querySeq)),
        arith::CmpIOp::create(b, arith::CmpIPredicate::ugt,
                              add(j0, idx(plan.tile)), idx(plan.keySeq)));
    if (!plan.causal)
      return needs;
    needs = arith::OrIOp::create(
        b, needs,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ugt,
                              add(j0, idx(plan.tile - 1 + plan.querySeq)),
                              add(i0, idx(plan.keySeq))));
    if (!plan.window)
      return needs;
    // The first key before the last query's window: j0 + W <= i0 + tile - 1
    // + (Sk - Sq).
    return arith::OrIOp::create(
        b, needs,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                              add(j0, idx(plan.window + plan.querySeq)),
                              add(i0, idx(plan.tile - 1 + plan.keySeq))));
  }

  /// Stores `acc` · `factor` (this warp's 16 rows from `rowStart`) as
  /// gradient `which` (0 dq, 1 dk, 2 dv) of head `head`.
  void storeGradient(int which, const Strip &acc, Value head, Value rowStart,
                     int64_t rows, double factor) {
    Value output = memrefs.lookup(views.outputs[which]);
    Type outType = cast<MemRefType>(output.getType()).getElementType();
    const StridedLayout &layout = views.outputLayouts[which];
    for (int half = 0; half < 2; ++half) {
      Value row = add(rowStart, fragmentRow(2 * half));
      buildGuarded(b, less(row, rows), [&] {
        Value at =
            add(add(idx(layout.offset), mul(batch, layout.strides[0])),
                add(mul(head, layout.strides[1]), mul(row, layout.strides[2])));
        for (auto [n, fragment] : llvm::enumerate(acc)) {
          SmallVector<Value> pair;
          for (int e = 0; e < 2; ++e) {
            Value x =
                arith::MulFOp::create(b, fragment[2 * half + e], f32(factor));
            pair.push_back(outType.isF32()
                               ? x
                               : Value(arith::TruncFOp::create(b, outType, x)));
          }
          Value vector = vector::FromElementsOp::create(
              b, VectorType::get({2}, outType), pair);
          alignedVectorStore(b, vector, output, add(at, fragmentColumn(n, 0)));
        }
      });
    }
  }

  Strip zeros(int64_t columns) {
    Strip strip(columns / 8);
    for (auto &fragment : strip)
      fragment = {f32(0), f32(0), f32(0), f32(0)};
    return strip;
  }
  static SmallVector<Value> flatten(ArrayRef<Strip> strips) {
    SmallVector<Value> values;
    for (const Strip &strip : strips)
      for (const auto &fragment : strip)
        values.append(fragment.begin(), fragment.end());
    return values;
  }
  /// The strips of `widths` columns `values` holds, in order.
  static SmallVector<Strip> unflatten(ValueRange values,
                                      ArrayRef<int64_t> widths) {
    SmallVector<Strip> strips;
    size_t at = 0;
    for (int64_t columns : widths) {
      Strip strip(columns / 8);
      for (auto &fragment : strip)
        for (int e = 0; e < 4; ++e)
          fragment[e] = values[at++];
      strips.push_back(std::move(strip));
    }
    return strips;
  }

  /// dK and dV of keys [j0, j0 + tile) of the KV head, summed over every
  /// query tile of its query heads that sees them, in order.
  void buildKeyBlock(Value keyTile) {
    Value j0 = mul(keyTile, plan.tile);
    int64_t groupSize = plan.queryHeads / plan.kvHeads;
    loadRows(K, kvHead, j0);
    loadRows(V, kvHead, j0);
    Value keyValueCopies = lastToken;
    SmallVector<int64_t> widths{plan.headDim, plan.valueDim};
    SmallVector<Value> init =
        flatten({zeros(plan.headDim), zeros(plan.valueDim)});
    auto [first, end] = buildQueryTilesSeeing(b, plan, j0);
    SmallVector<Value> sums = buildLoop(
        b, idx(0), idx(groupSize), init, [&](Value g, ValueRange perHead) {
          Value head = add(mul(kvHead, groupSize), g);
          return buildLoop(
              b, first, end, perHead, [&](Value queryTile, ValueRange carried) {
                Value i0 = mul(queryTile, plan.tile);
                for (int which : {Q, DOut, Out})
                  loadRows(which, head, i0);
                waitAll();
                buildRowStatistics(head, i0);
                // Rows are keys, columns queries.
                Strip scores = multiplyRows(K, Q, plan.headDim);
                Strip dp = multiplyRows(V, DOut, plan.valueDim);
                buildProbabilities(
                    scores, dp, head, i0, j0, [&](int64_t n, int e) {
                      return std::pair(fragmentColumn(n, e), fragmentRow(e));
                    });
                SmallVector<Strip> acc = unflatten(carried, widths);
                accumulate(acc[0], dp, Q);
                accumulate(acc[1], scores, DOut);
                // The tiles are reloaded by the next query tile.
                gpu::BarrierOp::create(b);
                return flatten(acc);
              });
        });
    // K and V were waited for with the first query tile's copies; with no
    // query tile (causal keys no query sees) they are waited for here.
    lastToken = keyValueCopies;
    waitAll();
    SmallVector<Strip> acc = unflatten(sums, widths);
    storeGradient(1, acc[0], kvHead, j0, plan.keySeq,
                  grad.getScale().convertToDouble());
    storeGradient(2, acc[1], kvHead, j0, plan.keySeq, 1.0);
  }

  /// dQ of query rows [i0, i0 + tile) of one query head, summed over the
  /// key tiles it sees, in order.
  void buildQueryBlock(Value block) {
    int64_t groupSize = plan.queryHeads / plan.kvHeads;
    Value head = add(mul(kvHead, groupSize), div(block, plan.queryTiles));
    Value i0 = mul(rem(block, plan.queryTiles), plan.tile);
    for (int which : {Q, DOut, Out})
      loadRows(which, head, i0);
    waitAll();
    buildRowStatistics(head, i0);
    auto [firstKeyTile, endKeyTile] = buildKeyTilesSeen(b, plan, i0);
    SmallVector<Value> sums = buildLoop(
        b, firstKeyTile, endKeyTile, flatten({zeros(plan.headDim)}),
        [&](Value keyTile, ValueRange carried) {
          Value j0 = mul(keyTile, plan.tile);
          loadRows(K, kvHead, j0);
          loadRows(V, kvHead, j0);
          waitAll();
          // Rows are queries, columns keys.
          Strip scores = multiplyRows(Q, K, plan.headDim);
          Strip dp = multiplyRows(DOut, V, plan.valueDim);
          buildProbabilities(scores, dp, head, i0, j0, [&](int64_t n, int e) {
            return std::pair(fragmentRow(e), fragmentColumn(n, e));
          });
          Strip acc = unflatten(carried, {plan.headDim}).front();
          accumulate(acc, dp, K);
          // The key tiles are reloaded by the next key tile.
          gpu::BarrierOp::create(b);
          return flatten({acc});
        });
    storeGradient(0, unflatten(sums, {plan.headDim}).front(), head, i0,
                  plan.querySeq, grad.getScale().convertToDouble());
  }

  /// A copy of views.grad (op accessors are not const).
  FlashAttentionGradOp grad;
  ImplicitLocOpBuilder b;
  const AttentionGradViews &views;
  const AttentionGradKernelPlan &plan;
  Type element;
  DenseMap<Value, Value> memrefs;
  std::array<Value, 5> tiles;
  Value lse, mask, lseRows, deltaRows, lastToken;
  Value tid, warpRow, group, quad, laneMatrix, laneRow, batch, kvHead;
};
} // namespace

void memwall::emitAttentionGradMmaKernel(gpu::GPUModuleOp gpuModule,
                                         StringRef name,
                                         const AttentionGradViews &views,
                                         const AttentionGradKernelPlan &plan) {
  AttentionGradMmaBuilder(gpuModule, views, plan).build(name);
}
