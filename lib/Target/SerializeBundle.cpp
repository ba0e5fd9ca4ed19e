//===- SerializeBundle.cpp - write the bundle of a lowered module ---------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Target/Passes.h"

#include "memwall/Dialect/MemWall/IR/MemWallTarget.h"

#include "memwall/Target/Bundle.h"

namespace memwall {
#define GEN_PASS_DEF_SERIALIZEBUNDLE
#include "memwall/Target/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

namespace {
struct SerializeBundlePass
    : public memwall::impl::SerializeBundleBase<SerializeBundlePass> {
  using SerializeBundleBase::SerializeBundleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (output.empty()) {
      mlir::emitError(module.getLoc(),
                      "memwall-serialize-bundle needs output=BUNDLE_DIR");
      return signalPassFailure();
    }
    FailureOr<GPUTarget> target = getTargetOf(module);
    if (failed(target))
      return signalPassFailure();
    FailureOr<Bundle> bundle = readLoweredBundle(module, *target);
    if (failed(bundle))
      return signalPassFailure();
    if (llvm::Error error = writeBundle(*bundle, output)) {
      mlir::emitError(module.getLoc()) << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
