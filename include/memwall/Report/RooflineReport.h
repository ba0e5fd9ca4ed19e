//===- RooflineReport.h - Per-op roofline report ----------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The data behind `memwall-opt --report=FILE` and its three renderings: JSON
// (schema in docs/report-schema.md), a text table, and an SVG log-log
// roofline. The report is plain data (no MLIR types) so it can be built by the
// compiler and also read back by tools such as the runtime. Its sections are
// the results of memwall's analyses (memwall/Analysis/*Results.h): the report
// depends on the analyses, never the reverse.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_REPORT_ROOFLINEREPORT_H
#define MEMWALL_REPORT_ROOFLINEREPORT_H

#include "memwall/Analysis/CostResults.h"
#include "memwall/Analysis/MemoryResults.h"
#include "memwall/Analysis/RematResults.h"
#include "memwall/Hardware/GPUTarget.h"
#include "memwall/Hardware/Roofline.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

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

struct RooflineReport {
  GPUTarget target;
  /// Name of the model (module symbol name or input file name).
  std::string modelName;
  /// Number of parameters (elements of weight-tagged function arguments) and
  /// their bytes at their stored dtypes.
  int64_t params = 0;
  int64_t paramBytes = 0;
  /// Parameters training updates (all but frozen weights, e.g. a LoRA base).
  int64_t trainableParams = 0;
  std::optional<MixtureSummary> mixture;
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
  /// Present when the step is split by tensor, sequence, pipeline or
  /// expert parallelism (or micro-batched); then `memory` is one device's.
  std::optional<ParallelismSummary> parallelism;
  std::optional<MeasuredRun> measured;

  RooflineTotals computeTotals() const;
  /// Predicted time per kernel category, largest first, plus exposed
  /// communication when the report has it.
  std::vector<TimeBreakdownEntry> computeTimeBreakdown() const;
};

/// The report of the kernels `cost` describes on `target`; the memory,
/// budget and other sections are filled from their own analyses.
RooflineReport buildRooflineReport(const GPUTarget &target,
                                   const ModuleCost &cost);

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
