//===- RooflineReport.cpp - totals, format selection and file output ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Report/RooflineReport.h"

#include "memwall/Support/CheckedInt.h"
#include "memwall/Support/OutputFile.h"

#include "llvm/ADT/STLExtras.h"

#include "llvm/Support/Path.h"

using namespace memwall;

// Sums of counts are checked: a total that does not fit int64 reads
// kUncountable (the module check, verifyCountableTotals, refuses such
// modules before a report is built).

RooflineTotals RooflineReport::computeTotals() const {
  RooflineTotals totals;
  CheckedInt flops = 0, bytesRead = 0, bytesWritten = 0;
  for (const OpRecord &op : ops) {
    flops += CheckedInt::fromSaturated(op.flops);
    bytesRead += CheckedInt::fromSaturated(op.bytesRead);
    bytesWritten += CheckedInt::fromSaturated(op.bytesWritten);
    totals.timeSeconds += op.estimate.timeSeconds;
    ++totals.numOps;
    if (op.estimate.memoryBound) {
      totals.memoryBoundSeconds += op.estimate.timeSeconds;
      ++totals.numMemoryBoundOps;
    }
  }
  totals.flops = flops.saturated();
  totals.bytesRead = bytesRead.saturated();
  totals.bytesWritten = bytesWritten.saturated();
  totals.bytes = (bytesRead + bytesWritten).saturated();
  if (totals.timeSeconds > 0)
    totals.memoryBoundTimeFraction =
        totals.memoryBoundSeconds / totals.timeSeconds;
  return totals;
}

std::vector<TimeBreakdownEntry> RooflineReport::computeTimeBreakdown() const {
  std::vector<TimeBreakdownEntry> entries;
  auto entryFor = [&](llvm::StringRef category) -> TimeBreakdownEntry & {
    for (TimeBreakdownEntry &entry : entries)
      if (entry.category == category)
        return entry;
    entries.push_back(TimeBreakdownEntry{category.str()});
    return entries.back();
  };
  double total = 0;
  for (const OpRecord &op : ops) {
    TimeBreakdownEntry &entry =
        entryFor(op.category.empty() ? "other" : op.category);
    entry.kernels += op.estimate.launchSeconds > 0 ? 1 : 0;
    entry.flops = (CheckedInt::fromSaturated(entry.flops) +
                   CheckedInt::fromSaturated(op.flops))
                      .saturated();
    entry.bytes = (CheckedInt::fromSaturated(entry.bytes) +
                   CheckedInt::fromSaturated(op.bytesRead) +
                   CheckedInt::fromSaturated(op.bytesWritten))
                      .saturated();
    entry.timeSeconds += op.estimate.timeSeconds;
    total += op.estimate.timeSeconds;
  }
  if (communication && communication->exposedSeconds > 0) {
    entryFor("communication").timeSeconds += communication->exposedSeconds;
    total += communication->exposedSeconds;
  }
  for (TimeBreakdownEntry &entry : entries)
    entry.fraction = total > 0 ? entry.timeSeconds / total : 0;
  llvm::stable_sort(entries, [](const TimeBreakdownEntry &a,
                                const TimeBreakdownEntry &b) {
    return a.timeSeconds > b.timeSeconds;
  });
  return entries;
}

std::optional<ReportFormat>
memwall::getReportFormatForPath(llvm::StringRef path) {
  if (path == "-")
    return ReportFormat::Text;
  llvm::StringRef extension = llvm::sys::path::extension(path);
  if (extension.equals_insensitive(".json"))
    return ReportFormat::JSON;
  if (extension.equals_insensitive(".txt"))
    return ReportFormat::Text;
  if (extension.equals_insensitive(".svg"))
    return ReportFormat::SVG;
  return std::nullopt;
}

static void printRooflineReport(const RooflineReport &report,
                                ReportFormat format, llvm::raw_ostream &os) {
  switch (format) {
  case ReportFormat::JSON:
    return printRooflineReportJSON(report, os);
  case ReportFormat::Text:
    return printRooflineReportText(report, os);
  case ReportFormat::SVG:
    return printRooflineReportSVG(report, os);
  }
}

RooflineReport memwall::buildRooflineReport(const GPUTarget &target,
                                            const ModuleCost &cost) {
  RooflineReport report;
  report.target = target;
  report.modelName = cost.modelName;
  report.params = cost.params;
  report.paramBytes = cost.paramBytes;
  report.trainableParams = cost.trainableParams;
  report.mixture = cost.mixture;
  report.ops = cost.ops;
  report.fusion = cost.fusion;
  return report;
}

llvm::Error memwall::checkReportPath(llvm::StringRef path) {
  if (getReportFormatForPath(path))
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "cannot choose a report format for '" + path +
          "': use a .json, .txt or .svg file, or - for text on stdout");
}

llvm::Error memwall::checkSVGPath(llvm::StringRef path, llvm::StringRef what) {
  if (path.ends_with(".svg"))
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " '" + path + "' must be an .svg file");
}

llvm::Error memwall::writeRooflineReport(const RooflineReport &report,
                                         llvm::StringRef path) {
  if (llvm::Error error = checkReportPath(path))
    return error;
  std::optional<ReportFormat> format = getReportFormatForPath(path);
  return writeOutputFile(path, "report", [&](llvm::raw_ostream &os) {
    printRooflineReport(report, *format, os);
  });
}

llvm::Error memwall::writeMemoryTimeline(const RooflineReport &report,
                                         llvm::StringRef path) {
  if (llvm::Error error = checkSVGPath(path, "the memory timeline"))
    return error;
  if (!report.memory)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no memory analysis to draw in '" + path +
                                       "'");
  return writeOutputFile(path, "memory timeline", [&](llvm::raw_ostream &os) {
    printMemoryTimelineSVG(report, os);
  });
}

llvm::Error memwall::writeRematParetoSVG(const RematParetoCurve &curve,
                                         llvm::StringRef path) {
  if (llvm::Error error = checkSVGPath(path, "the remat Pareto plot"))
    return error;
  return writeOutputFile(path, "remat Pareto plot", [&](llvm::raw_ostream &os) {
    printRematParetoSVG(curve, os);
  });
}
