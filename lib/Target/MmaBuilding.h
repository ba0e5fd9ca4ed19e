//===- MmaBuilding.h - mma.sync and ldmatrix pieces --------------*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The tensor-core pieces the attention and GEMM kernels share: 16-bit pairs
// as mma.sync takes them, ldmatrix.x4 and mma.sync.m16n8k16 with f32
// accumulators. Fragment layouts are PTX's (g = lane / 4, t = lane % 4):
//   A (16x16, row-major) a0 = A[g][2t..], a1 = A[g+8][2t..],
//                        a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]
//   B (16x8, k x n)      b0 = B[2t..][g], b1 = B[2t+8..][g]
//   C (16x8, f32)        c0,c1 = C[g][2t..], c2,c3 = C[g+8][2t..]
// An ldmatrix.x4 gives lane l row l/4, columns 2(l%4).. of each of four 8x8
// matrices whose rows lanes 8m..8m+7 address (transposed: column l/4, rows
// 2(l%4)..).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_MMABUILDING_H
#define MEMWALL_LIB_TARGET_MMABUILDING_H

#include "KernelBuilding.h"
#include "memwall/Analysis/StridedLayout.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>

namespace memwall {

/// A pair of 16-bit values as mma.sync takes them: an i32 for bf16,
/// vector<2xf16> for f16 (NVVM's operand types).
inline mlir::Value asMmaRegister(mlir::ImplicitLocOpBuilder &b,
                                 mlir::Value pair, mlir::Type element) {
  if (element.isF16())
    return pair;
  mlir::Value word = mlir::vector::BitCastOp::create(
      b, mlir::VectorType::get({1}, b.getI32Type()), pair);
  return mlir::vector::ExtractOp::create(b, word, 0);
}

/// Four 8x8 matrices of `element` from shared `tile`; this lane addresses
/// `indices`.
inline std::array<mlir::Value, 4>
ldmatrixX4(mlir::ImplicitLocOpBuilder &b, mlir::Value tile,
           mlir::ValueRange indices, bool transpose, mlir::Type element) {
  auto type = mlir::VectorType::get({4, 2}, element);
  mlir::Value matrices =
      mlir::nvgpu::LdMatrixOp::create(b, type, tile, indices, transpose, 4);
  std::array<mlir::Value, 4> registers;
  for (int64_t i = 0; i < 4; ++i) {
    mlir::Value pair = mlir::vector::ExtractOp::create(b, matrices, i);
    registers[i] = asMmaRegister(b, pair, element);
  }
  return registers;
}

/// D = A B + C for one m16n8k16 tile of `element` operands, f32 C and D.
inline std::array<mlir::Value, 4>
mmaM16N8K16(mlir::ImplicitLocOpBuilder &b, const std::array<mlir::Value, 4> &a,
            std::array<mlir::Value, 2> bRegisters,
            const std::array<mlir::Value, 4> &c, mlir::Type element) {
  auto f32Type = b.getF32Type();
  auto resultType = mlir::LLVM::LLVMStructType::getLiteral(
      b.getContext(), {f32Type, f32Type, f32Type, f32Type});
  mlir::NVVM::MMATypes multiplicand =
      element.isBF16() ? mlir::NVVM::MMATypes::bf16 : mlir::NVVM::MMATypes::f16;
  mlir::Value d = mlir::NVVM::MmaOp::create(
      b, resultType, mlir::ValueRange(a), mlir::ValueRange(bRegisters),
      mlir::ValueRange(c),
      /*shape=*/{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<mlir::NVVM::MMATypes, 2>{multiplicand, multiplicand},
      std::array<mlir::NVVM::MMALayout, 2>{mlir::NVVM::MMALayout::row,
                                           mlir::NVVM::MMALayout::col});
  std::array<mlir::Value, 4> result;
  for (int64_t i = 0; i < 4; ++i)
    result[i] = mlir::LLVM::ExtractValueOp::create(b, d, i);
  return result;
}

/// Padding per shared-memory row of a tile ldmatrix reads: 8 16-bit
/// elements (16 bytes) put the eight rows one ldmatrix reads in distinct
/// banks.
constexpr int64_t kRowPad = 8;

/// Consecutive views into a kernel's dynamic shared memory (its size is the
/// launch's shared bytes).
class SharedMemoryCarver {
public:
  explicit SharedMemoryCarver(mlir::ImplicitLocOpBuilder &b) : b(b) {
    workgroup = mlir::gpu::AddressSpaceAttr::get(
        b.getContext(), mlir::gpu::AddressSpace::Workgroup);
    shared = mlir::gpu::DynamicSharedMemoryOp::create(
        b, mlir::MemRefType::get({mlir::ShapedType::kDynamic}, b.getI8Type(),
                                 mlir::AffineMap(), workgroup));
  }
  /// The next `shape` of `element` after the previous views.
  mlir::Value next(llvm::ArrayRef<int64_t> shape, mlir::Type element) {
    auto type =
        mlir::MemRefType::get(shape, element, mlir::AffineMap(), workgroup);
    mlir::Value view = mlir::memref::ViewOp::create(
        b, type, shared, indexConstant(b, offset), mlir::ValueRange{});
    offset += type.getNumElements() * type.getElementTypeBitWidth() / 8;
    return view;
  }
  /// The next tile of `rows` rows of `width` 16-bit elements, each row
  /// padded by kRowPad.
  mlir::Value paddedTile(int64_t rows, int64_t width, mlir::Type element) {
    return next({rows, width + kRowPad}, element);
  }

private:
  mlir::ImplicitLocOpBuilder &b;
  mlir::Attribute workgroup;
  mlir::Value shared;
  int64_t offset = 0;
};

/// Two f32s rounded to `element` and packed as mma.sync takes them (x in the
/// low half).
inline mlir::Value packPair(mlir::ImplicitLocOpBuilder &b, mlir::Value x,
                            mlir::Value y, mlir::Type element) {
  mlir::Value pair = mlir::vector::FromElementsOp::create(
      b, mlir::VectorType::get({2}, element),
      mlir::ValueRange{mlir::arith::TruncFOp::create(b, element, x),
                       mlir::arith::TruncFOp::create(b, element, y)});
  return asMmaRegister(b, pair, element);
}

/// Max or sum over the four lanes that share a row of an accumulator.
inline mlir::Value quadReduce(mlir::ImplicitLocOpBuilder &b, mlir::Value x,
                              bool sum) {
  for (int64_t offset : {1, 2}) {
    mlir::Value other = mlir::gpu::ShuffleOp::create(
                            b, x, offset, 32, mlir::gpu::ShuffleMode::XOR)
                            .getShuffleResult();
    x = sum ? mlir::Value(mlir::arith::AddFOp::create(b, x, other))
            : mlir::Value(mlir::arith::MaximumFOp::create(b, x, other));
  }
  return x;
}

/// Where row `row` (of the [B, H, S] rows, in that order) of a [B, H, S, D]
/// value laid out as `layout` starts in its buffer: row · D when it is the
/// row-major buffer itself.
inline mlir::Value stridedRowStart(mlir::ImplicitLocOpBuilder &b,
                                   const StridedLayout &layout,
                                   mlir::Value row) {
  auto idx = [&](int64_t c) { return indexConstant(b, c); };
  auto mul = [&](mlir::Value x, int64_t c) {
    return mlir::arith::MulIOp::create(b, x, idx(c));
  };
  auto add = [&](mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(b, x, y);
  };
  if (layout.isContiguous())
    return mul(row, layout.shape[3]);
  mlir::Value position =
      mlir::arith::RemUIOp::create(b, row, idx(layout.shape[2]));
  mlir::Value batchHead =
      mlir::arith::DivUIOp::create(b, row, idx(layout.shape[2]));
  mlir::Value head =
      mlir::arith::RemUIOp::create(b, batchHead, idx(layout.shape[1]));
  mlir::Value batch =
      mlir::arith::DivUIOp::create(b, batchHead, idx(layout.shape[1]));
  return add(
      add(idx(layout.offset), mul(batch, layout.strides[0])),
      add(mul(head, layout.strides[1]), mul(position, layout.strides[2])));
}

/// Issues cp.async for a `rows` x `width` tile of 16-bit elements whose first
/// row is row `firstRow` of `source` (as stridedRowStart counts rows) into
/// the padded shared `tile`, 16-byte chunks spread evenly over `threads`
/// threads (thread `tid`); rows at or beyond `validRows` are zero-filled
/// without reading memory (a padded row must be 0, not garbage: a zero
/// weight times NaN is not 0). Returns the copies' group token.
inline mlir::Value loadTileAsync(mlir::ImplicitLocOpBuilder &b,
                                 mlir::Value tile, mlir::Value source,
                                 const StridedLayout &layout,
                                 mlir::Value firstRow, mlir::Value validRows,
                                 int64_t rows, int64_t width, mlir::Value tid,
                                 int64_t threads) {
  auto idx = [&](int64_t c) { return indexConstant(b, c); };
  int64_t chunksPerRow = width / 8;
  int64_t perThread = rows * chunksPerRow / threads;
  auto tokenType = mlir::nvgpu::DeviceAsyncTokenType::get(b.getContext());
  llvm::SmallVector<mlir::Value> tokens;
  for (int64_t i = 0; i < perThread; ++i) {
    mlir::Value chunk = mlir::arith::AddIOp::create(b, tid, idx(i * threads));
    mlir::Value row = mlir::arith::DivUIOp::create(b, chunk, idx(chunksPerRow));
    mlir::Value column = mlir::arith::MulIOp::create(
        b, mlir::arith::RemUIOp::create(b, chunk, idx(chunksPerRow)), idx(8));
    mlir::Value valid = mlir::arith::CmpIOp::create(
        b, mlir::arith::CmpIPredicate::ult, row, validRows);
    // A zero-filled chunk still names an address: the tile's first row.
    mlir::Value sourceRow = mlir::arith::AddIOp::create(
        b, firstRow, mlir::arith::SelectOp::create(b, valid, row, idx(0)));
    mlir::Value sourceIndex = mlir::arith::AddIOp::create(
        b, stridedRowStart(b, layout, sourceRow), column);
    mlir::Value sourceElements =
        mlir::arith::SelectOp::create(b, valid, idx(8), idx(0));
    tokens.push_back(mlir::nvgpu::DeviceAsyncCopyOp::create(
        b, tokenType, tile, mlir::ValueRange{row, column}, source,
        mlir::ValueRange{sourceIndex}, b.getIndexAttr(8), sourceElements,
        b.getUnitAttr()));
  }
  return mlir::nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, tokens);
}

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_MMABUILDING_H
