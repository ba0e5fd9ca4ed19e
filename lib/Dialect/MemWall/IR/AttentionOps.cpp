//===- AttentionOps.cpp - Attention ops -----------------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Scaled dot-product attention before tiling (costed naively: the S x S
// scores written and read), its FlashAttention form after
// memwall-tile-attention (with the traffic model of the tiled kernel, forward
// and backward), the attention gradients, RoPE and the KV-cache append.
// Per op: type inference, verifier, VJP, payload, aliasing, reference
// attributes and FLOP/byte counts (formulas in docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#include "MemWallOpUtils.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace memwall;
using namespace memwall::detail;

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

MEMWALL_INFER_SAME_AS_INPUT(RopeOp)

LogicalResult RopeOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType positions = getPositions().getType();
  if (input.getRank() != 4)
    return emitOpError("input must have rank 4 [B, H, S, D], got rank ")
           << input.getRank();
  int64_t batch = input.getDimSize(0), seq = input.getDimSize(2);
  if (input.getDimSize(3) % 2 != 0)
    return emitOpError("head dimension must be even, got ")
           << input.getDimSize(3);
  bool perSequence = positions.getRank() == 1 && positions.getDimSize(0) == seq;
  bool perBatch = positions.getRank() == 2 &&
                  positions.getDimSize(0) == batch &&
                  positions.getDimSize(1) == seq;
  if (!perSequence && !perBatch)
    return emitOpError("positions must have shape [")
           << seq << "] or [" << batch << ", " << seq << "], got "
           << shapeString(positions.getShape());
  double theta = getTheta().convertToDouble();
  if (!(theta > 0) || !std::isfinite(theta))
    return emitOpError("theta must be a positive finite number, got ") << theta;
  if (std::optional<ArrayRef<double>> scaling = getLlama3Scaling()) {
    if (scaling->size() != 4)
      return emitOpError("llama3_scaling must be [factor, low_freq_factor, "
                         "high_freq_factor, original_context], got ")
             << scaling->size() << " numbers";
    auto [factor, low, high, original] =
        std::tuple((*scaling)[0], (*scaling)[1], (*scaling)[2], (*scaling)[3]);
    if (!(factor > 0 && low > 0 && high > low && original > 0) ||
        !std::isfinite(factor) || !std::isfinite(high) ||
        !std::isfinite(original))
      return emitOpError("llama3_scaling needs factor, low_freq_factor and "
                         "original_context > 0 and high_freq_factor > "
                         "low_freq_factor, got [")
             << factor << ", " << low << ", " << high << ", " << original
             << "]";
  }
  return success();
}

LogicalResult RopeOp::buildVJP(VJPBuilder &vjp, ValueRange resultGradients) {
  OpBuilder &builder = vjp.getBuilder();
  vjp.accumulate(getInput(),
                 RopeOp::create(builder, vjp.getLoc(), resultGradients[0],
                                getPositions(), getThetaAttr(),
                                getInverse() ? nullptr : builder.getUnitAttr(),
                                getLlama3ScalingAttr()));
  return success();
}

void RopeOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getInverseAttrName(), getInverse());
  // The reference reads numbers, not number lists.
  attrs.erase(getLlama3ScalingAttrName());
  if (std::optional<ArrayRef<double>> scaling = getLlama3Scaling()) {
    Builder builder(getContext());
    StringRef names[] = {"llama3_factor", "llama3_low_freq_factor",
                         "llama3_high_freq_factor", "llama3_original_context"};
    for (auto [name, value] : llvm::zip(names, *scaling))
      attrs.set(name, builder.getF64FloatAttr(value));
  }
}

int64_t RopeOp::getFlops() {
  int64_t headDim = getInput().getType().getShape().back();
  CheckedInt positions = countElements(getPositions().getType());
  // Frequencies theta^(-2i/D): one pow per pair index (D/2). Angles: for each
  // position and pair, one multiply plus a sin and a cos (3 * P * D/2).
  // Rotation: x * cos + rotate_half(x) * sin per element (3 * N).
  return (CheckedInt(headDim / 2) + CheckedInt(3) * positions * (headDim / 2) +
          CheckedInt(3) * resultElements(*this))
      .saturated();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            AttentionOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> q =
      getStaticTensor(loc, adaptor.getQuery(), "query");
  FailureOr<RankedTensorType> k = getStaticTensor(loc, adaptor.getKey(), "key");
  FailureOr<RankedTensorType> v =
      getStaticTensor(loc, adaptor.getValue(), "value");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  if (q->getRank() != 4 || k->getRank() != 4 || v->getRank() != 4)
    return emitOptionalError(loc, "query, key and value must have rank 4 "
                                  "[B, H, S, D]");
  // An fp8 KV cache is read as it is stored and dequantized in the kernel.
  bool fp8Cache = isa<Float8E4M3FNType, Float8E5M2Type>(k->getElementType()) &&
                  (q->getElementType().isBF16() || q->getElementType().isF16());
  if ((q->getElementType() != k->getElementType() && !fp8Cache) ||
      k->getElementType() != v->getElementType())
    return emitOptionalError(loc, "query, key and value must have the same "
                                  "element type (or key and value an fp8 "
                                  "cache read by bf16/f16 queries)");
  if (q->getDimSize(0) != k->getDimSize(0) ||
      k->getDimSize(0) != v->getDimSize(0))
    return emitOptionalError(loc, "batch sizes differ: query ",
                             q->getDimSize(0), ", key ", k->getDimSize(0),
                             ", value ", v->getDimSize(0));
  if (q->getDimSize(3) != k->getDimSize(3))
    return emitOptionalError(loc, "query head dim ", q->getDimSize(3),
                             " differs from key head dim ", k->getDimSize(3));
  if (k->getDimSize(1) != v->getDimSize(1) ||
      k->getDimSize(2) != v->getDimSize(2))
    return emitOptionalError(loc, "key and value must agree on heads and "
                                  "sequence length");
  inferred.push_back(RankedTensorType::get(
      {q->getDimSize(0), q->getDimSize(1), q->getDimSize(2), v->getDimSize(3)},
      getContractionResultElementType(q->getElementType())));
  return success();
}

