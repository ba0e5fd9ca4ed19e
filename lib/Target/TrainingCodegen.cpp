//===- TrainingCodegen.cpp - kernels a training step adds -----------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "TrainingCodegen.h"
#include "ElementwiseEmitter.h"
#include "KernelBuilding.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace memwall;

namespace {
int64_t ceilDiv(int64_t x, int64_t y) { return (x + y - 1) / y; }

RankedTensorType tensorTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The widest vector (up to 16 bytes of the narrowest of `values`' element
/// types) that divides `run` elements.
int64_t vectorWidthFor(ValueRange values, int64_t run) {
  int64_t narrowest = 8;
  for (Value value : values)
    narrowest = std::min(
        narrowest, getElementByteSize(tensorTypeOf(value).getElementType()));
  int64_t width = 16 / std::max<int64_t>(1, narrowest);
  while (width > 1 && run % width != 0)
    width /= 2;
  return width;
}

/// Threads for a row of `rowVectors` vectors, as the forward's row kernel
/// takes them: a warp-multiple up to 512, or a power of two below a warp.
struct RowThreads {
  int64_t threads = 1, vectorsPerThread = 1;
};
RowThreads chooseRowThreads(int64_t rowVectors) {
  RowThreads choice;
  choice.threads = rowVectors >= 32
                       ? std::min<int64_t>(512, ceilDiv(rowVectors, 32) * 32)
                       : static_cast<int64_t>(std::max<uint64_t>(
                             1, llvm::PowerOf2Ceil(rowVectors)));
  choice.vectorsPerThread = ceilDiv(rowVectors, choice.threads);
  return choice;
}

FlatKernelPlan planFlat(int64_t elements, int64_t width) {
  FlatKernelPlan plan;
  plan.elements = elements;
  plan.width = width;
  plan.grid[0] = std::max<int64_t>(1, ceilDiv(elements / width, plan.threads));
  return plan;
}

/// What the generators share: the builder, the thread's coordinates, and
/// f32 vectors of `width` lanes in memory.
class TrainingKernelBuilder : public IndexArithmetic {
public:
  TrainingKernelBuilder(gpu::GPUModuleOp gpuModule, Location loc)
      : IndexArithmetic(b), b(loc, gpuModule.getContext()) {
    b.setInsertionPointToEnd(gpuModule.getBody());
  }

protected:
  Value f32(double value) { return f32Constant(b, value); }

  /// The kernel and the ids every generator reads; `b` is left in its body.
  gpu::GPUFuncOp startKernel(StringRef name, ArrayRef<Type> params,
                             int64_t threads, TypeRange workgroup = {}) {
    gpu::GPUFuncOp func = createKernel(b, name, params, threads, workgroup);
    threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    blockX = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    blockY = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    return func;
  }

  static MemRefType workgroupOf(Type element, int64_t elements) {
    MLIRContext *ctx = element.getContext();
    return MemRefType::get(
        {elements}, element, AffineMap(),
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  }
  static MemRefType workgroupF32(MLIRContext *ctx, int64_t elements) {
    return workgroupOf(Float32Type::get(ctx), elements);
  }

  /// An integer as an index.
  Value toIndex(Value value) {
    return arith::IndexCastOp::create(b, b.getIndexType(), value);
  }

  Value eq(Value x, int64_t c) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x, idx(c));
  }

  /// Runs `body` only where `condition` holds (always when it is null).
  void guarded(Value condition, function_ref<void()> body) {
    buildGuarded(b, condition, body);
  }

  /// `width` f32 lanes of an f32 memref at `flat`.
  Lanes loadF32(Value memref, Value flat, int64_t width) {
    Lanes lanes;
    if (width == 1) {
      lanes.push_back(memref::LoadOp::create(b, memref, ValueRange{flat}));
      return lanes;
    }
    Value vector = alignedVectorLoad(
        b, VectorType::get({width}, b.getF32Type()), memref, flat);
    for (int64_t lane = 0; lane < width; ++lane)
      lanes.push_back(vector::ExtractOp::create(b, vector, lane));
    return lanes;
  }

  void storeF32(Value memref, const Lanes &lanes, Value flat) {
    if (lanes.size() == 1) {
      memref::StoreOp::create(b, lanes[0], memref, ValueRange{flat});
      return;
    }
    Value vector = vector::FromElementsOp::create(
        b,
        VectorType::get({static_cast<int64_t>(lanes.size())}, b.getF32Type()),
        lanes);
    alignedVectorStore(b, vector, memref, flat);
  }

  /// A loop of `count` iterations (the same in every thread) carrying
  /// `init`; `body(i, carried)` returns the next values.
  SmallVector<Value>
  loop(Value lower, Value upper, ValueRange init,
       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return buildLoop(b, lower, upper, init, body);
  }

  ImplicitLocOpBuilder b;
  Value threadId, blockX, blockY;
};

//===----------------------------------------------------------------------===//
// Fill
//===----------------------------------------------------------------------===//

class FillBuilder : public TrainingKernelBuilder {
public:
  FillBuilder(gpu::GPUModuleOp gpuModule, arith::ConstantOp constant,
              const FlatKernelPlan &plan)
      : TrainingKernelBuilder(gpuModule, constant.getLoc()), constant(constant),
        plan(plan) {}

  void build(StringRef name) {
    Type element = tensorTypeOf(constant.getResult()).getElementType();
    gpu::GPUFuncOp func = startKernel(
        name, {flatMemRefType(plan.elements, element)}, plan.threads);
    Value out = func.getArgument(0);
    auto splat =
        cast<DenseElementsAttr>(constant.getValue()).getSplatValue<Attribute>();
    Value vectorIndex = add(mul(blockX, plan.threads), threadId);
    guarded(less(vectorIndex, plan.elements / plan.width), [&] {
      Value flat = mul(vectorIndex, plan.width);
      if (plan.width == 1) {
        memref::StoreOp::create(
            b, arith::ConstantOp::create(b, cast<TypedAttr>(splat)), out,
            ValueRange{flat});
        return;
      }
      auto type = VectorType::get({plan.width}, element);
      alignedVectorStore(
          b, arith::ConstantOp::create(b, DenseElementsAttr::get(type, splat)),
          out, flat);
    });
    gpu::ReturnOp::create(b);
  }

private:
  arith::ConstantOp constant;
  const FlatKernelPlan &plan;
};

//===----------------------------------------------------------------------===//
// Column reduction
//===----------------------------------------------------------------------===//

/// The number of leading axes `reduce` reduces, when it reduces exactly a
/// prefix of its input's dims (0 otherwise).
int64_t reducedPrefix(ReduceOp reduce) {
  int64_t rank = reduce.getInput().getType().getRank();
  llvm::SmallVector<bool> reduced(rank, false);
  for (int64_t axis : reduce.getAxes())
    reduced[axis < 0 ? axis + rank : axis] = true;
  int64_t prefix = 0;
  while (prefix < rank && reduced[prefix])
    ++prefix;
  for (int64_t d = prefix; d < rank; ++d)
    if (reduced[d])
      return 0;
  return prefix;
}

class ColumnReductionBuilder : public TrainingKernelBuilder {
public:
  ColumnReductionBuilder(gpu::GPUModuleOp gpuModule, ReduceOp reduce,
                         const ColumnReductionPlan &plan)
      : TrainingKernelBuilder(gpuModule, reduce.getLoc()), reduce(reduce),
        plan(plan), isMax(reduce.getKind() == ReduceKind::Max) {}

  void build(StringRef name) {
    MLIRContext *ctx = b.getContext();
    Value input = reduce.getInput(), result = reduce.getResult();
    SmallVector<Type> params{flatMemRefType(input), flatMemRefType(result)};
    bool split = plan.splits > 1;
    if (split) {
      params.push_back(
          flatMemRefType(plan.splits * plan.columns, b.getF32Type()));
      params.push_back(flatMemRefType(plan.grid[0], b.getI32Type()));
    }
    gpu::GPUFuncOp func =
        startKernel(name, params, plan.threads(),
                    {workgroupF32(ctx, plan.threads() * plan.width)});
    Value scratch = func.getWorkgroupAttributions().front();
    inputs.push_back({input, AccessPattern::Full, 1});
    ElementwiseEmitter emitter(b, inputs, plan.width);
    emitter.setMemRef(input, func.getArgument(0));
    emitter.setMemRef(result, func.getArgument(1));

    int64_t width = plan.width, vectors = plan.columns / width;
    Value tx = rem(threadId, plan.threadsX), ty = div(threadId, plan.threadsX);
    Value vectorIndex = add(mul(blockX, plan.threadsX), tx);
    Value columnValid;
    if (plan.grid[0] * plan.threadsX != vectors) {
      columnValid = less(vectorIndex, vectors);
      vectorIndex =
          arith::SelectOp::create(b, columnValid, vectorIndex, idx(0));
    }
    Value column = mul(vectorIndex, width);

    // This thread's rows of the split, summed per lane.
    Value rowStart = mul(blockY, plan.rowsPerSplit);
    Value rowEnd = arith::MinUIOp::create(b, add(rowStart, plan.rowsPerSplit),
                                          idx(plan.rows));
    SmallVector<Value> init(width, neutral());
    SmallVector<Value> partial = loop(
        idx(0), idx(ceilDiv(plan.rowsPerSplit, plan.threadsY)), init,
        [&](Value i, ValueRange acc) {
          Value row = add(add(rowStart, mul(i, plan.threadsY)), ty);
          Value valid =
              arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, rowEnd);
          // A row past the split's end reads its first and counts nothing.
          row = arith::SelectOp::create(b, valid, row, rowStart);
          Lanes x = emitter.loadInput(inputs.front(),
                                      add(mul(row, plan.columns), column));
          SmallVector<Value> next;
          for (auto [sum, v] : llvm::zip(acc, x))
            next.push_back(
                combine(sum, arith::SelectOp::create(b, valid, v, neutral())));
          return next;
        });

