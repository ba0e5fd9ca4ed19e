//===- ParallelismAnalysis.h - tensor/pipeline/expert parallel plans -*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A training step planned over devices the way Megatron-LM splits it:
// tensor parallelism (column- then row-parallel GEMMs, all-reduces where a
// row-parallel GEMM's partial sums are used), sequence parallelism (the
// replicated activations split along the sequence), pipeline parallelism
// (layers in stages, 1F1B or interleaved, a bubble) and expert parallelism
// (experts over devices, all-to-alls), beside data parallelism and ZeRO
// (CommunicationAnalysis). The split of every buffer is read from the IR
// by dataflow; docs/parallelism.md gives the rules and the formulas.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_PARALLELISMANALYSIS_H
#define MEMWALL_ANALYSIS_PARALLELISMANALYSIS_H

#include "memwall/Analysis/CostResults.h"
#include "memwall/Analysis/MemoryAnalysis.h"

#include "llvm/Support/Error.h"

namespace memwall {

enum class PipelineSchedule { OneFOneB, Interleaved };

/// How one data-parallel replica is split (the defaults: one device).
struct ParallelismOptions {
  int64_t tensorParallel = 1;
  bool sequenceParallel = false;
  int64_t pipelineParallel = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  /// Model chunks per device under the interleaved schedule.
  int64_t virtualStages = 2;
  /// Micro-batches per step; the step's graph is one micro-batch.
  int64_t microBatches = 1;
  int64_t expertParallel = 1;

  bool isSingleDevice() const {
    return tensorParallel == 1 && pipelineParallel == 1 && expertParallel == 1;
  }
  int64_t chunks() const {
    return schedule == PipelineSchedule::Interleaved ? virtualStages : 1;
  }
};

/// Checks and parses the options; the message names the flag.
llvm::Expected<ParallelismOptions>
parseParallelismOptions(int64_t tensorParallel, bool sequenceParallel,
                        int64_t pipelineParallel, llvm::StringRef schedule,
                        int64_t virtualStages, int64_t microBatches,
                        int64_t expertParallel);

/// The split of a training step's buffers under tensor parallelism, their
/// pipeline stage and whether they are experts', from the IR. Obtained with
/// `getAnalysis<ParallelLayout>()` on a function.
class ParallelLayout {
public:
  explicit ParallelLayout(mlir::Operation *op, mlir::AnalysisManager &am);
  ParallelLayout(mlir::func::FuncOp function, const MemoryLiveness &liveness);

  /// Fails, with one error at the op or argument that prevents it, when
  /// `options` cannot split this step: tensor parallelism not dividing the
  /// heads or a split GEMM's width, pipeline stages not dividing the
  /// layers, expert parallelism not dividing the experts (or no experts).
  /// With `emit` false, only says whether it can.
  mlir::LogicalResult check(const ParallelismOptions &options,
                            bool emit = true) const;

  /// Per-device memory, communication, bubble and step time of `options`
  /// with data parallelism `sharding` on `target`; `options` must pass
  /// check(). `memory` and `dataParallel`, when given, receive the worst
  /// stage's simulation and the data-parallel traffic of one device.
  ParallelismSummary
  evaluate(const ParallelismOptions &options, const ShardingOptions &sharding,
           const GPUTarget &target, MemorySummary *memory = nullptr,
           CommunicationSummary *dataParallel = nullptr) const;

  /// The per-device memory simulation of `options` at pipeline stage
  /// `stage` (0 = first).
  MemorySummary simulate(const ParallelismOptions &options,
                         const ShardingOptions &sharding, int64_t stage) const;

  /// The per-buffer factors of `options` at pipeline stage `stage`, for
  /// MemoryScaling::bufferFactor: 1/T for tensor-parallel shards (and
  /// activations under sequence parallelism), 1/E for experts, 0 for
  /// another stage's buffers, the micro-batches in flight for saved
  /// activations.
  std::vector<double> getBufferFactors(const ParallelismOptions &options,
                                       int64_t stage) const;
  /// The factors of each step's workspace (MemoryScaling::
  /// stepWorkspaceFactor): 0 on another stage, 1/T for a sharded op.
  std::vector<double> getStepFactors(const ParallelismOptions &options,
                                     int64_t stage) const;

