//===- ReportSink.h - where passes hand what they make for the user -*- C++ -*-//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall's passes never open files or print: what they produce for the user
// (the roofline report, the memory timeline, the remat Pareto plot, the
// progress of a long solve) goes to a ReportSink, the one place that decides
// where it ends up. The file sink writes each artifact to the path the pass's
// option names, atomically (writeOutputFile), and progress lines to stderr;
// a driver or a test may install another (e.g. to keep a report in memory).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_REPORT_REPORTSINK_H
#define MEMWALL_REPORT_REPORTSINK_H

#include "memwall/Report/RooflineReport.h"

namespace memwall {

class ReportSink {
public:
  virtual ~ReportSink();

  /// `report` for `path`, the report option as the user gave it (".json",
  /// ".txt", ".svg", or "-" for text on stdout).
  virtual llvm::Error emitRooflineReport(const RooflineReport &report,
                                         llvm::StringRef path) = 0;
  /// The memory timeline of `report` (which has a memory section) for
  /// `path`, an .svg file.
  virtual llvm::Error emitMemoryTimeline(const RooflineReport &report,
                                         llvm::StringRef path) = 0;
  /// The remat overhead-versus-budget curve for `path`, an .svg file.
  virtual llvm::Error emitRematPareto(const RematParetoCurve &curve,
                                      llvm::StringRef path) = 0;
  /// One line of progress of a long computation (no newline); may be called
  /// from a thread other than the pass's.
  virtual void emitProgress(llvm::StringRef line) = 0;
};

/// Writes every artifact to its path (writeRooflineReport,
/// writeMemoryTimeline, writeRematParetoSVG) and progress lines to stderr.
class FileReportSink : public ReportSink {
public:
  llvm::Error emitRooflineReport(const RooflineReport &report,
                                 llvm::StringRef path) override;
  llvm::Error emitMemoryTimeline(const RooflineReport &report,
                                 llvm::StringRef path) override;
  llvm::Error emitRematPareto(const RematParetoCurve &curve,
                              llvm::StringRef path) override;
  void emitProgress(llvm::StringRef line) override;
};

/// The sink of passes created without one (textual pipelines, the plugin,
/// the C API): a FileReportSink. It holds no state.
ReportSink &getFileReportSink();

} // namespace memwall

#endif // MEMWALL_REPORT_REPORTSINK_H
