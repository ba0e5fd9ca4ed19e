//===- CostResults.h - what the cost analyses predict ------------*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Plain data (no MLIR types) the cost analyses produce: each kernel's
// roofline estimate (CostAnalysis), what fusion saved, and the step-level
// predictions of inference and data-parallel training steps. The report
// (memwall/Report) is built from these; they never depend on the report.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_ANALYSIS_COSTRESULTS_H
#define MEMWALL_ANALYSIS_COSTRESULTS_H

#include "memwall/Hardware/GPUTarget.h"
#include "memwall/Hardware/Roofline.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

/// One operation of the model.
struct OpRecord {
  /// Position of the op in program order, starting at 0.
  unsigned id = 0;
  /// Full op name, e.g. "memwall.matmul".
  std::string op;
  /// Source location as printed by MLIR, e.g. "model.mlir:12:10", or a name
  /// location such as "layers.3.attn.qkv".
  std::string loc;
  int64_t flops = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  /// Math unit the op's FLOPs run on.
  MathPrecision precision = MathPrecision::FP32;
  /// Roofline estimate of the op on the report's target.
  RooflineEstimate estimate;
  /// What kind of kernel it is, for the time breakdown: "gemm", "attention",
  /// "norm" (norms, softmax, reductions, losses), "elementwise", "layout"
  /// (data movement) or "optimizer".
  std::string category;
};

/// One fused kernel: what it replaced and what it saves.
struct FusionGroupRecord {
  /// The fusion's id in RooflineReport::ops.
  unsigned id = 0;
  /// "elementwise", "reduction", "matmul_epilogue" or "gemm".
  std::string kind;
  /// For a fusion with a matmul: which GEMM kernel runs it and why
  /// (KernelAnalysis::gemmChoice); empty otherwise.
  std::string gemmChoice;
  /// Locations of the fused ops, in program order.
  std::vector<std::string> ops;
  /// Kernels the ops launch unfused.
  unsigned kernelsBefore = 0;
  /// DRAM bytes of the ops unfused minus the fused kernel's.
  int64_t bytesSaved = 0;
  /// Sum of the ops' roofline times unfused, and the fused kernel's.
  double timeBeforeSeconds = 0;
  double timeAfterSeconds = 0;
};

/// A kernel with a matmul and a consumer of its result that memwall-fuse
/// kept in another kernel, and why (explainUnfusedGemmConsumers).
struct FusionRefusal {
  /// Locations of the two kernels' ops, in program order.
  std::vector<std::string> producer, consumer;
  /// Why they are not one kernel: what makes the merged kernel illegal, or
  /// its predicted time against the two apart.
  std::string reason;
};

/// Present when the module was fused (it holds memwall.fusion ops or was
/// marked by memwall-fuse).
struct FusionSummary {
  std::vector<FusionGroupRecord> groups;
  /// GEMM kernels whose results' consumers run in other kernels.
  std::vector<FusionRefusal> refused;
  /// Dequantize kernels memwall-fuse chose and why: producer the kernel's
  /// dequantizes, consumer the matmul reading the weight, reason their
  /// predicted times against the GEMM's main loop dequantizing.
  std::vector<FusionRefusal> dequantizeKernels;
  /// Kernels of the whole model before and after fusion.
  unsigned kernelsBefore = 0;
  unsigned kernelsAfter = 0;
  int64_t bytesSaved = 0;
  /// Predicted time of the whole model before and after fusion.
  double timeBeforeSeconds = 0;
  double timeAfterSeconds = 0;
};

/// Why an inference step (prefill or decode) is memory- or compute-bound:
/// the weight-streaming GEMMs read every weight once per step for
/// `tokensPerStep` rows, so their intensity grows with the tokens per step
/// until it reaches the ridge of their math precision.
struct InferenceSummary {
  int64_t tokensPerStep = 0; // rows of the weight GEMMs (batch x new tokens)
  int64_t weightBytes = 0;   // weight bytes the GEMMs stream, per step
  int64_t kvCacheBytes = 0;  // KV-cache bytes attention reads, per step
  int64_t totalBytes = 0;    // all DRAM traffic of the step
  double weightGemmFlops = 0;
  double weightGemmIntensity = 0; // FLOP/B of the weight GEMMs together
  double ridge = 0;               // FLOP/B where their roof turns compute-bound
  std::string mathPrecision;      // of the weight GEMMs
  double weightGemmTimeFraction = 0; // of the predicted step time
  double memoryBoundTimeFraction = 0;
  /// Tokens per step at which the weight GEMMs would reach the ridge
  /// (intensity grows about linearly with the rows while they are few).
  int64_t tokensAtRidge = 0;
  /// (weights + KV cache) / bandwidth: no schedule of this step beats it.
  double bandwidthFloorSeconds = 0;
  double stepSeconds = 0;     // predicted
  double tokensPerSecond = 0; // tokensPerStep / stepSeconds
};

