//===- DequantizeCodegen.cpp - memwall.dequantize in generated code -------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "DequantizeCodegen.h"
#include "KernelBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <array>

using namespace mlir;
using namespace memwall;

Value DequantizeEmitter::unpackI4(ImplicitLocOpBuilder &b, Value byte,
                                  Value odd) {
  Type i32 = b.getI32Type();
  auto constant = [&](int64_t value) {
    return arith::ConstantIntOp::create(b, i32, value);
  };
  Value word = arith::ExtUIOp::create(b, i32, byte);
  Value shift = arith::IndexCastOp::create(
      b, i32, arith::MulIOp::create(b, odd, indexConstant(b, 4)));
  Value nibble = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, word, shift), constant(0xF));
  // Two's complement in 4 bits: (n ^ 8) - 8.
  Value value = arith::SubIOp::create(
      b, arith::XOrIOp::create(b, nibble, constant(8)), constant(8));
  return arith::TruncIOp::create(b, b.getI8Type(), value);
}

Value DequantizeEmitter::lookUpCodebook(ArrayRef<float> codebook,
                                        Value stored) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  Value code = arith::AndIOp::create(b, arith::ExtSIOp::create(b, i32, stored),
                                     arith::ConstantIntOp::create(b, i32, 0xF));
  // whyNoDequantizeCode admits i4 codebooks only: 16 entries. A tree of
  // selects on the code's bits, lowest first, keeps the table in registers
  // (no local-memory array).
  std::array<Value, 16> level;
  for (auto [entry, value] : llvm::zip_equal(level, codebook))
    entry =
        arith::ConstantFloatOp::create(b, cast<FloatType>(f32), APFloat(value));
  int64_t bit = 0;
  for (size_t size = level.size(); size > 1; size /= 2, ++bit) {
    Value set = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ne,
        arith::AndIOp::create(
            b, code, arith::ConstantIntOp::create(b, i32, int64_t{1} << bit)),
        arith::ConstantIntOp::create(b, i32, 0));
    // Pairs differing in this bit collapse in place: entry i of the next
    // level is entry 2i or 2i + 1 of this one.
    for (size_t i = 0; i < size / 2; ++i)
      level[i] =
          arith::SelectOp::create(b, set, level[2 * i + 1], level[2 * i]);
  }
  return level[0];
}

Value DequantizeEmitter::decode(Value stored) {
  if (std::optional<ArrayRef<float>> codebook = dequantize.getCodebook())
    return lookUpCodebook(*codebook, stored);
  Type f32 = b.getF32Type();
  if (stored.getType().isInteger(8))
    return arith::SIToFPOp::create(b, f32, stored);
  // An 8-bit float widens exactly (memwall-expand-fp8-conversions lowers
  // it to integer arithmetic).
  return arith::ExtFOp::create(b, f32, stored);
}

Value DequantizeEmitter::loadScale(Value scaleIndex) {
  DequantizeOp scales = getScalesPrologue(dequantize);
  if (!scales)
    return buffers.toF32(memref::LoadOp::create(
        b, buffers.getMemRef(dequantize.getScales()), ValueRange{scaleIndex}));
  ArrayRef<int64_t> shape = scales.getInput().getType().getShape();
  ArrayRef<int64_t> outer = scales.getScales().getType().getShape();
  auto constant = [&](int64_t c) { return indexConstant(b, c); };
  Value row = arith::DivUIOp::create(b, scaleIndex, constant(shape[1]));
  Value column = arith::RemUIOp::create(b, scaleIndex, constant(shape[1]));
  Value outerIndex = arith::AddIOp::create(
      b,
      arith::MulIOp::create(
          b, arith::DivUIOp::create(b, row, constant(shape[0] / outer[0])),
          constant(outer[1])),
      arith::DivUIOp::create(b, column, constant(shape[1] / outer[1])));
  Value code = memref::LoadOp::create(b, buffers.getMemRef(scales.getInput()),
                                      ValueRange{scaleIndex});
  Value product = arith::MulFOp::create(
      b, arith::SIToFPOp::create(b, b.getF32Type(), code),
      buffers.toF32(memref::LoadOp::create(
          b, buffers.getMemRef(scales.getScales()), ValueRange{outerIndex})));
  Type scaleType = scales.getResult().getType().getElementType();
  if (scaleType.isF32())
    return product;
  return buffers.toF32(arith::TruncFOp::create(b, scaleType, product));
}

