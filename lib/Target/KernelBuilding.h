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
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// The end of a block's share of work that `arrivals` blocks do for one
/// output tile (split-K GEMM tiles, split-keys attention rows), after the
/// block wrote its partials: each thread fences its writes (membar.gl), a
/// barrier, and thread 0 adds 1 to `counters[tileIndex]` (i32, zero before
/// the launch). The block that finds arrivals - 1 before its own is the
/// tile's last: it sets the counter back to 0 for the next launch, and
/// every thread of it learns so through the barrier's reduction
/// (bar.red.or). Leaves `b` at the start of an scf.if that only that block
/// runs, after a second fence: the other blocks' partials are visible there.
/// Every thread of the block must reach the call.
inline void buildIfLastArrival(mlir::ImplicitLocOpBuilder &b,
                               mlir::Value counters, mlir::Value tileIndex,
                               mlir::Value threadId, int64_t arrivals) {
  using namespace mlir;
  auto i32 = [&](int64_t value) {
    return arith::ConstantIntOp::create(b, b.getI32Type(), value).getResult();
  };
  NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
  gpu::BarrierOp::create(b);
  Value isThreadZero = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                             threadId, indexConstant(b, 0));
  auto first = scf::IfOp::create(b, TypeRange{b.getI32Type()}, isThreadZero,
                                 /*withElse=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(first.thenBlock());
    Value before = memref::AtomicRMWOp::create(
        b, arith::AtomicRMWKind::addi, i32(1), counters, ValueRange{tileIndex});
    Value isLast = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, before,
                                         i32(arrivals - 1));
    auto reset = scf::IfOp::create(b, isLast, /*withElse=*/false);
    b.setInsertionPointToStart(reset.thenBlock());
    memref::StoreOp::create(b, i32(0), counters, ValueRange{tileIndex});
    b.setInsertionPointAfter(reset);
    scf::YieldOp::create(
        b, arith::ExtUIOp::create(b, b.getI32Type(), isLast).getResult());
    b.setInsertionPointToStart(first.elseBlock());
    scf::YieldOp::create(b, i32(0));
  }
  Value anyLast =
      NVVM::BarrierOp::create(b, b.getI32Type(), /*barrierId=*/Value(),
                              /*numberOfThreads=*/Value(),
                              NVVM::BarrierReductionAttr::get(
                                  b.getContext(), NVVM::BarrierReduction::OR),
                              first.getResult(0))
          .getRes();
  auto last = scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ne, anyLast, i32(0)),
      /*withElse=*/false);
  b.setInsertionPointToStart(last.thenBlock());
  NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
}

/// Combines one f32 `partial` per thread across a block of `threads`
/// threads (a power of two up to 32, or a multiple of 32) with a max
/// (`isMax`) or a sum: a butterfly of warp shuffles, one partial per warp in
/// `scratch` (a workgroup memref<32xf32>), a barrier, every thread combining
/// the warps' partials in order, and a barrier so the scratch may be reused.
/// Every thread gets the result; every thread of the block must reach it.
inline mlir::Value buildBlockReduce(mlir::ImplicitLocOpBuilder &b,
                                    mlir::Value partial, mlir::Value threadId,
                                    int64_t threads, mlir::Value scratch,
                                    bool isMax) {
  using namespace mlir;
  auto combine = [&](Value x, Value y) {
    return isMax ? Value(arith::MaximumFOp::create(b, x, y))
                 : Value(arith::AddFOp::create(b, x, y));
  };
  int64_t warpWidth = std::min<int64_t>(threads, 32);
  for (int64_t offset = warpWidth / 2; offset >= 1; offset /= 2) {
    auto shuffle = gpu::ShuffleOp::create(b, partial, offset, warpWidth,
                                          gpu::ShuffleMode::XOR);
    partial = combine(partial, shuffle.getShuffleResult());
  }
  if (threads <= 32)
    return partial;
  Value warp = arith::DivUIOp::create(b, threadId, indexConstant(b, 32));
  Value lane = arith::RemUIOp::create(b, threadId, indexConstant(b, 32));
  Value isFirst = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane,
                                        indexConstant(b, 0));
  {
    auto guard = scf::IfOp::create(b, isFirst, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard insertion(b);
    b.setInsertionPointToStart(guard.thenBlock());
    memref::StoreOp::create(b, partial, scratch, ValueRange{warp});
  }
  gpu::BarrierOp::create(b);
  Value total =
      memref::LoadOp::create(b, scratch, ValueRange{indexConstant(b, 0)});
  for (int64_t w = 1; w < threads / 32; ++w)
    total = combine(total, memref::LoadOp::create(
                               b, scratch, ValueRange{indexConstant(b, w)}));
  gpu::BarrierOp::create(b);
  return total;
}

/// Runs `body` at `b`'s insertion point only where `condition` holds (always
/// when it is null); `b` is back after the guard when `body` returns.
inline void buildGuarded(mlir::ImplicitLocOpBuilder &b, mlir::Value condition,
                         llvm::function_ref<void()> body) {
  if (!condition) {
    body();
    return;
  }
  auto guard = mlir::scf::IfOp::create(b, condition, /*withElseRegion=*/false);
  mlir::OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPointToStart(guard.thenBlock());
  body();
}

/// An scf.for from `lower` to `upper` by 1 carrying `init`: `body(i,
/// carried)` builds an iteration and returns the next carried values (none
/// when `init` is empty). Returns the loop's results. Kernels keep the bounds
/// the same in every thread of a block (barriers and shuffles inside).
inline llvm::SmallVector<mlir::Value>
buildLoop(mlir::ImplicitLocOpBuilder &b, mlir::Value lower, mlir::Value upper,
          mlir::ValueRange init,
          llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value,
                                                            mlir::ValueRange)>
              body) {
  auto forOp =
      mlir::scf::ForOp::create(b, lower, upper, indexConstant(b, 1), init);
  mlir::OpBuilder::InsertionGuard insertion(b);
  if (init.empty()) {
    // The builder gave a loop without carried values its yield.
    b.setInsertionPoint(forOp.getBody()->getTerminator());
    body(forOp.getInductionVar(), {});
    return {};
  }
  b.setInsertionPointToStart(forOp.getBody());
  mlir::scf::YieldOp::create(
      b, body(forOp.getInductionVar(), forOp.getRegionIterArgs()));
  return llvm::SmallVector<mlir::Value>(forOp.getResults());
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
/// (An elementwise kernel writing in place over an input drops it on that
/// pair, KernelPatterns.cpp.)
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