    // The block's threadsY partials of each column, in order.
    Value slot = mul(threadId, width);
    for (int64_t lane = 0; lane < width; ++lane)
      memref::StoreOp::create(b, partial[lane], scratch,
                              ValueRange{add(slot, lane)});
    gpu::BarrierOp::create(b);
    guarded(less(threadId, plan.threadsX), [&] {
      SmallVector<Value> total =
          loop(idx(0), idx(plan.threadsY), init, [&](Value y, ValueRange acc) {
            Value at = mul(add(mul(y, plan.threadsX), tx), width);
            SmallVector<Value> next;
            for (int64_t lane = 0; lane < width; ++lane)
              next.push_back(combine(
                  acc[lane], memref::LoadOp::create(
                                 b, scratch, ValueRange{add(at, lane)})));
            return next;
          });
      guarded(columnValid, [&] {
        if (!split)
          emitter.storeOutput(result, finish(total), column);
        else
          storeF32(func.getArgument(2), Lanes(total.begin(), total.end()),
                   add(mul(blockY, plan.columns), column));
      });
    });
    if (split) {
      // The last split to arrive sums the splits' partials in order.
      OpBuilder::InsertionGuard insertion(b);
      buildIfLastArrival(b, func.getArgument(3), blockX, threadId, plan.splits);
      Value owner = less(threadId, plan.threadsX);
      if (columnValid)
        owner = arith::AndIOp::create(b, owner, columnValid);
      guarded(owner, [&] {
        SmallVector<Value> total =
            loop(idx(0), idx(plan.splits), init, [&](Value s, ValueRange acc) {
              Lanes part = loadF32(func.getArgument(2),
                                   add(mul(s, plan.columns), column), width);
              SmallVector<Value> next;
              for (auto [sum, v] : llvm::zip(acc, part))
                next.push_back(combine(sum, v));
              return next;
            });
        emitter.storeOutput(result, finish(total), column);
      });
    }
    gpu::ReturnOp::create(b);
  }

private:
  Value neutral() {
    return f32(isMax ? -std::numeric_limits<double>::infinity() : 0.0);
  }
  Value combine(Value x, Value y) {
    return isMax ? Value(arith::MaximumFOp::create(b, x, y))
                 : Value(arith::AddFOp::create(b, x, y));
  }
  /// The reduction's value from the combined lanes (mean divides).
  Lanes finish(ArrayRef<Value> total) {
    Lanes lanes(total.begin(), total.end());
    if (reduce.getKind() == ReduceKind::Mean)
      for (Value &lane : lanes)
        lane =
            arith::DivFOp::create(b, lane, f32(static_cast<double>(plan.rows)));
    return lanes;
  }

  ReduceOp reduce;
  const ColumnReductionPlan &plan;
  bool isMax;
  SmallVector<KernelInput, 1> inputs;
};

//===----------------------------------------------------------------------===//
// Norm gradients
//===----------------------------------------------------------------------===//

/// layer_norm_grad's and rms_norm_grad's common form.
struct NormGradOperands {
  Value input, weight, grad, inputGrad, weightGrad, biasGrad;
  double epsilon = 0;
  bool layerNorm = false;
};

std::optional<NormGradOperands> getNormGradOperands(Operation *op) {
  NormGradOperands operands;
  if (auto grad = dyn_cast<LayerNormGradOp>(op)) {
    operands = {grad.getInput(),
                grad.getWeight(),
                grad.getGrad(),
                grad.getInputGrad(),
                grad.getWeightGrad(),
                grad.getBiasGrad(),
                grad.getEpsilon().convertToDouble(),
                true};
    return operands;
  }
  if (auto grad = dyn_cast<RmsNormGradOp>(op)) {
    operands = {grad.getInput(),
                grad.getWeight(),
                grad.getGrad(),
                grad.getInputGrad(),
                grad.getWeightGrad(),
                Value(),
                grad.getEpsilon().convertToDouble(),
                false};
    return operands;
  }
  return std::nullopt;
}

class NormGradBuilder : public TrainingKernelBuilder {
public:
  NormGradBuilder(gpu::GPUModuleOp gpuModule, Operation *op,
                  const NormGradOperands &norm, const NormGradPlan &plan)
      : TrainingKernelBuilder(gpuModule, op->getLoc()), norm(norm), plan(plan) {
  }

