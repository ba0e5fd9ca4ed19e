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

/// The reason of a writeToOutput failure, without the path the caller's
/// message already names.
static std::string describeWriteError(llvm::Error error) {
  std::string message;
  llvm::handleAllErrors(
      std::move(error),
      [&](const llvm::FileError &fileError) {
        message = fileError.messageWithoutFileInfo();
      },
      [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
  return message;
}

llvm::Error memwall::writeRooflineReport(const RooflineReport &report,
                                         llvm::StringRef path) {
  std::optional<ReportFormat> format = getReportFormatForPath(path);
  if (!format)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "cannot choose a report format for '" + path +
            "': use a .json, .txt or .svg file, or - for text on stdout");
  // writeToOutput writes a temporary next to `path` and renames it into place
  // only when the callback succeeds. It does not check the stream itself, so
  // the callback does: a full disk must discard the temporary, not rename a
  // truncated report into place.
  llvm::Error error =
      llvm::writeToOutput(path, [&](llvm::raw_ostream &os) -> llvm::Error {
        printRooflineReport(report, *format, os);
        // Only file streams (the temporary, or stdout for "-") record errors.
        if (os.get_kind() != llvm::raw_ostream::OStreamKind::OK_FDStream)
          return llvm::Error::success();
        auto *fileStream = static_cast<llvm::raw_fd_ostream *>(&os);
        fileStream->flush();
        std::error_code streamError = fileStream->error();
        // Reported here, so the stream must not abort the process about it.
        fileStream->clear_error();
        return llvm::errorCodeToError(streamError);
      });
  if (error)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot write report '" + path + "': " +
                                       describeWriteError(std::move(error)));
  return llvm::Error::success();
}
