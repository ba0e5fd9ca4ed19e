//===- KernelBuilding.h - pieces every kernel generator uses ----*- C++ -*-===//
//
// The conventions all generated kernels share (docs/codegen.md): parameters
// are flat 1-D memrefs (bare pointers after lowering), blocks are 1-D with a
// known size, constants are built in place.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_LIB_TARGET_KERNELBUILDING_H
#define MEMWALL_LIB_TARGET_KERNELBUILDING_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace memwall {

inline mlir::Value indexConstant(mlir::ImplicitLocOpBuilder &b, int64_t value) {
  return mlir::arith::ConstantIndexOp::create(b, value);
}

inline mlir::Value f32Constant(mlir::ImplicitLocOpBuilder &b, double value) {
  return mlir::arith::ConstantFloatOp::create(
      b, b.getF32Type(), llvm::APFloat(static_cast<float>(value)));
}

/// The kernel parameter holding `elements` values of `element`.
inline mlir::MemRefType flatMemRefType(int64_t elements, mlir::Type element) {
  return mlir::MemRefType::get({elements}, element);
}

/// The kernel parameter holding a tensor value.
inline mlir::MemRefType flatMemRefType(mlir::Value tensor) {
  auto type = llvm::cast<mlir::RankedTensorType>(tensor.getType());
  return flatMemRefType(type.getNumElements(), type.getElementType());
}

/// A kernel `name` at `b`'s insertion point, run by 1-D blocks of `threads`
/// threads; `b` is left at the start of its body.
inline mlir::gpu::GPUFuncOp
createKernel(mlir::ImplicitLocOpBuilder &b, llvm::StringRef name,
             llvm::ArrayRef<mlir::Type> params, int64_t threads,
             mlir::TypeRange workgroupAttributions = {}) {
  auto func = mlir::gpu::GPUFuncOp::create(
      b, name, b.getFunctionType(params, {}), workgroupAttributions);
  func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(),
                b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

} // namespace memwall

#endif // MEMWALL_LIB_TARGET_KERNELBUILDING_H