  void build(StringRef name) {
    MLIRContext *ctx = b.getContext();
    SmallVector<Value> params{norm.input, norm.weight, norm.grad,
                              norm.inputGrad, norm.weightGrad};
    if (norm.biasGrad)
      params.push_back(norm.biasGrad);
    SmallVector<Type> types;
    for (Value value : params)
      types.push_back(flatMemRefType(value));
    bool split = plan.blocks > 1;
    int64_t partialsPerBlock = plan.parameterGrads * plan.columns;
    if (split) {
      types.push_back(
          flatMemRefType(plan.blocks * partialsPerBlock, b.getF32Type()));
      types.push_back(flatMemRefType(1, b.getI32Type()));
    }
    gpu::GPUFuncOp func =
        startKernel(name, types, plan.threads, {workgroupF32(ctx, 32)});
    scratch = func.getWorkgroupAttributions().front();
    for (Value value : {norm.input, norm.weight, norm.grad})
      inputs.push_back({value, AccessPattern::Full, 1});
    ElementwiseEmitter emitter(b, inputs, plan.width);
    for (auto [i, value] : llvm::enumerate(params))
      emitter.setMemRef(value, func.getArgument(i));

    // The thread's columns, and the weight there (read once).
    int64_t chunks = plan.vectorsPerThread, width = plan.width;
    bool exact = plan.threads * chunks * width == plan.columns;
    SmallVector<Value> columns(chunks), valid(chunks);
    SmallVector<Lanes> weight(chunks);
    for (int64_t k = 0; k < chunks; ++k) {
      Value column = mul(add(threadId, k * plan.threads), width);
      if (!exact) {
        valid[k] = less(column, plan.columns);
        column = arith::SelectOp::create(b, valid[k], column, idx(0));
      }
      columns[k] = column;
      weight[k] = emitter.loadInput(inputs[1], column);
    }

    // Every row of the block's run; the parameter gradients accumulate per
    // column in the loop's carried values (weight's, then bias's).
    Value rowStart = mul(blockX, plan.rowsPerBlock);
    Value rowEnd = arith::MinUIOp::create(b, add(rowStart, plan.rowsPerBlock),
                                          idx(plan.rows));
    int64_t laneCount = chunks * width;
    SmallVector<Value> init(plan.parameterGrads * laneCount, f32(0.0));
    SmallVector<Value> sums =
        loop(rowStart, rowEnd, init, [&](Value row, ValueRange acc) {
          return buildRow(emitter, row, columns, valid, weight, acc);
        });

    auto storeParameterGrads = [&](function_ref<Lanes(int64_t, int64_t)> at) {
      for (int64_t k = 0; k < chunks; ++k)
        guarded(valid[k], [&] {
          for (int64_t p = 0; p < plan.parameterGrads; ++p)
            emitter.storeOutput(p == 0 ? norm.weightGrad : norm.biasGrad,
                                at(p, k), columns[k]);
        });
    };
    auto carried = [&](ArrayRef<Value> values, int64_t p, int64_t k) {
      auto begin = values.begin() + p * laneCount + k * width;
      return Lanes(begin, begin + width);
    };
    if (!split) {
      storeParameterGrads(
          [&](int64_t p, int64_t k) { return carried(sums, p, k); });
    } else {
      // fp32 partials per block, summed in block order by the last block.
      Value partials = func.getArgument(params.size());
      Value blockBase = mul(blockX, partialsPerBlock);
      for (int64_t k = 0; k < chunks; ++k)
        guarded(valid[k], [&] {
          for (int64_t p = 0; p < plan.parameterGrads; ++p)
            storeF32(partials, carried(sums, p, k),
                     add(add(blockBase, p * plan.columns), columns[k]));
        });
      OpBuilder::InsertionGuard insertion(b);
      buildIfLastArrival(b, func.getArgument(params.size() + 1), idx(0),
                         threadId, plan.blocks);
      SmallVector<Value> total = loop(
          idx(0), idx(plan.blocks), init, [&](Value block, ValueRange acc) {
            SmallVector<Value> next(acc.begin(), acc.end());
            Value base = mul(block, partialsPerBlock);
            for (int64_t p = 0; p < plan.parameterGrads; ++p)
              for (int64_t k = 0; k < chunks; ++k) {
                Lanes part = loadF32(
                    partials, add(add(base, p * plan.columns), columns[k]),
                    width);
                for (int64_t lane = 0; lane < width; ++lane) {
                  Value &sum = next[p * laneCount + k * width + lane];
                  sum = arith::AddFOp::create(b, sum, part[lane]);
                }
              }
            return next;
          });
      storeParameterGrads(
          [&](int64_t p, int64_t k) { return carried(total, p, k); });
    }
    gpu::ReturnOp::create(b);
  }

private:
  /// One row: its input gradient stored, the parameter gradients' sums
  /// `acc` returned with the row's terms added.
  SmallVector<Value> buildRow(ElementwiseEmitter &emitter, Value row,
                              ArrayRef<Value> columns, ArrayRef<Value> valid,
                              ArrayRef<Lanes> weight, ValueRange acc) {
    int64_t chunks = plan.vectorsPerThread, width = plan.width;
    Value rowBase = mul(row, plan.columns);
    SmallVector<Value> flat;
    SmallVector<Lanes> x, dy;
    for (int64_t k = 0; k < chunks; ++k) {
      flat.push_back(add(rowBase, columns[k]));
      x.push_back(emitter.loadInput(inputs[0], flat[k]));
      dy.push_back(emitter.loadInput(inputs[2], flat[k]));
    }
    Value count = f32(static_cast<double>(plan.columns));
    // Sum over the row of f(k, lane), the lanes of invalid chunks left out.
    auto rowSum = [&](function_ref<Value(int64_t, int64_t)> term) {
      Value partial = f32(0.0);
      for (int64_t k = 0; k < chunks; ++k) {
        Value chunk = f32(0.0);
        for (int64_t lane = 0; lane < width; ++lane)
          chunk = arith::AddFOp::create(b, chunk, term(k, lane));
        if (valid[k])
          chunk = arith::SelectOp::create(b, valid[k], chunk, f32(0.0));
        partial = arith::AddFOp::create(b, partial, chunk);
      }
      Value total = buildBlockReduce(b, partial, threadId, plan.threads,
                                     scratch, /*isMax=*/false);
      return Value(arith::DivFOp::create(b, total, count));
    };
    // LayerNorm: x̂ = (x - mean) rstd; RMSNorm: x̂ = x rstd (mean 0).
    Value mean = norm.layerNorm
                     ? rowSum([&](int64_t k, int64_t l) { return x[k][l]; })
                     : f32(0.0);
    auto centered = [&](int64_t k, int64_t l) {
      return Value(arith::SubFOp::create(b, x[k][l], mean));
    };
    Value variance = rowSum([&](int64_t k, int64_t l) {
      Value d = centered(k, l);
      return Value(arith::MulFOp::create(b, d, d));
    });
    Value rstd = math::RsqrtOp::create(
        b, arith::AddFOp::create(b, variance, f32(norm.epsilon)));
    SmallVector<Lanes> xhat(chunks), gw(chunks);
    for (int64_t k = 0; k < chunks; ++k)
      for (int64_t l = 0; l < width; ++l) {
        xhat[k].push_back(arith::MulFOp::create(b, centered(k, l), rstd));
        gw[k].push_back(arith::MulFOp::create(b, dy[k][l], weight[k][l]));
      }
    // dx = rstd (gw - mean(gw) - x̂ mean(gw x̂)); RMSNorm has no mean(gw).
    Value meanG = norm.layerNorm
                      ? rowSum([&](int64_t k, int64_t l) { return gw[k][l]; })
                      : f32(0.0);
    Value meanGX = rowSum([&](int64_t k, int64_t l) {
      return Value(arith::MulFOp::create(b, gw[k][l], xhat[k][l]));
    });
    for (int64_t k = 0; k < chunks; ++k) {
      Lanes dx;
      for (int64_t l = 0; l < width; ++l) {
        Value v = arith::SubFOp::create(b, gw[k][l], meanG);
        v = arith::SubFOp::create(b, v,
                                  arith::MulFOp::create(b, xhat[k][l], meanGX));
        dx.push_back(arith::MulFOp::create(b, rstd, v));
      }
      guarded(valid[k],
              [&] { emitter.storeOutput(norm.inputGrad, dx, flat[k]); });
    }
    // dweight += dy x̂, dbias += dy (the invalid chunks' lanes are never
    // stored).
    SmallVector<Value> next(acc.begin(), acc.end());
    int64_t laneCount = chunks * width;
    for (int64_t k = 0; k < chunks; ++k)
      for (int64_t l = 0; l < width; ++l) {
        Value &dw = next[k * width + l];
        dw = arith::AddFOp::create(
            b, dw, arith::MulFOp::create(b, dy[k][l], xhat[k][l]));
        if (plan.parameterGrads == 2) {
          Value &db = next[laneCount + k * width + l];
          db = arith::AddFOp::create(b, db, dy[k][l]);
        }
      }
    return next;
  }

  const NormGradOperands &norm;
  const NormGradPlan &plan;
  SmallVector<KernelInput, 3> inputs;
  Value scratch;
};

//===----------------------------------------------------------------------===//
// AdamW
//===----------------------------------------------------------------------===//

class AdamWBuilder : public TrainingKernelBuilder {
public:
  AdamWBuilder(gpu::GPUModuleOp gpuModule, ArrayRef<AdamWOp> updates,
               ValueRange parameters, const AdamWKernelPlan &plan)
      : TrainingKernelBuilder(gpuModule, updates.front()->getLoc()),
        updates(updates), parameters(parameters), plan(plan) {}

  void build(StringRef name) {
    SmallVector<Type> params;
    for (Value parameter : parameters)
      params.push_back(flatMemRefType(parameter));
    func = startKernel(name, params, plan.threads);
    buildSegments(0, updates.size());
    gpu::ReturnOp::create(b);
  }

private:
  /// Updates [first, last): the block finds its own by bisecting the
  /// segments' first blocks (uniform per block: no divergence).
  void buildSegments(size_t first, size_t last) {
    if (last - first == 1) {
      buildUpdate(first);
      return;
    }
    size_t middle = first + (last - first) / 2;
    auto branch =
        scf::IfOp::create(b, less(blockX, plan.segments[middle].firstBlock),
                          /*withElseRegion=*/true);
    OpBuilder::InsertionGuard insertion(b);
    b.setInsertionPointToStart(branch.thenBlock());
    buildSegments(first, middle);
    b.setInsertionPointToStart(branch.elseBlock());
    buildSegments(middle, last);
  }

  /// One vector of `width` elements per thread of update `index`'s blocks.
  void buildUpdate(size_t index) {
    AdamWOp adamw = updates[index];
    const AdamWKernelPlan::Segment &segment = plan.segments[index];
    SmallVector<KernelInput, 5> inputs;
    for (Value operand : adamw->getOperands())
      inputs.push_back({operand, AccessPattern::Full, 1});
    ElementwiseEmitter emitter(b, inputs, segment.width);
    auto memrefOf = [&](Value value) {
      return func.getArgument(llvm::find(parameters, value) -
                              parameters.begin());
    };
    for (Value operand : adamw->getOperands())
      emitter.setMemRef(operand, memrefOf(operand));
    // Each result is written where its operand was read.
    Value master = adamw.getMaster();
    emitter.setMemRef(adamw.getNewParam(), memrefOf(adamw.getParam()));
    emitter.setMemRef(adamw.getNewExpAvg(), memrefOf(adamw.getExpAvg()));
    emitter.setMemRef(adamw.getNewExpAvgSq(), memrefOf(adamw.getExpAvgSq()));
    if (master)
      emitter.setMemRef(adamw.getNewMaster(), memrefOf(master));

    double lr = adamw.getLr().convertToDouble();
    double beta1 = adamw.getBeta1().convertToDouble();
    double beta2 = adamw.getBeta2().convertToDouble();
    double step = static_cast<double>(adamw.getStep());
    // The bias corrections, as the reference computes them (in double).
    double c1 = 1.0 - std::pow(beta1, step), c2 = 1.0 - std::pow(beta2, step);
    Value localBlock =
        arith::SubIOp::create(b, blockX, idx(segment.firstBlock));
    Value vectorIndex = add(mul(localBlock, plan.threads), threadId);
    guarded(less(vectorIndex, segment.elements / segment.width), [&] {
      Value flat = mul(vectorIndex, segment.width);
      Lanes p = emitter.loadInput(inputs[master ? 4 : 0], flat);
      Lanes g = emitter.loadInput(inputs[1], flat);
      Lanes m = emitter.loadInput(inputs[2], flat);
      Lanes v = emitter.loadInput(inputs[3], flat);
      Lanes newP, newM, newV;
      for (int64_t lane = 0; lane < segment.width; ++lane) {
        auto mulf = [&](Value x, double c) {
          return Value(arith::MulFOp::create(b, x, f32(c)));
        };
        // p -= lr wd p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g²;
        // p -= lr (m / c1) / (sqrt(v / c2) + eps).
        Value w = arith::SubFOp::create(
            b, p[lane],
            mulf(p[lane], lr * adamw.getWeightDecay().convertToDouble()));
        Value mi = arith::AddFOp::create(b, mulf(m[lane], beta1),
                                         mulf(g[lane], 1 - beta1));
        Value gSquared = arith::MulFOp::create(b, g[lane], g[lane]);
        Value vi = arith::AddFOp::create(b, mulf(v[lane], beta2),
                                         mulf(gSquared, 1 - beta2));
        Value denominator = arith::AddFOp::create(
            b, math::SqrtOp::create(b, arith::DivFOp::create(b, vi, f32(c2))),
            f32(adamw.getEpsilon().convertToDouble()));
        Value update = arith::DivFOp::create(
            b, arith::DivFOp::create(b, mi, f32(c1)), denominator);
        newP.push_back(arith::SubFOp::create(b, w, mulf(update, lr)));
        newM.push_back(mi);
        newV.push_back(vi);
      }
      emitter.storeOutput(adamw.getNewParam(), newP, flat);
      emitter.storeOutput(adamw.getNewExpAvg(), newM, flat);
      emitter.storeOutput(adamw.getNewExpAvgSq(), newV, flat);
      if (master)
        emitter.storeOutput(adamw.getNewMaster(), newP, flat);
    });
  }