/// The rules attention, its tiled form and their backwards share: head
/// grouping, causal lengths, the scale and the mask's type and shape.
static LogicalResult verifyAttentionRules(Operation *op, Value query, Value key,
                                          Value mask, bool causal,
                                          std::optional<uint64_t> window,
                                          std::optional<double> scale,
                                          Type resultElementType) {
  auto q = cast<RankedTensorType>(query.getType());
  auto k = cast<RankedTensorType>(key.getType());
  int64_t heads = q.getDimSize(1), kvHeads = k.getDimSize(1);
  if (kvHeads == 0 || heads % kvHeads != 0)
    return op->emitOpError("query heads (")
           << heads << ") must be a multiple of key/value heads (" << kvHeads
           << ")";
  int64_t sq = q.getDimSize(2), sk = k.getDimSize(2);
  if (causal && sq > sk)
    return op->emitOpError("causal attention needs query length <= key "
                           "length, got ")
           << sq << " > " << sk;
  // A window is a band below the causal diagonal; without the diagonal it
  // has no position to end at.
  if (window && !causal)
    return op->emitOpError("a sliding window needs causal attention");
  if (window && (*window == 0 || *window > uint64_t(INT64_MAX)))
    return op->emitOpError("window must be a positive number of keys, got ")
           << static_cast<int64_t>(*window);
  if (scale && (!(*scale > 0) || !std::isfinite(*scale)))
    return op->emitOpError("scale must be a positive finite number, got ")
           << *scale;
  if (mask) {
    auto maskType = cast<RankedTensorType>(mask.getType());
    if (!maskType.getElementType().isInteger(1) &&
        maskType.getElementType() != resultElementType)
      return op->emitOpError("mask must be i1 or have the result element type ")
             << resultElementType;
    SmallVector<int64_t> scoresShape = {q.getDimSize(0), heads, sq, sk};
    SmallVector<int64_t> broadcast;
    if (maskType.getRank() != 4 ||
        !OpTrait::util::getBroadcastedShape(maskType.getShape(), scoresShape,
                                            broadcast) ||
        ArrayRef<int64_t>(broadcast) != ArrayRef<int64_t>(scoresShape))
      return op->emitOpError("mask of shape ")
             << shapeString(maskType.getShape())
             << " does not broadcast to the scores "
             << shapeString(scoresShape);
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  // The result type is the inferred one (InferredResultType's check).
  std::optional<double> scale;
  if (std::optional<APFloat> given = getScale())
    scale = given->convertToDouble();
  return verifyAttentionRules(*this, getQuery(), getKey(), getMask(),
                              getCausal(), getWindow(), scale,
                              getResult().getType().getElementType());
}

double AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  auto q = cast<RankedTensorType>(getQuery().getType());
  return 1.0 / std::sqrt(static_cast<double>(q.getDimSize(3)));
}

LogicalResult AttentionOp::buildVJP(VJPBuilder &vjp,
                                    ValueRange resultGradients) {
  // A trained additive mask (a learned bias) gets the score gradient.
  Value mask = getMask();
  bool maskGrad = mask && vjp.needsGradient(mask) &&
                  isa<FloatType>(getElementTypeOrSelf(mask.getType()));
  auto grad = AttentionGradOp::create(vjp.getBuilder(), vjp.getLoc(), *this,
                                      resultGradients[0], maskGrad);
  vjp.accumulate(getQuery(), grad.getQueryGrad());
  vjp.accumulate(getKey(), grad.getKeyGrad());
  vjp.accumulate(getValue(), grad.getValueGrad());
  if (maskGrad)
    vjp.accumulate(mask, grad.getMaskGrad());
  return success();
}

void AttentionOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getCausalAttrName(), getCausal());
  attrs.set(getScaleAttrName(), FloatAttr::get(Float64Type::get(getContext()),
                                               getEffectiveScale()));
}

/// n (n + 1) / 2 without overflowing before the halving.
static CheckedInt triangleNumber(int64_t n) {
  return n % 2 == 0 ? CheckedInt(n / 2) * (n + 1)
                    : CheckedInt(n) * ((n + 1) / 2);
}

