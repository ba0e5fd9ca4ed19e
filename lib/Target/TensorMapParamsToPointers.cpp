//===- TensorMapParamsToPointers.cpp - tensor-map kernel parameters -------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// convert-nvgpu-to-nvvm lowers `!nvgpu.tensormap.descriptor` values to
// `!llvm.ptr` inside kernels but leaves gpu.func signatures alone, and
// convert-gpu-to-nvvm, which converts them, knows no NVGPU type. Retyping
// the parameters first, behind a cast the two conversions fold, keeps the
// upstream passes as they are.
//
//===----------------------------------------------------------------------===//

#include "memwall/Target/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace memwall {
#define GEN_PASS_DEF_TENSORMAPPARAMSTOPOINTERS
#include "memwall/Target/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

namespace {
struct TensorMapParamsToPointersPass
    : public memwall::impl::TensorMapParamsToPointersBase<
          TensorMapParamsToPointersPass> {
  void runOnOperation() override {
    auto pointer = LLVM::LLVMPointerType::get(&getContext());
    for (auto func : getOperation().getOps<gpu::GPUFuncOp>()) {
      if (func.isExternal())
        continue;
      Block &entry = func.getBody().front();
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      bool changed = false;
      for (BlockArgument argument : entry.getArguments()) {
        auto mapType =
            dyn_cast<nvgpu::TensorMapDescriptorType>(argument.getType());
        if (!mapType)
          continue;
        argument.setType(pointer);
        auto map = UnrealizedConversionCastOp::create(b, argument.getLoc(),
                                                      mapType, argument);
        argument.replaceAllUsesExcept(map.getResult(0), map);
        changed = true;
      }
      if (changed)
        func.setFunctionType(FunctionType::get(
            &getContext(), entry.getArgumentTypes(),
            func.getFunctionType().getResults()));
    }
  }
};
} // namespace
