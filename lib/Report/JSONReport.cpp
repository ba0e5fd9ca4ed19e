//===- JSONReport.cpp - the report as JSON --------------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Schema: docs/report-schema.md. Keep names stable; add, don't rename.
//
//===----------------------------------------------------------------------===//

#include "memwall/Report/RooflineReport.h"
#include "memwall/Support/FiniteJSON.h"

#include "llvm/ADT/StringExtras.h"

using namespace memwall;

static void writeTarget(FiniteJSONStream &json, const GPUTarget &target) {
  json.attributeObject("target", [&] {
    json.attribute("name", target.name);
    json.attribute("description", target.description);
    json.attribute("sm_arch", target.smArch);
    json.attribute("ridge_flops_per_byte",
                   target.ridgeFor(MathPrecision::BF16));
    json.attribute("hbm_bytes_per_s", target.memoryBandwidth);
    json.attribute("capacity_bytes",
                   static_cast<int64_t>(target.memoryCapacityBytes));
    json.attribute("l2_bytes", static_cast<int64_t>(target.l2Bytes));
    json.attribute("shared_memory_per_sm_bytes",
                   static_cast<int64_t>(target.sharedMemoryPerSMBytes));
    json.attribute("sm_count", static_cast<int64_t>(target.smCount));
    json.attribute("kernel_launch_s", target.kernelLaunchSeconds);
    json.attribute("graph_kernel_launch_s", target.graphKernelLaunchSeconds);
    json.attribute("launch_mode", stringifyLaunchMode(target.launchMode));
    json.attributeObject("achievable", [&] {
      json.attribute("memory_bandwidth_bytes_per_s",
                     target.achievable.memoryBandwidth);
      json.attributeObject("gemm_efficiency", [&] {
        for (unsigned index = 0; index < kNumGemmShapeClasses; ++index)
          json.attribute(stringifyGemmShapeClass(GemmShapeClass(index)),
                         target.achievable.gemmEfficiency[index]);
      });
      json.attribute("attention_efficiency",
                     target.achievable.attentionEfficiency);
    });
    json.attribute("calibration", target.calibration);
    json.attributeObject("peak_flops", [&] {
      for (unsigned index = 0; index < kNumMathPrecisions; ++index)
        json.attribute(stringifyMathPrecision(MathPrecision(index)),
                       target.peakFlops[index]);
    });
    json.attributeObject("ridges", [&] {
      for (unsigned index = 0; index < kNumMathPrecisions; ++index)
        json.attribute(stringifyMathPrecision(MathPrecision(index)),
                       target.ridgeFor(MathPrecision(index)));
    });
  });
}

static void writeOp(FiniteJSONStream &json, const OpRecord &op) {
  json.object([&] {
    json.attribute("id", static_cast<int64_t>(op.id));
    json.attribute("op", op.op);
    json.attribute("loc", op.loc);
    json.attribute("flops", op.flops);
    json.attribute("bytes_read", op.bytesRead);
    json.attribute("bytes_written", op.bytesWritten);
    json.attribute("intensity", op.estimate.intensity);
    json.attribute("precision", stringifyMathPrecision(op.precision));
    json.attribute("compute_time_s", op.estimate.computeSeconds);
    json.attribute("memory_time_s", op.estimate.memorySeconds);
    json.attribute("launch_s", op.estimate.launchSeconds);
    json.attribute("bound", op.estimate.memoryBound ? "memory" : "compute");
    json.attribute("time_s", op.estimate.timeSeconds);
    json.attribute("category", op.category);
  });
}

static void writeFusion(FiniteJSONStream &json, const FusionSummary &fusion) {
  json.attributeObject("fusion", [&] {
    json.attributeArray("groups", [&] {
      for (const FusionGroupRecord &group : fusion.groups)
        json.object([&] {
          json.attribute("id", static_cast<int64_t>(group.id));
          json.attribute("kind", group.kind);
          if (!group.gemmChoice.empty())
            json.attribute("gemm_choice", group.gemmChoice);
          json.attributeArray("ops", [&] {
            for (const std::string &loc : group.ops)
              json.value(loc);
          });
          json.attribute("kernels_before",
                         static_cast<int64_t>(group.kernelsBefore));
          json.attribute("bytes_saved", group.bytesSaved);
          json.attribute("time_before_s", group.timeBeforeSeconds);
          json.attribute("time_after_s", group.timeAfterSeconds);
        });
    });
    auto writeReasons = [&](llvm::StringRef key,
                            const std::vector<FusionRefusal> &reasons) {
      json.attributeArray(key, [&] {
        for (const FusionRefusal &reason : reasons)
          json.object([&] {
            json.attribute("producer", llvm::join(reason.producer, "+"));
            json.attribute("consumer", llvm::join(reason.consumer, "+"));
            json.attribute("reason", reason.reason);
          });
      });
    };
    writeReasons("refused", fusion.refused);
    writeReasons("dequantize_kernels", fusion.dequantizeKernels);
    json.attributeObject("totals", [&] {
      json.attribute("kernels_before",
                     static_cast<int64_t>(fusion.kernelsBefore));
      json.attribute("kernels_after",
                     static_cast<int64_t>(fusion.kernelsAfter));
      json.attribute("bytes_saved", fusion.bytesSaved);
      json.attribute("time_before_s", fusion.timeBeforeSeconds);
      json.attribute("time_after_s", fusion.timeAfterSeconds);
    });
  });
}