/// Query i sees keys 0 .. i + (sk - sq) under the bottom-right causal mask:
/// (sk - sq) + i + 1 of them; with a sliding window W, the last W of those.
static int64_t unmaskedPairs(int64_t sq, int64_t sk, bool causal,
                             std::optional<uint64_t> window = std::nullopt) {
  if (!causal)
    return (CheckedInt(sq) * sk).saturated();
  if (window && *window < static_cast<uint64_t>(sk)) {
    // Sum over t = i + (sk - sq) + 1 in [sk - sq + 1, sk] of min(t, W): the
    // t up to W count t, the others W.
    auto w = static_cast<int64_t>(*window);
    int64_t first = sk - sq + 1;
    CheckedInt pairs = 0;
    if (first <= w)
      pairs = triangleNumber(w) - triangleNumber(first - 1);
    pairs += CheckedInt(w) * (sk - std::max(w, first - 1));
    return pairs.saturated();
  }
  return (CheckedInt(sq) * (sk - sq) + triangleNumber(sq)).saturated();
}

int64_t AttentionOp::getUnmaskedPairsPerHead() {
  return unmaskedPairs(getQuery().getType().getDimSize(2),
                       getKey().getType().getDimSize(2), getCausal(),
                       getWindow());
}

/// 2 FLOPs per unmasked (query, key) pair of every batch element and query
/// head, times `perPair` (the head dimensions the matmuls contract).
static int64_t attentionFlops(Value query, int64_t pairsPerHead,
                              CheckedInt perPair) {
  auto q = cast<RankedTensorType>(query.getType());
  return (CheckedInt(2) * q.getDimSize(0) * q.getDimSize(1) *
          CheckedInt::fromSaturated(pairsPerHead) * perPair)
      .saturated();
}

int64_t AttentionOp::getFlops() {
  // Q K^T and P V over the unmasked pairs only (FlashAttention's convention:
  // 4 * B * H * Sq * Sk * D, halved by a causal mask). The softmax itself
  // (about 5 / (4D) of that) is not counted.
  return attentionFlops(getQuery(), getUnmaskedPairsPerHead(),
                        CheckedInt(getQuery().getType().getDimSize(3)) +
                            getValue().getType().getDimSize(3));
}

MathPrecision AttentionOp::getMathPrecision() {
  return getContractionPrecision(getQuery().getType().getElementType());
}

/// A fused attention kernel (FlashAttention-class) on the tensor cores.
static KernelWork attentionKernelWork(Operation *op) {
  KernelWork work = memwall::detail::defaultKernelWork(op);
  work.unit = ComputeUnit::Attention;
  return work;
}

KernelWork AttentionOp::getKernelWork(const GPUTarget &) {
  return attentionKernelWork(*this);
}

/// Bytes of the Sq x Sk score matrix of all heads, as naive (untiled)
/// attention materializes it: written by Q K^T, read and rewritten by the
/// softmax, read by P V.
/// Bytes of the B x Hq x Sq x Sk scores of `query` and `key` in `element`.
static CheckedInt scoreBytes(Value query, Value key, Type element) {
  auto q = cast<RankedTensorType>(query.getType());
  auto k = cast<RankedTensorType>(key.getType());
  return CheckedInt::product(q.getShape().drop_back()) * k.getDimSize(2) *
         getElementByteSize(element);
}

static CheckedInt attentionScoreBytes(AttentionOp op) {
  return scoreBytes(op.getQuery(), op.getKey(),
                    op.getResult().getType().getElementType());
}

// Untiled, the scores are held while the attention runs.
int64_t AttentionOp::getWorkspaceBytes() {
  return attentionScoreBytes(*this).saturated();
}

/// `bytes` (an op's operands or results) plus `copies` x `scores`.
static int64_t plusScoreTraffic(int64_t bytes, int64_t copies,
                                CheckedInt scores) {
  return (CheckedInt::fromSaturated(bytes) + CheckedInt(copies) * scores)
      .saturated();
}

int64_t AttentionOp::getBytesRead() {
  return plusScoreTraffic(detail::sumOperandBytes(*this), 2,
                          attentionScoreBytes(*this));
}

int64_t AttentionOp::getBytesWritten() {
  return plusScoreTraffic(detail::sumResultBytes(*this), 2,
                          attentionScoreBytes(*this));
}

/// Rows of the largest attention tile: 4096 rows of 16 bf16 elements are
/// 128 KiB, more than half of any GPU's shared memory. The bound keeps the
/// tiled traffic's closed forms short (they repeat per block residue).
static constexpr int64_t kMaxAttentionBlock = 4096;

/// The tile sizes and the log-sum-exp of the tiled forms.
static LogicalResult verifyTiles(Operation *op, Value query, Value lse,
                                 int64_t blockQ, int64_t blockKV) {
  auto q = cast<RankedTensorType>(query.getType());
  if (blockQ <= 0 || blockKV <= 0)
    return op->emitOpError("block sizes must be positive, got block_q ")
           << blockQ << " and block_kv " << blockKV;
  if (blockQ > kMaxAttentionBlock || blockKV > kMaxAttentionBlock)
    return op->emitOpError("block sizes must be at most ")
           << kMaxAttentionBlock << ", got block_q " << blockQ
           << " and block_kv " << blockKV;
  auto expected =
      RankedTensorType::get({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2)},
                            Float32Type::get(op->getContext()));
  if (lse.getType() != expected)
    return op->emitOpError("lse must have type ")
           << expected << ", got " << lse.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// FlashAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult FlashAttentionOp::verify() {
  SmallVector<Type> forward;
  if (failed(AttentionOp::inferReturnTypes(
          getContext(), getLoc(),
          AttentionOp::Adaptor({getQuery(), getKey(), getValue()}), forward)))
    return failure();
  if (getResult().getType() != forward[0])
    return emitOpError("result must have type ")
           << forward[0] << ", got " << getResult().getType();
  if (failed(verifyAttentionRules(*this, getQuery(), getKey(), getMask(),
                                  getCausal(), getWindow(),
                                  getScale().convertToDouble(),
                                  getResult().getType().getElementType())) ||
      failed(
          verifyTiles(*this, getQuery(), getLse(), getBlockQ(), getBlockKv())))
    return failure();
  int64_t sk = getKey().getType().getDimSize(2);
  int64_t blocks = (sk + getBlockKv() - 1) / getBlockKv();
  auto splits = static_cast<int64_t>(getNumSplits());
  if (splits < 1 || splits > std::max<int64_t>(blocks, 1))
    return emitOpError("splits must be between 1 and the ")
           << blocks << " key blocks, got " << splits;
  return success();
}

void FlashAttentionOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getCausalAttrName(), getCausal());
}

int64_t FlashAttentionOp::getUnmaskedPairsPerHead() {
  return unmaskedPairs(getQuery().getType().getDimSize(2),
                       getKey().getType().getDimSize(2), getCausal(),
                       getWindow());
}

/// sum over i in [0, n) of floor((a i + b) / m), for n, a, b >= 0 and
/// m > 0, in O(log m) steps (the Euclidean-like reduction of AtCoder's
/// floor_sum). Overflowed when the sum does not fit int64; every term is
/// non-negative, so a partial sum that does not fit means the sum does not.
static CheckedInt sumFloorsOfLine(int64_t n, int64_t m, int64_t a, int64_t b) {
  CheckedInt sum = 0;
  while (n > 0) {
    if (a >= m) {
      CheckedInt pairs = n % 2 == 0 ? CheckedInt(n / 2) * (n - 1)
                                    : CheckedInt(n) * ((n - 1) / 2);
      sum += pairs * (a / m);
      a %= m;
    }
    if (b >= m) {
      sum += CheckedInt(n) * (b / m);
      b %= m;
    }
    if (sum.overflowed())
      return sum;
    // a, b < m < 2^63 and n < 2^63: the line's last value fits 128 bits,
    // and the next n (at most the current one) fits int64.
    unsigned __int128 last = static_cast<unsigned __int128>(a) * n + b;
    if (last < static_cast<unsigned __int128>(m))
      break;
    n = static_cast<int64_t>(last / m);
    b = static_cast<int64_t>(last % m);
    std::swap(m, a);
  }
  return sum;
}

/// Key blocks wholly before the sliding window of every query in their row
/// block, summed over the row blocks of one KV head: a block of rows whose
/// least query is q starts its keys at block (q + Sk - Sq - W + 1) / bkv.
/// The loop is over row blocks; for more than 2^20 of them (no real
/// sequence) nothing is subtracted, an upper bound of the traffic.
static CheckedInt countBlocksBeforeWindow(int64_t sq, int64_t sk, int64_t bq,
                                          int64_t bkv, int64_t rows,
                                          int64_t window) {
  constexpr int64_t kMaxRowBlocks = int64_t(1) << 20;
  int64_t blocks = llvm::divideCeil(rows, bq);
  if (blocks > kMaxRowBlocks)
    return 0;
  CheckedInt skipped = 0;
  for (int64_t block = 0; block < blocks; ++block) {
    int64_t first = block * bq, last = std::min(rows, first + bq) - 1;
    // A block holding a head's first row holds query 0.
    int64_t leastQuery = first / sq == last / sq ? first % sq : 0;
    int64_t firstKey = leastQuery + (sk - sq) - window + 1;
    if (firstKey > 0)
      skipped += firstKey / bkv;
  }
  return skipped;
}

/// Key blocks up to the causal diagonal (every key block without causal
/// masking), summed over the row blocks of one KV head.
static int64_t countBlocksToDiagonal(int64_t sq, int64_t sk, int64_t bq,
                                     int64_t bkv, int64_t group, int64_t blocks,
                                     int64_t allKeyBlocks, bool causal) {
  if (!causal || bq >= sq)
    // Every block holds a head's last query (a block of bq >= Sq rows holds
    // every query; the last block ends at a head's end).
    return (CheckedInt(blocks) * allKeyBlocks).saturated();
  // Key blocks query i sees: keys up to i + (Sk - Sq).
  int64_t offset = sk - sq;
  auto keyBlocks = [&](int64_t maxQuery) {
    return (maxQuery + offset) / bkv + 1;
  };
  // bq < Sq: a block holds at most one head's last query. The blocks ending
  // in a head whose first row is `start` rows past a block boundary end at
  // queries first, first + bq, ... where first = bq - 1 - start; the first
  // of them holds the previous head's last query when start > 0. The sum
  // over the ends is a floor sum.
  auto blocksOfHead = [&](int64_t start, int64_t ends) {
    int64_t first = bq - 1 - start;
    CheckedInt total =
        sumFloorsOfLine(ends, bkv, bq, first + offset) + CheckedInt(ends);
    if (start != 0 && ends > 0)
      total += keyBlocks(sq - 1) - keyBlocks(first);
    return total;
  };
  // Heads but the last: their ends fall on [0, Sq). Head h starts
  // (h Sq) mod bq past a boundary, which repeats every bq / gcd(Sq, bq)
  // heads (block sizes are bounded, so this loop is short).
  int64_t period = bq / std::gcd(sq, bq);
  CheckedInt total = 0;
  for (int64_t head = 0; head < std::min(period, group - 1); ++head) {
    int64_t start =
        static_cast<int64_t>(static_cast<unsigned __int128>(head) * sq % bq);
    int64_t ends = (sq - 1 - (bq - 1 - start)) / bq + 1;
    int64_t repeats = (group - 2 - head) / period + 1;
    total += CheckedInt(repeats) * blocksOfHead(start, ends);
  }
  // The last head: ends before its last row, then the final block, which
  // ends on the last query.
  int64_t start =
      static_cast<int64_t>(static_cast<unsigned __int128>(group - 1) * sq % bq);
  int64_t first = bq - 1 - start;
  int64_t ends = first <= sq - 2 ? (sq - 2 - first) / bq + 1 : 0;
  total += blocksOfHead(start, ends) + keyBlocks(sq - 1);
  return total.saturated();
}

