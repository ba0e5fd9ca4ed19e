//===- OutlineKernel.cpp - a kernel's ops into a memwall.fusion -----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Transforms/OutlineKernel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace memwall;

FusionOp memwall::outlineKernel(const KernelAnalysis &kernel) {
  ArrayRef<Operation *> ops = kernel.ops;
  SmallVector<Value> inputs;
  for (const KernelInput &input : kernel.inputs)
    inputs.push_back(input.value);
  // The cache of an in-place KV-cache append is no kernel input (the
  // kernel writes into its buffer), but the fusion's append reads it.
  for (Operation *op : ops)
    if (auto append = dyn_cast<KVCacheAppendOp>(op))
      if (!llvm::is_contained(inputs, append.getCache()))
        inputs.push_back(append.getCache());
  SmallVector<Type> resultTypes;
  for (Value output : kernel.outputs)
    resultTypes.push_back(output.getType());
  SmallVector<Location> locs;
  for (Operation *op : ops)
    locs.push_back(op->getLoc());
  MLIRContext *ctx = ops.front()->getContext();
  OpBuilder builder(ops.back());
  auto fusion = FusionOp::create(builder, FusedLoc::get(ctx, locs), kernel.kind,
                                 inputs, resultTypes);
  // Kernels never span phases: the fusion keeps its ops' phase.
  if (Attribute phase = ops.front()->getAttr(MemWallDialect::kPhaseAttrName))
    fusion->setAttr(MemWallDialect::kPhaseAttrName, phase);
  IRMapping mapping;
  mapping.map(inputs, fusion.getBodyBlock().getArguments());
  builder.setInsertionPointToStart(&fusion.getBodyBlock());
  for (Operation *op : ops)
    builder.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value output : kernel.outputs)
    yielded.push_back(mapping.lookup(output));
  YieldOp::create(builder, fusion.getLoc(), yielded);
  for (auto [output, result] :
       llvm::zip_equal(kernel.outputs, fusion.getResults()))
    Value(output).replaceAllUsesWith(result);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  return fusion;
}