  ArrayRef<AdamWOp> updates;
  ValueRange parameters;
  const AdamWKernelPlan &plan;
  gpu::GPUFuncOp func;
};
//===----------------------------------------------------------------------===//
// Embedding gradient
//===----------------------------------------------------------------------===//

class EmbeddingGradBuilder : public TrainingKernelBuilder {
public:
  EmbeddingGradBuilder(gpu::GPUModuleOp gpuModule, EmbeddingGradOp op,
                       const EmbeddingGradPlan &plan)
      : TrainingKernelBuilder(gpuModule, op.getLoc()), op(op), plan(plan) {}

  void build(StringRef name) {
    Value grad = op.getGrad(), indices = op.getIndices(),
          table = op.getResult();
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    gpu::GPUFuncOp func = startKernel(
        name,
        {flatMemRefType(grad), flatMemRefType(indices), flatMemRefType(table)},
        plan.threads, {workgroupOf(i32, plan.threads), workgroupOf(i32, 32)});
    Value list = func.getWorkgroupAttributions()[0];
    warpTotals = func.getWorkgroupAttributions()[1];
    inputs.push_back({grad, AccessPattern::Full, 1});
    ElementwiseEmitter emitter(b, inputs, plan.width);
    emitter.setMemRef(grad, func.getArgument(0));
    emitter.setMemRef(table, func.getArgument(2));
    Value ids = func.getArgument(1);

    int64_t chunks = plan.vectorsPerThread, width = plan.width;
    bool exact = plan.threads * chunks * width == plan.columns;
    SmallVector<Value> columns(chunks), valid(chunks);
    for (int64_t k = 0; k < chunks; ++k) {
      Value column = mul(add(threadId, k * plan.threads), width);
      if (!exact) {
        valid[k] = less(column, plan.columns);
        column = arith::SelectOp::create(b, valid[k], column, idx(0));
      }
      columns[k] = column;
    }
    // The block's table rows [first, first + rowsPerBlock), as i64 ids.
    Value first = mul(blockX, plan.rowsPerBlock);
    Value firstId = arith::IndexCastOp::create(b, i64, first);
    Value endId = arith::AddIOp::create(
        b, firstId,
        arith::ConstantIntOp::create(b, i64, plan.rowsPerBlock).getResult());
    auto loadId = [&](Value position) {
      Value id = memref::LoadOp::create(b, ids, ValueRange{position});
      return id.getType() == i64 ? id
                                 : Value(arith::ExtSIOp::create(b, i64, id));
    };

    // The positions in order, a tile of `threads` at a time: the tile's
    // positions holding one of the block's ids, compacted in order into
    // `list`, then added to their rows' sums in that order.
    int64_t laneCount = chunks * width;
    SmallVector<Value> init(plan.rowsPerBlock * laneCount, f32(0.0));
    SmallVector<Value> sums = loop(
        idx(0), idx(ceilDiv(plan.positions, plan.threads)), init,
        [&](Value tile, ValueRange acc) {
          Value position = add(mul(tile, plan.threads), threadId);
          Value inRange = less(position, plan.positions);
          Value id =
              loadId(arith::SelectOp::create(b, inRange, position, idx(0)));
          Value inBlock = arith::AndIOp::create(
              b,
              arith::CmpIOp::create(b, arith::CmpIPredicate::sge, id, firstId),
              arith::CmpIOp::create(b, arith::CmpIPredicate::slt, id, endId));
          Value match = arith::AndIOp::create(b, inRange, inBlock);
          auto [before, total] =
              blockExclusiveCount(arith::ExtUIOp::create(b, i32, match));
          guarded(match, [&] {
            memref::StoreOp::create(
                b, arith::IndexCastOp::create(b, i32, position), list,
                ValueRange{toIndex(before)});
          });
          gpu::BarrierOp::create(b);
          SmallVector<Value> next = loop(
              idx(0), toIndex(total), acc, [&](Value m, ValueRange rowSums) {
                Value matched =
                    toIndex(memref::LoadOp::create(b, list, ValueRange{m}));
                Value row = arith::SubIOp::create(b, loadId(matched), firstId);
                SmallVector<Value> updated(rowSums.begin(), rowSums.end());
                for (int64_t k = 0; k < chunks; ++k) {
                  Lanes g = emitter.loadInput(
                      inputs.front(),
                      add(mul(matched, plan.columns), columns[k]));
                  for (int64_t r = 0; r < plan.rowsPerBlock; ++r) {
                    Value isRow = arith::CmpIOp::create(
                        b, arith::CmpIPredicate::eq, row,
                        arith::ConstantIntOp::create(b, i64, r).getResult());
                    for (int64_t l = 0; l < width; ++l) {
                      Value &sum = updated[r * laneCount + k * width + l];
                      sum = arith::SelectOp::create(
                          b, isRow, arith::AddFOp::create(b, sum, g[l]), sum);
                    }
                  }
                }
                return updated;
              });
          // The list is refilled by the next tile.
          gpu::BarrierOp::create(b);
          return next;
        });

    // Every row of the block, a zero row where no position holds its id.
    for (int64_t r = 0; r < plan.rowsPerBlock; ++r) {
      Value rowIndex = add(first, r);
      Value rowExists = plan.rows % plan.rowsPerBlock != 0
                            ? less(rowIndex, plan.rows)
                            : Value();
      guarded(rowExists, [&] {
        for (int64_t k = 0; k < chunks; ++k)
          guarded(valid[k], [&] {
            auto begin = sums.begin() + r * laneCount + k * width;
            emitter.storeOutput(table, Lanes(begin, begin + width),
                                add(mul(rowIndex, plan.columns), columns[k]));
          });
      });
    }
    gpu::ReturnOp::create(b);
  }

private:
  /// Over the block: the number of threads before this one whose `flag`
  /// (i32 0 or 1) is set, and the block's total (both i32). An inclusive
  /// warp scan by shuffles, then the warps' totals through shared memory.
  std::pair<Value, Value> blockExclusiveCount(Value flag) {
    Type i32 = b.getI32Type();
    int64_t warpWidth = std::min<int64_t>(plan.threads, 32);
    Value inclusive = flag;
    for (int64_t offset = 1; offset < warpWidth; offset *= 2) {
      auto up = gpu::ShuffleOp::create(b, inclusive, offset, warpWidth,
                                       gpu::ShuffleMode::UP);
      Value sum = arith::AddIOp::create(b, inclusive, up.getShuffleResult());
      inclusive = arith::SelectOp::create(b, up.getValid(), sum, inclusive);
    }
    Value exclusive = arith::SubIOp::create(b, inclusive, flag);
    if (plan.threads <= 32) {
      Value total = gpu::ShuffleOp::create(b, inclusive, warpWidth - 1,
                                           warpWidth, gpu::ShuffleMode::IDX)
                        .getShuffleResult();
      return {exclusive, total};
    }
    Value warp = div(threadId, 32);
    guarded(eq(rem(threadId, 32), 31), [&] {
      memref::StoreOp::create(b, inclusive, warpTotals, ValueRange{warp});
    });
    gpu::BarrierOp::create(b);
    Value zero = arith::ConstantIntOp::create(b, i32, 0);
    Value before = zero, total = zero;
    for (int64_t w = 0; w < plan.threads / 32; ++w) {
      Value count = memref::LoadOp::create(b, warpTotals, ValueRange{idx(w)});
      total = arith::AddIOp::create(b, total, count);
      Value earlier =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, warp, idx(w));
      before = arith::SelectOp::create(
          b, earlier, arith::AddIOp::create(b, before, count), before);
    }
    // The totals are rewritten by the next tile's scan.
    gpu::BarrierOp::create(b);
    return {arith::AddIOp::create(b, before, exclusive), total};
  }

  EmbeddingGradOp op;
  const EmbeddingGradPlan &plan;
  SmallVector<KernelInput, 1> inputs;
  Value warpTotals;
};
//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

/// cross_entropy's and cross_entropy_grad's common form.
struct CrossEntropyOperands {
  Value logits, labels, grad, result;
  LossReduction reduction = LossReduction::Mean;
  std::optional<int64_t> ignoreIndex;
};