Value DequantizeEmitter::dequantizeElement(Value stored, Value scaleIndex) {
  Value decoded = decode(stored);
  if (Value zeroPoints = dequantize.getZeroPoints()) {
    Value zero = buffers.toF32(memref::LoadOp::create(
        b, buffers.getMemRef(zeroPoints), ValueRange{scaleIndex}));
    decoded = arith::SubFOp::create(b, decoded, zero);
  }
  return arith::MulFOp::create(b, decoded, loadScale(scaleIndex));
}

FailureOr<gpu::GPUFuncOp>
memwall::emitDequantizeKernel(gpu::GPUModuleOp gpuModule, StringRef name,
                              const KernelAnalysis &analysis) {
  auto dequantize = cast<DequantizeOp>(analysis.anchor);
  ImplicitLocOpBuilder b(dequantize.getLoc(), gpuModule.getContext());
  b.setInsertionPointToEnd(gpuModule.getBody());
  const KernelGeometry &geometry = analysis.geometry;
  int64_t width = geometry.vectorWidth;
  ElementwiseEmitter buffers(b, analysis.inputs, width);
  Value output = dequantize.getResult();
  SmallVector<Type> params;
  for (const KernelInput &input : analysis.inputs)
    params.push_back(flatMemRefType(input.value));
  params.push_back(flatMemRefType(output));
  gpu::GPUFuncOp func = createKernel(b, name, params, geometry.threadsPerBlock);
  Block &entry = func.getBody().front();
  for (auto [i, input] : llvm::enumerate(analysis.inputs))
    buffers.setMemRef(input.value, entry.getArgument(i));
  buffers.setMemRef(output, entry.getArgument(analysis.inputs.size()));

  // Thread t of block k writes vector k * threads + t: `width` elements of
  // one row (the width divides the row), each of its own scale block.
  ArrayRef<int64_t> shape = dequantize.getType().getShape();
  ArrayRef<int64_t> scaleShape = dequantize.getScales().getType().getShape();
  int64_t columns = shape[1];
  int64_t blockRows = shape[0] / scaleShape[0];
  int64_t blockColumns = shape[1] / scaleShape[1];
  int64_t vectors = shape[0] * shape[1] / width;
  Value vector = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                            indexConstant(b, geometry.threadsPerBlock)),
      gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  auto guard = scf::IfOp::create(
      b,
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, vector,
                            indexConstant(b, vectors)),
      /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  auto divide = [&](Value x, int64_t c) -> Value {
    return arith::DivUIOp::create(b, x, indexConstant(b, c));
  };
  Value flat = arith::MulIOp::create(b, vector, indexConstant(b, width));
  Value row = divide(flat, columns);
  Value firstColumn =
      arith::RemUIOp::create(b, flat, indexConstant(b, columns));
  Value scaleRow = arith::MulIOp::create(b, divide(row, blockRows),
                                         indexConstant(b, scaleShape[1]));
  Value codes = buffers.getMemRef(dequantize.getInput());
  bool packed = dequantize.getInput().getType().getElementType().isInteger(4);
  DequantizeEmitter emitter(b, buffers, dequantize);
  Lanes lanes;
  for (int64_t lane = 0; lane < width; ++lane) {
    Value element = arith::AddIOp::create(b, flat, indexConstant(b, lane));
    Value column =
        arith::AddIOp::create(b, firstColumn, indexConstant(b, lane));
    Value stored =
        packed ? DequantizeEmitter::unpackI4(
                     b,
                     memref::LoadOp::create(b, codes,
                                            ValueRange{divide(element, 2)}),
                     arith::RemUIOp::create(b, element, indexConstant(b, 2)))
               : Value(memref::LoadOp::create(b, codes, ValueRange{element}));
    Value scaleIndex =
        arith::AddIOp::create(b, scaleRow, divide(column, blockColumns));
    lanes.push_back(emitter.dequantizeElement(stored, scaleIndex));
  }
  buffers.storeOutput(output, lanes, flat);
  b.setInsertionPointAfter(guard);
  gpu::ReturnOp::create(b);
  return func;
}
