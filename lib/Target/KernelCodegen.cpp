//===- KernelCodegen.cpp - GPU kernels for elementwise and row kernels ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KernelCodegen.h"
#include "ElementwiseEmitter.h"
#include "KernelBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>

using namespace mlir;
using namespace memwall;

namespace {
class KernelBuilder {
public:
  KernelBuilder(gpu::GPUModuleOp gpuModule, const KernelAnalysis &analysis,
                ArrayRef<Value> outputs)
      : b(gpuModule.getLoc(), gpuModule.getContext()), analysis(analysis),
        outputs(outputs), width(analysis.geometry.vectorWidth),
        emitter(b, analysis.inputs, width) {
    b.setInsertionPointToEnd(gpuModule.getBody());
  }

  FailureOr<gpu::GPUFuncOp> build(StringRef name) {
    MLIRContext *ctx = b.getContext();
    SmallVector<Type> params;
    for (const KernelInput &input : analysis.inputs)
      params.push_back(flatMemRefType(input.value));
    for (Value output : outputs)
      params.push_back(flatMemRefType(output));
    auto workgroup = MemRefType::get(
        {32}, b.getF32Type(), AffineMap(),
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
    bool isReduction = analysis.kind == FusionKind::Reduction;
    SmallVector<Type> workgroupTypes;
    if (isReduction)
      workgroupTypes.push_back(workgroup);
    gpu::GPUFuncOp func = createKernel(
        b, name, params, analysis.geometry.threadsPerBlock, workgroupTypes);
    Block &entry = func.getBody().front();
    for (auto [i, input] : llvm::enumerate(analysis.inputs))
      emitter.setMemRef(input.value, entry.getArgument(i));
    for (auto [i, output] : llvm::enumerate(outputs))
      emitter.setMemRef(output, entry.getArgument(analysis.inputs.size() + i));
    if (isReduction)
      scratch = func.getWorkgroupAttributions().front();
    threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    blockId = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    if (isReduction) {
      if (failed(buildRowKernel()))
        return failure();
    } else {
      buildElementwiseKernel();
    }
    gpu::ReturnOp::create(b);
    return func;
  }

private:
  Value index(int64_t value) { return indexConstant(b, value); }
  Value f32(double value) { return f32Constant(b, value); }

  static Type elementTypeOf(Value value) {
    return cast<ShapedType>(value.getType()).getElementType();
  }

  void buildElementwiseKernel() {
    const KernelGeometry &geometry = analysis.geometry;
    int64_t elements = 1;
    for (int64_t d : analysis.iterationShape)
      elements *= d;
    int64_t vectors = elements / width;
    Value perBlock =
        index(geometry.threadsPerBlock * geometry.vectorsPerThread);
    Value blockStart = arith::MulIOp::create(b, blockId, perBlock);
    // Every load of the thread's vectors is issued before the first is
    // used (memory-level parallelism: with the pointers noalias ptxas keeps
    // them in flight together); a vector past the end loads the last one
    // instead and stores nothing.
    int64_t count = geometry.vectorsPerThread;
    SmallVector<Value> flats, inRange;
    SmallVector<DenseMap<Value, Lanes>> lanes(count);
    for (int64_t u = 0; u < count; ++u) {
      Value vectorIndex = arith::AddIOp::create(
          b, blockStart,
          arith::AddIOp::create(b, threadId,
                                index(u * geometry.threadsPerBlock)));
      inRange.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                              vectorIndex, index(vectors)));
      Value clamped =
          arith::MinUIOp::create(b, vectorIndex, index(vectors - 1));
      flats.push_back(arith::MulIOp::create(b, clamped, index(width)));
      for (const KernelInput &input : analysis.inputs)
        emitter.lanesOf(input.value, flats[u], lanes[u]);
    }
    // Computed outside the guard (on the clamped vector past the end), so
    // LLVM cannot sink the loads into it behind the previous vector's store;
    // only the stores are guarded.
    for (int64_t u = 0; u < count; ++u) {
      emitter.evaluate(analysis.ops, flats[u], lanes[u]);
      SmallVector<Lanes> results;
      for (Value output : outputs)
        results.push_back(emitter.lanesOf(output, flats[u], lanes[u]));
      auto guard = scf::IfOp::create(b, inRange[u], /*withElseRegion=*/false);
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPointToStart(guard.thenBlock());
      for (auto [output, result] : llvm::zip(outputs, results))
        emitter.storeOutput(output, result, flats[u]);
    }
  }

