//===- PlanArena.cpp - place the bundle's buffers in one arena ------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Lifetimes from the steps of the lowered function (as IREE's LayoutSlices
// packs a stream's slices), offsets from memwall::planArena.
//
//===----------------------------------------------------------------------===//

#include "memwall/Target/Passes.h"

#include "memwall/Dialect/MemWall/IR/MemWall.h"
#include "memwall/Target/Bundle.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <limits>

namespace memwall {
#define GEN_PASS_DEF_PLANARENA
#include "memwall/Target/Passes.h.inc"
} // namespace memwall

using namespace mlir;
using namespace memwall;

namespace {
struct PlanArenaPass : public memwall::impl::PlanArenaBase<PlanArenaPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    constexpr int64_t kForever = std::numeric_limits<int32_t>::max();
    std::vector<BundleBuffer> buffers;
    DenseMap<Value, int> bufferOf;
    SmallVector<Value> values = getBundleBuffers(function);
    for (Value value : values) {
      BundleBuffer buffer;
      buffer.bytes = getBufferByteSize(value);
      bufferOf[value] = buffers.size();
      buffers.push_back(buffer);
    }
    // Arguments live throughout.
    for (BlockArgument argument : function.getArguments())
      buffers[bufferOf.lookup(argument)].lastStep = kForever;
    // A step's use keeps a buffer, and what it views, alive.
    int64_t step = 0;
    auto use = [&](int index) {
      for (; index >= 0; index = buffers[index].aliasOf)
        buffers[index].lastStep = std::max(buffers[index].lastStep, step);
    };
    for (Operation &op : function.getBody().front()) {
      if (isa<memref::AllocOp>(op)) {
        BundleBuffer &buffer = buffers[bufferOf.lookup(op.getResult(0))];
        buffer.firstStep = buffer.lastStep = step;
        // Counters keep their zeros from load to load: no buffer shares
        // their bytes.
        if (op.hasAttr(MemWallDialect::kCountersAttrName)) {
          buffer.firstStep = 0;
          buffer.lastStep = kForever;
        }
      } else if (auto view = dyn_cast<ViewOp>(op)) {
        BundleBuffer &buffer = buffers[bufferOf.lookup(view.getResult())];
        buffer.aliasOf = bufferOf.lookup(view.getSource());
        buffer.firstStep = buffers[buffer.aliasOf].firstStep;
        buffer.lastStep = step;
      } else if (isa<LaunchOp, GemmOp>(op)) {
        // A tensor map argument uses the buffer it describes.
        for (Value operand : op.getOperands())
          use(bufferOf.lookup(getLaunchBuffer(operand)));
        ++step;
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        // Returned buffers live to the end (with the buffer a view names).
        for (Value value : ret.getOperands()) {
          BundleBuffer &buffer = buffers[bufferOf.lookup(value)];
          buffer.lastStep = kForever;
          if (buffer.aliasOf >= 0)
            buffers[buffer.aliasOf].lastStep = kForever;
        }
      }
    }
    std::optional<int64_t> arena = planArena(buffers);
    if (!arena) {
      function.emitError() << "the buffers of @" << function.getSymName()
                           << " need an arena larger than memwall can count "
                              "(int64)";
      return signalPassFailure();
    }
    Builder b(&getContext());
    SmallVector<int64_t> argumentOffsets;
    for (auto [value, buffer] : llvm::zip_equal(values, buffers)) {
      if (isa<BlockArgument>(value))
        argumentOffsets.push_back(buffer.offset);
      else
        value.getDefiningOp()->setAttr(MemWallDialect::kOffsetAttrName,
                                       b.getI64IntegerAttr(buffer.offset));
    }
    function->setAttr(MemWallDialect::kArgumentOffsetsAttrName,
                      b.getDenseI64ArrayAttr(argumentOffsets));
    function->setAttr(MemWallDialect::kArenaBytesAttrName,
                      b.getI64IntegerAttr(*arena));
  }
};
} // namespace
