//===- LowerKernelOps.cpp - memwall ops inside kernels to LLVM ------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The ops kernel builders add where NVGPU has none (MemWallKernelOps.td)
// become LLVM dialect ops on the types convert-nvgpu-to-nvvm gives their
// operands, behind unrealized casts that it and reconcile-unrealized-casts
// fold, as TensorMapParamsToPointers does for tensor-map parameters.
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Target/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace memwall {
#define GEN_PASS_DEF_LOWERKERNELOPS
#include "memwall/Target/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

namespace {
/// wgmma's M: NVGPUToNVVM's accumulator struct has one member per 64 rows.
constexpr int64_t kWgmmaRows = 64;

/// NVGPUToNVVM's LLVM type of an f32 accumulator of M x N: M / 64 structs
/// of the N / 2 registers each thread holds of 64 rows.
LLVM::LLVMStructType
getAccumulatorStructType(nvgpu::WarpgroupAccumulatorType type) {
  MLIRContext *context = type.getContext();
  VectorType fragmented = type.getFragmented();
  auto rows = LLVM::LLVMStructType::getLiteral(
      context, SmallVector<Type>(fragmented.getDimSize(1) / 2,
                                 fragmented.getElementType()));
  return LLVM::LLVMStructType::getLiteral(
      context, SmallVector<Type>(fragmented.getDimSize(0) / kWgmmaRows, rows));
}

void lowerWarpgroupAccumulate(WarpgroupAccumulateOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto type = cast<nvgpu::WarpgroupAccumulatorType>(op.getType());
  LLVM::LLVMStructType structType = getAccumulatorStructType(type);
  auto asStruct = [&](Value accumulator) {
    return UnrealizedConversionCastOp::create(b, loc, structType, accumulator)
        .getResult(0);
  };
  Value accumulator = asStruct(op.getAccumulator());
  Value partial = asStruct(op.getPartial());
  Value sum = accumulator;
  for (auto [block, member] : llvm::enumerate(structType.getBody())) {
    auto rows = cast<LLVM::LLVMStructType>(member);
    for (int64_t reg = 0, e = rows.getBody().size(); reg < e; ++reg) {
      SmallVector<int64_t, 2> position{static_cast<int64_t>(block), reg};
      Value lhs = LLVM::ExtractValueOp::create(b, loc, accumulator, position);
      Value rhs = LLVM::ExtractValueOp::create(b, loc, partial, position);
      Value added = LLVM::FAddOp::create(b, loc, lhs, rhs);
      sum = LLVM::InsertValueOp::create(b, loc, sum, added, position);
    }
  }
  op.replaceAllUsesWith(
      UnrealizedConversionCastOp::create(b, loc, type, sum).getResult(0));
  op.erase();
}

struct LowerKernelOpsPass
    : public memwall::impl::LowerKernelOpsBase<LowerKernelOpsPass> {
  void runOnOperation() override {
    getOperation().walk(
        [](WarpgroupAccumulateOp op) { lowerWarpgroupAccumulate(op); });
  }
};
} // namespace