  enum class Combine { Sum, Max };
  Value combine(Combine kind, Value x, Value y) {
    return kind == Combine::Sum ? Value(arith::AddFOp::create(b, x, y))
                                : Value(arith::MaximumFOp::create(b, x, y));
  }

  /// Combines one f32 per thread across the block; every thread gets the
  /// result.
  Value blockReduce(Value partial, Combine kind) {
    return buildBlockReduce(b, partial, threadId,
                            analysis.geometry.threadsPerBlock, scratch,
                            kind == Combine::Max);
  }

  /// Sum (or max) of f(lane) over the valid lanes this thread holds.
  Value threadPartial(ArrayRef<Lanes> values, ArrayRef<Value> valid,
                      Combine kind, function_ref<Value(Value)> transform) {
    Value neutral = kind == Combine::Sum
                        ? f32(0.0)
                        : f32(-std::numeric_limits<float>::infinity());
    Value partial = neutral;
    for (auto [k, lanes] : llvm::enumerate(values)) {
      Value chunk = neutral;
      for (Value lane : lanes)
        chunk = combine(kind, chunk, transform(lane));
      if (valid[k])
        chunk = arith::SelectOp::create(b, valid[k], chunk, neutral);
      partial = combine(kind, partial, chunk);
    }
    return partial;
  }

  LogicalResult buildRowKernel() {
    const KernelGeometry &geometry = analysis.geometry;
    Operation *anchor = analysis.anchor;
    int64_t rowLength = analysis.iterationShape.back();
    int64_t threads = geometry.threadsPerBlock;
    int64_t chunks = geometry.vectorsPerThread;
    bool exact = threads * chunks * width == rowLength;
    Value rowStart = arith::MulIOp::create(b, blockId, index(rowLength));

    SmallVector<Operation *> prologue, epilogue;
    for (Operation *op : analysis.ops) {
      if (op == anchor)
        continue;
      (op->isBeforeInBlock(anchor) ? prologue : epilogue).push_back(op);
    }

    // Each chunk: the thread's vector at column (k * threads + tid) * width.
    SmallVector<Value> flat(chunks), valid(chunks);
    SmallVector<DenseMap<Value, Lanes>> lanes(chunks);
    for (int64_t k = 0; k < chunks; ++k) {
      Value column = arith::MulIOp::create(
          b, arith::AddIOp::create(b, threadId, index(k * threads)),
          index(width));
      if (!exact) {
        valid[k] = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, column,
                                         index(rowLength));
        // Out-of-row chunks read column 0 and are masked out.
        column = arith::SelectOp::create(b, valid[k], column, index(0));
      }
      flat[k] = arith::AddIOp::create(b, rowStart, column);
      emitter.evaluate(prologue, flat[k], lanes[k]);
    }
    Value input = anchor->getOperand(0);
    SmallVector<Lanes> x;
    for (int64_t k = 0; k < chunks; ++k)
      x.push_back(emitter.lanesOf(input, flat[k], lanes[k]));
    auto identity = [](Value v) { return v; };
    Value count = f32(static_cast<double>(rowLength));

