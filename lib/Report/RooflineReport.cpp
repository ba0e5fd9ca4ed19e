//===- RooflineReport.cpp - totals, format selection and file output ------===//

#include "memwall/Report/RooflineReport.h"

#include "llvm/Support/Path.h"

using namespace memwall;

RooflineTotals RooflineReport::computeTotals() const {
  RooflineTotals totals;
  for (const OpRecord &op : ops) {
    totals.flops += op.flops;
    totals.bytesRead += op.bytesRead;
    totals.bytesWritten += op.bytesWritten;
    totals.timeSeconds += op.estimate.timeSeconds;
    ++totals.numOps;
    if (op.estimate.memoryBound) {
      totals.memoryBoundSeconds += op.estimate.timeSeconds;
      ++totals.numMemoryBoundOps;
    }
  }
  if (totals.timeSeconds > 0)
    totals.memoryBoundTimeFraction =
        totals.memoryBoundSeconds / totals.timeSeconds;
  return totals;
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

llvm::Error memwall::writeRooflineReport(const RooflineReport &report,
                                         llvm::StringRef path) {
  std::optional<ReportFormat> format = getReportFormatForPath(path);
  if (!format)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "cannot choose a report format for '" + path +
            "': use a .json, .txt or .svg file, or - for text on stdout");
  // writeToOutput writes a temporary next to `path` and renames it, so a
  // failure leaves no partial report behind.
  llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    switch (*format) {
    case ReportFormat::JSON:
      printRooflineReportJSON(report, os);
      break;
    case ReportFormat::Text:
      printRooflineReportText(report, os);
      break;
    case ReportFormat::SVG:
      printRooflineReportSVG(report, os);
      break;
    }
    return llvm::Error::success();
  });
  if (error)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot write report '" + path + "': " +
                                       llvm::toString(std::move(error)));
  return llvm::Error::success();
}
