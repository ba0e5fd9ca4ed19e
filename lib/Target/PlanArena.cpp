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
    // A stack's sources lie in it, a pitch apart: the stack is the buffer
    // the arena places, live from its first source's definition to its
    // last source's use.
    for (StackViewOp stack : function.getBody().getOps<StackViewOp>()) {
      int root = bufferOf.lookup(stack.getResult());
      int64_t pitchBytes = StackViewOp::getPitch(cast<MemRefType>(
                               stack.getSources().front().getType())) *
                           (stack.getType().getElementTypeBitWidth() / 8);
      buffers[root].firstStep = kForever;
      for (auto [i, source] : llvm::enumerate(stack.getSources())) {
        BundleBuffer &buffer = buffers[bufferOf.lookup(source)];
        if (buffer.aliasOf >= 0) {
          stack.emitOpError("stacks a buffer another memwall.stack_view "
                            "stacks: the arena cannot place it in both");
          return signalPassFailure();
        }
        buffer.aliasOf = root;
        buffer.aliasOffset = static_cast<int64_t>(i) * pitchBytes;
      }
    }
    // Arguments live throughout (with the stack they lie in).
    for (BlockArgument argument : function.getArguments()) {
      int index = bufferOf.lookup(argument);
      buffers[index].lastStep = kForever;
      if (int root = buffers[index].aliasOf; root >= 0) {
        buffers[root].firstStep = 0;
        buffers[root].lastStep = kForever;
      }
    }
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
        if (buffer.aliasOf >= 0) {
          BundleBuffer &stack = buffers[buffer.aliasOf];
          stack.firstStep = std::min(stack.firstStep, step);
          stack.lastStep = std::max(stack.lastStep, step);
        }
        // Counters keep their zeros from load to load: no buffer shares
        // their bytes.
        if (op.hasAttr(MemWallDialect::kCountersAttrName)) {
          buffer.firstStep = 0;
          buffer.lastStep = kForever;
        }
      } else if (auto view = dyn_cast<ViewOp>(op)) {
        BundleBuffer &buffer = buffers[bufferOf.lookup(view.getResult())];
        buffer.aliasOf = bufferOf.lookup(view.getSource());
        // A window lies at its offset in the buffer it views.
        buffer.aliasOffset = getWindowOffset(view.getType()) *
                             (view.getType().getElementTypeBitWidth() / 8);
        buffer.firstStep = buffers[buffer.aliasOf].firstStep;
        buffer.lastStep = step;
      } else if (isa<LaunchOp, GemmOp, AllReduceOp>(op)) {
        // A tensor map argument uses the buffer it describes.
        for (Value operand : op.getOperands())
          use(bufferOf.lookup(getLaunchBuffer(operand)));
        ++step;
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        // Returned buffers live to the end (with the buffers they lie in).
        for (Value value : ret.getOperands())
          for (int index = bufferOf.lookup(value); index >= 0;
               index = buffers[index].aliasOf)
            buffers[index].lastStep = kForever;
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