std::optional<CrossEntropyOperands> getCrossEntropyOperands(Operation *op) {
  if (auto loss = dyn_cast<CrossEntropyOp>(op))
    return CrossEntropyOperands{
        loss.getLogits(), loss.getLabels(),    Value(),
        loss.getResult(), loss.getReduction(), loss.getIgnoreIndex()};
  if (auto grad = dyn_cast<CrossEntropyGradOp>(op))
    return CrossEntropyOperands{grad.getLogits(),    grad.getLabels(),
                                grad.getGrad(),      grad.getResult(),
                                grad.getReduction(), grad.getIgnoreIndex()};
  return std::nullopt;
}

/// The row kernels of a cross-entropy: one block per position streaming
/// `plan.vocab` logits of its row (a whole vocabulary, or one chunk of
/// linear_cross_entropy's starting at column `firstColumn`).
class CrossEntropyBuilder : public TrainingKernelBuilder {
public:
  CrossEntropyBuilder(gpu::GPUModuleOp gpuModule, Location loc,
                      LossReduction reduction,
                      std::optional<int64_t> ignoreIndex,
                      const CrossEntropyPlan &plan)
      : TrainingKernelBuilder(gpuModule, loc), reduction(reduction),
        ignoreIndex(ignoreIndex), plan(plan) {}

  /// cross_entropy (parameters: logits, labels, result[, partials,
  /// counter]) or cross_entropy_grad (logits, labels, grad, result).
  void buildWhole(StringRef name, const CrossEntropyOperands &loss) {
    bool backward = static_cast<bool>(loss.grad);
    SmallVector<Type> params{flatMemRefType(loss.logits),
                             flatMemRefType(loss.labels)};
    if (backward)
      params.push_back(flatMemRefType(loss.grad));
    params.push_back(flatMemRefType(loss.result));
    appendLossReductionParams(params);
    start(name, params);
    labels = func.getArgument(1);
    if (backward) {
      Value counted;
      Value labelColumn = labelColumnOf(idx(0), counted);
      Value lse = buildLogSumExp();
      buildGradient(func.getArgument(3), func.getArgument(2), Value(), lse,
                    counted, labelColumn);
    } else {
      Value counted;
      Value labelColumn = labelColumnOf(idx(0), counted);
      Value lse = buildLogSumExp();
      Value logit = loadLogit(labelColumn);
      finishLoss(func.getArgument(2), counted,
                 arith::SubFOp::create(b, lse, logit), 3);
    }
    gpu::ReturnOp::create(b);
  }

  /// One chunk of linear_cross_entropy: the chunk's row max and sum of exp
  /// folded into the running ones in `state` (f32 [3, rows]: max, sum, the
  /// label's logit); the last chunk writes the log-sum-exp and the loss.
  /// Parameters: logits [rows, columns], labels, state, and for the last
  /// chunk lse, result[, partials, counter].
  void buildChunk(StringRef name, Type element, Type labelsType,
                  ArrayRef<int64_t> resultShape, int64_t firstColumn,
                  bool first, bool last) {
    Type f32 = b.getF32Type();
    SmallVector<Type> params{flatMemRefType(plan.rows * plan.vocab, element),
                             flatMemRefType(plan.rows, labelsType),
                             flatMemRefType(3 * plan.rows, f32)};
    if (last) {
      params.push_back(flatMemRefType(plan.rows, f32));
      params.push_back(flatMemRefType(
          std::max<int64_t>(1, computeProduct(resultShape)), f32));
      appendLossReductionParams(params);
    }
    start(name, params);
    labels = func.getArgument(1);
    Value state = func.getArgument(2);
    Value counted;
    Value labelColumn = labelColumnOf(idx(firstColumn), counted);
    auto [chunkMax, chunkSum] = buildMaxAndSum();
    // The label's logit where this chunk holds its column.
    Value inChunk = arith::AndIOp::create(
        b, counted,
        arith::AndIOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::sge, labelColumn,
                                  idx(0)),
            arith::CmpIOp::create(b, arith::CmpIPredicate::slt, labelColumn,
                                  idx(plan.vocab))));
    Value logit = loadLogit(
        arith::SelectOp::create(b, inChunk, labelColumn, idx(0)).getResult());
    Value runningMax = chunkMax, runningSum = chunkSum,
          labelLogit = arith::SelectOp::create(b, inChunk, logit, f32Zero());
    if (!first) {
      auto stateAt = [&](int64_t part) {
        return memref::LoadOp::create(b, state,
                                      ValueRange{add(blockX, part * plan.rows)})
            .getResult();
      };
      Value oldMax = stateAt(0), oldSum = stateAt(1);
      runningMax = arith::MaximumFOp::create(b, oldMax, chunkMax);
      runningSum = arith::AddFOp::create(
          b, arith::MulFOp::create(b, oldSum, expShifted(oldMax, runningMax)),
          arith::MulFOp::create(b, chunkSum, expShifted(chunkMax, runningMax)));
      labelLogit = arith::SelectOp::create(b, inChunk, logit, stateAt(2));
    }
    if (!last) {
      SmallVector<Value, 3> running{runningMax, runningSum, labelLogit};
      guarded(eq(threadId, 0), [&] {
        for (auto [part, value] : llvm::enumerate(running))
          memref::StoreOp::create(
              b, value, state,
              ValueRange{add(blockX, static_cast<int64_t>(part) * plan.rows)});
      });
      gpu::ReturnOp::create(b);
      return;
    }
    Value lse = arith::AddFOp::create(b, runningMax,
                                      math::LogOp::create(b, runningSum));
    guarded(eq(threadId, 0), [&] {
      memref::StoreOp::create(b, lse, func.getArgument(3), ValueRange{blockX});
    });
    finishLoss(func.getArgument(4), counted,
               arith::SubFOp::create(b, lse, labelLogit), 5);
    gpu::ReturnOp::create(b);
  }

  /// One chunk of linear_cross_entropy_grad: the chunk's logits turned into
  /// their gradient in place. Parameters: logits [rows, columns], labels,
  /// lse, grad[, count (f32 [1]) for mean with ignore_index].
  void buildGradChunk(StringRef name, Type element, Type labelsType,
                      ArrayRef<int64_t> gradShape, int64_t firstColumn,
                      bool readsCount) {
    Type f32 = b.getF32Type();
    SmallVector<Type> params{
        flatMemRefType(plan.rows * plan.vocab, element),
        flatMemRefType(plan.rows, labelsType), flatMemRefType(plan.rows, f32),
        flatMemRefType(std::max<int64_t>(1, computeProduct(gradShape)), f32)};
    if (readsCount)
      params.push_back(flatMemRefType(1, f32));
    start(name, params);
    labels = func.getArgument(1);
    Value counted;
    Value labelColumn = labelColumnOf(idx(firstColumn), counted);
    Value lse =
        memref::LoadOp::create(b, func.getArgument(2), ValueRange{blockX});
    Value count = readsCount ? memref::LoadOp::create(b, func.getArgument(4),
                                                      ValueRange{idx(0)})
                                   .getResult()
                             : Value();
    buildGradient(logitsArg, func.getArgument(3), count, lse, counted,
                  labelColumn);
    gpu::ReturnOp::create(b);
  }

  /// One block counting the positions whose label counts (not
  /// ignore_index) into an f32 [1]. Parameters: labels, count.
  void buildCount(StringRef name, Type labelsType) {
    gpu::GPUFuncOp func =
        createKernel(b, name,
                     {flatMemRefType(plan.rows, labelsType),
                      flatMemRefType(1, b.getF32Type())},
                     plan.threads, {workgroupF32(b.getContext(), 32)});
    threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    scratch = func.getWorkgroupAttributions().front();
    labels = func.getArgument(0);
    Value count = countLabels();
    guarded(eq(threadId, 0), [&] {
      memref::StoreOp::create(b, count, func.getArgument(1),
                              ValueRange{idx(0)});
    });
    gpu::ReturnOp::create(b);
  }