static void writeBuckets(FiniteJSONStream &json, const BucketBytes &bytes) {
  for (unsigned b = 0; b < kNumMemoryBuckets; ++b)
    json.attribute(
        (stringifyMemoryBucket(static_cast<MemoryBucket>(b)) + "_bytes").str(),
        bytes[b]);
}

static void writeMemory(FiniteJSONStream &json, const MemorySummary &memory) {
  json.attributeObject("memory", [&] {
    writeBuckets(json, memory.atPeak);
    json.attribute("peak_bytes", memory.peakBytes);
    json.attribute("peak_at", memory.peakAt);
    json.attribute("peak_step", memory.peakStep);
    json.attribute("saved_activations_bytes", memory.savedActivationsBytes);
    json.attribute("training", memory.training);
    json.attribute("precision", memory.precision);
    json.attribute("devices", memory.devices);
    json.attribute("zero_stage", static_cast<int64_t>(memory.zeroStage));
    json.attribute("offload", memory.offload);
    json.attributeArray("timeline", [&] {
      for (const MemoryStep &step : memory.timeline)
        json.object([&] {
          json.attribute("op", step.op);
          json.attribute("loc", step.loc);
          json.attribute("phase", step.phase);
          json.attribute("total_bytes", step.total());
          writeBuckets(json, step.bytes);
        });
    });
  });
}

static void writeInference(FiniteJSONStream &json,
                           const InferenceSummary &inference) {
  json.attributeObject("inference", [&] {
    json.attribute("tokens_per_step", inference.tokensPerStep);
    json.attribute("weight_bytes", inference.weightBytes);
    json.attribute("kv_cache_bytes", inference.kvCacheBytes);
    json.attribute("total_bytes", inference.totalBytes);
    json.attribute("weight_gemm_flops", inference.weightGemmFlops);
    json.attribute("weight_gemm_intensity", inference.weightGemmIntensity);
    json.attribute("ridge", inference.ridge);
    json.attribute("math_precision", inference.mathPrecision);
    json.attribute("weight_gemm_time_fraction",
                   inference.weightGemmTimeFraction);
    json.attribute("memory_bound_time_fraction",
                   inference.memoryBoundTimeFraction);
    json.attribute("tokens_at_ridge", inference.tokensAtRidge);
    json.attribute("bandwidth_floor_s", inference.bandwidthFloorSeconds);
    json.attribute("step_time_s", inference.stepSeconds);
    json.attribute("tokens_per_s", inference.tokensPerSecond);
  });
}

static void writeRemat(FiniteJSONStream &json, const RematSummary &remat) {
  json.attributeObject("remat", [&] {
    json.attribute("budget_bytes", remat.budgetBytes);
    json.attribute("peak_before_bytes", remat.peakBeforeBytes);
    json.attribute("peak_after_bytes", remat.peakAfterBytes);
    json.attribute("saved", remat.saved);
    json.attribute("saved_bytes", remat.savedBytes);
    json.attribute("recomputed", remat.recomputed);
    json.attribute("recomputed_bytes", remat.recomputedBytes);
    json.attribute("segment_layers", remat.segmentLayers);
    json.attribute("segment_recomputed", remat.segmentRecomputed);
    json.attribute("recompute_flops", remat.recomputeFlops);
    json.attribute("overhead_time_s", remat.overheadSeconds);
    json.attribute("overhead_fraction", remat.overheadFraction);
    json.attribute("solver", remat.solver);
    json.attribute("plan", remat.plan.empty() ? remat.solver : remat.plan);
    if (remat.solverOverheadSeconds)
      json.attribute("solver_overhead_time_s", *remat.solverOverheadSeconds);
    else
      json.attribute("solver_overhead_time_s", nullptr);
    json.attribute("gap", remat.gap);
    if (remat.bound)
      json.attribute("bound_s", *remat.bound);
    else
      json.attribute("bound_s", nullptr);
    json.attributeArray("baselines", [&] {
      for (const RematBaseline &b : remat.baselines)
        json.object([&] {
          json.attribute("name", b.name);
          json.attribute("peak_bytes", b.peakBytes);
          json.attribute("overhead_time_s", b.overheadSeconds);
          json.attribute("overhead_fraction", b.overheadFraction);
          json.attribute("recomputed", b.recomputed);
          json.attribute("fits", b.fits);
        });
    });
  });
}

