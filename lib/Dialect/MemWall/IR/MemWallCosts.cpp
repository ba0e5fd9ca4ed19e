//===- MemWallCosts.cpp - CostOpInterface implementations -----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// FLOP and byte counts of every memwall op. The per-element counts and their
// reasoning are documented in docs/cost-model.md; keep the two in sync.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace memwall;

KernelWork memwall::detail::defaultKernelWork(Operation *op) {
  auto cost = cast<CostOpInterface>(op);
  KernelWork work;
  work.flops = static_cast<double>(cost.getFlops());
  work.bytesRead = static_cast<double>(cost.getBytesRead());
  work.bytesWritten = static_cast<double>(cost.getBytesWritten());
  work.precision = cost.getMathPrecision();
  work.launchesKernel = cost.launchesKernel();
  return work;
}

/// A fused attention kernel (FlashAttention-class) on the tensor cores.
static KernelWork attentionKernelWork(Operation *op) {
  KernelWork work = memwall::detail::defaultKernelWork(op);
  work.unit = ComputeUnit::Attention;
  return work;
}

// Counts are CheckedInt until they are returned: kUncountable when they do
// not fit int64 (the op verifiers reject those), never a wrapped number.

/// Elements of the op's (single) result.
static CheckedInt resultElements(Operation *op) {
  return countElements(op->getResult(0).getType());
}

/// Rows of length `rowLength` in a tensor of `elements` elements (none when
/// the rows are empty).
static CheckedInt numRows(CheckedInt elements, int64_t rowLength) {
  std::optional<int64_t> count = elements.get();
  if (!count)
    return elements;
  return rowLength <= 0 ? 0 : *count / rowLength;
}

/// `perElement` FLOPs for each element of the op's result.
static int64_t flopsPerResultElement(Operation *op, int64_t perElement) {
  return (CheckedInt(perElement) * resultElements(op)).saturated();
}

//===----------------------------------------------------------------------===//
// Elementwise: a fixed number of FLOPs per result element.
//===----------------------------------------------------------------------===//

// One add / subtract / multiply / divide / compare per element.
int64_t AddOp::getFlops() { return flopsPerResultElement(*this, 1); }
int64_t SubOp::getFlops() { return flopsPerResultElement(*this, 1); }
int64_t MulOp::getFlops() { return flopsPerResultElement(*this, 1); }
int64_t DivOp::getFlops() { return flopsPerResultElement(*this, 1); }
int64_t ScaleOp::getFlops() { return flopsPerResultElement(*this, 1); }
int64_t ReluOp::getFlops() { return flopsPerResultElement(*this, 1); }
// tanh counts as one transcendental.
int64_t TanhOp::getFlops() { return flopsPerResultElement(*this, 1); }
// Conversion: one per element. A dequantize at use runs inside the GEMM
// that reads it (the matmul is charged the quantized bytes): no kernel, no
// traffic, and its multiply by the scale is not counted, as the softmax of
// attention is not.
int64_t CastOp::getFlops() {
  return isDequantizeAtUse(*this) ? 0 : flopsPerResultElement(*this, 1);
}
int64_t CastOp::getBytesRead() {
  return isDequantizeAtUse(*this) ? 0 : memwall::detail::sumOperandBytes(*this);
}
int64_t CastOp::getBytesWritten() {
  return isDequantizeAtUse(*this) ? 0 : memwall::detail::sumResultBytes(*this);
}
bool CastOp::launchesKernel() { return !isDequantizeAtUse(*this); }

// x / (1 + exp(-x)): negate, exp, add, divide.
static constexpr int64_t kSiluFlopsPerElement = 4;
int64_t SiluOp::getFlops() {
  return flopsPerResultElement(*this, kSiluFlopsPerElement);
}

// silu(gate) * up.
int64_t SwigluOp::getFlops() {
  return flopsPerResultElement(*this, kSiluFlopsPerElement + 1);
}

int64_t GeluOp::getFlops() {
  // erf:  0.5 * x * (1 + erf(x * 1/sqrt(2)))       -> mul, erf, add, mul, mul
  // tanh: 0.5 * x * (1 + tanh(k * (x + c * x^3)))  -> 2 mul (x^3), mul c,
  //       add x, mul k, tanh, add 1, mul x, mul 0.5
  int64_t perElement = getApproximation() == GeluApproximation::Tanh ? 9 : 5;
  return flopsPerResultElement(*this, perElement);
}

