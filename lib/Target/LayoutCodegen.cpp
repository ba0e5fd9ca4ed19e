//===- LayoutCodegen.cpp - data-movement kernels --------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "LayoutCodegen.h"
#include "KernelBuilding.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>

using namespace mlir;
using namespace memwall;

namespace {
/// Input flat index = base + Σ index[i] · coefficients[i] over the output's
/// multi-index: what transpose and slice read.
struct AffineGather {
  int64_t base = 0;
  SmallVector<int64_t> coefficients;
};

std::optional<AffineGather> affineGatherOf(Operation *op) {
  auto inputShape =
      cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
  SmallVector<int64_t> inputStrides = computeStrides(inputShape);
  AffineGather gather;
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    for (int64_t dim : transpose.getPermutation())
      gather.coefficients.push_back(inputStrides[dim]);
    return gather;
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    for (auto [i, offset] : llvm::enumerate(slice.getOffsets())) {
      int64_t stride = slice.getStrides() ? (*slice.getStrides())[i] : 1;
      gather.base += offset * inputStrides[i];
      gather.coefficients.push_back(stride * inputStrides[i]);
    }
    return gather;
  }
  return std::nullopt;
}

RankedTensorType resultType(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType());
}
} // namespace

bool memwall::isLayoutOp(Operation *op) {
  return isa<TransposeOp, SliceOp, EmbeddingOp, RopeOp, KVCacheAppendOp>(op);
}

LayoutKernelPlan memwall::planLayoutKernel(Operation *op) {
  RankedTensorType result = resultType(op);
  ArrayRef<int64_t> shape = result.getShape();
  int64_t elementBytes =
      std::max<int64_t>(1, result.getElementTypeBitWidth() / 8);
  int64_t inner = shape.empty() ? 1 : shape.back();
  LayoutKernelPlan plan;
  // 16-byte vectors when the innermost output run is contiguous in the
  // input and every vector starts aligned.
  int64_t width = 16 / elementBytes;
  auto fits = [&](int64_t w) {
    if (inner % w != 0)
      return false;
    if (std::optional<AffineGather> gather = affineGatherOf(op)) {
      if (gather->coefficients.back() != 1 || gather->base % w != 0)
        return false;
      return llvm::all_of(ArrayRef(gather->coefficients).drop_back(),
                          [&](int64_t c) { return c % w == 0; });
    }
    // embedding and kv_cache_append copy whole rows of `inner` elements;
    // rope reads and writes runs of pairs within a head's halves.
    if (isa<RopeOp>(op))
      return (inner / 2) % w == 0;
    return isa<EmbeddingOp, KVCacheAppendOp>(op);
  };
  while (width > 1 && !fits(width))
    width /= 2;
  plan.width = width;
  int64_t vectors = result.getNumElements() / width;
  if (isa<RopeOp>(op)) {
    // A thread rotates `width` pairs of up to 4 heads at one position: one
    // sine and cosine per pair serve every head (and both halves).
    int64_t heads = shape[1];
    plan.heads = heads % 4 == 0 ? 4 : heads % 2 == 0 ? 2 : 1;
    vectors = result.getNumElements() / (2 * width * plan.heads);
  }
  plan.threads = std::min<int64_t>(256, std::max<int64_t>(32, vectors));
  plan.grid = {static_cast<int64_t>(llvm::divideCeil(vectors, plan.threads)), 1,
               1};
  return plan;
}

namespace {
class LayoutKernelBuilder {
public:
  LayoutKernelBuilder(gpu::GPUModuleOp gpuModule, Operation *op,
                      const LayoutKernelPlan &plan)
      : b(op->getLoc(), gpuModule.getContext()), op(op), plan(plan) {
    b.setInsertionPointToEnd(gpuModule.getBody());
  }