private:
  /// The kernel, its scratch, and the logits (parameter 0) as the input the
  /// row is streamed from.
  gpu::GPUFuncOp start(StringRef name, ArrayRef<Type> params) {
    func = startKernel(name, params, plan.threads,
                       {workgroupF32(b.getContext(), 32)});
    scratch = func.getWorkgroupAttributions().front();
    logitsArg = func.getArgument(0);
    inputs.push_back({logitsArg, AccessPattern::Full, 1});
    emitter.emplace(b, inputs, plan.width);
    emitter->setMemRef(logitsArg, logitsArg);
    rowBase = mul(blockX, plan.vocab);
    return func;
  }

  void appendLossReductionParams(SmallVectorImpl<Type> &params) {
    if (!plan.reducesRows)
      return;
    params.push_back(flatMemRefType(2 * plan.rows, b.getF32Type()));
    params.push_back(flatMemRefType(1, b.getI32Type()));
  }

  Value f32Zero() { return f32(0.0); }
  Value negativeInfinity() {
    return f32(-std::numeric_limits<double>::infinity());
  }
  Value isNegativeInfinity(Value x) {
    return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x,
                                 negativeInfinity());
  }
  /// exp(x - m), 0 where x is -inf (so a row of -inf sums to 0, not NaN).
  Value expShifted(Value x, Value m) {
    Value e = math::ExpOp::create(b, arith::SubFOp::create(b, x, m));
    return arith::SelectOp::create(b, isNegativeInfinity(x), f32(0.0), e);
  }

  Value loadLabel(Value position) {
    Value label = memref::LoadOp::create(b, labels, ValueRange{position});
    if (label.getType() != b.getI64Type())
      label = arith::ExtSIOp::create(b, b.getI64Type(), label);
    return label;
  }
  /// Whether a label counts (is not ignore_index).
  Value isCounted(Value label) {
    if (!ignoreIndex)
      return arith::ConstantIntOp::create(b, b.getI1Type(), 1);
    return arith::CmpIOp::create(
        b, arith::CmpIPredicate::ne, label,
        arith::ConstantIntOp::create(b, b.getI64Type(), *ignoreIndex)
            .getResult());
  }
  /// The row's label as a column of the streamed logits (label minus
  /// `firstColumn`; 0 where the label does not count), and whether it
  /// counts.
  Value labelColumnOf(Value firstColumn, Value &counted) {
    Value label = loadLabel(blockX);
    counted = isCounted(label);
    Value column = arith::SubIOp::create(b, toIndex(label), firstColumn);
    return arith::SelectOp::create(b, counted, column, idx(0));
  }
  /// The logit at `column` of the row, as f32.
  Value loadLogit(Value column) {
    Value logit =
        memref::LoadOp::create(b, logitsArg, ValueRange{add(rowBase, column)});
    if (!logit.getType().isF32())
      logit = arith::ExtFOp::create(b, b.getF32Type(), logit);
    return logit;
  }

  /// Streams over the row's `vectors` in `width`-element vectors, thread `t`
  /// taking vectors t, t + threads, ...; `body(column, valid, lanes)`.
  SmallVector<Value> streamRow(
      ValueRange init,
      function_ref<SmallVector<Value>(Value, Value, const Lanes &, ValueRange)>
          body) {
    int64_t vectors = plan.vocab / plan.width;
    return loop(idx(0), idx(ceilDiv(vectors, plan.threads)), init,
                [&](Value i, ValueRange carried) {
                  Value vector = add(mul(i, plan.threads), threadId);
                  Value valid = less(vector, vectors);
                  Value column =
                      mul(arith::SelectOp::create(b, valid, vector, idx(0)),
                          plan.width);
                  Lanes x =
                      emitter->loadInput(inputs.front(), add(rowBase, column));
                  return body(column, valid, x, carried);
                });
  }

  /// The row's max and its sum of exp(x - max): each thread's online max
  /// and sum over its elements, then the block's max and rescaled sum.
  std::pair<Value, Value> buildMaxAndSum() {
    SmallVector<Value> init{negativeInfinity(), f32(0.0)};
    SmallVector<Value> state = streamRow(
        init, [&](Value, Value valid, const Lanes &x, ValueRange carried) {
          Value m = carried[0], s = carried[1];
          for (Value lane : x) {
            Value v =
                arith::SelectOp::create(b, valid, lane, negativeInfinity());
            Value next = arith::MaximumFOp::create(b, m, v);
            // s·exp(m - m') + exp(v - m'), terms of -inf dropped.
            s = arith::AddFOp::create(
                b, arith::MulFOp::create(b, s, expShifted(m, next)),
                expShifted(v, next));
            m = next;
          }
          return SmallVector<Value>{m, s};
        });
    Value rowMax = buildBlockReduce(b, state[0], threadId, plan.threads,
                                    scratch, /*isMax=*/true);
    Value sum = buildBlockReduce(
        b, arith::MulFOp::create(b, state[1], expShifted(state[0], rowMax)),
        threadId, plan.threads, scratch, /*isMax=*/false);
    return {rowMax, sum};
  }
  Value buildLogSumExp() {
    auto [rowMax, sum] = buildMaxAndSum();
    return arith::AddFOp::create(b, rowMax, math::LogOp::create(b, sum));
  }

  /// Writes the row's `loss` (0 where the label does not count) to `result`
  /// per position for reduction none; else the loss and the counted flag go
  /// to the partials (parameter `partialsArg`, the counter after it) and the
  /// last block to arrive sums them over all rows, in row order.
  void finishLoss(Value result, Value counted, Value loss,
                  unsigned partialsArg) {
    Value value = arith::SelectOp::create(b, counted, loss, f32(0.0));
    guarded(eq(threadId, 0), [&] {
      if (!plan.reducesRows) {
        memref::StoreOp::create(b, value, result, ValueRange{blockX});
        return;
      }
      Value partials = func.getArgument(partialsArg);
      memref::StoreOp::create(b, value, partials, ValueRange{blockX});
      memref::StoreOp::create(
          b, arith::SelectOp::create(b, counted, f32(1.0), f32(0.0)), partials,
          ValueRange{add(blockX, plan.rows)});
    });
    if (!plan.reducesRows)
      return;
    OpBuilder::InsertionGuard insertion(b);
    Value partials = func.getArgument(partialsArg);
    buildIfLastArrival(b, func.getArgument(partialsArg + 1), idx(0), threadId,
                       plan.rows);
    SmallVector<Value> init{f32(0.0), f32(0.0)};
    SmallVector<Value> sums = loop(
        idx(0), idx(ceilDiv(plan.rows, plan.threads)), init,
        [&](Value i, ValueRange acc) {
          Value r = add(mul(i, plan.threads), threadId);
          Value valid = less(r, plan.rows);
          r = arith::SelectOp::create(b, valid, r, idx(0));
          SmallVector<Value> next;
          for (int64_t half = 0; half < 2; ++half) {
            Value v = memref::LoadOp::create(
                b, partials, ValueRange{add(r, half * plan.rows)});
            next.push_back(arith::AddFOp::create(
                b, acc[half], arith::SelectOp::create(b, valid, v, f32(0.0))));
          }
          return next;
        });
    Value total = buildBlockReduce(b, sums[0], threadId, plan.threads, scratch,
                                   /*isMax=*/false);
    Value count = buildBlockReduce(b, sums[1], threadId, plan.threads, scratch,
                                   /*isMax=*/false);
    guarded(eq(threadId, 0), [&] {
      // Like PyTorch, a mean over no counted position is NaN (0 / 0).
      Value reduced = reduction == LossReduction::Mean
                          ? Value(arith::DivFOp::create(b, total, count))
                          : total;
      memref::StoreOp::create(b, reduced, result, ValueRange{idx(0)});
    });
  }

  /// (softmax - onehot(label)) · scale into `out` (the logits' own buffer
  /// for linear_cross_entropy_grad), scale the loss gradient `grad` (over
  /// the counted positions for mean: `count`, or counted here when null; the
  /// position's own for none; 0 where the label does not count), the logits
  /// read a second time.
  void buildGradient(Value out, Value grad, Value count, Value lse,
                     Value counted, Value labelColumn) {
    bool none = reduction == LossReduction::None;
    Value scale =
        memref::LoadOp::create(b, grad, ValueRange{none ? blockX : idx(0)});
    if (reduction == LossReduction::Mean)
      scale = arith::DivFOp::create(b, scale, count ? count : countLabels());
    scale = arith::SelectOp::create(b, counted, scale, f32(0.0));
    emitter->setMemRef(out, out);
    streamRow({}, [&](Value column, Value valid, const Lanes &x, ValueRange) {
      Lanes d;
      for (auto [lane, v] : llvm::enumerate(x)) {
        Value isLabel = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                              add(column, lane), labelColumn);
        Value p = math::ExpOp::create(b, arith::SubFOp::create(b, v, lse));
        p = arith::SubFOp::create(
            b, p, arith::SelectOp::create(b, isLabel, f32(1.0), f32(0.0)));
        d.push_back(arith::MulFOp::create(b, p, scale));
      }
      guarded(valid,
              [&] { emitter->storeOutput(out, d, add(rowBase, column)); });
      return SmallVector<Value>{};
    });
  }

  /// The number of counted positions, as f32: all of them without an
  /// ignore_index, else counted by the block over every label.
  Value countLabels() {
    if (!ignoreIndex)
      return f32(static_cast<double>(plan.rows));
    SmallVector<Value> init{f32(0.0)};
    SmallVector<Value> partial =
        loop(idx(0), idx(ceilDiv(plan.rows, plan.threads)), init,
             [&](Value i, ValueRange acc) {
               Value r = add(mul(i, plan.threads), threadId);
               Value valid = less(r, plan.rows);
               Value label =
                   loadLabel(arith::SelectOp::create(b, valid, r, idx(0)));
               Value counts = arith::AndIOp::create(b, valid, isCounted(label));
               return SmallVector<Value>{arith::AddFOp::create(
                   b, acc[0],
                   arith::SelectOp::create(b, counts, f32(1.0), f32(0.0)))};
             });
    return buildBlockReduce(b, partial[0], threadId, plan.threads, scratch,
                            /*isMax=*/false);
  }

  LossReduction reduction;
  std::optional<int64_t> ignoreIndex;
  const CrossEntropyPlan &plan;
  SmallVector<KernelInput, 1> inputs;
  std::optional<ElementwiseEmitter> emitter;
  gpu::GPUFuncOp func;
  Value scratch, labels, logitsArg, rowBase;
};
} // namespace

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

