//===- ElementwiseEmitter.cpp - elementwise ops on vectors of lanes -------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ElementwiseEmitter.h"
#include "KernelBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace memwall;

static Type elementTypeOf(Value value) {
  return cast<ShapedType>(value.getType()).getElementType();
}

Value ElementwiseEmitter::toF32(Value scalar) {
  if (scalar.getType().isF32())
    return scalar;
  return arith::ExtFOp::create(b, b.getF32Type(), scalar);
}

Value ElementwiseEmitter::fromF32(Value scalar, Type type) {
  if (type.isF32())
    return scalar;
  return arith::TruncFOp::create(b, type, scalar);
}

Lanes ElementwiseEmitter::loadInput(const KernelInput &input, Value flat) {
  Value memref = getMemRef(input.value);
  Type elementType = elementTypeOf(input.value);
  auto broadcast = [&](Value scalarIndex) {
    Value scalar =
        toF32(memref::LoadOp::create(b, memref, ValueRange{scalarIndex}));
    return Lanes(width, scalar);
  };
  Value at = flat;
  switch (input.pattern) {
  case AccessPattern::Scalar:
    return broadcast(indexConstant(b, 0));
  case AccessPattern::Outer:
    return broadcast(
        arith::DivUIOp::create(b, flat, indexConstant(b, input.innerElements)));
  case AccessPattern::Suffix:
    at = arith::RemUIOp::create(b, flat, indexConstant(b, input.innerElements));
    break;
  case AccessPattern::Full:
    break;
  }
  Lanes lanes;
  if (width == 1) {
    lanes.push_back(toF32(memref::LoadOp::create(b, memref, ValueRange{at})));
    return lanes;
  }
  auto vectorType = VectorType::get({width}, elementType);
  Value vector = alignedVectorLoad(b, vectorType, memref, at);
  for (int64_t lane = 0; lane < width; ++lane)
    lanes.push_back(toF32(vector::ExtractOp::create(b, vector, lane)));
  return lanes;
}

void ElementwiseEmitter::storeOutput(Value output, const Lanes &lanes,
                                     Value flat) {
  Value memref = getMemRef(output);
  Type elementType = elementTypeOf(output);
  if (width == 1) {
    memref::StoreOp::create(b, fromF32(lanes[0], elementType), memref,
                            ValueRange{flat});
    return;
  }
  SmallVector<Value> narrowed;
  for (Value lane : lanes)
    narrowed.push_back(fromF32(lane, elementType));
  auto vectorType = VectorType::get({width}, elementType);
  Value vector = vector::FromElementsOp::create(b, vectorType, narrowed);
  alignedVectorStore(b, vector, memref, flat);
}

void ElementwiseEmitter::evaluate(ArrayRef<Operation *> ops, Value flat,
                                  DenseMap<Value, Lanes> &lanes) {
  for (Operation *op : ops) {
    SmallVector<Lanes> operandLanes;
    for (Value operand : op->getOperands())
      operandLanes.push_back(lanesOf(operand, flat, lanes));
    Lanes result;
    for (int64_t lane = 0; lane < width; ++lane) {
      SmallVector<Value> scalars;
      for (const Lanes &operand : operandLanes)
        scalars.push_back(operand[lane]);
      // One element of the op, in f32: its scalar payload.
      // (Every value a kernel computes has its iteration space's shape:
      // the flat index is the element's own.)
      Value index =
          lane == 0 ? flat
                    : arith::AddIOp::create(b, flat, indexConstant(b, lane));
      result.push_back(cast<ElementwiseOpInterface>(op).buildScalarPayload(
          b, b.getLoc(), scalars, b.getF32Type(), index));
    }
    lanes[op->getResult(0)] = std::move(result);
  }
}

Lanes ElementwiseEmitter::lanesOf(Value value, Value flat,
                                  DenseMap<Value, Lanes> &lanes) {
  if (auto it = lanes.find(value); it != lanes.end())
    return it->second;
  for (const KernelInput &input : inputs)
    if (input.value == value) {
      Lanes loaded = loadInput(input, flat);
      lanes[value] = loaded;
      return loaded;
    }
  llvm_unreachable("value neither computed nor an input");
}
