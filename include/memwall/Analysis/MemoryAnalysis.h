//===- MemoryAnalysis.h - liveness-simulated device memory ------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Simulates the bytes live on one device over a step: the function's op
// order is the schedule, each buffer lives from the op that defines it to its
// last use, and the peak is the largest sum. Buckets, aliasing and the
// ZeRO/FSDP and offload accounting are documented in docs/memory.md.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_MEMORYANALYSIS_H
#define MEMWALL_ANALYSIS_MEMORYANALYSIS_H

#include "memwall/Analysis/MemoryResults.h"
#include "memwall/Hardware/GPUTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/AnalysisManager.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <vector>

namespace memwall {

enum class OffloadPolicy { None, Optimizer, Params };
llvm::StringRef stringifyOffloadPolicy(OffloadPolicy policy);
std::optional<OffloadPolicy> symbolizeOffloadPolicy(llvm::StringRef name);

/// Data-parallel sharding of the model states across `devices`:
/// ZeRO stage 1 shards optimizer states, 2 also gradients, 3 (= FSDP
/// full-shard) also weights. Offload moves optimizer states (and with
/// `params` the weights) to host memory.
struct ShardingOptions {
  int64_t devices = 1;
  int zeroStage = 0;
  OffloadPolicy offload = OffloadPolicy::None;
};

/// Checks ranges (devices >= 1, stage 0..3); the message says what is wrong.
llvm::Error validateShardingOptions(const ShardingOptions &options);

/// What the memory options of memwall-opt and of the memory passes say.
struct MemoryOptions {
  std::optional<int64_t> budgetBytes; // --budget, if given
  ShardingOptions sharding;           // --devices, --zero-stage, --offload
};

/// Parses the memory options, or returns the message memwall-opt prints for
/// a bad value (e.g. "--budget: invalid size '40XB': ...").
llvm::Expected<MemoryOptions> parseMemoryOptions(llvm::StringRef budget,
                                                 int64_t devices, int zeroStage,
                                                 llvm::StringRef offload);

/// Per-bucket multipliers applied to every buffer before the peak is taken;
/// used by the fix search to predict the peak of a changed configuration
/// without rebuilding the graph (1 everywhere leaves the simulation as is).
struct MemoryScaling {
  std::array<double, kNumMemoryBuckets> factor = {1, 1, 1, 1, 1, 1};
  /// Scale applied to the Sq x Sk attention workspace (seq^2 terms).
  double attentionWorkspace = 1;
  /// Bytes added to the optimizer bucket at every step (e.g. fp32 master
  /// weights a mixed-precision switch would add).
  int64_t extraOptimizerBytes = 0;
  /// Per-buffer multipliers, indexed like MemoryLiveness::getBuffers (a
  /// tensor-parallel shard, a pipeline stage's share; docs/parallelism.md);
  /// empty for 1 everywhere.
  std::vector<double> bufferFactor;
  /// Per-step multipliers of the workspace an op holds while it runs,
  /// indexed like MemoryLiveness::getSteps; empty for 1 everywhere.
  std::vector<double> stepWorkspaceFactor;
};

/// One allocation of a step: a value and every view or in-place update of
/// it, live from the step that defines it to the last step that reads it.
struct LiveBuffer {
  mlir::Value root;
  int64_t bytes = 0;
  MemoryBucket bucket = MemoryBucket::Workspace;
  int64_t firstStep = 0, lastStep = 0;
};

/// The liveness of a step's buffers: the function's op order is the
/// schedule (one step per top-level op), views and in-place updates share
/// their operand's buffer, and each buffer is bucketed (docs/memory.md).
/// This is the part of the memory simulation that depends on the IR only;
/// simulate() applies sharding, offload and scaling on top of it, so one
/// cached analysis answers every option the report and the fix search ask
/// about. Obtained with `getAnalysis<MemoryLiveness>()` on a function (or on
/// a module: its main function, getMainFunction).
///
/// Upstream's mlir::Liveness answers which SSA values are live at an op; the
/// simulation needs buffers (an SSA value with its views and in-place
/// updates) over a straight-line step, so it keeps its own step intervals.
class MemoryLiveness {
public:
  explicit MemoryLiveness(mlir::Operation *op);

  /// The simulated memory under `sharding`, with `scaling`'s factors.
  MemorySummary simulate(const ShardingOptions &sharding,
                         const MemoryScaling &scaling = {}) const;

