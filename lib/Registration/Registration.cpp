//===- Registration.cpp - register memwall with MLIR ----------------------===//

#include "memwall/Registration.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Pipelines.h"
#include "memwall/Target/Passes.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

void memwall::registerMemWallDialects(mlir::DialectRegistry &registry) {
  registry.insert<MemWallDialect, mlir::func::FuncDialect>();
}

void memwall::registerMemWallPasses() {
  registerMemWallTransformsPasses();
  registerMemWallTargetPasses();
  registerMemWallPipelines();
}