int64_t FlashAttentionOp::getVisibleKeyBlocksPerKVHead() {
  // Blocks of bq rows over the rows = group x Sq query rows of one KV head;
  // row r is query r mod Sq of head r / Sq. A block sees the key blocks up
  // to the diagonal of its largest query, maxQuery: Sq - 1 when it holds
  // the last query of a head, else its last row's query. Closed forms per
  // head keep this O(1) in the shape (a loop over blocks took Sq / bq steps).
  int64_t sq = getQuery().getType().getDimSize(2);
  int64_t sk = getKey().getType().getDimSize(2);
  int64_t kvHeads = getKey().getType().getDimSize(1);
  int64_t bq = getBlockQ(), bkv = getBlockKv();
  if (kvHeads <= 0 || sq <= 0 || bq <= 0 || bkv <= 0)
    return 0;
  int64_t group = getQuery().getType().getDimSize(1) / kvHeads;
  std::optional<int64_t> rows = (CheckedInt(group) * sq).get();
  if (!rows)
    return kUncountable;
  int64_t blocks = llvm::divideCeil(*rows, bq);
  int64_t allKeyBlocks = llvm::divideCeil(sk, bkv);
  CheckedInt visible = CheckedInt::fromSaturated(countBlocksToDiagonal(
      sq, sk, bq, bkv, group, blocks, allKeyBlocks, getCausal()));
  if (std::optional<uint64_t> window = getWindow())
    visible -= countBlocksBeforeWindow(sq, sk, bq, bkv, *rows,
                                       static_cast<int64_t>(*window));
  return visible.saturated();
}

int64_t FlashAttentionOp::getFlops() {
  // As attention: Q K^T and P V over the unmasked pairs.
  return attentionFlops(getQuery(), getUnmaskedPairsPerHead(),
                        CheckedInt(getQuery().getType().getDimSize(3)) +
                            getValue().getType().getDimSize(3));
}

MathPrecision FlashAttentionOp::getMathPrecision() {
  return getContractionPrecision(getQuery().getType().getElementType());
}

/// Bytes of one key position's K and V rows.
static double kvRowBytes(Value key, Value value) {
  auto k = cast<RankedTensorType>(key.getType());
  auto v = cast<RankedTensorType>(value.getType());
  return (static_cast<double>(k.getDimSize(3)) + v.getDimSize(3)) *
         getElementByteSize(k.getElementType());
}

//===----------------------------------------------------------------------===//
// Tiled attention traffic and the L2 (docs/attention.md, "Traffic").
//
// A tiled attention kernel streams one operand (K/V forward, Q/dO/dQ
// backward) once per block of the other. Whether those re-reads reach DRAM
// depends on the L2: the blocks of one head run together (the fastest grid
// dimension), so a re-read hits unless the re-read operand of every head
// with blocks in flight exceeds the L2. DRAM traffic = the first read of
// each byte + the re-reads times the fraction that misses.
//===----------------------------------------------------------------------===//

/// Heads a wave of `target.smCount` blocks (one block per SM, as the
/// attention kernels' shared memory and registers allow) spans when each
/// head has `blocksPerHead` consecutive blocks: a window of W blocks touches
/// at most ceil((W - 1) / b) + 1 heads.
static double headsInFlight(double blocksPerHead, double heads,
                            const GPUTarget &target) {
  double wave = std::max(1u, target.smCount);
  double spanned = std::ceil((wave - 1) / std::max(1.0, blocksPerHead)) + 1;
  return std::min(heads, spanned);
}

/// Fraction of re-reads that miss an L2 of `target.l2Bytes` when
/// `residentBytes` must stay resident: 0 while they fit, then the share that
/// does not fit.
static double l2MissFraction(double residentBytes, const GPUTarget *target) {
  double l2 = static_cast<double>(target->l2Bytes);
  if (residentBytes <= l2)
    return 0;
  return 1 - l2 / residentBytes;
}

namespace {
struct Traffic {
  double read = 0;
  double written = 0;
};
} // namespace

/// Split-KV partial results: per split, an fp32 output row and its
/// log-sum-exp, written by the splits and read by the combine. A figure,
/// like the rest of the tiled traffic, so a double.
static double splitPartialBytes(FlashAttentionOp op) {
  if (op.getNumSplits() <= 1)
    return 0;
  RankedTensorType out = op.getResult().getType();
  double rows = static_cast<double>(out.getDimSize(0)) * out.getDimSize(1) *
                out.getDimSize(2);
  return static_cast<double>(op.getNumSplits()) * rows *
         (static_cast<double>(out.getDimSize(3)) + 1) * 4;
}