static void writeCommunication(FiniteJSONStream &json,
                               const CommunicationSummary &c) {
  json.attributeObject("communication", [&] {
    json.attribute("devices", c.devices);
    json.attribute("zero_stage", static_cast<int64_t>(c.zeroStage));
    json.attribute("offload", c.offload);
    json.attribute("micro_steps", c.microSteps);
    json.attribute("link", c.link);
    json.attribute("link_bytes_per_s", c.linkBandwidth);
    json.attribute("pcie_bytes_per_s", c.pcieBandwidth);
    json.attribute("param_bytes", c.paramBytes);
    json.attribute("gradient_bytes", c.gradientBytes);
    json.attribute("all_reduce_bytes", c.allReduceBytes);
    json.attribute("reduce_scatter_bytes", c.reduceScatterBytes);
    json.attribute("all_gather_bytes", c.allGatherBytes);
    json.attribute("offload_bytes", c.offloadBytes);
    json.attribute("collective_time_s", c.collectiveSeconds);
    json.attribute("offload_time_s", c.offloadSeconds);
    json.attribute("compute_time_s", c.computeSeconds);
    json.attribute("exposed_time_s", c.exposedSeconds);
    json.attribute("step_time_s", c.stepSeconds);
    json.attribute("overlap", c.overlap);
  });
}

static void writeParallelism(FiniteJSONStream &json,
                             const ParallelismSummary &p) {
  json.attributeObject("parallelism", [&] {
    json.attribute("plan", getParallelPlanName(p));
    json.attribute("gpus", p.gpus);
    json.attribute("data_parallel", p.dataParallel);
    json.attribute("tensor_parallel", p.tensorParallel);
    json.attribute("sequence_parallel", p.sequenceParallel);
    json.attribute("pipeline_parallel", p.pipelineParallel);
    json.attribute("pipeline_schedule", p.schedule);
    json.attribute("virtual_stages", p.virtualStages);
    json.attribute("micro_batches", p.microBatches);
    json.attribute("expert_parallel", p.expertParallel);
    json.attribute("worst_stage", p.worstStage);
    json.attribute("peak_bytes", p.peakBytes);
    json.attribute("weight_bytes", p.weightBytes);
    json.attribute("gradient_bytes", p.gradientBytes);
    json.attribute("optimizer_bytes", p.optimizerBytes);
    json.attribute("saved_activation_bytes", p.activationBytes);
    json.attribute("layer_activation_bytes", p.layerActivationBytes);
    json.attribute("tensor_parallel_bytes", p.tensorParallelBytes);
    json.attribute("tensor_parallel_time_s", p.tensorParallelSeconds);
    json.attribute("tensor_parallel_link", p.tensorParallelLink);
    json.attribute("pipeline_bytes", p.pipelineBytes);
    json.attribute("pipeline_time_s", p.pipelineSeconds);
    json.attribute("expert_bytes", p.expertBytes);
    json.attribute("expert_time_s", p.expertSeconds);
    json.attribute("data_parallel_bytes", p.dataParallelBytes);
    json.attribute("data_parallel_exposed_s", p.dataParallelSeconds);
    json.attribute("bubble_fraction", p.bubbleFraction);
    json.attribute("bubble_time_s", p.bubbleSeconds);
    json.attribute("compute_time_s", p.computeSeconds);
    json.attribute("step_time_s", p.stepSeconds);
  });
}

static void writeBreakdown(FiniteJSONStream &json,
                           const RooflineReport &report) {
  json.attributeArray("time_breakdown", [&] {
    for (const TimeBreakdownEntry &entry : report.computeTimeBreakdown())
      json.object([&] {
        json.attribute("category", entry.category);
        json.attribute("kernels", static_cast<int64_t>(entry.kernels));
        json.attribute("flops", entry.flops);
        json.attribute("bytes", entry.bytes);
        json.attribute("time_s", entry.timeSeconds);
        json.attribute("fraction", entry.fraction);
      });
  });
}

