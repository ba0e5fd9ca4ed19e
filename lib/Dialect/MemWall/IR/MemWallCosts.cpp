//===- MemWallCosts.cpp - CostOpInterface implementations -----------------===//
//
// FLOP and byte counts of every memwall op. The per-element counts and their
// reasoning are documented in docs/cost-model.md; keep the two in sync.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"

using namespace mlir;
using namespace memwall;

/// Elements of the op's (single) result.
static int64_t resultElements(Operation *op) {
  return getNumElements(op->getResult(0).getType());
}

/// Rows of length `rowLength` in a tensor of `elements` elements.
static int64_t numRows(int64_t elements, int64_t rowLength) {
  return rowLength == 0 ? 0 : elements / rowLength;
}

//===----------------------------------------------------------------------===//
// Elementwise: a fixed number of FLOPs per result element.
//===----------------------------------------------------------------------===//

// One add / subtract / multiply / divide / compare per element.
int64_t AddOp::getFlops() { return resultElements(*this); }
int64_t SubOp::getFlops() { return resultElements(*this); }
int64_t MulOp::getFlops() { return resultElements(*this); }
int64_t DivOp::getFlops() { return resultElements(*this); }
int64_t ScaleOp::getFlops() { return resultElements(*this); }
int64_t ReluOp::getFlops() { return resultElements(*this); }
// tanh counts as one transcendental.
int64_t TanhOp::getFlops() { return resultElements(*this); }
// Conversion: one per element.
int64_t CastOp::getFlops() { return resultElements(*this); }

// x / (1 + exp(-x)): negate, exp, add, divide.
static constexpr int64_t kSiluFlopsPerElement = 4;
int64_t SiluOp::getFlops() {
  return kSiluFlopsPerElement * resultElements(*this);
}

// silu(gate) * up.
int64_t SwigluOp::getFlops() {
  return (kSiluFlopsPerElement + 1) * resultElements(*this);
}

int64_t GeluOp::getFlops() {
  // erf:  0.5 * x * (1 + erf(x * 1/sqrt(2)))       -> mul, erf, add, mul, mul
  // tanh: 0.5 * x * (1 + tanh(k * (x + c * x^3)))  -> 2 mul (x^3), mul c,
  //       add x, mul k, tanh, add 1, mul x, mul 0.5
  int64_t perElement = getApproximation() == GeluApproximation::Tanh ? 9 : 5;
  return perElement * resultElements(*this);
}

// Compare against the threshold, select, rescale by 1/(1-rate). The
// counter-based random bits are integer work and not counted.
int64_t DropoutOp::getFlops() { return 3 * resultElements(*this); }

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

int64_t LayerNormOp::getFlops() {
  int64_t elements = resultElements(*this);
  int64_t rows = numRows(elements, getInput().getType().getShape().back());
  // Per row of D: mean (D adds + 1 div), center (D subs), variance (D squares
  // + D adds + 1 div), rstd (add eps + rsqrt = 2), normalize (D muls),
  // weight (D muls), bias (D adds): 6D + 4, plus D with bias.
  int64_t perElement = getBias() ? 7 : 6;
  return perElement * elements + 4 * rows;
}

int64_t RmsNormOp::getFlops() {
  int64_t elements = resultElements(*this);
  int64_t rows = numRows(elements, getInput().getType().getShape().back());
  // Per row of D: squares (D), sum (D), div (1), add eps (1), rsqrt (1),
  // normalize (D), weight (D): 4D + 3.
  return 4 * elements + 3 * rows;
}

int64_t SoftmaxOp::getFlops() {
  RankedTensorType type = getInput().getType();
  // I64Attr getters return uint64_t: reinterpret before normalizing.
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0)
    axis += type.getRank();
  int64_t elements = type.getNumElements();
  int64_t rows = numRows(elements, type.getDimSize(axis));
  // Per row of L: max (L), subtract (L), exp (L), sum (L), one reciprocal,
  // scale (L): 5L + 1.
  return 5 * elements + rows;
}