/// The forward's DRAM traffic on `target` (no L2 reuse when null). Each block
/// of query rows streams the K/V blocks it sees; grouped-query heads share a
/// block's K/V tiles; the query blocks of one (batch, KV head, split) keep
/// that split's K/V range resident.
static Traffic flashAttentionTraffic(FlashAttentionOp op,
                                     const GPUTarget *target) {
  RankedTensorType q = op.getQuery().getType();
  double batchKVHeads = static_cast<double>(q.getDimSize(0)) *
                        op.getKey().getType().getDimSize(1);
  double rowBytes = kvRowBytes(op.getKey(), op.getValue());
  double streamed = batchKVHeads *
                    static_cast<double>(op.getVisibleKeyBlocksPerKVHead()) *
                    static_cast<double>(op.getBlockKv()) * rowBytes;
  double kvPerHead = op.getKey().getType().getDimSize(2) * rowBytes;
  double unique = std::min(streamed, batchKVHeads * kvPerHead);
  double splits = std::max<double>(1, op.getNumSplits());
  double kvHeads = std::max<int64_t>(1, op.getKey().getType().getDimSize(1));
  double rows =
      static_cast<double>(q.getDimSize(1)) / kvHeads * q.getDimSize(2);
  double blocksPerHead = std::ceil(rows / std::max<double>(1, op.getBlockQ()));
  double miss = 1;
  if (target)
    miss = l2MissFraction(
        headsInFlight(blocksPerHead, batchKVHeads * splits, *target) *
            kvPerHead / splits,
        target);
  Traffic traffic;
  traffic.read = static_cast<double>(getTensorByteSize(q)) + unique +
                 (streamed - unique) * miss + splitPartialBytes(op);
  if (Value mask = op.getMask())
    traffic.read += getTensorByteSize(mask.getType());
  traffic.written = static_cast<double>(memwall::detail::sumResultBytes(op)) +
                    splitPartialBytes(op);
  return traffic;
}

/// A traffic figure as an int64 count (truncated, as the model always has).
static int64_t countTraffic(double bytes) {
  return CheckedInt::fromDouble(bytes).saturated();
}

int64_t FlashAttentionOp::getBytesRead() {
  return countTraffic(flashAttentionTraffic(*this, nullptr).read);
}

int64_t FlashAttentionOp::getBytesWritten() {
  return countTraffic(flashAttentionTraffic(*this, nullptr).written);
}

static KernelWork tiledAttentionWork(Operation *op, Traffic traffic) {
  KernelWork work = attentionKernelWork(op);
  work.bytesRead = traffic.read;
  work.bytesWritten = traffic.written;
  return work;
}

KernelWork FlashAttentionOp::getKernelWork(const GPUTarget &target) {
  return tiledAttentionWork(*this, flashAttentionTraffic(*this, &target));
}

/// The backward ops' types: out and grad are the forward's result, each
/// gradient has its input's type. Returns the forward's result type.
template <typename GradOp>
static FailureOr<RankedTensorType> verifyAttentionGradTypes(GradOp op) {
  SmallVector<Type> forward;
  if (failed(AttentionOp::inferReturnTypes(
          op.getContext(), op.getLoc(),
          AttentionOp::Adaptor({op.getQuery(), op.getKey(), op.getValue()}),
          forward)))
    return failure();
  if (failed(expectType(op, op.getOut().getType(), forward[0], "out")) ||
      failed(expectType(op, op.getGrad().getType(), forward[0], "grad")) ||
      failed(expectType(op, op.getQueryGrad().getType(),
                        op.getQuery().getType(), "query gradient")) ||
      failed(expectType(op, op.getKeyGrad().getType(), op.getKey().getType(),
                        "key gradient")) ||
      failed(expectType(op, op.getValueGrad().getType(),
                        op.getValue().getType(), "value gradient")))
    return failure();
  return cast<RankedTensorType>(forward[0]);
}

//===----------------------------------------------------------------------===//
// FlashAttentionGradOp
//===----------------------------------------------------------------------===//

LogicalResult FlashAttentionGradOp::verify() {
  FailureOr<RankedTensorType> forward = verifyAttentionGradTypes(*this);
  if (failed(forward))
    return failure();
  return failure(
      failed(verifyAttentionRules(
          *this, getQuery(), getKey(), getMask(), getCausal(), getWindow(),
          getScale().convertToDouble(), forward->getElementType())) ||
      failed(
          verifyTiles(*this, getQuery(), getLse(), getBlockQ(), getBlockKv())));
}

void FlashAttentionGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getCausalAttrName(), getCausal());
}

int64_t FlashAttentionGradOp::getUnmaskedPairsPerHead() {
  return unmaskedPairs(getQuery().getType().getDimSize(2),
                       getKey().getType().getDimSize(2), getCausal(),
                       getWindow());
}

int64_t FlashAttentionGradOp::getFlops() {
  // The five matmuls of FlashAttention-2's backward (as attention_grad).
  return attentionFlops(getQuery(), getUnmaskedPairsPerHead(),
                        CheckedInt(3) * getQuery().getType().getDimSize(3) +
                            CheckedInt(2) * getValue().getType().getDimSize(3));
}