std::string memwall::whyNoFillKernel(arith::ConstantOp constant) {
  auto type = dyn_cast<RankedTensorType>(constant.getType());
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!type || !dense || !dense.isSplat())
    return "codegen fills only tensor constants of one repeated value";
  Type element = type.getElementType();
  bool wholeBytes =
      isa<IntegerType>(element) && element.getIntOrFloatBitWidth() % 8 == 0;
  if (!element.isF32() && !element.isF16() && !element.isBF16() &&
      !wholeBytes) {
    std::string name;
    llvm::raw_string_ostream os(name);
    os << element;
    return "codegen fills bf16, f16, f32 or whole-byte integer tensors, not " +
           name;
  }
  if (type.getNumElements() == 0)
    return "empty tensors run no generated kernel";
  return "";
}

FlatKernelPlan memwall::planFillKernel(arith::ConstantOp constant) {
  int64_t elements = tensorTypeOf(constant.getResult()).getNumElements();
  SmallVector<Value> values{constant.getResult()};
  return planFlat(elements, vectorWidthFor(values, elements));
}

void memwall::emitFillKernel(gpu::GPUModuleOp gpuModule, StringRef name,
                             arith::ConstantOp constant,
                             const FlatKernelPlan &plan) {
  FillBuilder(gpuModule, constant, plan).build(name);
}

bool memwall::isColumnReduction(Operation *op) {
  auto reduce = dyn_cast<ReduceOp>(op);
  return reduce && !reduce.isRowReduction() && reducedPrefix(reduce) > 0;
}

ColumnReductionPlan memwall::planColumnReduction(ReduceOp reduce,
                                                 const GPUTarget &target) {
  ColumnReductionPlan plan;
  ArrayRef<int64_t> shape = reduce.getInput().getType().getShape();
  int64_t prefix = reducedPrefix(reduce);
  plan.rows = 1;
  for (int64_t d : shape.take_front(prefix))
    plan.rows *= d;
  plan.columns = 1;
  for (int64_t d : shape.drop_front(prefix))
    plan.columns *= d;
  SmallVector<Value> values{reduce.getInput(), reduce.getResult()};
  plan.width = vectorWidthFor(values, plan.columns);
  int64_t vectors = plan.columns / plan.width;
  plan.threadsX =
      std::min<int64_t>(32, static_cast<int64_t>(llvm::PowerOf2Ceil(vectors)));
  plan.threadsY = 256 / plan.threadsX;
  plan.grid[0] = ceilDiv(vectors, plan.threadsX);
  // Enough splits of the rows for two blocks per SM, each thread still
  // summing at least four rows; at most CUDA's grid.y.
  int64_t wanted =
      ceilDiv(2 * std::max<int64_t>(1, target.smCount), plan.grid[0]);
  int64_t most = std::max<int64_t>(1, plan.rows / (4 * plan.threadsY));
  plan.splits = std::clamp<int64_t>(wanted, 1, std::min<int64_t>(most, 65535));
  plan.rowsPerSplit = ceilDiv(plan.rows, plan.splits);
  plan.splits = ceilDiv(plan.rows, plan.rowsPerSplit);
  plan.grid[1] = plan.splits;
  return plan;
}

void memwall::emitColumnReductionKernel(gpu::GPUModuleOp gpuModule,
                                        StringRef name, ReduceOp reduce,
                                        const ColumnReductionPlan &plan) {
  ColumnReductionBuilder(gpuModule, reduce, plan).build(name);
}

NormGradPlan memwall::planNormGradKernel(Operation *op,
                                         const GPUTarget &target) {
  NormGradPlan plan;
  std::optional<NormGradOperands> norm = getNormGradOperands(op);
  assert(norm && "not a norm gradient");
  ArrayRef<int64_t> shape = tensorTypeOf(norm->input).getShape();
  plan.columns = shape.empty() ? 1 : shape.back();
  plan.rows = tensorTypeOf(norm->input).getNumElements() /
              std::max<int64_t>(1, plan.columns);
  plan.parameterGrads = norm->biasGrad ? 2 : 1;
  SmallVector<Value> values{norm->input, norm->weight, norm->grad,
                            norm->inputGrad, norm->weightGrad};
  plan.width = vectorWidthFor(values, plan.columns);
  // As the forward's row kernel: a warp-multiple of threads up to 512.
  RowThreads threads = chooseRowThreads(plan.columns / plan.width);
  plan.threads = threads.threads;
  plan.vectorsPerThread = threads.vectorsPerThread;
  // Per lane: x, dy, x̂, the weight and the parameter gradients' sums.
  plan.registersPerThread =
      32 + plan.vectorsPerThread * plan.width * (4 + plan.parameterGrads);
  // Two blocks per SM share the rows: fewer partials to combine than one
  // block per row, every SM busy.
  plan.blocks = std::clamp<int64_t>(2 * std::max<int64_t>(1, target.smCount), 1,
                                    std::max<int64_t>(1, plan.rows));
  plan.rowsPerBlock = ceilDiv(plan.rows, plan.blocks);
  plan.blocks = std::max<int64_t>(1, ceilDiv(plan.rows, plan.rowsPerBlock));
  return plan;
}

std::string memwall::whyNoNormGradKernel(Operation *op,
                                         const GPUTarget &target) {
  std::optional<NormGradOperands> norm = getNormGradOperands(op);
  if (!norm)
    return "not a layer_norm_grad or rms_norm_grad";
  if (tensorTypeOf(norm->input).getNumElements() == 0)
    return "empty tensors run no generated kernel";
  NormGradPlan plan = planNormGradKernel(op, target);
  if (plan.registersPerThread > kMaxRegistersPerThread)
    return "rows of " + std::to_string(plan.columns) + " elements need about " +
           std::to_string(plan.registersPerThread) +
           " registers per thread and would spill";
  return "";
}

void memwall::emitNormGradKernel(gpu::GPUModuleOp gpuModule, StringRef name,
                                 Operation *op, const NormGradPlan &plan) {
  std::optional<NormGradOperands> norm = getNormGradOperands(op);
  assert(norm && "not a norm gradient");
  NormGradBuilder(gpuModule, op, *norm, plan).build(name);
}

std::string memwall::whyNoAdamWKernel(AdamWOp adamw) {
  for (Value state : adamw->getOperands()) {
    if (state == adamw.getGrad())
      continue;
    auto argument = dyn_cast<BlockArgument>(getValueOutsideFusions(state));
    if (!argument || !isa_and_nonnull<FunctionOpInterface>(
                         argument.getOwner()->getParentOp()))
      return "codegen updates AdamW's param, moments and master weights in "
             "place, so each must be a function argument";
  }
  if (tensorTypeOf(adamw.getParam()).getNumElements() == 0)
    return "empty tensors run no generated kernel";
  return "";
}

AdamWKernelPlan memwall::planAdamWKernel(ArrayRef<AdamWOp> updates) {
  AdamWKernelPlan plan;
  int64_t blocks = 0;
  for (AdamWOp adamw : updates) {
    int64_t elements = tensorTypeOf(adamw.getParam()).getNumElements();
    FlatKernelPlan flat =
        planFlat(elements, vectorWidthFor(adamw->getOperands(), elements));
    plan.threads = flat.threads;
    plan.segments.push_back({elements, flat.width, blocks, flat.grid[0]});
    blocks += flat.grid[0];
  }
  plan.grid[0] = blocks;
  return plan;
}

void memwall::emitAdamWKernel(gpu::GPUModuleOp gpuModule, StringRef name,
                              ArrayRef<AdamWOp> updates, ValueRange parameters,
                              const AdamWKernelPlan &plan) {
  AdamWBuilder(gpuModule, updates, parameters, plan).build(name);
}

EmbeddingGradPlan memwall::planEmbeddingGradKernel(EmbeddingGradOp op) {
  EmbeddingGradPlan plan;
  ArrayRef<int64_t> table = op.getResult().getType().getShape();
  plan.rows = table[0];
  plan.columns = table[1];
  plan.positions = op.getIndices().getType().getNumElements();
  SmallVector<Value> values{op.getGrad(), op.getResult()};
  plan.width = vectorWidthFor(values, plan.columns);
  RowThreads threads = chooseRowThreads(plan.columns / plan.width);
  plan.threads = threads.threads;
  plan.vectorsPerThread = threads.vectorsPerThread;
  // Up to 8 rows a block while their sums fit in 64 registers a thread.
  plan.rowsPerBlock =
      std::clamp<int64_t>(64 / (plan.vectorsPerThread * plan.width), 1, 8);
  plan.rowsPerBlock =
      std::min(plan.rowsPerBlock, std::max<int64_t>(1, plan.rows));
  plan.grid[0] = std::max<int64_t>(1, ceilDiv(plan.rows, plan.rowsPerBlock));
  return plan;
}

std::string memwall::whyNoEmbeddingGradKernel(EmbeddingGradOp op) {
  if (getNumElements(op.getResult().getType()) == 0)
    return "empty tensors run no generated kernel";
  EmbeddingGradPlan plan = planEmbeddingGradKernel(op);
  // Per lane: the block's rows' sums and the gradient vector.
  int64_t registers =
      32 + plan.vectorsPerThread * plan.width * (plan.rowsPerBlock + 1);
  if (registers > kMaxRegistersPerThread)
    return "rows of " + std::to_string(plan.columns) + " elements need about " +
           std::to_string(registers) + " registers per thread and would spill";
  if (plan.positions > std::numeric_limits<int32_t>::max())
    return "it holds positions in i32: more than 2^31 - 1 positions";
  return "";
}

