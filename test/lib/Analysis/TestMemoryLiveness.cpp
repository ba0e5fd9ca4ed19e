//===- TestMemoryLiveness.cpp - print MemoryLiveness ----------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-test-print-memory-liveness: prints every buffer of each function
// MemoryLiveness (MemoryAnalysis.h) finds, with its bucket and live steps,
// then the simulated peak under the pass's sharding options, applied on top
// of the cached liveness.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"

#include "memwall/Analysis/MemoryAnalysis.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace memwall;

namespace {
struct TestPrintMemoryLivenessPass
    : public PassWrapper<TestPrintMemoryLivenessPass,
                         OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPrintMemoryLivenessPass)

  TestPrintMemoryLivenessPass() = default;
  TestPrintMemoryLivenessPass(const TestPrintMemoryLivenessPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final {
    return "memwall-test-print-memory-liveness";
  }
  StringRef getDescription() const final {
    return "Print the buffers MemoryLiveness finds and the simulated peak";
  }

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return markAllAnalysesPreserved();
    ShardingOptions sharding;
    sharding.devices = devices;
    sharding.zeroStage = zeroStage;
    if (std::optional<OffloadPolicy> policy = symbolizeOffloadPolicy(offload))
      sharding.offload = *policy;
    if (llvm::Error error = validateShardingOptions(sharding)) {
      function.emitError() << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    const MemoryLiveness &liveness = getAnalysis<MemoryLiveness>();
    llvm::raw_ostream &os = llvm::outs();
    AsmState state(function);
    os << "memory liveness of @" << function.getName() << ": "
       << liveness.getSteps().size() << " steps, "
       << (liveness.isTraining() ? "training, backward from step " +
                                       std::to_string(
                                           liveness.getBackwardStart())
                                 : std::string("no backward"))
       << "\n";
    for (const LiveBuffer &buffer : liveness.getBuffers()) {
      os << "  ";
      buffer.root.printAsOperand(os, state);
      os << llvm::formatv(": {0} B {1}, steps {2}..{3}\n", buffer.bytes,
                          stringifyMemoryBucket(buffer.bucket),
                          buffer.firstStep, buffer.lastStep);
    }
    MemorySummary memory = liveness.simulate(sharding);
    os << llvm::formatv("  peak {0} B at step {1} ({2}) on {3} device(s), "
                        "zero {4}, offload {5}\n",
                        memory.peakBytes, memory.peakStep, memory.peakAt,
                        memory.devices, memory.zeroStage, memory.offload);
    markAllAnalysesPreserved();
  }

  Option<int64_t> devices{*this, "devices",
                          llvm::cl::desc("Data-parallel devices"),
                          llvm::cl::init(1)};
  Option<int> zeroStage{*this, "zero-stage", llvm::cl::desc("ZeRO stage 0-3"),
                        llvm::cl::init(0)};
  Option<std::string> offload{*this, "offload",
                              llvm::cl::desc("none, optimizer or params"),
                              llvm::cl::init("none")};
};
} // namespace

void memwall::test::registerTestMemoryLivenessPass() {
  PassRegistration<TestPrintMemoryLivenessPass>();
}
