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
#include <functional>

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

/// The vector width (elements of 16 bytes) of a transpose of the last two
/// dims, [.., R, C] -> [.., C, R], that runs through shared memory tiles:
/// both R and C split into whole vectors. 0 for any other op.
int64_t tiledTransposeWidth(Operation *op) {
  auto transpose = dyn_cast<TransposeOp>(op);
  if (!transpose)
    return 0;
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
    return 0;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != i)
      return 0;
  RankedTensorType input = transpose.getInput().getType();
  // Elements of 1, 2 or 4 bytes: 16-byte vectors of at least 4.
  int64_t bits = input.getElementTypeBitWidth();
  if (bits != 8 && bits != 16 && bits != 32)
    return 0;
  int64_t width = 16 / (bits / 8);
  int64_t rows = input.getDimSize(rank - 2),
          columns = input.getDimSize(rank - 1);
  if (rows <= 0 || columns <= 0 || rows % width != 0 || columns % width != 0)
    return 0;
  return width;
}
} // namespace

/// The rope alone, reading its input as stored.
static RopeViews ropeViewsOf(RopeOp rope) {
  FailureOr<RopeViews> views = matchRopeViews({rope});
  assert(succeeded(views) && "a lone rope reads its input as stored");
  return *views;
}

bool memwall::isLayoutOp(Operation *op) {
  return isa<TransposeOp, SliceOp, EmbeddingOp, RopeOp, KVCacheAppendOp, PadOp,
             ConcatOp>(op);
}

/// concat's axis, counted from the front.
static int64_t concatAxis(ConcatOp concat) {
  int64_t axis = concat.getAxis();
  return axis < 0 ? axis + concat.getType().getRank() : axis;
}

bool memwall::appendsInPlace(Operation *op) {
  auto append = dyn_cast<KVCacheAppendOp>(op);
  return append && append.canAppendInPlace();
}

/// The elements a layout kernel's threads cover: the new rows of an
/// in-place append, else the result.
static RankedTensorType iterationType(Operation *op) {
  if (appendsInPlace(op))
    return cast<KVCacheAppendOp>(op).getUpdate().getType();
  return resultType(op);
}

LayoutKernelPlan memwall::planLayoutKernel(Operation *op) {
  if (auto rope = dyn_cast<RopeOp>(op))
    return planRopeKernel(ropeViewsOf(rope));
  RankedTensorType result = resultType(op);
  ArrayRef<int64_t> shape = result.getShape();
  int64_t elementBytes =
      std::max<int64_t>(1, result.getElementTypeBitWidth() / 8);
  int64_t inner = shape.empty() ? 1 : shape.back();
  LayoutKernelPlan plan;
  if (int64_t width = tiledTransposeWidth(op)) {
    // A tile of 8 vectors square (64 x 64 bf16, 32 x 32 f32, 128 x 128
    // fp8) per block of 256 threads.
    ArrayRef<int64_t> in =
        cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
    int64_t rows = in[in.size() - 2], columns = in.back();
    plan.width = width;
    plan.tile = 8 * width;
    plan.threads = 256;
    int64_t batch = result.getNumElements() / (rows * columns);
    plan.grid = {batch * llvm::divideCeil(rows, plan.tile) *
                     llvm::divideCeil(columns, plan.tile),
                 1, 1};
    return plan;
  }
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
    // A vector of pad's output lies wholly inside the input or wholly in
    // the padding when the innermost padding and input are whole vectors;
    // one of concat's, in one input when each input's run along the last
    // axis is.
    if (auto pad = dyn_cast<PadOp>(op))
      return pad.getLow().back() % w == 0 &&
             pad.getInput().getType().getShape().back() % w == 0;
    if (auto concat = dyn_cast<ConcatOp>(op))
      return concatAxis(concat) != concat.getType().getRank() - 1 ||
             llvm::all_of(concat.getInputs(), [&](Value input) {
               return cast<RankedTensorType>(input.getType())
                              .getShape()
                              .back() %
                          w ==
                      0;
             });
    // embedding and kv_cache_append copy whole rows of `inner` elements.
    return isa<EmbeddingOp, KVCacheAppendOp>(op);
  };
  while (width > 1 && !fits(width))
    width /= 2;
  plan.width = width;
  int64_t vectors = iterationType(op).getNumElements() / width;
  plan.threads = std::min<int64_t>(256, std::max<int64_t>(32, vectors));
  plan.grid = {static_cast<int64_t>(llvm::divideCeil(vectors, plan.threads)), 1,
               1};
  return plan;
}