    // Per-element result of the row op, or a per-row scalar (reduce).
    SmallVector<Lanes> y(chunks);
    auto operandLanes = [&](unsigned operandIndex, int64_t k) {
      return emitter.lanesOf(anchor->getOperand(operandIndex), flat[k],
                             lanes[k]);
    };
    if (auto norm = dyn_cast<LayerNormOp>(anchor)) {
      Value mean = arith::DivFOp::create(
          b,
          blockReduce(threadPartial(x, valid, Combine::Sum, identity),
                      Combine::Sum),
          count);
      auto squaredDeviation = [&](Value v) {
        Value d = arith::SubFOp::create(b, v, mean);
        return Value(arith::MulFOp::create(b, d, d));
      };
      Value variance = arith::DivFOp::create(
          b,
          blockReduce(threadPartial(x, valid, Combine::Sum, squaredDeviation),
                      Combine::Sum),
          count);
      Value rstd = math::RsqrtOp::create(
          b, arith::AddFOp::create(b, variance,
                                   f32(norm.getEpsilon().convertToDouble())));
      for (int64_t k = 0; k < chunks; ++k) {
        Lanes weight = operandLanes(1, k);
        Lanes bias = norm.getBias() ? operandLanes(2, k) : Lanes();
        for (int64_t lane = 0; lane < width; ++lane) {
          Value v = arith::MulFOp::create(
              b, arith::SubFOp::create(b, x[k][lane], mean), rstd);
          v = arith::MulFOp::create(b, v, weight[lane]);
          if (!bias.empty())
            v = arith::AddFOp::create(b, v, bias[lane]);
          y[k].push_back(v);
        }
      }
    } else if (auto norm = dyn_cast<RmsNormOp>(anchor)) {
      auto square = [&](Value v) {
        return Value(arith::MulFOp::create(b, v, v));
      };
      Value meanSquare = arith::DivFOp::create(
          b,
          blockReduce(threadPartial(x, valid, Combine::Sum, square),
                      Combine::Sum),
          count);
      Value rstd = math::RsqrtOp::create(
          b, arith::AddFOp::create(b, meanSquare,
                                   f32(norm.getEpsilon().convertToDouble())));
      for (int64_t k = 0; k < chunks; ++k) {
        Lanes weight = operandLanes(1, k);
        for (int64_t lane = 0; lane < width; ++lane)
          y[k].push_back(arith::MulFOp::create(
              b, arith::MulFOp::create(b, x[k][lane], rstd), weight[lane]));
      }
    } else if (isa<SoftmaxOp>(anchor)) {
      Value rowMax = blockReduce(
          threadPartial(x, valid, Combine::Max, identity), Combine::Max);
      SmallVector<Lanes> exps(chunks);
      for (int64_t k = 0; k < chunks; ++k)
        for (Value v : x[k])
          exps[k].push_back(
              math::ExpOp::create(b, arith::SubFOp::create(b, v, rowMax)));
      Value sum = blockReduce(
          threadPartial(exps, valid, Combine::Sum, identity), Combine::Sum);
      Value inverse = arith::DivFOp::create(b, f32(1.0), sum);
      for (int64_t k = 0; k < chunks; ++k)
        for (Value e : exps[k])
          y[k].push_back(arith::MulFOp::create(b, e, inverse));
    } else if (auto reduce = dyn_cast<ReduceOp>(anchor)) {
      Combine kind =
          reduce.getKind() == ReduceKind::Max ? Combine::Max : Combine::Sum;
      Value total = blockReduce(threadPartial(x, valid, kind, identity), kind);
      if (reduce.getKind() == ReduceKind::Mean)
        total = arith::DivFOp::create(b, total, count);
      Value isFirst = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                            threadId, index(0));
      auto guard = scf::IfOp::create(b, isFirst, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPointToStart(guard.thenBlock());
      Value result = reduce.getResult();
      memref::StoreOp::create(b, emitter.fromF32(total, elementTypeOf(result)),
                              emitter.getMemRef(result), ValueRange{blockId});
    } else {
      return anchor->emitError("codegen has no row kernel for this op");
    }

    for (int64_t k = 0; k < chunks; ++k) {
      if (!y[k].empty())
        lanes[k][anchor->getResult(0)] = y[k];
      emitter.evaluate(epilogue, flat[k], lanes[k]);
    }
    for (int64_t k = 0; k < chunks; ++k) {
      OpBuilder::InsertionGuard insertion(b);
      if (valid[k]) {
        auto guard = scf::IfOp::create(b, valid[k], /*withElseRegion=*/false);
        b.setInsertionPointToStart(guard.thenBlock());
      }
      for (Value output : outputs)
        if (!isa<ReduceOp>(output.getDefiningOp()))
          emitter.storeOutput(output, lanes[k].lookup(output), flat[k]);
    }
    return success();
  }

  ImplicitLocOpBuilder b;
  const KernelAnalysis &analysis;
  ArrayRef<Value> outputs;
  int64_t width;
  ElementwiseEmitter emitter;
  Value scratch, threadId, blockId;
};
} // namespace

FailureOr<gpu::GPUFuncOp> memwall::emitKernel(gpu::GPUModuleOp gpuModule,
                                              StringRef name,
                                              const KernelAnalysis &analysis,
                                              ArrayRef<Value> outputs) {
  return KernelBuilder(gpuModule, analysis, outputs).build(name);
}
