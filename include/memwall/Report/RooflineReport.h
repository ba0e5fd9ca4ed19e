//===- RooflineReport.h - Per-op roofline report ----------------*- C++ -*-===//
//
// The data behind `memwall-opt --report=FILE` and its three renderings: JSON
// (schema in docs/report-schema.md), a text table, and an SVG log-log
// roofline. The report is plain data (no MLIR types) so it can be built by the
// compiler and also read back by tools such as the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_REPORT_ROOFLINEREPORT_H
#define MEMWALL_REPORT_ROOFLINEREPORT_H

#include "memwall/Hardware/GPUTarget.h"
#include "memwall/Hardware/Roofline.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
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

/// Predicted time of one kind of kernel over the whole model (LLM-Viewer's
/// per-layer-type view); "communication" is the exposed collective and
/// offload time of a sharded training step.
struct TimeBreakdownEntry {
  std::string category;
  unsigned kernels = 0;
  int64_t flops = 0;
  int64_t bytes = 0;
  double timeSeconds = 0;
  double fraction = 0; // of the step's predicted time
};

/// One kernel of a `memwall-run --report` beside what this report predicts
/// for it (matched by the locations of the ops it runs).
struct MeasuredKernel {
  std::string name; // the bundle step
  std::string ops;  // its ops' locations joined by "+"
  /// This report's prediction, when an op of this report runs those ops.
  std::optional<double> predictedSeconds;
  double bundlePredictedSeconds = 0; // what memwall-compile predicted
  double measuredSeconds = 0;
};

/// A memwall-run report read back (--measured=RUN.json).
struct MeasuredRun {
  std::string device;
  std::vector<MeasuredKernel> kernels;
  double measuredSeconds = 0; // the whole bundle
  double predictedSeconds = 0; // of the matched kernels, this report
  double matchedMeasuredSeconds = 0;
  unsigned unmatched = 0;
};

struct RooflineTotals {
  int64_t flops = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  int64_t bytes = 0; // read + written
  double timeSeconds = 0;
  /// Sum of timeSeconds over memory-bound ops.
  double memoryBoundSeconds = 0;
  /// memoryBoundSeconds / timeSeconds (0 for an empty model).
  double memoryBoundTimeFraction = 0;
  unsigned numOps = 0;
  unsigned numMemoryBoundOps = 0;
};

