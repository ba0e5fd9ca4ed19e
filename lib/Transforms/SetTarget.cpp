//===- SetTarget.cpp - attach #memwall.target to the module ---------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"
#include "memwall/Transforms/Passes.h"

using namespace mlir;

namespace memwall {
#define GEN_PASS_DEF_SETTARGET
#include "memwall/Transforms/Passes.h.inc"
} // namespace memwall

using namespace memwall;

namespace {
struct SetTargetPass : public memwall::impl::SetTargetBase<SetTargetPass> {
  using SetTargetBase::SetTargetBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<GPUTarget> target = selectTarget(module);
    if (failed(target))
      return signalPassFailure();
    if (!launch.empty()) {
      std::optional<LaunchMode> mode = symbolizeLaunchMode(launch);
      if (!mode) {
        module.emitError() << "launch '" << launch
                           << "' must be stream or graph";
        return signalPassFailure();
      }
      target->launchMode = *mode;
    }
    module->setAttr(kTargetAttrName, getTargetAttr(&getContext(), *target));
    if (!gemm.empty()) {
      if (!symbolizeGemmBackend(gemm)) {
        module.emitError() << "gemm '" << gemm
                           << "' must be auto, cublaslt or memwall";
        return signalPassFailure();
      }
      module->setAttr(kGemmBackendAttrName,
                      StringAttr::get(&getContext(), gemm));
    }
  }

  /// The target the options name; without one, the module's own (h100-sxm
  /// when it has none).
  FailureOr<GPUTarget> selectTarget(ModuleOp module) {
    if (targetName.empty() && targetFile.empty())
      return getTargetOf(module);
    llvm::Expected<GPUTarget> target = resolveGPUTarget(targetName, targetFile);
    if (!target)
      return module.emitError() << llvm::toString(target.takeError());
    return std::move(*target);
  }
};
} // namespace