  gpu::GPUFuncOp build(StringRef name) {
    SmallVector<Type> params;
    for (Value value : op->getOperands())
      params.push_back(flatMemRefType(value));
    params.push_back(flatMemRefType(op->getResult(0)));
    gpu::GPUFuncOp func = createKernel(b, name, params, plan.threads);
    Block &entry = func.getBody().front();
    if (auto rope = dyn_cast<RopeOp>(op)) {
      buildRope(rope, entry);
      return func;
    }
    RankedTensorType result = resultType(op);
    int64_t vectors = result.getNumElements() / plan.width;
    Value vector = arith::AddIOp::create(
        b,
        arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                              idx(plan.threads)),
        gpu::ThreadIdOp::create(b, gpu::Dimension::x));
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, vector,
                                          idx(vectors));
    auto guard = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
    Value outFlat = arith::MulIOp::create(b, vector, idx(plan.width));
    Value out = entry.getArgument(op->getNumOperands());
    Value input = entry.getArgument(0);
    Value value;
    if (std::optional<AffineGather> gather = affineGatherOf(op)) {
      Value at = idx(gather->base);
      SmallVector<Value> index = multiIndex(outFlat, result.getShape());
      for (auto [i, coefficient] : llvm::enumerate(gather->coefficients))
        if (result.getDimSize(i) > 1)
          at = arith::AddIOp::create(
              b, at, arith::MulIOp::create(b, index[i], idx(coefficient)));
      value = load(input, at);
    } else if (isa<EmbeddingOp>(op)) {
      int64_t rowLength = result.getShape().back();
      Value row = arith::DivUIOp::create(b, outFlat, idx(rowLength));
      Value column = arith::RemUIOp::create(b, outFlat, idx(rowLength));
      Value id =
          memref::LoadOp::create(b, entry.getArgument(1), ValueRange{row});
      id = arith::IndexCastOp::create(b, b.getIndexType(), id);
      value = load(
          input, arith::AddIOp::create(
                     b, arith::MulIOp::create(b, id, idx(rowLength)), column));
    } else {
      value = appendRows(cast<KVCacheAppendOp>(op), input, entry.getArgument(1),
                         outFlat);
    }
    if (plan.width == 1)
      memref::StoreOp::create(b, value, out, ValueRange{outFlat});
    else
      alignedVectorStore(b, value, out, outFlat);
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b);
    return func;
  }