int64_t ReduceOp::getFlops() {
  int64_t inputElements = getInput().getType().getNumElements();
  // One combine per input element; mean adds a division per output.
  if (getKind() == ReduceKind::Mean)
    return inputElements + resultElements(*this);
  return inputElements;
}

int64_t CrossEntropyOp::getFlops() {
  RankedTensorType logits = getLogits().getType();
  int64_t classes = logits.getShape().back();
  int64_t positions = numRows(logits.getNumElements(), classes);
  // Per position: log-sum-exp (max V, subtract V, exp V, sum V, log 1, add
  // back the max 1) and the loss lse - logit[label] (1): 4V + 3.
  int64_t flops = positions * (4 * classes + 3);
  switch (getReduction()) {
  case LossReduction::Mean:
    return flops + positions + 1; // sum, then one division
  case LossReduction::Sum:
    return flops + positions;
  case LossReduction::None:
    return flops;
  }
  llvm_unreachable("unknown loss reduction");
}

//===----------------------------------------------------------------------===//
// Position embeddings and gathers
//===----------------------------------------------------------------------===//

int64_t RopeOp::getFlops() {
  int64_t headDim = getInput().getType().getShape().back();
  int64_t positions = getPositions().getType().getNumElements();
  // Frequencies theta^(-2i/D): one pow per pair index (D/2). Angles: for each
  // position and pair, one multiply plus a sin and a cos (3 * P * D/2).
  // Rotation: x * cos + rotate_half(x) * sin per element (3 * N).
  return headDim / 2 + 3 * positions * (headDim / 2) +
         3 * resultElements(*this);
}

