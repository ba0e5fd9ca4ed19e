//===- ConvertToGPU.cpp - configured ops to kernels and bundle steps ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Target/Passes.h"

#include "KernelPatterns.h"
#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Target/Bundle.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace memwall {
#define GEN_PASS_DEF_CONVERTTOGPU
#include "memwall/Target/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

/// A KV cache appended in place is viewed at its appended length
/// [B, H, L + T, D] (KernelPatterns.cpp): the cache argument [B, H, L, D] is
/// the window of that buffer at its strides, each head's rows at the
/// appended length's pitch.
static void pitchInPlaceCaches(func::FuncOp function) {
  bool changed = false;
  for (ViewOp view : function.getBody().getOps<ViewOp>()) {
    auto cache = dyn_cast<BlockArgument>(view.getSource());
    auto window = cast<MemRefType>(view.getSource().getType());
    MemRefType appended = view.getType();
    // Only an appended cache views more elements than its argument holds
    // (a window, e.g. a chunk of a weight's rows, views fewer).
    if (!cache || window.getNumElements() >= appended.getNumElements())
      continue;
    auto [strides, offset] = appended.getStridesAndOffset();
    cache.setType(MemRefType::get(
        window.getShape(), window.getElementType(),
        StridedLayoutAttr::get(function.getContext(), offset, strides)));
    changed = true;
  }
  if (changed)
    function.setType(FunctionType::get(function.getContext(),
                                       function.getBody().getArgumentTypes(),
                                       function.getResultTypes()));
}

namespace {
struct ConvertToGPUPass
    : public memwall::impl::ConvertToGPUBase<ConvertToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    FailureOr<GPUTarget> target = getTargetOf(module);
    if (failed(target))
      return signalPassFailure();

    // The kernels' module, for the target's architecture.
    OpBuilder builder(ctx);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    builder.getUnitAttr());
    builder.setInsertionPointToEnd(module.getBody());
    auto targetAttr = NVVM::NVVMTargetAttr::get(
        ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", target->smArch,
        target->smArch == "sm_80" ? "+ptx70" : "+ptx80");
    auto kernels =
        gpu::GPUModuleOp::create(builder, builder.getUnknownLoc(), "kernels",
                                 builder.getArrayAttr({targetAttr}));

    // Buffers are named as the bundle names values, in program order.
    DenseMap<Value, std::string> bufferNames;
    for (func::FuncOp function : module.getOps<func::FuncOp>())
      bufferNames = nameBundleValues(function);

    TypeConverter converter;
    populateBufferTypeConversion(converter);
    RewritePatternSet patterns(ctx);
    KernelLoweringState state{kernels, *target, bufferNames};
    populateKernelLoweringPatterns(converter, patterns, state);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);

    ConversionTarget legal(*ctx);
    legal.addLegalDialect<memref::MemRefDialect, gpu::GPUDialect>();
    legal.addLegalOp<LaunchOp, GemmOp, AllReduceOp, ViewOp, StackViewOp>();
    // A tensor-map launch operand (KernelPatterns.cpp): the descriptor and
    // its box sizes.
    legal.addLegalOp<nvgpu::TmaCreateDescriptorOp>();
    // Ops inside a fusion go with it; only configured ops are steps (a
    // tensor constant is a fill step; index constants stay).
    auto isNoStep = [](Operation *op) {
      return !op->hasAttr(MemWallDialect::kKernelConfigAttrName);
    };
    legal.addDynamicallyLegalDialect<MemWallDialect>(isNoStep);
    legal.addDynamicallyLegalOp<shard::AllReduceOp>(isNoStep);
    legal.addDynamicallyLegalOp<arith::ConstantOp>(isNoStep);
    legal.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp function) {
      return converter.isSignatureLegal(function.getFunctionType());
    });
    legal.addDynamicallyLegalOp<func::ReturnOp>(
        [&](func::ReturnOp ret) { return converter.isLegal(ret); });
    if (failed(applyPartialConversion(module, legal, std::move(patterns))))
      return signalPassFailure();
    for (func::FuncOp function : module.getOps<func::FuncOp>())
      pitchInPlaceCaches(function);

    // kernels.mlir: the generated module as the lowering receives it. A
    // module without kernels (GEMMs and views only) has nothing to lower.
    std::string text;
    llvm::raw_string_ostream os(text);
    kernels->print(os);
    module->setAttr(MemWallDialect::kKernelsSourceAttrName,
                    builder.getStringAttr(text));
    if (kernels.getBody()->empty())
      kernels.erase();
  }
};
} // namespace