/// One fused kernel: what it replaced and what it saves.
struct FusionGroupRecord {
  /// The fusion's id in RooflineReport::ops.
  unsigned id = 0;
  /// "elementwise", "reduction" or "matmul_epilogue".
  std::string kind;
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

/// Present when the module was fused (it holds memwall.fusion ops or was
/// marked by memwall-fuse).
struct FusionSummary {
  std::vector<FusionGroupRecord> groups;
  /// Kernels of the whole model before and after fusion.
  unsigned kernelsBefore = 0;
  unsigned kernelsAfter = 0;
  int64_t bytesSaved = 0;
  /// Predicted time of the whole model before and after fusion.
  double timeBeforeSeconds = 0;
  double timeAfterSeconds = 0;
};

/// Where the bytes live on a device during a step (docs/memory.md).
enum class MemoryBucket : unsigned {
  Weights = 0,
  Gradients,
  Optimizer,
  Activations,
  KVCache,
  Workspace
};
constexpr unsigned kNumMemoryBuckets = 6;
using BucketBytes = std::array<int64_t, kNumMemoryBuckets>;
/// "weights", "gradients", "optimizer", "activations", "kv_cache",
/// "workspace": the JSON key stems.
llvm::StringRef stringifyMemoryBucket(MemoryBucket bucket);

/// Bytes live on one device while one top-level op runs.
struct MemoryStep {
  std::string op;  // "matmul", "fusion", ...
  std::string loc; // its location, as in `ops`
  std::string phase; // forward, backward or optimizer
  BucketBytes bytes{};
  int64_t total() const;
};

struct MemorySummary {
  /// Bucket sizes at the peak step; they sum to peakBytes.
  BucketBytes atPeak{};
  int64_t peakBytes = 0;
  std::string peakAt; // location of the op running at the peak
  int64_t peakStep = 0;
  /// Forward values (and inputs) still live when the backward starts: what
  /// recomputation can shrink. Zero for graphs without a backward.
  int64_t savedActivationsBytes = 0;
  bool training = false;
  /// The accounting applied (per device).
  int64_t devices = 1;
  int zeroStage = 0;
  std::string offload = "none";
  std::string precision; // module's memwall.precision, if any
  std::vector<MemoryStep> timeline;
};

/// One way to make a step fit, with what it is predicted to cost.
struct MemoryFix {
  std::string name;        // e.g. "micro-batch", "zero-3"
  std::string description; // one line, with the setting
  int64_t peakBytes = 0;   // predicted per-device peak with the fix
  double timeSeconds = 0;  // predicted step time with the fix
  double timeFactor = 1;   // timeSeconds / the step's predicted time
  bool fits = false;
  bool firstThatFits = false;
  /// Inference fixes: predicted tokens per second with the fix (0 for
  /// training fixes).
  double tokensPerSecond = 0;
};

struct BudgetSummary {
  int64_t budgetBytes = 0;
  bool fits = false;
  int64_t peakBytes = 0;
  int64_t headroomBytes = 0; // budget - peak (negative when it does not fit)
  /// Cheapest first, in the order practitioners reach for them; only when it
  /// does not fit.
  std::vector<MemoryFix> fixes;
};

/// Why an inference step (prefill or decode) is memory- or compute-bound:
/// the weight-streaming GEMMs read every weight once per step for
/// `tokensPerStep` rows, so their intensity grows with the tokens per step
/// until it reaches the ridge of their math precision.
struct InferenceSummary {
  int64_t tokensPerStep = 0;   // rows of the weight GEMMs (batch x new tokens)
  int64_t weightBytes = 0;     // weight bytes the GEMMs stream, per step
  int64_t kvCacheBytes = 0;    // KV-cache bytes attention reads, per step
  int64_t totalBytes = 0;      // all DRAM traffic of the step
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
  int64_t offloadBytes = 0;      // over PCIe, both directions
  double collectiveSeconds = 0;  // the collectives at linkBandwidth
  double offloadSeconds = 0;     // PCIe transfers and the CPU optimizer
  double computeSeconds = 0;     // the step's kernels on the GPU
  double exposedSeconds = 0;     // communication compute does not hide
  double stepSeconds = 0;        // computeSeconds + exposedSeconds
  std::string overlap;           // the overlap assumption, one line
};

/// The largest batch and context whose simulated peak fits a memory limit
/// (--max-batch).
struct CapacitySummary {
  int64_t limitBytes = 0;
  std::string limit; // "budget" or "capacity" (the target's memory)
  int64_t batch = 0;   // the step's batch
  int64_t context = 0; // KV length attention reads; 0 without a KV cache
  /// Largest batch that fits (0 when not even batch 1 does), its peak and
  /// predicted tokens per second.
  int64_t maxBatch = 0;
  int64_t peakAtMaxBatch = 0;
  double tokensPerSecondAtMaxBatch = 0;
  /// Largest context at `batch` that fits (0 without a KV cache or when
  /// none does) and its peak.
  int64_t maxContext = 0;
  int64_t peakAtMaxContext = 0;
};

/// One recomputation strategy measured on the same step and budget.
struct RematBaseline {
  std::string name; // none, checkpoint-layers, chen-sqrt, selective
  int64_t peakBytes = 0;  // simulated
  double overheadSeconds = 0;
  double overheadFraction = 0; // of the step's predicted time
  int64_t recomputed = 0;      // values recomputed
  bool fits = false;
};

/// What memwall-remat did (docs/remat.md).
struct RematSummary {
  int64_t budgetBytes = 0;
  int64_t peakBeforeBytes = 0; // simulated, nothing recomputed
  int64_t peakAfterBytes = 0;  // simulated, on the transformed step
  int64_t saved = 0;           // forward values the backward keeps
  int64_t savedBytes = 0;
  int64_t recomputed = 0; // forward values recomputed in the backward
  int64_t recomputedBytes = 0;
  double recomputeFlops = 0;
  double overheadSeconds = 0;  // predicted recompute time
  double overheadFraction = 0; // of the step's predicted time
  std::string solver;
  /// The plan applied: the solver's, or a baseline's name when a baseline
  /// fits at a lower overhead than every plan the solvers found.
  std::string plan;
  /// Overhead of the best plan the solvers found within the budget, if any.
  std::optional<double> solverOverheadSeconds;
  double gap = 0;             // MILP: (cost - bound) / cost
  std::optional<double> bound; // MILP lower bound on overheadSeconds
  std::vector<RematBaseline> baselines;
};

/// memwall-remat's predicted overhead across budgets (--remat-pareto).
struct RematParetoPoint {
  int64_t budgetBytes = 0;
  int64_t peakBytes = 0; // simulated peak of the plan chosen at this budget
  double overheadSeconds = 0;
  double overheadFraction = 0;
};
struct RematParetoCurve {
  std::string modelName;
  int64_t budgetBytes = 0; // the budget asked for, marked on the plot
  std::vector<RematParetoPoint> points;
  std::vector<RematBaseline> baselines;
};

struct RooflineReport {
  GPUTarget target;
  /// Name of the model (module symbol name or input file name).
  std::string modelName;
  /// Number of parameters (elements of weight-tagged function arguments) and
  /// their bytes at their stored dtypes.
  int64_t params = 0;
  int64_t paramBytes = 0;
  /// The kernels of the model in program order: ops inside a fusion appear
  /// only through their fusion.
  std::vector<OpRecord> ops;
  std::optional<FusionSummary> fusion;
  std::optional<MemorySummary> memory;
  std::optional<BudgetSummary> budget;
  std::optional<InferenceSummary> inference;
  std::optional<CapacitySummary> capacity;
  std::optional<RematSummary> remat;
  std::optional<CommunicationSummary> communication;
  std::optional<MeasuredRun> measured;

