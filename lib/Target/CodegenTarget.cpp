//===- CodegenTarget.cpp - the target codegen compiles for ----------------===//

#include "CodegenTarget.h"

#include "memwall/Transforms/Passes.h"

using namespace mlir;

FailureOr<memwall::GPUTarget> memwall::getCodegenTarget(Operation *op) {
  return resolvePassTarget(op->getContext(), "", "");
}