private:
  Value idx(int64_t value) { return indexConstant(b, value); }
  Value f32(double value) { return f32Constant(b, value); }

  /// The multi-index of flat element `flat` of `shape`.
  SmallVector<Value> multiIndex(Value flat, ArrayRef<int64_t> shape) {
    SmallVector<Value> index(shape.size());
    for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
      if (shape[i] == 1) {
        index[i] = idx(0);
        continue;
      }
      index[i] = i == 0 ? flat : arith::RemUIOp::create(b, flat, idx(shape[i]));
      if (i > 0)
        flat = arith::DivUIOp::create(b, flat, idx(shape[i]));
    }
    return index;
  }

  /// `plan.width` elements of `memref` from `at` (a scalar when 1).
  Value load(Value memref, Value at) {
    if (plan.width == 1)
      return memref::LoadOp::create(b, memref, ValueRange{at});
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    return alignedVectorLoad(b, VectorType::get({plan.width}, element), memref,
                             at);
  }

  /// kv_cache_append as the concat it is: rows s < L of each (batch, head)
  /// from the cache, the rest from the update. (A serving system writes the
  /// new rows into a preallocated cache in place; the bundle has no such
  /// buffer yet, so the step copies the cache.)
  Value appendRows(KVCacheAppendOp append, Value cache, Value update,
                   Value outFlat) {
    ArrayRef<int64_t> cacheShape = append.getCache().getType().getShape();
    int64_t length = cacheShape[2], d = cacheShape[3];
    int64_t added = append.getUpdate().getType().getDimSize(2);
    Value row = arith::DivUIOp::create(b, outFlat, idx(d));
    Value column = arith::RemUIOp::create(b, outFlat, idx(d));
    Value position = arith::RemUIOp::create(b, row, idx(length + added));
    Value batchHead = arith::DivUIOp::create(b, row, idx(length + added));
    Value fromCache = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                            position, idx(length));
    Type type = plan.width == 1
                    ? append.getType().getElementType()
                    : Type(VectorType::get({plan.width},
                                           append.getType().getElementType()));
    auto branch = scf::IfOp::create(b, type, fromCache, true);
    auto rowStart = [&](int64_t rows, Value r) {
      return arith::AddIOp::create(
          b,
          arith::MulIOp::create(
              b,
              arith::AddIOp::create(
                  b, arith::MulIOp::create(b, batchHead, idx(rows)), r),
              idx(d)),
          column);
    };
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      scf::YieldOp::create(b, load(cache, rowStart(length, position)));
      b.setInsertionPointToStart(branch.elseBlock());
      Value updateRow = arith::SubIOp::create(b, position, idx(length));
      scf::YieldOp::create(b, load(update, rowStart(added, updateRow)));
    }
    return branch.getResult(0);
  }

  /// rope [B, H, S, D]: thread t takes pairs c .. c + width - 1 (c < D/2)
  /// of heads h .. h + plan.heads - 1 at one (batch, s); it loads every
  /// head's two half-vectors, computes each pair's sine and cosine once and
  /// stores both halves with vector stores.
  void buildRope(RopeOp rope, Block &entry) {
    ArrayRef<int64_t> shape = rope.getInput().getType().getShape();
    int64_t heads = shape[1], seq = shape[2], d = shape[3], half = d / 2;
    int64_t w = plan.width, headGroups = heads / plan.heads;
    int64_t items = rope.getType().getNumElements() / (2 * w * plan.heads);
    Value item = arith::AddIOp::create(
        b,
        arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                              idx(plan.threads)),
        gpu::ThreadIdOp::create(b, gpu::Dimension::x));
    Value inRange =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, item, idx(items));
    auto guard = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
    // item = ((batch · S + s) · headGroups + group) · (D/2 / w) + run.
    Value run = arith::RemUIOp::create(b, item, idx(half / w));
    Value rest = arith::DivUIOp::create(b, item, idx(half / w));
    Value group = arith::RemUIOp::create(b, rest, idx(headGroups));
    Value token = arith::DivUIOp::create(b, rest, idx(headGroups));
    Value s = arith::RemUIOp::create(b, token, idx(seq));
    Value batch = arith::DivUIOp::create(b, token, idx(seq));
    Value column = arith::MulIOp::create(b, run, idx(w));
    Value input = entry.getArgument(0), out = entry.getArgument(2);
    Value position =
        RopeRotation::loadPosition(b, rope, entry.getArgument(1), batch, s);
    Type element = rope.getInput().getType().getElementType();
    // Where head h's first-half run starts.
    auto runStart = [&](int64_t h) {
      Value head = arith::AddIOp::create(
          b, arith::MulIOp::create(b, group, idx(plan.heads)), idx(h));
      Value row = arith::AddIOp::create(
          b,
          arith::MulIOp::create(
              b,
              arith::AddIOp::create(
                  b, arith::MulIOp::create(b, batch, idx(heads)), head),
              idx(seq)),
          s);
      return arith::AddIOp::create(b, arith::MulIOp::create(b, row, idx(d)),
                                   column);
    };
    SmallVector<Value> starts, firsts, seconds;
    for (int64_t h = 0; h < plan.heads; ++h) {
      starts.push_back(runStart(h));
      firsts.push_back(load(input, starts[h]));
      seconds.push_back(
          load(input, arith::AddIOp::create(b, starts[h], idx(half))));
    }
    SmallVector<RopeRotation> rotations;
    for (int64_t j = 0; j < w; ++j)
      rotations.emplace_back(b, rope, position,
                             arith::AddIOp::create(b, column, idx(j)));
    auto lane = [&](Value vector, int64_t j) -> Value {
      Value x = w == 1 ? vector : vector::ExtractOp::create(b, vector, j);
      return element.isF32() ? x : arith::ExtFOp::create(b, b.getF32Type(), x);
    };
    auto narrow = [&](Value x) -> Value {
      return element.isF32() ? x : arith::TruncFOp::create(b, element, x);
    };
    for (int64_t h = 0; h < plan.heads; ++h) {
      SmallVector<Value> first, second;
      for (int64_t j = 0; j < w; ++j) {
        auto [x, partner] =
            rotations[j].rotatePair(lane(firsts[h], j), lane(seconds[h], j));
        first.push_back(narrow(x));
        second.push_back(narrow(partner));
      }
      store(first, out, starts[h]);
      store(second, out, arith::AddIOp::create(b, starts[h], idx(half)));
    }
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b);
  }

  /// Stores `lanes` (plan.width scalars) at `at`.
  void store(ArrayRef<Value> lanes, Value memref, Value at) {
    if (lanes.size() == 1) {
      memref::StoreOp::create(b, lanes.front(), memref, ValueRange{at});
      return;
    }
    auto type = VectorType::get({static_cast<int64_t>(lanes.size())},
                                lanes.front().getType());
    alignedVectorStore(b, vector::FromElementsOp::create(b, type, lanes),
                       memref, at);
  }

  ImplicitLocOpBuilder b;
  Operation *op;
  const LayoutKernelPlan &plan;
};
} // namespace