  /// The dimension of argument `arg` tensor parallelism splits: a
  /// column-parallel GEMM's weight along its output width (and its bias), a
  /// row-parallel one's along its input width, a KV cache along its heads;
  /// nullopt when it is replicated, split along the vocabulary (the head
  /// and embedding), an expert's, or read through a view. The shard dialect
  /// plan (memwall-shard) splits these.
  std::optional<int64_t> getTensorParallelDim(mlir::BlockArgument arg) const;

  /// Transformer layers (0 when the step has none).
  int64_t getNumLayers() const { return numLayers; }
  bool hasExperts() const { return !expertCounts.empty(); }

  /// How tensor parallelism splits a value (Megatron-LM's column/row rule).
  enum class Split {
    Replicated, // every device holds all of it
    Sharded,    // each device holds 1/T (heads, FFN columns, vocabulary)
    Partial     // each device holds a partial sum (until all-reduced)
  };
  /// What each buffer (MemoryLiveness::getBuffers order) is.
  struct BufferInfo {
    Split split = Split::Replicated;
    bool expert = false;
    /// Layer index; kBeforeLayers (embeddings, inputs) or kAfterLayers
    /// (final norm, head, loss) outside the layers.
    int64_t layer = kAfterLayers;
    bool alsoLast = false; // a tied embedding, also on the last stage
    bool saved = false;    // a forward activation the backward reads
  };
  /// What tensor and expert parallelism must divide, with where to report.
  struct Divisible {
    int64_t extent;
    mlir::Location loc;
    std::string what;
  };
  static constexpr int64_t kBeforeLayers = -1;
  static constexpr int64_t kAfterLayers = INT64_MAX;
  llvm::ArrayRef<BufferInfo> getBufferInfo() const { return bufferInfo; }

  bool isInvalidated(const mlir::AnalysisManager::PreservedAnalyses &pa) {
    return !pa.isPreserved<ParallelLayout>();
  }

private:
  void build(mlir::func::FuncOp function);

  const MemoryLiveness *liveness;
  mutable mlir::func::FuncOp function;
  std::vector<BufferInfo> bufferInfo;
  /// Each step's layer and whether its op works on a tensor-parallel shard.
  std::vector<int64_t> stepLayer;
  std::vector<bool> stepSharded;
  /// Bytes of the all-reduces tensor parallelism needs per micro-batch
  /// (whole model), forward and backward.
  double forwardAllReduceBytes = 0, backwardAllReduceBytes = 0;
  /// Bytes of the hidden state passed between pipeline stages.
  int64_t boundaryBytes = 0;
  /// Bytes of one MoE layer's token slots dispatched (or combined), summed
  /// over the MoE layers.
  int64_t expertSlotBytes = 0;
  int64_t numLayers = 0;
  std::vector<Divisible> tensorSplits;
  std::vector<Divisible> expertCounts;
  llvm::DenseMap<mlir::Value, int64_t> weightSplitDims;
};

/// A plan the budget search evaluated.
struct ParallelPlan {
  ParallelismOptions options;
  ParallelismSummary summary;
  bool fits = false;
};

/// Plans of tensor (with sequence) parallelism up to a node, pipeline
/// stages dividing the layers (1F1B, `current`'s micro-batches: the same
/// global batch) and expert parallelism dividing the experts, beside
/// `sharding`'s data parallelism: those that fit `budgetBytes` first, by
/// predicted GPU-seconds per step (step time x GPUs of a replica), the
/// others by peak. `current` (the plan given) is left out.
std::vector<ParallelPlan>
searchParallelPlans(const ParallelLayout &layout,
                    const ShardingOptions &sharding, const GPUTarget &target,
                    int64_t budgetBytes, const ParallelismOptions &current);

/// Adds the best plans of searchParallelPlans to `budget`'s fixes (up to
/// three that fit, or the one with the least peak), their step time
/// relative to `baseStepSeconds`, and marks the first fix that fits if none
/// is.
void appendParallelPlanFixes(BudgetSummary &budget,
                             const ParallelLayout &layout,
                             const ShardingOptions &sharding,
                             const ParallelismOptions &current,
                             const GPUTarget &target, double baseStepSeconds);

/// One line: the split, GPUs, communication and bubble.
std::string describeParallelPlan(const ParallelismSummary &summary);

} // namespace memwall

#endif // MEMWALL_ANALYSIS_PARALLELISMANALYSIS_H
