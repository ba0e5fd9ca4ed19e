//===- KernelBuilding.h - pieces every kernel generator uses ----*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The conventions all generated kernels share (docs/codegen.md): parameters
// are flat 1-D memrefs (bare pointers after lowering), blocks are 1-D with a
// known size, constants are built in place.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_KERNELBUILDING_H
#define MEMWALL_LIB_TARGET_KERNELBUILDING_H

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>
#include <limits>
#include <string>

namespace memwall {

inline mlir::Value indexConstant(mlir::ImplicitLocOpBuilder &b, int64_t value) {
  return mlir::arith::ConstantIndexOp::create(b, value);
}

/// The index arithmetic that kernel generators build addresses from
/// (indices are never negative: unsigned division, remainder and compare).
/// A generator derives from it, handing it the builder it owns.
class IndexArithmetic {
public:
  explicit IndexArithmetic(mlir::ImplicitLocOpBuilder &builder)
      : builder(builder) {}

protected:
  mlir::Value idx(int64_t value) { return indexConstant(builder, value); }
  mlir::Value add(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(builder, x, y);
  }
  mlir::Value add(mlir::Value x, int64_t c) { return add(x, idx(c)); }
  mlir::Value mul(mlir::Value x, int64_t c) {
    return mlir::arith::MulIOp::create(builder, x, idx(c));
  }
  mlir::Value div(mlir::Value x, int64_t c) {
    return mlir::arith::DivUIOp::create(builder, x, idx(c));
  }
  mlir::Value rem(mlir::Value x, int64_t c) {
    return mlir::arith::RemUIOp::create(builder, x, idx(c));
  }
  mlir::Value less(mlir::Value x, int64_t c) {
    return mlir::arith::CmpIOp::create(builder, mlir::arith::CmpIPredicate::ult,
                                       x, idx(c));
  }

private:
  mlir::ImplicitLocOpBuilder &builder;
};

inline mlir::Value f32Constant(mlir::ImplicitLocOpBuilder &b, double value) {
  return mlir::arith::ConstantFloatOp::create(
      b, b.getF32Type(), llvm::APFloat(static_cast<float>(value)));
}

/// The kernel parameter holding `elements` values of `element`.
inline mlir::MemRefType flatMemRefType(int64_t elements, mlir::Type element) {
  return mlir::MemRefType::get({elements}, element);
}

/// The kernel parameter holding a tensor value: its elements, or for a
/// packed sub-byte type (i4, two a byte, the even element in the low
/// nibble) its bytes as i8.
inline mlir::MemRefType flatMemRefType(mlir::Value tensor) {
  auto type = llvm::cast<mlir::RankedTensorType>(tensor.getType());
  if (memwall::isPackedSubByte(type.getElementType()))
    return flatMemRefType(memwall::getTensorByteSize(type),
                          mlir::IntegerType::get(type.getContext(), 8));
  return flatMemRefType(type.getNumElements(), type.getElementType());
}

/// Why CUDA cannot launch `grid` ("" when it can): 1 to 2^31 - 1 blocks
/// along x, 1 to 65535 along y and z. An empty tensor's grid has no block.
inline std::string whyGridCannotLaunch(const std::array<int64_t, 3> &grid) {
  if (grid[0] < 1 || grid[1] < 1 || grid[2] < 1)
    return "empty tensors run no generated kernel";
  if (grid[0] > std::numeric_limits<int32_t>::max() || grid[1] > 65535 ||
      grid[2] > 65535)
    return "its grid (" + std::to_string(grid[0]) + ", " +
           std::to_string(grid[1]) + ", " + std::to_string(grid[2]) +
           ") exceeds CUDA's limits (2^31 - 1, 65535, 65535)";
  return "";
}

/// A kernel `name` at `b`'s insertion point, run by blocks of `block`
/// threads; `b` is left at the start of its body. Its buffer parameters are
/// `llvm.noalias`: the arena never places a kernel's outputs over buffers it
/// reads (their lifetimes overlap at the step), so the loads of a thread may
/// be reordered across its stores and read through the non-coherent cache.
inline mlir::gpu::GPUFuncOp
createKernel(mlir::ImplicitLocOpBuilder &b, llvm::StringRef name,
             llvm::ArrayRef<mlir::Type> params, std::array<int64_t, 3> block,
             mlir::TypeRange workgroupAttributions = {}) {
  auto func = mlir::gpu::GPUFuncOp::create(
      b, name, b.getFunctionType(params, {}), workgroupAttributions);
  for (auto [i, param] : llvm::enumerate(params))
    if (llvm::isa<mlir::MemRefType>(param))
      func.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
  func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(),
                b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(block[0]), static_cast<int32_t>(block[1]),
       static_cast<int32_t>(block[2])}));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

/// The same with 1-D blocks of `threads` threads.
inline mlir::gpu::GPUFuncOp
createKernel(mlir::ImplicitLocOpBuilder &b, llvm::StringRef name,
             llvm::ArrayRef<mlir::Type> params, int64_t threads,
             mlir::TypeRange workgroupAttributions = {}) {
  return createKernel(b, name, params, std::array<int64_t, 3>{threads, 1, 1},
                      workgroupAttributions);
}

/// The alignment of a vector access at a flat index that is a multiple of
/// the vector's length (buffers start 256-byte aligned): its size, up to 16
/// bytes. Without it NVPTX emits one load or store per element instead of
/// one ld/st.global.v2/v4.
inline llvm::Align naturalAlignment(mlir::VectorType type) {
  int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
  return llvm::Align(std::min<int64_t>(16, llvm::PowerOf2Ceil(bytes)));
}

inline mlir::Value alignedVectorLoad(mlir::ImplicitLocOpBuilder &b,
                                     mlir::VectorType type, mlir::Value memref,
                                     mlir::Value index) {
  return mlir::vector::LoadOp::create(b, type, memref, mlir::ValueRange{index},
                                      /*nontemporal=*/false,
                                      naturalAlignment(type));
}

inline void alignedVectorStore(mlir::ImplicitLocOpBuilder &b,
                               mlir::Value vector, mlir::Value memref,
                               mlir::Value index) {
  mlir::vector::StoreOp::create(
      b, vector, memref, mlir::ValueRange{index}, /*nontemporal=*/false,
      naturalAlignment(llvm::cast<mlir::VectorType>(vector.getType())));
}

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_KERNELBUILDING_H