gpu::GPUFuncOp memwall::emitLayoutKernel(gpu::GPUModuleOp gpuModule,
                                         StringRef name, Operation *op,
                                         const LayoutKernelPlan &plan) {
  return LayoutKernelBuilder(gpuModule, op, plan).build(name);
}

Value RopeRotation::loadPosition(ImplicitLocOpBuilder &b, RopeOp rope,
                                 Value positions, Value batch, Value s) {
  Value at = s;
  if (rope.getPositions().getType().getRank() == 2) {
    int64_t seq = rope.getInput().getType().getShape()[2];
    at = arith::AddIOp::create(
        b, arith::MulIOp::create(b, batch, indexConstant(b, seq)), s);
  }
  Value position = memref::LoadOp::create(b, positions, ValueRange{at});
  return arith::SIToFPOp::create(b, b.getF32Type(), position);
}

RopeRotation::RopeRotation(ImplicitLocOpBuilder &b, RopeOp rope, Value position,
                           Value column)
    : b(b) {
  int64_t d = rope.getInput().getType().getShape().back();
  int64_t half = d / 2;
  Value firstHalf = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, column,
                                          indexConstant(b, half));
  Value pairIndex = arith::RemUIOp::create(b, column, indexConstant(b, half));
  Value pairFloat = arith::UIToFPOp::create(
      b, b.getF32Type(),
      arith::IndexCastUIOp::create(b, b.getI32Type(), pairIndex));
  // theta^(-2i/D) = exp2(-2i/D · log2 theta).
  double sign = rope.getInverse() ? -1.0 : 1.0;
  Value exponent = arith::MulFOp::create(
      b, pairFloat,
      f32Constant(b, -2.0 / static_cast<double>(d) *
                         std::log2(rope.getTheta().convertToDouble())));
  Value angle = arith::MulFOp::create(
      b, arith::MulFOp::create(b, position, math::Exp2Op::create(b, exponent)),
      f32Constant(b, sign));
  cosine = math::CosOp::create(b, angle);
  sine = math::SinOp::create(b, angle);
  // The partner of element i is i + D/2 in the first half, i - D/2 in the
  // second; the first half subtracts its partner's rotation.
  partnerColumn = arith::SelectOp::create(
      b, firstHalf, arith::AddIOp::create(b, column, indexConstant(b, half)),
      arith::SubIOp::create(b, column, indexConstant(b, half)));
  signedSine = arith::SelectOp::create(b, firstHalf,
                                       arith::NegFOp::create(b, sine), sine);
}

Value RopeRotation::rotate(Value x, Value partner) const {
  return arith::AddFOp::create(b, arith::MulFOp::create(b, x, cosine),
                               arith::MulFOp::create(b, partner, signedSine));
}

std::pair<Value, Value> RopeRotation::rotatePair(Value x, Value partner) const {
  return {arith::SubFOp::create(b, arith::MulFOp::create(b, x, cosine),
                                arith::MulFOp::create(b, partner, sine)),
          arith::AddFOp::create(b, arith::MulFOp::create(b, partner, cosine),
                                arith::MulFOp::create(b, x, sine))};
}