static void writeMeasured(FiniteJSONStream &json, const MeasuredRun &run) {
  json.attributeObject("measured", [&] {
    json.attribute("device", run.device);
    json.attribute("measured_time_s", run.measuredSeconds);
    json.attribute("matched_measured_time_s", run.matchedMeasuredSeconds);
    json.attribute("matched_predicted_time_s", run.predictedSeconds);
    json.attribute("unmatched_kernels", static_cast<int64_t>(run.unmatched));
    json.attributeArray("kernels", [&] {
      for (const MeasuredKernel &kernel : run.kernels)
        json.object([&] {
          json.attribute("name", kernel.name);
          json.attribute("ops", kernel.ops);
          if (kernel.predictedSeconds)
            json.attribute("predicted_time_s", *kernel.predictedSeconds);
          else
            json.attribute("predicted_time_s", nullptr);
          json.attribute("bundle_predicted_time_s",
                         kernel.bundlePredictedSeconds);
          json.attribute("measured_time_s", kernel.measuredSeconds);
        });
    });
  });
}

static void writeCapacity(FiniteJSONStream &json,
                          const CapacitySummary &capacity) {
  json.attributeObject("max_batch", [&] {
    json.attribute("limit_bytes", capacity.limitBytes);
    json.attribute("limit", capacity.limit);
    json.attribute("batch", capacity.batch);
    json.attribute("context", capacity.context);
    json.attribute("max_batch", capacity.maxBatch);
    json.attribute("peak_at_max_batch_bytes", capacity.peakAtMaxBatch);
    json.attribute("tokens_per_s_at_max_batch",
                   capacity.tokensPerSecondAtMaxBatch);
    json.attribute("max_context", capacity.maxContext);
    json.attribute("peak_at_max_context_bytes", capacity.peakAtMaxContext);
  });
}

static void writeBudget(FiniteJSONStream &json, const BudgetSummary &budget) {
  json.attributeObject("budget", [&] {
    json.attribute("budget_bytes", budget.budgetBytes);
    json.attribute("fits", budget.fits);
    json.attribute("peak_bytes", budget.peakBytes);
    json.attribute("headroom_bytes", budget.headroomBytes);
    json.attributeArray("fixes", [&] {
      for (const MemoryFix &fix : budget.fixes)
        json.object([&] {
          json.attribute("name", fix.name);
          json.attribute("description", fix.description);
          json.attribute("peak_bytes", fix.peakBytes);
          json.attribute("time_s", fix.timeSeconds);
          json.attribute("time_factor", fix.timeFactor);
          json.attribute("fits", fix.fits);
          json.attribute("first_that_fits", fix.firstThatFits);
          if (fix.tokensPerSecond > 0)
            json.attribute("tokens_per_s", fix.tokensPerSecond);
        });
    });
  });
}

void memwall::printRooflineReportJSON(const RooflineReport &report,
                                      llvm::raw_ostream &os) {
  RooflineTotals totals = report.computeTotals();
  FiniteJSONStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("schema_version", 1);
    json.attribute("generator", "memwall");
    writeTarget(json, report.target);
    json.attributeObject("model", [&] {
      json.attribute("name", report.modelName);
      json.attribute("params", report.params);
      json.attribute("param_bytes", report.paramBytes);
      if (report.trainableParams != report.params)
        json.attribute("trainable_params", report.trainableParams);
      if (const std::optional<MixtureSummary> &moe = report.mixture) {
        json.attribute("active_params", moe->activeParams);
        json.attribute("expert_params", moe->expertParams);
        json.attribute("expert_param_bytes", moe->expertBytes);
        json.attribute("expert_bytes_read_expected",
                       moe->expectedExpertBytesRead);
        json.attribute("expert_bytes_read_worst", moe->worstExpertBytesRead);
      }
    });
    json.attributeArray("ops", [&] {
      for (const OpRecord &op : report.ops)
        writeOp(json, op);
    });
    json.attributeObject("totals", [&] {
      json.attribute("flops", totals.flops);
      json.attribute("bytes_read", totals.bytesRead);
      json.attribute("bytes_written", totals.bytesWritten);
      json.attribute("bytes", totals.bytes);
      json.attribute("time_s", totals.timeSeconds);
      json.attribute("memory_bound_time_s", totals.memoryBoundSeconds);
      json.attribute("memory_bound_time_fraction",
                     totals.memoryBoundTimeFraction);
      json.attribute("ops", static_cast<int64_t>(totals.numOps));
      json.attribute("memory_bound_ops",
                     static_cast<int64_t>(totals.numMemoryBoundOps));
    });
    writeBreakdown(json, report);
    if (report.measured)
      writeMeasured(json, *report.measured);
    if (report.fusion)
      writeFusion(json, *report.fusion);
    if (report.memory)
      writeMemory(json, *report.memory);
    if (report.communication)
      writeCommunication(json, *report.communication);
    if (report.parallelism)
      writeParallelism(json, *report.parallelism);
    if (report.budget)
      writeBudget(json, *report.budget);
    if (report.inference)
      writeInference(json, *report.inference);
    if (report.capacity)
      writeCapacity(json, *report.capacity);
    if (report.remat)
      writeRemat(json, *report.remat);
  });
  os << "\n";
}