  RooflineTotals computeTotals() const;
  /// Predicted time per kernel category, largest first, plus exposed
  /// communication when the report has it.
  std::vector<TimeBreakdownEntry> computeTimeBreakdown() const;
};

/// Reads a `memwall-run --report` JSON file and matches its kernels to
/// `report`'s ops. Errors name the file and the field.
llvm::Expected<MeasuredRun> readMeasuredRun(llvm::StringRef path,
                                            const RooflineReport &report);

enum class ReportFormat { JSON, Text, SVG };

/// Format chosen by a report path: ".json", ".txt" or ".svg"; "-" means text
/// on stdout. Anything else is std::nullopt.
std::optional<ReportFormat> getReportFormatForPath(llvm::StringRef path);

/// Fails unless getReportFormatForPath knows `path`'s format.
llvm::Error checkReportPath(llvm::StringRef path);

/// Fails unless `path` is an .svg file; the message starts with `what`.
llvm::Error checkSVGPath(llvm::StringRef path, llvm::StringRef what);

void printRooflineReportJSON(const RooflineReport &report,
                             llvm::raw_ostream &os);
void printRooflineReportText(const RooflineReport &report,
                             llvm::raw_ostream &os);
void printRooflineReportSVG(const RooflineReport &report,
                            llvm::raw_ostream &os);
/// The memory timeline: live bytes per step stacked by bucket, with the
/// budget as a line. Needs `report.memory`.
void printMemoryTimelineSVG(const RooflineReport &report,
                            llvm::raw_ostream &os);

/// Writes `report` to `path` in the format its extension selects, through
/// writeOutputFile (memwall/Support/OutputFile.h): a failure never leaves a
/// half-written report or replaces an old one. Errors name the path.
llvm::Error writeRooflineReport(const RooflineReport &report,
                                llvm::StringRef path);
/// Draws the overhead-versus-budget curve, with the baselines as points.
void printRematParetoSVG(const RematParetoCurve &curve, llvm::raw_ostream &os);
/// Writes printRematParetoSVG to `path` (an .svg file), atomically.
llvm::Error writeRematParetoSVG(const RematParetoCurve &curve,
                                llvm::StringRef path);
/// Writes printMemoryTimelineSVG to `path` (an .svg file) the same way.
llvm::Error writeMemoryTimeline(const RooflineReport &report,
                                llvm::StringRef path);

} // namespace memwall

#endif // MEMWALL_REPORT_ROOFLINEREPORT_H
