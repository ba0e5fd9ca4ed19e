//===- Registration.cpp - register memwall with MLIR ----------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Registration.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Dialect/MemWall/IR/MemWallSharding.h"
#include "memwall/Pipelines.h"
#include "memwall/Target/Passes.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/DialectRegistry.h"

void memwall::registerMemWallDialects(mlir::DialectRegistry &registry) {
  registry.insert<MemWallDialect, mlir::func::FuncDialect,
                  mlir::shard::ShardDialect>();
  registerShardingInterfaceExternalModels(registry);
}

void memwall::registerMemWallPasses() {
  registerMemWallTransformsPasses();
  registerMemWallTargetPasses();
  registerMemWallPipelines();
}
