//===- AnalysisTarget.cpp - the target memwall's analyses predict for -----===//

#include "AnalysisTarget.h"

using namespace mlir;
using namespace memwall;

FailureOr<GPUTarget> memwall::getAnalysisTarget(Operation *op) {
  // TODO(i17): the module's #memwall.target (getTargetOf) once it exists.
  llvm::Expected<GPUTarget> target = resolveGPUTarget(kDefaultGPUTargetName, "");
  if (!target) {
    op->emitError() << llvm::toString(target.takeError());
    return failure();
  }
  return std::move(*target);
}
