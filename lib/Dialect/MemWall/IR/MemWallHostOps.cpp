//===- MemWallHostOps.cpp - bundle steps on buffers -----------------------===//

#include "memwall/Dialect/MemWall/IR/MemWall.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace memwall;

#define GET_OP_CLASSES
#include "memwall/Dialect/MemWall/IR/MemWallHostOps.cpp.inc"