// Compare against the threshold, select, rescale by 1/(1-rate). The
// counter-based random bits are integer work and not counted.
int64_t DropoutOp::getFlops() { return flopsPerResultElement(*this, 3); }

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

/// FLOPs of a row op: `perElement` per element and `perRow` per row of the
/// last dimension of `input`.
static int64_t rowOpFlops(Value input, int64_t perElement, int64_t perRow) {
  auto type = cast<RankedTensorType>(input.getType());
  CheckedInt elements = countElements(type);
  CheckedInt rows =
      numRows(elements, type.getRank() > 0 ? type.getShape().back() : 1);
  return (CheckedInt(perElement) * elements + CheckedInt(perRow) * rows)
      .saturated();
}

int64_t LayerNormOp::getFlops() {
  // Per row of D: mean (D adds + 1 div), center (D subs), variance (D squares
  // + D adds + 1 div), rstd (add eps + rsqrt = 2), normalize (D muls),
  // weight (D muls), bias (D adds): 6D + 4, plus D with bias.
  return rowOpFlops(getInput(), getBias() ? 7 : 6, 4);
}

int64_t RmsNormOp::getFlops() {
  // Per row of D: squares (D), sum (D), div (1), add eps (1), rsqrt (1),
  // normalize (D), weight (D): 4D + 3.
  return rowOpFlops(getInput(), 4, 3);
}

int64_t SoftmaxOp::getFlops() {
  RankedTensorType type = getInput().getType();
  // I64Attr getters return uint64_t: reinterpret before normalizing.
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0)
    axis += type.getRank();
  CheckedInt elements = countElements(type);
  CheckedInt rows = numRows(elements, type.getDimSize(axis));
  // Per row of L: max (L), subtract (L), exp (L), sum (L), one reciprocal,
  // scale (L): 5L + 1.
  return (CheckedInt(5) * elements + rows).saturated();
}

int64_t ReduceOp::getFlops() {
  CheckedInt inputElements = countElements(getInput().getType());
  // One combine per input element; mean adds a division per output.
  if (getKind() == ReduceKind::Mean)
    return (inputElements + resultElements(*this)).saturated();
  return inputElements.saturated();
}

int64_t CrossEntropyOp::getFlops() {
  RankedTensorType logits = getLogits().getType();
  int64_t classes = logits.getShape().back();
  CheckedInt positions = numRows(countElements(logits), classes);
  // Per position: log-sum-exp (max V, subtract V, exp V, sum V, log 1, add
  // back the max 1) and the loss lse - logit[label] (1): 4V + 3.
  CheckedInt flops = positions * (CheckedInt(4) * classes + 3);
  switch (getReduction()) {
  case LossReduction::Mean:
    return (flops + positions + 1).saturated(); // sum, then one division
  case LossReduction::Sum:
    return (flops + positions).saturated();
  case LossReduction::None:
    return flops.saturated();
  }
  llvm_unreachable("unknown loss reduction");
}

//===----------------------------------------------------------------------===//
// Position embeddings and gathers
//===----------------------------------------------------------------------===//

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

