//===- TextReport.cpp - the report as a readable table --------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A fixed-width table meant for a terminal: a header with the model and the
// target's roofs, one row per op, the totals, and the ten slowest ops.
//
//===----------------------------------------------------------------------===//

#include "memwall/Report/Units.h"

#include "memwall/Report/RooflineReport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace memwall;

namespace {
constexpr size_t kOpWidth = 16;
constexpr size_t kLocWidth = 28;
constexpr size_t kNumSlowest = 10;

/// `text` cut or padded to exactly `width` columns, marking a cut with
/// "...". Locations keep their tail (the line:col or the innermost name tells
/// them apart); op names keep their head.
std::string fitColumn(llvm::StringRef text, size_t width, bool keepTail) {
  std::string fitted = text.str();
  if (text.size() > width)
    fitted = keepTail ? ("..." + text.take_back(width - 3)).str()
                      : (text.take_front(width - 3) + "...").str();
  fitted.resize(width, ' ');
  return fitted;
}

void printHeading(llvm::raw_ostream &os) {
  os << llvm::formatv("{0,5} {1} {2} {3,14} {4,12} {5,10} {6,-8} {7,12} "
                      "{8,7}\n",
                      "id", fitColumn("op", kOpWidth, /*keepTail=*/false),
                      fitColumn("loc", kLocWidth, /*keepTail=*/false), "flops",
                      "bytes", "FLOP/B", "bound", "time", "share");
}

void printRow(llvm::raw_ostream &os, const OpRecord &op, double totalSeconds) {
  llvm::StringRef name = op.op;
  name.consume_front("memwall.");
  double share =
      totalSeconds > 0 ? 100 * op.estimate.timeSeconds / totalSeconds : 0;
  os << llvm::formatv(
      "{0,5} {1} {2} {3,14} {4,12} {5,10:f1} {6,-8} {7,12} {8,6:f1}%\n", op.id,
      fitColumn(name, kOpWidth, /*keepTail=*/false),
      fitColumn(op.loc, kLocWidth, /*keepTail=*/true),
      formatSI(op.flops, "FLOP"), formatSI(op.bytesRead + op.bytesWritten, "B"),
      op.estimate.intensity, op.estimate.memoryBound ? "memory" : "compute",
      formatSI(op.estimate.timeSeconds, "s"), share);
}

void printHeader(llvm::raw_ostream &os, const RooflineReport &report) {
  const GPUTarget &target = report.target;
  os << "memwall roofline report\n";
  os << "model:  " << (report.modelName.empty() ? "?" : report.modelName)
     << ", " << report.params << " parameters ("
     << formatSI(report.paramBytes, "B") << ")";
  // Frozen weights (a LoRA base) leave fewer to train.
  if (report.trainableParams != report.params)
    os << ", " << report.trainableParams << " trainable ("
       << llvm::formatv("{0:f4}",
                        100.0 * static_cast<double>(report.trainableParams) /
                            static_cast<double>(report.params))
       << "%)";
  os << "\n";
  // A mixture of experts holds every expert and runs a token through k.
  if (const std::optional<MixtureSummary> &moe = report.mixture)
    os << "experts: " << moe->activeParams << " parameters active per token ("
       << llvm::formatv("{0:f1}", 100.0 *
                                      static_cast<double>(moe->activeParams) /
                                      static_cast<double>(report.params))
       << "%); expert weights " << formatSI(moe->expertBytes, "B")
       << ", read per step " << formatSI(moe->expectedExpertBytesRead, "B")
       << " (uniform routing), at worst "
       << formatSI(moe->worstExpertBytesRead, "B") << "\n";
  os << "target: " << target.name << " (" << target.description << "), "
     << formatSI(target.memoryBandwidth, "B/s") << ", "
     << formatSI(static_cast<double>(target.memoryCapacityBytes), "B")
     << ", launch " << formatSI(target.launchSeconds(), "s") << " ("
     << stringifyLaunchMode(target.launchMode) << ")\n";
  // The time model divides by these, not by the datasheet peaks.
  os << "achieved: " << formatSI(target.achievable.memoryBandwidth, "B/s")
     << " DRAM, GEMMs "
     << llvm::formatv("{0:f0}/{1:f0}/{2:f0}% (large/small/skinny), attention "
                      "{3:f0}% of peak",
                      100 * target.achievable.gemmEfficiency[0],
                      100 * target.achievable.gemmEfficiency[1],
                      100 * target.achievable.gemmEfficiency[2],
                      100 * target.achievable.attentionEfficiency);
  if (!target.calibration.empty())
    os << "; calibrated: " << target.calibration;
  os << "\n";
  // One roof per line; the ridge is the intensity (FLOP/B) at which an op on
  // that roof stops being memory-bound.
  llvm::StringRef label = "peaks:  ";
  for (unsigned index = 0; index < kNumMathPrecisions; ++index) {
    auto precision = static_cast<MathPrecision>(index);
    if (!target.supports(precision))
      continue;
    os << label << llvm::formatv("{0,-4} ", stringifyMathPrecision(precision))
       << formatSI(target.peakFlops[index], "FLOP/s") << " (ridge "
       << llvm::format("%.1f", target.ridgeFor(precision)) << ")\n";
    label = "        ";
  }
  os << "\n";
}
} // namespace

