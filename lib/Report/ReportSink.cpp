//===- ReportSink.cpp - where passes hand what they make for the user -----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Report/ReportSink.h"

#include "llvm/Support/raw_ostream.h"

using namespace memwall;

ReportSink::~ReportSink() = default;

llvm::Error FileReportSink::emitRooflineReport(const RooflineReport &report,
                                               llvm::StringRef path) {
  return writeRooflineReport(report, path);
}

llvm::Error FileReportSink::emitMemoryTimeline(const RooflineReport &report,
                                               llvm::StringRef path) {
  return writeMemoryTimeline(report, path);
}

llvm::Error FileReportSink::emitRematPareto(const RematParetoCurve &curve,
                                            llvm::StringRef path) {
  return writeRematParetoSVG(curve, path);
}

void FileReportSink::emitProgress(llvm::StringRef line) {
  llvm::errs() << line << "\n";
}

ReportSink &memwall::getFileReportSink() {
  static FileReportSink sink;
  return sink;
}