/// Data-parallel and offload traffic of a training step, per device, and
/// the step time with the part compute does not hide (docs/memory.md,
/// "Communication").
struct CommunicationSummary {
  int64_t devices = 1;
  int zeroStage = 0;
  std::string offload = "none";
  int64_t microSteps = 1; // gradient accumulation steps per optimizer step
  /// The link collectives run over: "nvlink", "pcie", "network", or "none"
  /// on one device; bandwidths are bytes/s in one direction per GPU.
  std::string link = "none";
  double linkBandwidth = 0;
  double pcieBandwidth = 0;
  int64_t paramBytes = 0;    // the model's weights
  int64_t gradientBytes = 0; // their gradients
  /// Bytes each device sends per optimizer step (ring algorithms).
  int64_t allReduceBytes = 0;
  int64_t reduceScatterBytes = 0;
  int64_t allGatherBytes = 0;
  int64_t offloadBytes = 0;     // over PCIe, both directions
  double collectiveSeconds = 0; // the collectives at linkBandwidth
  double offloadSeconds = 0;    // PCIe transfers and the CPU optimizer
  double computeSeconds = 0;    // the step's kernels on the GPU
  double exposedSeconds = 0;    // communication compute does not hide
  double stepSeconds = 0;       // computeSeconds + exposedSeconds
  std::string overlap;          // the overlap assumption, one line
};

/// A training step split over devices by tensor, sequence, pipeline and
/// expert parallelism (besides data parallelism): per-device memory, the
/// communication of each kind per step and the pipeline bubble
/// (ParallelismAnalysis.h, docs/parallelism.md).
struct ParallelismSummary {
  int64_t tensorParallel = 1;
  bool sequenceParallel = false;
  int64_t pipelineParallel = 1;
  std::string schedule = "1f1b"; // or "interleaved"
  int64_t virtualStages = 1;     // model chunks per device (interleaved)
  int64_t microBatches = 1;
  int64_t expertParallel = 1;
  int64_t dataParallel = 1;
  int64_t gpus = 1; // data x tensor x pipeline
  /// Per device, at the worst pipeline stage ("first" or "last").
  std::string worstStage = "first";
  int64_t peakBytes = 0;
  int64_t weightBytes = 0, gradientBytes = 0, optimizerBytes = 0;
  int64_t activationBytes =
      0; // saved for the backward, in-flight micro-batches included
  /// One transformer layer's saved activations on one device, one
  /// micro-batch (Korthikanti et al.'s per-layer figure).
  int64_t layerActivationBytes = 0;
  /// Bytes each device sends per step and the time they take (not hidden
  /// behind compute), by kind.
  int64_t tensorParallelBytes = 0;
  double tensorParallelSeconds = 0;
  std::string tensorParallelLink = "none";
  int64_t pipelineBytes = 0;
  double pipelineSeconds = 0;
  int64_t expertBytes = 0;
  double expertSeconds = 0;
  int64_t dataParallelBytes = 0;
  double dataParallelSeconds = 0; // exposed
  /// Idle fraction of a pipeline, (P - 1) / (v M), and its time.
  double bubbleFraction = 0;
  double bubbleSeconds = 0;
  double computeSeconds = 0; // one device's kernels over the step
  double stepSeconds = 0;
};

/// "tp8-sp-pp2-ep4": a plan's short name (fix names, the report); "dp"
/// for data parallelism alone.
inline std::string getParallelPlanName(const ParallelismSummary &s) {
  std::string name;
  auto part = [&](const std::string &text) {
    name += (name.empty() ? "" : "-") + text;
  };
  if (s.tensorParallel > 1)
    part("tp" + std::to_string(s.tensorParallel));
  if (s.sequenceParallel)
    part("sp");
  if (s.pipelineParallel > 1)
    part("pp" + std::to_string(s.pipelineParallel) +
         (s.schedule == "interleaved" ? "i" : ""));
  if (s.expertParallel > 1)
    part("ep" + std::to_string(s.expertParallel));
  return name.empty() ? "dp" : name;
}

/// The kernels of a module on one target (CostAnalysis's result).
/// A mixture of experts' parameters and expert-weight traffic
/// (docs/moe.md): present when some weight is an expert_matmul's.
struct MixtureSummary {
  /// Parameters one token runs through: every weight but the routed
  /// experts it is not sent to.
  int64_t activeParams = 0;
  /// Parameters and bytes of all experts' weights.
  int64_t expertParams = 0;
  int64_t expertBytes = 0;
  /// Expert-weight bytes the step's expert_matmul ops read: in expectation
  /// under uniform routing (the time model's figure), and at worst.
  int64_t expectedExpertBytesRead = 0;
  int64_t worstExpertBytesRead = 0;
};

struct ModuleCost {
  /// Name of the module's symbol, if it has one.
  std::string modelName;
  /// Number of parameters (elements of weight-tagged function arguments) and
  /// their bytes at their stored dtypes.
  int64_t params = 0;
  int64_t paramBytes = 0;
  /// Parameters training updates (all but frozen weights, e.g. a LoRA base).
  int64_t trainableParams = 0;
  std::optional<MixtureSummary> mixture;
  /// The kernels of the module in program order: ops inside a fusion appear
  /// only through their fusion.
  std::vector<OpRecord> ops;
  /// Present when the module was fused.
  std::optional<FusionSummary> fusion;
};

} // namespace memwall

#endif // MEMWALL_ANALYSIS_COSTRESULTS_H