// A gather computes nothing and reads only the rows it selects.
int64_t EmbeddingOp::getFlops() { return 0; }
int64_t EmbeddingOp::getBytesRead() {
  return getTensorByteSize(getIndices().getType()) +
         getTensorByteSize(getResult().getType());
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

int64_t MatmulOp::getFlops() {
  Dims dims = getDims();
  int64_t flops = 2 * dims.batch * dims.m * dims.n * dims.k;
  if (getBias())
    flops += dims.batch * dims.m * dims.n;
  return flops;
}

MathPrecision MatmulOp::getMathPrecision() {
  return getContractionPrecision(getLhs().getType().getElementType());
}

int64_t AttentionOp::getFlops() {
  RankedTensorType q = getQuery().getType();
  int64_t batchHeads = q.getDimSize(0) * q.getDimSize(1);
  int64_t headDim = q.getDimSize(3);
  int64_t valueDim = getValue().getType().getDimSize(3);
  // Q K^T and P V over the unmasked pairs only (FlashAttention's convention:
  // 4 * B * H * Sq * Sk * D, halved by a causal mask). The softmax itself
  // (about 5 / (4D) of that) is not counted.
  return 2 * batchHeads * getUnmaskedPairsPerHead() * (headDim + valueDim);
}

MathPrecision AttentionOp::getMathPrecision() {
  return getContractionPrecision(getQuery().getType().getElementType());
}

/// Bytes of the Sq x Sk score matrix of all heads, as naive (untiled)
/// attention materializes it: written by Q K^T, read and rewritten by the
/// softmax, read by P V.
static int64_t attentionScoreBytes(AttentionOp op) {
  RankedTensorType q = op.getQuery().getType();
  int64_t scores = q.getDimSize(0) * q.getDimSize(1) * q.getDimSize(2) *
                   op.getKey().getType().getDimSize(2);
  return scores * getElementByteSize(op.getResult().getType().getElementType());
}

int64_t AttentionOp::getBytesRead() {
  return detail::sumOperandBytes(*this) + 2 * attentionScoreBytes(*this);
}

int64_t AttentionOp::getBytesWritten() {
  return detail::sumResultBytes(*this) + 2 * attentionScoreBytes(*this);
}

int64_t FlashAttentionOp::getFlops() {
  RankedTensorType q = getQuery().getType();
  int64_t batchHeads = q.getDimSize(0) * q.getDimSize(1);
  // As attention: Q K^T and P V over the unmasked pairs.
  return 2 * batchHeads * getUnmaskedPairsPerHead() *
         (q.getDimSize(3) + getValue().getType().getDimSize(3));
}

MathPrecision FlashAttentionOp::getMathPrecision() {
  return getContractionPrecision(getQuery().getType().getElementType());
}

/// Bytes of `rows` rows of K and V tiles of `op`'s key/value heads.
static int64_t kvRowBytes(Value key, Value value) {
  auto k = cast<RankedTensorType>(key.getType());
  auto v = cast<RankedTensorType>(value.getType());
  return (k.getDimSize(3) + v.getDimSize(3)) *
         getElementByteSize(k.getElementType());
}

/// Split-KV partial results: per split, an fp32 output row and its
/// log-sum-exp, written by the splits and read by the combine.
static int64_t splitPartialBytes(FlashAttentionOp op) {
  if (op.getNumSplits() <= 1)
    return 0;
  RankedTensorType out = op.getResult().getType();
  int64_t rows = out.getDimSize(0) * out.getDimSize(1) * out.getDimSize(2);
  return op.getNumSplits() * rows * (out.getDimSize(3) + 1) * 4;
}

int64_t FlashAttentionOp::getBytesRead() {
  RankedTensorType q = getQuery().getType();
  int64_t batchKVHeads = q.getDimSize(0) * getKey().getType().getDimSize(1);
  // Each block of query rows streams the K/V blocks it sees; grouped-query
  // heads share a block's K/V tiles. Q and the mask are read once.
  int64_t kvBytes = batchKVHeads * getVisibleKeyBlocksPerKVHead() *
                    getBlockKv() * kvRowBytes(getKey(), getValue());
  int64_t bytes = getNumElements(q) * getElementByteSize(q.getElementType()) +
                  kvBytes + splitPartialBytes(*this);
  if (Value mask = getMask())
    bytes += getTensorByteSize(mask.getType());
  return bytes;
}

int64_t FlashAttentionOp::getBytesWritten() {
  return detail::sumResultBytes(*this) + splitPartialBytes(*this);
}

int64_t FlashAttentionGradOp::getFlops() {
  RankedTensorType q = getQuery().getType();
  int64_t batchHeads = q.getDimSize(0) * q.getDimSize(1);
  // The five matmuls of FlashAttention-2's backward (as attention_grad).
  return 2 * batchHeads * getUnmaskedPairsPerHead() *
         (3 * q.getDimSize(3) + 2 * getValue().getType().getDimSize(3));
}

MathPrecision FlashAttentionGradOp::getMathPrecision() {
  return getContractionPrecision(getQuery().getType().getElementType());
}

/// Key blocks of one head: each streams every query block it is visible to.
static int64_t queryPassesPerHead(FlashAttentionGradOp op) {
  int64_t sk = op.getKey().getType().getDimSize(2);
  return (sk + op.getBlockKv() - 1) / op.getBlockKv();
}

int64_t FlashAttentionGradOp::getBytesRead() {
  RankedTensorType q = getQuery().getType();
  int64_t rows = q.getDimSize(0) * q.getDimSize(1) * q.getDimSize(2);
  int64_t e = getElementByteSize(q.getElementType());
  int64_t dv = getValue().getType().getDimSize(3);
  // K and V once; per key block, the query rows' Q, dO, lse and
  // rowsum(dO * O) (computed by a pre-pass reading O and dO), and the fp32
  // dQ accumulator read back (FlashAttention-2 accumulates dQ atomically).
  int64_t perPass =
      rows * (q.getDimSize(3) * e + dv * e + 4 + 4 + q.getDimSize(3) * 4);
  int64_t prePass = rows * 2 * dv * e;
  int64_t kv = getNumElements(getKey().getType()) * e +
               getNumElements(getValue().getType()) * e;
  return kv + prePass + queryPassesPerHead(*this) * perPass;
}

int64_t FlashAttentionGradOp::getBytesWritten() {
  RankedTensorType q = getQuery().getType();
  int64_t rows = q.getDimSize(0) * q.getDimSize(1) * q.getDimSize(2);
  // dK, dV and the final dQ, plus the fp32 dQ accumulator per key block.
  return detail::sumResultBytes(*this) + rows * 4 /*rowsum*/ +
         queryPassesPerHead(*this) * rows * q.getDimSize(3) * 4;
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
  return (perElement + 1) * resultElements(*this);
}

int64_t LayerNormGradOp::getFlops() {
  int64_t elements = getNumElements(getInput().getType());
  int64_t rows = numRows(elements, getInput().getType().getShape().back());
  // Recompute mean/rstd and xhat (4 per element + 4 per row), g = dy * w
  // (1), the two row means of g and g * xhat (3), dx = rstd * (g - mean(g) -
  // xhat * mean(g xhat)) (4), dweight += dy * xhat (2), dbias += dy (1).
  return (getHasBias() ? 14 : 13) * elements + 6 * rows;
}

int64_t RmsNormGradOp::getFlops() {
  int64_t elements = getNumElements(getInput().getType());
  int64_t rows = numRows(elements, getInput().getType().getShape().back());
  // Recompute r (2 per element + 3 per row), g = dy * w (1), mean(g * x)
  // (2), dx = r * g - x * r^3 * mean (3), dweight += dy * x * r (3).
  return 11 * elements + 5 * rows;
}

int64_t AttentionGradOp::getFlops() {
  RankedTensorType q = getQuery().getType();
  int64_t batchHeads = q.getDimSize(0) * q.getDimSize(1);
  int64_t headDim = q.getDimSize(3);
  int64_t valueDim = getValue().getType().getDimSize(3);
  // FlashAttention-2's backward: recompute S = Q K^T (D), dV = P^T dO (Dv),
  // dP = dO V^T (Dv), dQ = dS K (D), dK = dS^T Q (D), 2 FLOPs a pair each;
  // 2.5x the forward's matmul work for D = Dv.
  return 2 * batchHeads * getUnmaskedPairsPerHead() *
         (3 * headDim + 2 * valueDim);
}

MathPrecision AttentionGradOp::getMathPrecision() {
  return getContractionPrecision(getQuery().getType().getElementType());
}

/// Untiled, the backward writes P and dS and reads each twice (as the
/// forward does with the scores).
static int64_t attentionGradScoreBytes(AttentionGradOp op) {
  RankedTensorType q = op.getQuery().getType();
  int64_t scores = q.getDimSize(0) * q.getDimSize(1) * q.getDimSize(2) *
                   op.getKey().getType().getDimSize(2);
  return scores * getElementByteSize(q.getElementType());
}

int64_t AttentionGradOp::getBytesRead() {
  return detail::sumOperandBytes(*this) + 4 * attentionGradScoreBytes(*this);
}

int64_t AttentionGradOp::getBytesWritten() {
  return detail::sumResultBytes(*this) + 2 * attentionGradScoreBytes(*this);
}

// One add per gradient element scattered into the table.
int64_t EmbeddingGradOp::getFlops() {
  return getNumElements(getGrad().getType());
}

int64_t CrossEntropyGradOp::getFlops() {
  RankedTensorType logits = getLogits().getType();
  int64_t classes = logits.getShape().back();
  int64_t positions = numRows(logits.getNumElements(), classes);
  // Softmax recomputed (max, subtract, exp, sum: 4V + 1 per position), then
  // divide, subtract the one-hot and scale by dloss (3V).
  return positions * (7 * classes + 1);
}

// Pure data movement.
int64_t BroadcastOp::getFlops() { return 0; }
int64_t PadOp::getFlops() { return 0; }

int64_t AdamWOp::getFlops() {
  // Decay (2), m (3), v (4), bias corrections (2), sqrt, add eps, divide,
  // multiply by lr, subtract (5): 16 per parameter, as fused optimizers do.
  return 16 * getNumElements(getParam().getType());
}