void memwall::emitEmbeddingGradKernel(gpu::GPUModuleOp gpuModule,
                                      StringRef name, EmbeddingGradOp op,
                                      const EmbeddingGradPlan &plan) {
  EmbeddingGradBuilder(gpuModule, op, plan).build(name);
}

bool memwall::isCrossEntropyKernelOp(Operation *op) {
  return getCrossEntropyOperands(op).has_value();
}

CrossEntropyPlan memwall::planCrossEntropyKernel(Operation *op) {
  std::optional<CrossEntropyOperands> loss = getCrossEntropyOperands(op);
  assert(loss && "not a cross-entropy");
  CrossEntropyPlan plan;
  ArrayRef<int64_t> shape = tensorTypeOf(loss->logits).getShape();
  plan.vocab = shape.back();
  plan.rows = tensorTypeOf(loss->labels).getNumElements();
  SmallVector<Value> values{loss->logits};
  if (loss->grad)
    values.push_back(loss->result);
  plan.width = vectorWidthFor(values, plan.vocab);
  // A block streams its row: up to 256 threads, the row never held whole.
  plan.threads =
      std::min<int64_t>(256, chooseRowThreads(plan.vocab / plan.width).threads);
  plan.reducesRows = !loss->grad && loss->reduction != LossReduction::None;
  return plan;
}

std::string memwall::whyNoCrossEntropyKernel(Operation *op) {
  std::optional<CrossEntropyOperands> loss = getCrossEntropyOperands(op);
  if (!loss)
    return "not a cross_entropy or cross_entropy_grad";
  if (getNumElements(loss->logits.getType()) == 0)
    return "empty tensors run no generated kernel";
  return "";
}

void memwall::emitCrossEntropyKernel(gpu::GPUModuleOp gpuModule, StringRef name,
                                     Operation *op,
                                     const CrossEntropyPlan &plan) {
  std::optional<CrossEntropyOperands> loss = getCrossEntropyOperands(op);
  assert(loss && "not a cross-entropy");
  CrossEntropyBuilder(gpuModule, op->getLoc(), loss->reduction,
                      loss->ignoreIndex, plan)
      .buildWhole(name, *loss);
}

//===----------------------------------------------------------------------===//
// Linear cross-entropy
//===----------------------------------------------------------------------===//

namespace {
/// What the forward and the backward share.
struct LinearHead {
  Value hidden, weight, labels, lossOrGrad;
  LossReduction reduction = LossReduction::Mean;
  std::optional<int64_t> ignoreIndex;
  bool transposeWeight = false;
  bool backward = false;
  LinearHeadDims dims;
};

template <typename OpTy>
LinearHead linearHeadOf(OpTy op, Value lossOrGrad, bool backward) {
  return LinearHead{op.getHidden(),
                    op.getWeight(),
                    op.getLabels(),
                    lossOrGrad,
                    op.getReduction(),
                    op.getIgnoreIndex(),
                    op.getTransposeWeight(),
                    backward,
                    op.getDims()};
}

std::optional<LinearHead> getLinearHead(Operation *op) {
  if (auto loss = dyn_cast<LinearCrossEntropyOp>(op))
    return linearHeadOf(loss, loss.getResult(), /*backward=*/false);
  if (auto grad = dyn_cast<LinearCrossEntropyGradOp>(op))
    return linearHeadOf(grad, grad.getGrad(), /*backward=*/true);
  return std::nullopt;
}
} // namespace

bool memwall::isLinearCrossEntropyOp(Operation *op) {
  return getLinearHead(op).has_value();
}

std::string memwall::whyNoLinearCrossEntropyKernels(Operation *op) {
  std::optional<LinearHead> head = getLinearHead(op);
  if (!head)
    return "not a linear_cross_entropy or linear_cross_entropy_grad";
  if (head->dims.tokens == 0 || head->dims.vocab == 0 || head->dims.hidden == 0)
    return "empty tensors run no generated kernel";
  if (!head->transposeWeight)
    return "the chunks of its weight are runs of rows only as [V, D] "
           "(transpose_weight, nn.Linear's and a tied embedding's layout); "
           "this one is [D, V]";
  Type element = tensorTypeOf(head->hidden).getElementType();
  if (!element.isBF16() && !element.isF16() && !element.isF32())
    return "its GEMMs run on cuBLASLt, which takes f32, bf16 or f16, not " +
           llvm::formatv("{0}", element).str();
  // A chunk is a multiple of 128 rows: of 2- or 4-byte elements, it starts
  // at a multiple of the arena's 256-byte alignment.
  static_assert(MemWallDialect::kArenaAlignment <= 128 * 2,
                "chunks of 128 rows start aligned");
  return "";
}

LinearCrossEntropyPlan memwall::planLinearCrossEntropy(Operation *op) {
  std::optional<LinearHead> head = getLinearHead(op);
  assert(head && "not a linear cross-entropy");
  LinearCrossEntropyPlan plan;
  plan.rows = head->dims.tokens;
  plan.vocab = head->dims.vocab;
  plan.hidden = head->dims.hidden;
  plan.chunkColumns = head->dims.getChunkColumns();
  plan.chunks = head->dims.getChunks();
  for (int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
    CrossEntropyPlan row;
    row.rows = plan.rows;
    row.vocab = plan.columns(chunk);
    row.width = vectorWidthFor(head->hidden, row.vocab);
    row.threads =
        std::min<int64_t>(256, chooseRowThreads(row.vocab / row.width).threads);
    row.reducesRows = !head->backward && chunk + 1 == plan.chunks &&
                      head->reduction != LossReduction::None;
    plan.chunkKernels.push_back(row);
  }
  plan.countsLabels = head->backward && head->ignoreIndex &&
                      head->reduction == LossReduction::Mean;
  int64_t accumulator = plan.rows * plan.hidden;
  plan.narrow = planFlat(accumulator, accumulator % 4 == 0 ? 4 : 1);
  return plan;
}

void memwall::emitLinearCrossEntropyChunkKernel(
    gpu::GPUModuleOp gpuModule, StringRef name, Operation *op,
    const LinearCrossEntropyPlan &plan, int64_t chunk) {
  std::optional<LinearHead> head = getLinearHead(op);
  assert(head && "not a linear cross-entropy");
  Type element = tensorTypeOf(head->hidden).getElementType();
  Type labels = tensorTypeOf(head->labels).getElementType();
  CrossEntropyBuilder builder(gpuModule, op->getLoc(), head->reduction,
                              head->ignoreIndex, plan.chunkKernels[chunk]);
  ArrayRef<int64_t> shape = tensorTypeOf(head->lossOrGrad).getShape();
  if (head->backward)
    builder.buildGradChunk(name, element, labels, shape,
                           plan.firstColumn(chunk), plan.countsLabels);
  else
    builder.buildChunk(name, element, labels, shape, plan.firstColumn(chunk),
                       chunk == 0, chunk + 1 == plan.chunks);
}

void memwall::emitCountLabelsKernel(gpu::GPUModuleOp gpuModule, StringRef name,
                                    Operation *op,
                                    const LinearCrossEntropyPlan &plan) {
  std::optional<LinearHead> head = getLinearHead(op);
  assert(head && "not a linear cross-entropy");
  CrossEntropyPlan count;
  count.rows = plan.rows;
  count.threads = 256;
  CrossEntropyBuilder(gpuModule, op->getLoc(), head->reduction,
                      head->ignoreIndex, count)
      .buildCount(name, tensorTypeOf(head->labels).getElementType());
}

namespace {
class NarrowBuilder : public TrainingKernelBuilder {
public:
  NarrowBuilder(gpu::GPUModuleOp gpuModule, Location loc,
                const FlatKernelPlan &plan)
      : TrainingKernelBuilder(gpuModule, loc), plan(plan) {}

  void build(StringRef name, Type type) {
    gpu::GPUFuncOp func =
        startKernel(name,
                    {flatMemRefType(plan.elements, b.getF32Type()),
                     flatMemRefType(plan.elements, type)},
                    plan.threads);
    Value vectorIndex = add(mul(blockX, plan.threads), threadId);
    guarded(less(vectorIndex, plan.elements / plan.width), [&] {
      Value flat = mul(vectorIndex, plan.width);
      Lanes lanes = loadF32(func.getArgument(0), flat, plan.width);
      SmallVector<Value> narrowed;
      for (Value lane : lanes)
        narrowed.push_back(
            type.isF32() ? lane : arith::TruncFOp::create(b, type, lane));
      if (plan.width == 1) {
        memref::StoreOp::create(b, narrowed[0], func.getArgument(1),
                                ValueRange{flat});
        return;
      }
      alignedVectorStore(b,
                         vector::FromElementsOp::create(
                             b, VectorType::get({plan.width}, type), narrowed),
                         func.getArgument(1), flat);
    });
    gpu::ReturnOp::create(b);
  }

private:
  const FlatKernelPlan &plan;
};
} // namespace

void memwall::emitNarrowKernel(gpu::GPUModuleOp gpuModule, StringRef name,
                               Location loc, const FlatKernelPlan &plan,
                               Type type) {
  NarrowBuilder(gpuModule, loc, plan).build(name, type);
}