MathPrecision FlashAttentionGradOp::getMathPrecision() {
  return getContractionPrecision(getQuery().getType().getElementType());
}

/// sum over j in [0, n) of clamp(step * j - offset, 0, cap), in O(1).
static double sumClampedRamp(double n, double step, double offset, double cap) {
  if (n <= 0 || cap <= 0)
    return 0;
  // First j with step * j > offset, and first j with step * j >= offset + cap.
  double rampStart = offset < 0 ? 0 : std::floor(offset / step) + 1;
  double capStart = std::max(0.0, std::ceil((offset + cap) / step));
  double lo = std::min(rampStart, n), hi = std::min(std::max(capStart, lo), n);
  double ramp = step * (lo + hi - 1) * (hi - lo) / 2 - offset * (hi - lo);
  return ramp + cap * (n - hi);
}

/// The backward's DRAM traffic on `target` (no L2 reuse when null). FA-2's
/// backward: a pre-pass reads O and dO and writes delta = rowsum(dO * O);
/// each key block of a head reads K/V once and streams the query rows that
/// see it (causal: only those), reading Q, dO, lse, delta and read-modify-
/// writing the fp32 dQ accumulator; a post-pass converts dQ to its type.
static Traffic flashAttentionGradTraffic(FlashAttentionGradOp op,
                                         const GPUTarget *target) {
  RankedTensorType q = op.getQuery().getType();
  double heads = static_cast<double>(q.getDimSize(0)) * q.getDimSize(1);
  int64_t sq = q.getDimSize(2), sk = op.getKey().getType().getDimSize(2);
  double e = getElementByteSize(q.getElementType());
  double d = q.getDimSize(3), dv = op.getValue().getType().getDimSize(3);
  double rows = heads * sq;
  double keyBlocks = std::ceil(static_cast<double>(sk) / op.getBlockKv());
  // Query rows each head streams, summed over its key blocks.
  double visibleRows = keyBlocks * sq;
  if (op.getCausal())
    visibleRows -= sumClampedRamp(keyBlocks, op.getBlockKv(),
                                  static_cast<double>(sk - sq), sq);
  // A window hides key block j from the queries past its last key's
  // window, i > (j + 1) bkv - 1 + W - 1 - (Sk - Sq): sum over j of
  // clamp(c - bkv j, 0, Sq) with c = Sq - bkv - W + 1 + (Sk - Sq), which is
  // the ramp above read from the last block back.
  if (std::optional<uint64_t> window = op.getWindow()) {
    double bkv = op.getBlockKv();
    double c = sq - bkv - static_cast<double>(*window) + 1 + (sk - sq);
    visibleRows -=
        sumClampedRamp(keyBlocks, bkv, bkv * (keyBlocks - 1) - c, sq);
  }
  double rowRead = d * e + dv * e + 4 + 4; // Q, dO, lse, delta
  double accumulator = 4 * d;              // fp32 dQ
  double streamedRead = heads * visibleRows * (rowRead + accumulator);
  double streamedWritten = heads * visibleRows * accumulator;
  double uniqueRead = std::min(streamedRead, rows * rowRead);
  double uniqueWritten = std::min(streamedWritten, rows * accumulator);
  double miss = 1;
  if (target)
    miss = l2MissFraction(headsInFlight(keyBlocks, heads, *target) * sq *
                              (rowRead + accumulator),
                          target);
  double keyValue = getTensorByteSize(op.getKey().getType()) +
                    getTensorByteSize(op.getValue().getType());
  double prePass = rows * 2 * dv * e;
  Traffic traffic;
  traffic.read = keyValue + prePass + uniqueRead +
                 (streamedRead - uniqueRead) * miss +
                 rows * accumulator; // the post-pass
  traffic.written = static_cast<double>(memwall::detail::sumResultBytes(op)) +
                    rows * 4 /*delta*/ + uniqueWritten +
                    (streamedWritten - uniqueWritten) * miss;
  return traffic;
}

int64_t FlashAttentionGradOp::getBytesRead() {
  return countTraffic(flashAttentionGradTraffic(*this, nullptr).read);
}

int64_t FlashAttentionGradOp::getBytesWritten() {
  return countTraffic(flashAttentionGradTraffic(*this, nullptr).written);
}

KernelWork FlashAttentionGradOp::getKernelWork(const GPUTarget &target) {
  return tiledAttentionWork(*this, flashAttentionGradTraffic(*this, &target));
}

//===----------------------------------------------------------------------===//
// KVCacheAppendOp
//===----------------------------------------------------------------------===//

LogicalResult
KVCacheAppendOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  KVCacheAppendOp::Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> cache =
      getStaticTensor(loc, adaptor.getCache(), "cache");
  FailureOr<RankedTensorType> update =
      getStaticTensor(loc, adaptor.getUpdate(), "update");
  if (failed(cache) || failed(update))
    return failure();
  if (cache->getRank() != 4 || update->getRank() != 4)
    return emitOptionalError(loc, "cache and update must have rank 4 "
                                  "[B, Hkv, S, D]");
  if (cache->getElementType() != update->getElementType())
    return emitOptionalError(loc, "cache and update must have the same element "
                                  "type");
  for (int64_t dim : {0, 1, 3})
    if (cache->getDimSize(dim) != update->getDimSize(dim))
      return emitOptionalError(loc, "cache ", shapeString(cache->getShape()),
                               " and update ", shapeString(update->getShape()),
                               " must agree on every dimension but 2");
  SmallVector<int64_t> shape(cache->getShape());
  std::optional<int64_t> length =
      (CheckedInt(shape[2]) + update->getDimSize(2)).get();
  if (!length)
    return emitOptionalError(loc, "cache and update lengths add up to more "
                                  "than int64");
  shape[2] = *length;
  inferred.push_back(RankedTensorType::get(shape, cache->getElementType()));
  return success();
}