void memwall::printRooflineReportText(const RooflineReport &report,
                                      llvm::raw_ostream &os) {
  RooflineTotals totals = report.computeTotals();
  printHeader(os, report);

  printHeading(os);
  for (const OpRecord &op : report.ops)
    printRow(os, op, totals.timeSeconds);

  os << "\ntotals: " << totals.numOps << " ops, "
     << formatSI(totals.flops, "FLOP") << ", " << formatSI(totals.bytes, "B")
     << " moved, " << formatSI(totals.timeSeconds, "s") << " predicted\n";
  os << "memory-bound: " << totals.numMemoryBoundOps << " of " << totals.numOps
     << " ops, " << llvm::format("%.1f", 100 * totals.memoryBoundTimeFraction)
     << "% of predicted time\n";
  os << "time by kernel kind:";
  for (const TimeBreakdownEntry &entry : report.computeTimeBreakdown())
    os << llvm::formatv("  {0} {1} ({2:f1}%)", entry.category,
                        formatSI(entry.timeSeconds, "s"), 100 * entry.fraction);
  os << "\n";
  if (report.measured) {
    const MeasuredRun &run = *report.measured;
    os << "\nmeasured on " << run.device << ": "
       << formatSI(run.measuredSeconds, "s") << " (" << run.kernels.size()
       << " kernels); the " << run.kernels.size() - run.unmatched
       << " this report predicts: " << formatSI(run.predictedSeconds, "s")
       << " predicted, " << formatSI(run.matchedMeasuredSeconds, "s")
       << " measured\n";
    os << llvm::formatv("  {0,-28} {1,12} {2,12} {3,10}\n", "kernel",
                        "predicted", "measured", "meas/pred");
    for (const MeasuredKernel &kernel : run.kernels) {
      std::string ratio = "-";
      if (kernel.predictedSeconds && *kernel.predictedSeconds > 0)
        ratio = llvm::formatv("{0:f2}",
                              kernel.measuredSeconds / *kernel.predictedSeconds)
                    .str();
      os << llvm::formatv("  {0,-28} {1,12} {2,12} {3,10}\n", kernel.name,
                          kernel.predictedSeconds
                              ? formatSI(*kernel.predictedSeconds, "s")
                              : std::string("?"),
                          formatSI(kernel.measuredSeconds, "s"), ratio);
    }
  }

  if (report.fusion) {
    const FusionSummary &fusion = *report.fusion;
    os << "fusion: " << fusion.kernelsBefore << " kernels -> "
       << fusion.kernelsAfter << ", " << formatSI(fusion.bytesSaved, "B")
       << " less traffic, " << formatSI(fusion.timeBeforeSeconds, "s") << " -> "
       << formatSI(fusion.timeAfterSeconds, "s") << " predicted\n";
    for (const FusionGroupRecord &group : fusion.groups)
      if (!group.gemmChoice.empty())
        os << "  " << group.kind << " " << llvm::join(group.ops, "+") << ": "
           << group.gemmChoice << "\n";
    for (const FusionRefusal &refusal : fusion.refused)
      os << "  kept apart: " << llvm::join(refusal.producer, "+") << " -> "
         << llvm::join(refusal.consumer, "+") << ": " << refusal.reason << "\n";
    for (const FusionRefusal &kernel : fusion.dequantizeKernels)
      os << "  dequantize kernel: " << llvm::join(kernel.producer, "+")
         << " -> " << llvm::join(kernel.consumer, "+") << ": " << kernel.reason
         << "\n";
  }

  if (report.memory) {
    const MemorySummary &memory = *report.memory;
    os << "\nmemory (per device";
    if (memory.devices > 1 || memory.zeroStage > 0)
      os << ", " << memory.devices << " devices, ZeRO stage "
         << memory.zeroStage;
    if (memory.offload != "none")
      os << ", offload " << memory.offload;
    if (!memory.precision.empty())
      os << ", " << memory.precision;
    os << "): peak " << formatSI(memory.peakBytes, "B") << " at "
       << memory.peakAt << " (step " << memory.peakStep << " of "
       << memory.timeline.size() << ")\n";
    for (unsigned b = 0; b < kNumMemoryBuckets; ++b)
      os << llvm::formatv("  {0,-12} {1,12}\n",
                          stringifyMemoryBucket(static_cast<MemoryBucket>(b)),
                          formatSI(memory.atPeak[b], "B"));
    if (memory.training) {
      os << "  saved activations (forward values the backward reads): "
         << formatSI(memory.savedActivationsBytes, "B") << "\n";
      // What a compiled step allocates (memwall-plan-arena): the peak
      // above, give or take 256-byte alignment, at fixed offsets.
      os << "  allocator: one arena of the peak at fixed offsets, no "
            "fragmentation (a caching allocator's 10-25%)\n";
    }
  }
  if (report.communication) {
    const CommunicationSummary &c = *report.communication;
    if (c.devices <= 1 && c.offload == "none") {
      os << "\ncommunication: none (1 device, no offload); step "
         << formatSI(c.stepSeconds, "s") << " predicted\n";
    } else {
      os << "\ncommunication (per device per step, " << c.devices
         << " devices, ZeRO stage " << c.zeroStage;
      if (c.link != "none")
        os << ", " << c.link << " " << formatSI(c.linkBandwidth, "B/s");
      if (c.offload != "none")
        os << ", offload " << c.offload << " over PCIe "
           << formatSI(c.pcieBandwidth, "B/s");
      os << "):\n  all-reduce " << formatSI(c.allReduceBytes, "B")
         << ", reduce-scatter " << formatSI(c.reduceScatterBytes, "B")
         << ", all-gather " << formatSI(c.allGatherBytes, "B") << ", offload "
         << formatSI(c.offloadBytes, "B") << "\n";
      os << "  collectives " << formatSI(c.collectiveSeconds, "s")
         << ", offload " << formatSI(c.offloadSeconds, "s") << "; compute "
         << formatSI(c.computeSeconds, "s") << " + exposed "
         << formatSI(c.exposedSeconds, "s") << " = step "
         << formatSI(c.stepSeconds, "s") << " predicted\n";
      os << "  overlap: " << c.overlap << "\n";
    }
  }
  if (report.parallelism) {
    const ParallelismSummary &p = *report.parallelism;
    os << "\nparallelism (" << getParallelPlanName(p) << "): " << p.gpus
       << " GPUs = " << p.dataParallel << " data x " << p.tensorParallel
       << " tensor" << (p.sequenceParallel ? " (+ sequence)" : "") << " x "
       << p.pipelineParallel << " pipeline";
    if (p.expertParallel > 1)
      os << ", experts over " << p.expertParallel;
    os << "; " << p.microBatches << " micro-batch"
       << (p.microBatches == 1 ? "" : "es");
    if (p.pipelineParallel > 1)
      os << ", " << p.schedule
         << (p.schedule == "interleaved"
                 ? " (" + std::to_string(p.virtualStages) + " chunks)"
                 : "");
    os << "\n  per device"
       << (p.pipelineParallel > 1 ? " (" + p.worstStage + " stage)" : "")
       << ": peak " << formatSI(p.peakBytes, "B") << ", weights "
       << formatSI(p.weightBytes, "B") << ", gradients "
       << formatSI(p.gradientBytes, "B") << ", optimizer "
       << formatSI(p.optimizerBytes, "B") << ", saved activations "
       << formatSI(p.activationBytes, "B") << " ("
       << formatSI(p.layerActivationBytes, "B") << " a layer a micro-batch)\n";
    os << "  communication per device per step (not hidden): tensor-parallel "
       << formatSI(p.tensorParallelBytes, "B") << " "
       << formatSI(p.tensorParallelSeconds, "s");
    if (p.tensorParallel > 1)
      os << " on " << p.tensorParallelLink;
    os << ", pipeline " << formatSI(p.pipelineBytes, "B") << " "
       << formatSI(p.pipelineSeconds, "s") << ", experts "
       << formatSI(p.expertBytes, "B") << " " << formatSI(p.expertSeconds, "s")
       << ", data-parallel " << formatSI(p.dataParallelBytes, "B") << " "
       << formatSI(p.dataParallelSeconds, "s") << "\n";
    os << "  compute " << formatSI(p.computeSeconds, "s") << " + bubble "
       << formatSI(p.bubbleSeconds, "s")
       << llvm::formatv(" ({0:f1}%)", 100 * p.bubbleFraction)
       << " + communication = step " << formatSI(p.stepSeconds, "s")
       << " predicted\n";
  }
  if (report.budget) {
    const BudgetSummary &budget = *report.budget;
    os << "\nbudget " << formatSI(budget.budgetBytes, "B") << ": "
       << (budget.fits ? "fits" : "does NOT fit") << ", peak "
       << formatSI(budget.peakBytes, "B") << ", headroom "
       << formatSI(budget.headroomBytes, "B") << "\n";
    if (!budget.fixes.empty()) {
      os << "fixes, cheapest first:\n";
      for (const MemoryFix &fix : budget.fixes)
        os << llvm::formatv("  {0} {1,-16} peak {2,10}  time x{3:f2}  {4}\n",
                            fix.firstThatFits ? "=>"
                            : fix.fits        ? " +"
                                              : "  ",
                            fix.name, formatSI(fix.peakBytes, "B"),
                            fix.timeFactor, fix.description);
      os << "  (=> first that fits, + also fits)\n";
    }
  }

  if (report.remat) {
    const RematSummary &remat = *report.remat;
    os << "\nrecomputation (memwall-remat, solver " << remat.solver
       << "): budget " << formatSI(remat.budgetBytes, "B") << ", peak "
       << formatSI(remat.peakBeforeBytes, "B") << " -> "
       << formatSI(remat.peakAfterBytes, "B") << "\n";
    if (!remat.plan.empty() && remat.plan != remat.solver) {
      os << "  applied baseline " << remat.plan << ": it fits at less overhead";
      if (remat.solverOverheadSeconds)
        os << " than the solver's best plan ("
           << formatSI(*remat.solverOverheadSeconds, "s") << ")";
      else
        os << "; the solver found no plan within the budget";
      os << "\n";
    }
    os << "  " << remat.recomputed << " values recomputed ("
       << formatSI(remat.recomputedBytes, "B") << ", "
       << formatSI(remat.recomputeFlops, "FLOP") << "), " << remat.saved
       << " kept (" << formatSI(remat.savedBytes, "B") << "); overhead "
       << formatSI(remat.overheadSeconds, "s")
       << llvm::formatv(" ({0:f1}% of the step)", 100 * remat.overheadFraction);
    if (remat.bound)
      os << llvm::formatv(", MILP gap {0:f2}%", 100 * remat.gap);
    if (remat.segmentLayers > 0)
      os << "\n  two levels: one layer input kept per " << remat.segmentLayers
         << " layers; each segment's backward first recomputes the others ("
         << remat.segmentRecomputed << " values)";
    os << "\n  baselines:\n";
    for (const RematBaseline &b : remat.baselines)
      os << llvm::formatv("    {0,-18} peak {1,10}  overhead {2,6:f1}%  {3}\n",
                          b.name, formatSI(b.peakBytes, "B"),
                          100 * b.overheadFraction,
                          b.fits ? "fits" : "does not fit");
  }

  if (report.inference) {
    const InferenceSummary &inference = *report.inference;
    bool memoryBound = inference.weightGemmIntensity < inference.ridge;
    os << "\ninference step: " << inference.tokensPerStep
       << " token(s) per step, "
       << formatSI(inference.tokensPerSecond, "token/s") << " predicted\n";
    os << "  streams " << formatSI(inference.weightBytes, "B") << " of weights";
    if (inference.kvCacheBytes > 0)
      os << " and " << formatSI(inference.kvCacheBytes, "B") << " of KV cache";
    os << " per step: at "
       << formatSI(report.target.achievable.memoryBandwidth, "B/s")
       << " (achievable) no schedule beats "
       << formatSI(inference.bandwidthFloorSeconds, "s") << " (predicted "
       << formatSI(inference.stepSeconds, "s") << ")\n";
    os << llvm::formatv("  weight GEMMs: {0:f1} FLOP/B against a {1} ridge of "
                        "{2:f1} FLOP/B -> {3}; {4:f1}% of the step time\n",
                        inference.weightGemmIntensity, inference.mathPrecision,
                        inference.ridge,
                        memoryBound ? "memory-bound" : "compute-bound",
                        100 * inference.weightGemmTimeFraction);
    if (memoryBound)
      os << "  each weight byte is read once per step for "
         << inference.tokensPerStep << " token row(s); about "
         << inference.tokensAtRidge
         << " tokens per step (batch) would reach the ridge\n";
  }

  if (report.capacity) {
    const CapacitySummary &c = *report.capacity;
    os << "\nmax batch (peak within the " << c.limit << " of "
       << formatSI(c.limitBytes, "B") << "): ";
    if (c.maxBatch == 0)
      os << "none, not even batch 1\n";
    else
      os << "batch " << c.maxBatch << " (peak "
         << formatSI(c.peakAtMaxBatch, "B") << ", "
         << formatSI(c.tokensPerSecondAtMaxBatch, "token/s")
         << " predicted); this step has batch " << c.batch << "\n";
    if (c.context > 0) {
      os << "  at batch " << c.batch << ": ";
      if (c.maxContext == 0)
        os << "no context fits\n";
      else
        os << "context up to " << c.maxContext << " tokens (peak "
           << formatSI(c.peakAtMaxContext, "B") << "); this step reads "
           << c.context << "\n";
    }
  }

  if (report.ops.empty())
    return;
  std::vector<const OpRecord *> slowest;
  for (const OpRecord &op : report.ops)
    slowest.push_back(&op);
  // Stable, so equally slow ops (repeated layers) stay in program order.
  llvm::stable_sort(slowest, [](const OpRecord *a, const OpRecord *b) {
    return a->estimate.timeSeconds > b->estimate.timeSeconds;
  });
  slowest.resize(std::min(slowest.size(), kNumSlowest));
  os << "\nslowest ops:\n";
  printHeading(os);
  for (const OpRecord *op : slowest)
    printRow(os, *op, totals.timeSeconds);
}