  /// The function simulated; null when the op had none.
  mlir::func::FuncOp getFunction() const { return function; }
  /// Every buffer: arguments first, then results in step order.
  llvm::ArrayRef<LiveBuffer> getBuffers() const { return buffers; }
  /// The index in getBuffers() of the buffer holding `value` (a view's or
  /// an in-place update's is its operand's); nullopt for a value of no
  /// step (e.g. inside a fusion).
  std::optional<unsigned> getBufferIndex(mlir::Value value) const {
    auto it = bufferIndex.find(value);
    if (it == bufferIndex.end())
      return std::nullopt;
    return it->second;
  }
  /// The ops of the steps, in order.
  llvm::ArrayRef<mlir::Operation *> getSteps() const { return steps; }
  /// Whether the step has a backward (an op with a phase other than
  /// forward), and its first step (-1 without one).
  bool isTraining() const { return backwardStart >= 0; }
  int64_t getBackwardStart() const { return backwardStart; }

  bool isInvalidated(const mlir::AnalysisManager::PreservedAnalyses &pa) {
    return !pa.isPreserved<MemoryLiveness>();
  }

private:
  mlir::func::FuncOp function;
  std::string precision; // the module's memwall.precision
  llvm::SmallVector<mlir::Operation *> steps;
  std::vector<std::string> stepLocs, stepPhases;
  /// Bytes each step holds while it runs besides its operands and results
  /// (CostOpInterface::getWorkspaceBytes), and whether they are an untiled
  /// attention's, which scale with the context squared.
  std::vector<int64_t> workspace;
  std::vector<bool> workspaceScalesWithContext;
  std::vector<LiveBuffer> buffers;
  llvm::DenseMap<mlir::Value, unsigned> bufferIndex;
  int64_t largestWeight = 0;
  int64_t backwardStart = -1;
};

/// The bytes live at each step while memwall-fuse merges ops into kernels
/// (MemoryLiveness's buffers over the unfused schedule, then updated): a
/// kernel runs at its last op's step, so a value its earlier ops read is
/// carried across the steps up to it, a value they write is allocated at
/// it, a value only the kernel reads is never allocated, and the steps its
/// earlier ops held are left empty. The fuser refuses a merge that would
/// lift a step where another kernel runs above the unfused peak
/// (docs/fusion.md, "Lifetimes"); the kernel's own step holds its inputs
/// and outputs together, as any kernel's does, and is not counted against
/// it. The report says so of a merge it explains.
class StepMemory {
public:
  explicit StepMemory(const MemoryLiveness &liveness);

  /// What running some steps' ops as one kernel changes: buffer intervals
  /// (first > last: never allocated), and the steps left empty.
  struct Merge {
    struct Change {
      unsigned buffer;
      int64_t first, last;
    };
    llvm::SmallVector<Change> changes;
    llvm::SmallVector<int64_t> emptied;
    int64_t step = 0; // the kernel's: its last op's
  };

  /// The merge of `ops` (ops of the liveness' steps) into one kernel.
  Merge plan(llvm::ArrayRef<mlir::Operation *> ops) const;
  /// The peak once `merge` is made, as the fuser judges it: the limit
  /// plus the most `merge` lifts a step where another kernel runs above
  /// its ceiling (the limit, or what a fused kernel already holds at its
  /// own step), or at most the limit.
  double peakWith(const Merge &merge) const;
  void apply(const Merge &merge);
  /// The unfused schedule's peak: what no merge may exceed.
  double getLimit() const { return limit; }

private:
  void add(double bytes, int64_t first, int64_t last);

  const MemoryLiveness &liveness;
  llvm::DenseMap<mlir::Operation *, int64_t> stepOf;
  std::vector<std::pair<int64_t, int64_t>> intervals;
  std::vector<double> live;
  /// Steps whose ops moved into a later kernel: no kernel runs there.
  std::vector<bool> empty;
  /// What a step may hold: the limit, or more where a fused kernel holds
  /// its inputs and outputs at once.
  std::vector<double> ceiling;
  double limit = 0;
};

/// The simulated memory of `function` (one entry per top-level op):
/// MemoryLiveness(function).simulate(sharding, scaling).
MemorySummary simulateMemory(mlir::func::FuncOp function,
                             const ShardingOptions &sharding,
                             const MemoryScaling &scaling = {});

/// The budget, the peak and the headroom between them; no fixes.
BudgetSummary compareWithBudget(const MemorySummary &memory,
                                int64_t budgetBytes);

/// Whether the step fits `budgetBytes` per device and, when it does not, the
/// fixes in the order practitioners reach for them (smaller micro-batch,
/// activation checkpointing, bf16 mixed precision, ZeRO stages, offload,
/// shorter sequence, narrower model), each with its predicted peak and step
/// time; the first that fits is marked. `memory` is simulateMemory's result
/// for `sharding`. docs/memory.md says how each is predicted.
BudgetSummary planBudget(mlir::func::FuncOp function,
                         const MemorySummary &memory, int64_t budgetBytes,
                         const ShardingOptions &sharding,
                         const GPUTarget &target);

/// The function a report describes: the first with a body.
mlir::func::FuncOp getMainFunction(mlir::ModuleOp module);

} // namespace memwall

#endif // MEMWALL_ANALYSIS_MEMORYANALYSIS_H