LogicalResult KVCacheAppendOp::buildVJP(VJPBuilder &, ValueRange) {
  return VJPBuilder::notDifferentiable(
      *this, "training graphs do not append to a KV cache");
}

bool KVCacheAppendOp::canAppendInPlace() {
  return (*this)->hasAttr(MemWallDialect::kInPlaceAttrName) ||
         isCacheAnArgumentOnlyItReads();
}

bool KVCacheAppendOp::isCacheAnArgumentOnlyItReads() {
  Value cache = getCache();
  if (!cache.hasOneUse())
    return false;
  auto argument = dyn_cast<BlockArgument>(cache);
  if (argument)
    if (auto fusion = dyn_cast<FusionOp>(argument.getOwner()->getParentOp())) {
      cache = fusion->getOperand(argument.getArgNumber());
      if (!cache.hasOneUse())
        return false;
      argument = dyn_cast<BlockArgument>(cache);
    }
  return argument && isa_and_nonnull<FunctionOpInterface>(
                         argument.getOwner()->getParentOp());
}

Value KVCacheAppendOp::getAliasedOperand(unsigned) {
  return getCache(); // written in place into a preallocated cache
}

// Written in place into a preallocated cache: only the new positions move.
int64_t KVCacheAppendOp::getFlops() { return 0; }

int64_t KVCacheAppendOp::getBytesRead() {
  return getTensorByteSize(getUpdate().getType());
}

int64_t KVCacheAppendOp::getBytesWritten() {
  return getTensorByteSize(getUpdate().getType());
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

void AttentionGradOp::build(OpBuilder &builder, OperationState &state,
                            AttentionOp forward, Value grad,
                            bool withMaskGrad) {
  Type maskGrad;
  if (withMaskGrad)
    maskGrad = forward.getMask().getType();
  build(builder, state, forward.getQuery().getType(),
        forward.getKey().getType(), forward.getValue().getType(), maskGrad,
        forward.getQuery(), forward.getKey(), forward.getValue(),
        forward.getResult(), grad, forward.getMask(),
        forward.getCausal() ? builder.getUnitAttr() : nullptr,
        builder.getF64FloatAttr(forward.getEffectiveScale()),
        forward.getWindowAttr());
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionGradTypes(*this)))
    return failure();
  if (Value maskGrad = getMaskGrad()) {
    if (!getMask() || !isa<FloatType>(getMask().getType().getElementType()))
      return emitOpError("has a mask gradient but no floating-point mask");
    if (failed(expectType(*this, maskGrad.getType(), getMask().getType(),
                          "mask gradient")))
      return failure();
  }
  return verifyAttentionRules(
      *this, getQuery(), getKey(), getMask(), getCausal(), getWindow(),
      getScale().convertToDouble(), getOut().getType().getElementType());
}

void AttentionGradOp::getReferenceAttrs(NamedAttrList &attrs) {
  setFlag(attrs, getCausalAttrName(), getCausal());
}

int64_t AttentionGradOp::getUnmaskedPairsPerHead() {
  return unmaskedPairs(getQuery().getType().getDimSize(2),
                       getKey().getType().getDimSize(2), getCausal(),
                       getWindow());
}

int64_t AttentionGradOp::getFlops() {
  // FlashAttention-2's backward: recompute S = Q K^T (D), dV = P^T dO (Dv),
  // dP = dO V^T (Dv), dQ = dS K (D), dK = dS^T Q (D), 2 FLOPs a pair each;
  // 2.5x the forward's matmul work for D = Dv.
  return attentionFlops(getQuery(), getUnmaskedPairsPerHead(),
                        CheckedInt(3) * getQuery().getType().getDimSize(3) +
                            CheckedInt(2) * getValue().getType().getDimSize(3));
}

MathPrecision AttentionGradOp::getMathPrecision() {
  return getContractionPrecision(getQuery().getType().getElementType());
}

KernelWork AttentionGradOp::getKernelWork(const GPUTarget &) {
  return attentionKernelWork(*this);
}

/// Untiled, the backward writes P and dS and reads each twice (as the
/// forward does with the scores).
static CheckedInt attentionGradScoreBytes(AttentionGradOp op) {
  return scoreBytes(op.getQuery(), op.getKey(),
                    op.getQuery().getType().getElementType());
}

// Untiled, P and dS are held while the backward runs.
int64_t AttentionGradOp::getWorkspaceBytes() {
  return (CheckedInt(2) * attentionGradScoreBytes(*this)).saturated();
}

int64_t AttentionGradOp::getBytesRead() {
  return plusScoreTraffic(detail::sumOperandBytes(*this), 4,
                          attentionGradScoreBytes(*this));
}

int64_t AttentionGradOp::getBytesWritten() {
  return plusScoreTraffic(detail::sumResultBytes(*this), 2,
                          attentionGradScoreBytes(*this));
}