LayoutKernelPlan memwall::planRopeKernel(const RopeViews &views) {
  RankedTensorType result = RopeOp(views.ropes.front()).getType();
  int64_t d = result.getDimSize(3);
  int64_t elementBytes =
      std::max<int64_t>(1, result.getElementTypeBitWidth() / 8);
  // A thread rotates `width` pairs (c, c + D/2) of `heads` heads at one
  // position: one sine and cosine per pair serve every head (and both
  // halves); a vector must stay aligned in every view.
  auto fits = [&](int64_t w) {
    if ((d / 2) % w != 0)
      return false;
    for (const StridedLayout &layout :
         llvm::concat<const StridedLayout>(views.inputs, views.outputLayouts)) {
      if (layout.offset % w != 0)
        return false;
      for (int64_t i = 0; i < 3; ++i)
        if (layout.shape[i] != 1 && layout.strides[i] % w != 0)
          return false;
    }
    return true;
  };
  LayoutKernelPlan plan;
  plan.width = 16 / elementBytes;
  while (plan.width > 1 && !fits(plan.width))
    plan.width /= 2;
  auto allHeadsDivide = [&](int64_t g) {
    return llvm::all_of(views.ropes, [&](RopeOp rope) {
      return rope.getType().getDimSize(1) % g == 0;
    });
  };
  plan.heads = allHeadsDivide(4) ? 4 : allHeadsDivide(2) ? 2 : 1;
  int64_t items = 0;
  for (RopeOp rope : views.ropes)
    items += rope.getType().getNumElements() / (2 * plan.width * plan.heads);
  plan.threads = std::min<int64_t>(256, std::max<int64_t>(32, items));
  plan.grid = {static_cast<int64_t>(llvm::divideCeil(items, plan.threads)), 1,
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
    if (auto rope = dyn_cast<RopeOp>(op))
      return buildRope(name, ropeViewsOf(rope));
    // An in-place append reads only its update (the cache's rows are in
    // the buffer it writes).
    SmallVector<Type> params;
    for (Value value : op->getOperands())
      if (!appendsInPlace(op) || value != op->getOperand(0))
        params.push_back(flatMemRefType(value));
    params.push_back(flatMemRefType(op->getResult(0)));
    Type element = resultType(op).getElementType();
    // The tile's rows are padded to an odd number of 4-byte words, so the
    // threads reading a column of it hit distinct banks.
    SmallVector<Type> workgroup;
    if (plan.tile > 0)
      workgroup.push_back(MemRefType::get(
          {plan.tile, plan.tile + 4 / (element.getIntOrFloatBitWidth() / 8)},
          element, AffineMap(),
          gpu::AddressSpaceAttr::get(b.getContext(),
                                     gpu::AddressSpace::Workgroup)));
    gpu::GPUFuncOp func =
        createKernel(b, name, params, plan.threads, workgroup);
    Block &entry = func.getBody().front();
    if (plan.tile > 0) {
      buildTiledTranspose(entry, func.getWorkgroupAttributions().front());
      return func;
    }
    RankedTensorType result = resultType(op);
    int64_t vectors = iterationType(op).getNumElements() / plan.width;
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
    Value out = entry.getArguments().back();
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
    } else if (auto pad = dyn_cast<PadOp>(op)) {
      value = padElements(pad, input, outFlat);
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      value = concatElements(concat, entry.getArguments().drop_back(), outFlat);
    } else if (appendsInPlace(op)) {
      value = load(input, outFlat);
      outFlat = appendedAt(cast<KVCacheAppendOp>(op), outFlat);
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

  /// The type `load` returns for elements of `element` type.
  Type loadedType(Type element) {
    return plan.width == 1 ? element
                           : Type(VectorType::get({plan.width}, element));
  }

  /// Output elements `outFlat..` of pad: the input's where every index lies
  /// in [low, low + input size), else zero.
  Value padElements(PadOp pad, Value input, Value outFlat) {
    ArrayRef<int64_t> inShape = pad.getInput().getType().getShape();
    ArrayRef<int64_t> low = pad.getLow();
    SmallVector<Value> index = multiIndex(outFlat, pad.getType().getShape());
    SmallVector<int64_t> inStrides = computeStrides(inShape);
    Value inside, at = idx(0);
    for (auto [i, size] : llvm::enumerate(inShape)) {
      // index - low < size, unsigned: below low wraps around.
      Value shifted = arith::SubIOp::create(b, index[i], idx(low[i]));
      Value within = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                           shifted, idx(size));
      inside = inside ? arith::AndIOp::create(b, inside, within) : within;
      at = arith::AddIOp::create(
          b, at, arith::MulIOp::create(b, shifted, idx(inStrides[i])));
    }
    Type element = pad.getType().getElementType();
    Type type = loadedType(element);
    if (!inside)
      return load(input, at); // rank 0: nothing to pad
    auto branch = scf::IfOp::create(b, type, inside, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    scf::YieldOp::create(b, load(input, at));
    b.setInsertionPointToStart(branch.elseBlock());
    Value zero = arith::ConstantOp::create(b, b.getZeroAttr(element));
    if (plan.width > 1)
      zero = vector::BroadcastOp::create(b, type, zero);
    scf::YieldOp::create(b, zero);
    return branch.getResult(0);
  }

  /// Output elements `outFlat..` of concat: input k's where the axis index
  /// lies in its run [offset_k, offset_k + size_k), found by bisection.
  Value concatElements(ConcatOp concat, ValueRange inputs, Value outFlat) {
    int64_t axis = concatAxis(concat);
    SmallVector<Value> index = multiIndex(outFlat, concat.getType().getShape());
    SmallVector<int64_t> offsets{0};
    for (Value input : concat.getInputs())
      offsets.push_back(
          offsets.back() +
          cast<RankedTensorType>(input.getType()).getDimSize(axis));
    Type type = loadedType(concat.getType().getElementType());
    std::function<Value(size_t, size_t)> select = [&](size_t first,
                                                      size_t last) -> Value {
      if (last - first == 1) {
        auto shape = cast<RankedTensorType>(concat.getInputs()[first].getType())
                         .getShape();
        SmallVector<int64_t> strides = computeStrides(shape);
        Value at = idx(0);
        for (auto [i, stride] : llvm::enumerate(strides)) {
          Value coordinate = static_cast<int64_t>(i) == axis
                                 ? Value(arith::SubIOp::create(
                                       b, index[i], idx(offsets[first])))
                                 : index[i];
          at = arith::AddIOp::create(
              b, at, arith::MulIOp::create(b, coordinate, idx(stride)));
        }
        return load(inputs[first], at);
      }
      size_t middle = first + (last - first) / 2;
      Value before = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                           index[axis], idx(offsets[middle]));
      auto branch = scf::IfOp::create(b, type, before, /*withElse=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      scf::YieldOp::create(b, select(first, middle));
      b.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(b, select(middle, last));
      return branch.getResult(0);
    };
    return select(0, inputs.size());
  }

  /// Where element `updateFlat` of an in-place append's update lands in the
  /// appended cache: row L + t of its (batch, head).
  Value appendedAt(KVCacheAppendOp append, Value updateFlat) {
    ArrayRef<int64_t> cacheShape = append.getCache().getType().getShape();
    int64_t length = cacheShape[2], d = cacheShape[3];
    int64_t added = append.getUpdate().getType().getDimSize(2);
    Value row = arith::DivUIOp::create(b, updateFlat, idx(d));
    Value column = arith::RemUIOp::create(b, updateFlat, idx(d));
    Value batchHead = arith::DivUIOp::create(b, row, idx(added));
    Value position = arith::AddIOp::create(
        b, arith::RemUIOp::create(b, row, idx(added)), idx(length));
    Value appendedRow = arith::AddIOp::create(
        b, arith::MulIOp::create(b, batchHead, idx(length + added)), position);
    return arith::AddIOp::create(
        b, arith::MulIOp::create(b, appendedRow, idx(d)), column);
  }

  /// kv_cache_append as the concat it is, when its cache cannot be written
  /// in place (KVCacheAppendOp::canAppendInPlace): rows s < L of each (batch,
  /// head) from the cache, the rest from the update.
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

public:
  /// One or two ropes [B, H, S, D] (views.ropes): thread t takes pairs
  /// c .. c + width - 1 (c < D/2) of heads h .. h + plan.heads - 1 at one
  /// (batch, s) of one rope (the ropes' items one after the other); it
  /// loads every head's two half-vectors from where the rope's input view
  /// puts them, computes each pair's sine and cosine once and stores both
  /// halves of the result with vector stores where its output view puts
  /// them.
  gpu::GPUFuncOp buildRope(StringRef name, const RopeViews &views) {
    SmallVector<Type> params;
    for (Value source : views.sources)
      params.push_back(flatMemRefType(source));
    RopeOp first = views.ropes.front();
    params.push_back(flatMemRefType(first.getPositions()));
    for (Value output : views.outputs)
      params.push_back(flatMemRefType(output));
    gpu::GPUFuncOp func = createKernel(b, name, params, plan.threads);
    Block &entry = func.getBody().front();
    int64_t count = static_cast<int64_t>(views.ropes.size());
    Value positions = entry.getArgument(count);
    Value item = arith::AddIOp::create(
        b,
        arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                              idx(plan.threads)),
        gpu::ThreadIdOp::create(b, gpu::Dimension::x));
    int64_t begin = 0;
    for (auto [r, constRope] : llvm::enumerate(views.ropes)) {
      RopeOp rope = constRope;
      int64_t items =
          rope.getType().getNumElements() / (2 * plan.width * plan.heads);
      Value inRange = arith::AndIOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::uge, item, idx(begin)),
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, item,
                                idx(begin + items)));
      auto guard = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPointToStart(guard.thenBlock());
      rotateRun(rope, views.inputs[r], entry.getArgument(r), positions,
                views.outputLayouts[r], entry.getArgument(count + 1 + r),
                arith::SubIOp::create(b, item, idx(begin)));
      begin += items;
    }
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b);
    return func;
  }

  /// Item `item` of `rope`: see buildRope.
  void rotateRun(RopeOp rope, const StridedLayout &inputLayout, Value input,
                 Value positions, const StridedLayout &outputLayout, Value out,
                 Value item) {
    ArrayRef<int64_t> shape = rope.getType().getShape();
    int64_t heads = shape[1], seq = shape[2], d = shape[3], half = d / 2;
    int64_t w = plan.width, headGroups = heads / plan.heads;
    // item = ((batch · S + s) · headGroups + group) · (D/2 / w) + run.
    Value run = arith::RemUIOp::create(b, item, idx(half / w));
    Value rest = arith::DivUIOp::create(b, item, idx(half / w));
    Value group = arith::RemUIOp::create(b, rest, idx(headGroups));
    Value token = arith::DivUIOp::create(b, rest, idx(headGroups));
    Value s = arith::RemUIOp::create(b, token, idx(seq));
    Value batch = arith::DivUIOp::create(b, token, idx(seq));
    Value column = arith::MulIOp::create(b, run, idx(w));
    Value position = RopeRotation::loadPosition(b, rope, positions, batch, s);
    Type element = rope.getType().getElementType();
    // Where head h's first-half run starts in `layout`.
    auto runStart = [&](const StridedLayout &layout, int64_t h) {
      Value head = arith::AddIOp::create(
          b, arith::MulIOp::create(b, group, idx(plan.heads)), idx(h));
      Value at = idx(layout.offset);
      Value index[] = {batch, head, s};
      for (int64_t i = 0; i < 3; ++i)
        at = arith::AddIOp::create(
            b, at, arith::MulIOp::create(b, index[i], idx(layout.strides[i])));
      return arith::AddIOp::create(b, at, column);
    };
    SmallVector<Value> outStarts, firsts, seconds;
    for (int64_t h = 0; h < plan.heads; ++h) {
      Value inStart = runStart(inputLayout, h);
      outStarts.push_back(runStart(outputLayout, h));
      firsts.push_back(load(input, inStart));
      seconds.push_back(
          load(input, arith::AddIOp::create(b, inStart, idx(half))));
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
      store(first, out, outStarts[h]);
      store(second, out, arith::AddIOp::create(b, outStarts[h], idx(half)));
    }
  }

private:
  /// [.., R, C] -> [.., C, R] through a shared-memory tile: block x takes
  /// tile (ti, tj) of matrix z; its threads read the tile's rows in 16-byte
  /// vectors into shared memory, then after a barrier each writes a 16-byte
  /// vector of an output row gathered down a tile column. Vectors outside
  /// the matrix are skipped (R and C are whole vectors).
  void buildTiledTranspose(Block &entry, Value tileBuffer) {
    ArrayRef<int64_t> in =
        cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
    int64_t rows = in[in.size() - 2], columns = in.back();
    int64_t t = plan.tile, w = plan.width;
    int64_t tilesDown = llvm::divideCeil(rows, t),
            tilesAcross = llvm::divideCeil(columns, t);
    int64_t perRow = t / w, vectorsPerThread = t * perRow / plan.threads;
    Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value tj = arith::RemUIOp::create(b, block, idx(tilesAcross));
    Value rest = arith::DivUIOp::create(b, block, idx(tilesAcross));
    Value ti = arith::RemUIOp::create(b, rest, idx(tilesDown));
    Value matrix = arith::DivUIOp::create(b, rest, idx(tilesDown));
    Value base = arith::MulIOp::create(b, matrix, idx(rows * columns));
    Value firstRow = arith::MulIOp::create(b, ti, idx(t));
    Value firstColumn = arith::MulIOp::create(b, tj, idx(t));
    Value input = entry.getArgument(0), out = entry.getArgument(1);
    auto vectorType = VectorType::get({w}, resultType(op).getElementType());
    // Vector v of the tile: row v / perRow, columns (v % perRow)·w.. of a
    // `limitRows` x `limitColumns` row-major matrix at rows rowOrigin..,
    // columns columnOrigin..; `body` gets the tile position and the flat
    // index of vectors inside the matrix.
    auto forEachVector = [&](Value rowOrigin, Value columnOrigin,
                             int64_t limitRows, int64_t limitColumns,
                             function_ref<void(Value, Value, Value)> body) {
      for (int64_t k = 0; k < vectorsPerThread; ++k) {
        Value v = arith::AddIOp::create(b, thread, idx(k * plan.threads));
        Value r = arith::DivUIOp::create(b, v, idx(perRow));
        Value c = arith::MulIOp::create(
            b, arith::RemUIOp::create(b, v, idx(perRow)), idx(w));
        Value row = arith::AddIOp::create(b, rowOrigin, r);
        Value column = arith::AddIOp::create(b, columnOrigin, c);
        Value inside = arith::AndIOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                  idx(limitRows)),
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, column,
                                  idx(limitColumns)));
        auto guard = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard insertion(b);
        b.setInsertionPointToStart(guard.thenBlock());
        Value at = arith::AddIOp::create(
            b, base,
            arith::AddIOp::create(
                b, arith::MulIOp::create(b, row, idx(limitColumns)), column));
        body(r, c, at);
      }
    };
    // Input rows into the tile.
    forEachVector(
        firstRow, firstColumn, rows, columns, [&](Value r, Value c, Value at) {
          Value vector = alignedVectorLoad(b, vectorType, input, at);
          for (int64_t j = 0; j < w; ++j)
            memref::StoreOp::create(
                b, vector::ExtractOp::create(b, vector, j), tileBuffer,
                ValueRange{r, arith::AddIOp::create(b, c, idx(j))});
        });
    gpu::BarrierOp::create(b);
    // Output row = input column: its vector gathers down a tile column.
    forEachVector(firstColumn, firstRow, columns, rows,
                  [&](Value r, Value c, Value at) {
                    SmallVector<Value> lanes;
                    for (int64_t j = 0; j < w; ++j)
                      lanes.push_back(memref::LoadOp::create(
                          b, tileBuffer,
                          ValueRange{arith::AddIOp::create(b, c, idx(j)), r}));
                    store(lanes, out, at);
                  });
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

gpu::GPUFuncOp memwall::emitRopeKernel(gpu::GPUModuleOp gpuModule,
                                       StringRef name, const RopeViews &views,
                                       const LayoutKernelPlan &plan) {
  return LayoutKernelBuilder(gpuModule, views.ropes.front(), plan)
      .buildRope(name, views);
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

/// Llama-3.1's frequency scaling of `frequency` (f32), as
/// the reference computes it: compared as frequencies (a wavelength 2π / f
/// above original / low is f below 2π low / original), no division.
static Value scaleLlama3Frequency(ImplicitLocOpBuilder &b, Value frequency,
                                  ArrayRef<double> scaling) {
  double factor = scaling[0], low = scaling[1], high = scaling[2],
         original = scaling[3];
  Value divided =
      arith::MulFOp::create(b, frequency, f32Constant(b, 1 / factor));
  // smooth = (original · f / 2π - low) / (high - low).
  Value smooth = arith::MulFOp::create(
      b,
      arith::SubFOp::create(
          b,
          arith::MulFOp::create(b, frequency,
                                f32Constant(b, original / (2 * M_PI))),
          f32Constant(b, low)),
      f32Constant(b, 1 / (high - low)));
  // (1 - smooth) · f / factor + smooth · f = f / factor + smooth · (f - f /
  // factor).
  Value interpolated = arith::AddFOp::create(
      b, divided,
      arith::MulFOp::create(b, smooth,
                            arith::SubFOp::create(b, frequency, divided)));
  Value longWave =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, frequency,
                            f32Constant(b, 2 * M_PI * low / original));
  Value shortWave =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, frequency,
                            f32Constant(b, 2 * M_PI * high / original));
  Value scaled = arith::SelectOp::create(b, longWave, divided, interpolated);
  return arith::SelectOp::create(b, shortWave, frequency, scaled);
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
  Value frequency = math::Exp2Op::create(b, exponent);
  if (std::optional<ArrayRef<double>> scaling = rope.getLlama3Scaling())
    frequency = scaleLlama3Frequency(b, frequency, *scaling);
  Value angle = arith::MulFOp::create(
      b, arith::MulFOp::create(b, position, frequency), f32Constant(b, sign));
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