// A gather computes nothing and reads only the rows it selects.
int64_t EmbeddingOp::getFlops() { return 0; }
int64_t EmbeddingOp::getBytesRead() {
  return (countTensorBytes(getIndices().getType()) +
          countTensorBytes(getResult().getType()))
      .saturated();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

int64_t MatmulOp::getFlops() {
  Dims dims = getDims();
  CheckedInt outputs = CheckedInt(dims.batch) * dims.m * dims.n;
  CheckedInt flops = CheckedInt(2) * outputs * dims.k;
  if (getBias())
    flops += outputs;
  return flops.saturated();
}

// Each operand once (a broadcast weight too); a dequantized-at-use weight at
// its quantized size plus scales.
int64_t MatmulOp::getBytesRead() {
  CheckedInt bytes = 0;
  for (Value operand : getOperation()->getOperands())
    bytes += CheckedInt::fromSaturated(getGemmOperandBytes(operand));
  return bytes.saturated();
}

MathPrecision MatmulOp::getMathPrecision() {
  return getContractionPrecision(getLhs().getType().getElementType());
}

KernelWork MatmulOp::getKernelWork(const GPUTarget &) {
  KernelWork work = memwall::detail::defaultKernelWork(*this);
  work.unit = ComputeUnit::Gemm;
  Dims dims = getDims();
  work.gemmShape = classifyGemm(dims.batch, dims.m, dims.n, dims.k);
  return work;
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
  double spanned =
      std::ceil((wave - 1) / std::max(1.0, blocksPerHead)) + 1;
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
    miss = l2MissFraction(headsInFlight(blocksPerHead, batchKVHeads * splits,
                                        *target) *
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

/// sum over j in [0, n) of clamp(step * j - offset, 0, cap), in O(1).
static double sumClampedRamp(double n, double step, double offset,
                             double cap) {
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

static KernelWork tiledAttentionWork(Operation *op, Traffic traffic) {
  KernelWork work = attentionKernelWork(op);
  work.bytesRead = traffic.read;
  work.bytesWritten = traffic.written;
  return work;
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

KernelWork FlashAttentionOp::getKernelWork(const GPUTarget &target) {
  return tiledAttentionWork(*this, flashAttentionTraffic(*this, &target));
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
// Data movement
//===----------------------------------------------------------------------===//

// A reshape of a contiguous tensor is a view: no kernel, no traffic.
int64_t ReshapeOp::getFlops() { return 0; }
int64_t ReshapeOp::getBytesRead() { return 0; }
int64_t ReshapeOp::getBytesWritten() { return 0; }
bool ReshapeOp::launchesKernel() { return false; }

int64_t TransposeOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }

// A slice reads only the elements it selects.
int64_t SliceOp::getFlops() { return 0; }
int64_t SliceOp::getBytesRead() {
  return getTensorByteSize(getResult().getType());
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
// Training: vector-Jacobian products and the optimizer
//===----------------------------------------------------------------------===//

int64_t ActivationGradOp::getFlops() {
  // dy * f'(x). f'(x) per element: gelu erf = Phi(x) + x * phi(x) (erf, exp
  // and 7 mul/add); gelu tanh = the forward's 9 plus the sech^2 chain (7);
  // silu = sigma (3) and sigma * (1 + x * (1 - sigma)) (4); relu = compare
  // and select; tanh = tanh, square, subtract. Plus the multiply by dy.
  int64_t perElement = 0;
  switch (getActivation()) {
  case ActivationKind::GeluErf:
    perElement = 9;
    break;
  case ActivationKind::GeluTanh:
    perElement = 16;
    break;
  case ActivationKind::Silu:
    perElement = 7;
    break;
  case ActivationKind::Relu:
    perElement = 2;
    break;
  case ActivationKind::Tanh:
    perElement = 3;
    break;
  }
  return flopsPerResultElement(*this, perElement + 1);
}

int64_t LayerNormGradOp::getFlops() {
  // Recompute mean/rstd and xhat (4 per element + 4 per row), g = dy * w
  // (1), the two row means of g and g * xhat (3), dx = rstd * (g - mean(g) -
  // xhat * mean(g xhat)) (4), dweight += dy * xhat (2), dbias += dy (1).
  return rowOpFlops(getInput(), getHasBias() ? 14 : 13, 6);
}

int64_t RmsNormGradOp::getFlops() {
  // Recompute r (2 per element + 3 per row), g = dy * w (1), mean(g * x)
  // (2), dx = r * g - x * r^3 * mean (3), dweight += dy * x * r (3).
  return rowOpFlops(getInput(), 11, 5);
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

int64_t AttentionGradOp::getBytesRead() {
  return plusScoreTraffic(detail::sumOperandBytes(*this), 4,
                          attentionGradScoreBytes(*this));
}

int64_t AttentionGradOp::getBytesWritten() {
  return plusScoreTraffic(detail::sumResultBytes(*this), 2,
                          attentionGradScoreBytes(*this));
}

// One add per gradient element scattered into the table.
int64_t EmbeddingGradOp::getFlops() {
  return getNumElements(getGrad().getType());
}

int64_t CrossEntropyGradOp::getFlops() {
  RankedTensorType logits = getLogits().getType();
  int64_t classes = logits.getShape().back();
  CheckedInt positions = numRows(countElements(logits), classes);
  // Softmax recomputed (max, subtract, exp, sum: 4V + 1 per position), then
  // divide, subtract the one-hot and scale by dloss (3V).
  return (positions * (CheckedInt(7) * classes + 1)).saturated();
}

// Pure data movement.
int64_t BroadcastOp::getFlops() { return 0; }
int64_t PadOp::getFlops() { return 0; }

int64_t AdamWOp::getFlops() {
  // Decay (2), m (3), v (4), bias corrections (2), sqrt, add eps, divide,
  // multiply by lr, subtract (5): 16 per parameter, as fused optimizers do.
  return (CheckedInt(16) * countElements(getParam().getType())).saturated();
}
