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
  Value row = div(scaleIndex, shape[1]);
  Value column = rem(scaleIndex, shape[1]);
  Value outerIndex = add(mul(div(row, shape[0] / outer[0]), outer[1]),
                         div(column, shape[1] / outer[1]));
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

namespace {
/// The dequantize kernel: thread t of block k writes vector k * threads + t,
/// `width` elements of one row (the width divides the row), each of its own
/// scale block.
class DequantizeKernelBuilder : IndexArithmetic {
public:
  DequantizeKernelBuilder(gpu::GPUModuleOp gpuModule,
                          const KernelAnalysis &analysis)
      : IndexArithmetic(b),
        b(analysis.anchor->getLoc(), gpuModule.getContext()),
        analysis(analysis), dequantize(cast<DequantizeOp>(analysis.anchor)),
        buffers(b, analysis.inputs, analysis.geometry.vectorWidth) {
    b.setInsertionPointToEnd(gpuModule.getBody());
  }

  gpu::GPUFuncOp build(StringRef name) {
    const KernelGeometry &geometry = analysis.geometry;
    int64_t width = geometry.vectorWidth;
    Value output = dequantize.getResult();
    SmallVector<Type> params;
    for (const KernelInput &input : analysis.inputs)
      params.push_back(flatMemRefType(input.value));
    params.push_back(flatMemRefType(output));
    gpu::GPUFuncOp func =
        createKernel(b, name, params, geometry.threadsPerBlock);
    Block &entry = func.getBody().front();
    for (auto [i, input] : llvm::enumerate(analysis.inputs))
      buffers.setMemRef(input.value, entry.getArgument(i));
    buffers.setMemRef(output, entry.getArgument(analysis.inputs.size()));

    ArrayRef<int64_t> shape = dequantize.getType().getShape();
    ArrayRef<int64_t> scaleShape = dequantize.getScales().getType().getShape();
    int64_t blockRows = shape[0] / scaleShape[0];
    int64_t blockColumns = shape[1] / scaleShape[1];
    Value vector = add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                           geometry.threadsPerBlock),
                       gpu::ThreadIdOp::create(b, gpu::Dimension::x));
    auto guard = scf::IfOp::create(b, less(vector, shape[0] * shape[1] / width),
                                   /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
    Value flat = mul(vector, width);
    Value firstColumn = rem(flat, shape[1]);
    Value scaleRow = mul(div(div(flat, shape[1]), blockRows), scaleShape[1]);
    Value codes = buffers.getMemRef(dequantize.getInput());
    bool packed = dequantize.getInput().getType().getElementType().isInteger(4);
    DequantizeEmitter emitter(b, buffers, dequantize);
    Lanes lanes;
    for (int64_t lane = 0; lane < width; ++lane) {
      Value element = add(flat, lane);
      Value stored =
          packed ? DequantizeEmitter::unpackI4(
                       b,
                       memref::LoadOp::create(b, codes,
                                              ValueRange{div(element, 2)}),
                       rem(element, 2))
                 : Value(memref::LoadOp::create(b, codes, ValueRange{element}));
      Value scaleIndex =
          add(scaleRow, div(add(firstColumn, lane), blockColumns));
      lanes.push_back(emitter.dequantizeElement(stored, scaleIndex));
    }
    buffers.storeOutput(output, lanes, flat);
    b.setInsertionPointAfter(guard);
    gpu::ReturnOp::create(b);
    return func;
  }

private:
  ImplicitLocOpBuilder b;
  const KernelAnalysis &analysis;
  DequantizeOp dequantize;
  ElementwiseEmitter buffers;
};
} // namespace

FailureOr<gpu::GPUFuncOp>
memwall::emitDequantizeKernel(gpu::GPUModuleOp gpuModule, StringRef name,
                              const KernelAnalysis &analysis) {
  return DequantizeKernelBuilder(gpuModule, analysis).build(name);
}
