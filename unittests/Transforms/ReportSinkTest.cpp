//===- ReportSinkTest.cpp - passes hand their output to a ReportSink ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The report pass writes no file itself: given a sink, the report and the
// memory timeline go to the sink under the paths the options name.
//
//===----------------------------------------------------------------------===//

#include "memwall/Registration.h"
#include "memwall/Report/ReportSink.h"
#include "memwall/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace memwall;

namespace {

/// Keeps what the passes hand it, in memory.
struct RecordingSink : public ReportSink {
  llvm::Error emitRooflineReport(const RooflineReport &report,
                                 llvm::StringRef path) override {
    reports.emplace_back(path.str(), report);
    return llvm::Error::success();
  }
  llvm::Error emitMemoryTimeline(const RooflineReport &report,
                                 llvm::StringRef path) override {
    timelines.push_back(path.str());
    return llvm::Error::success();
  }
  llvm::Error emitRematPareto(const RematParetoCurve &,
                              llvm::StringRef path) override {
    paretos.push_back(path.str());
    return llvm::Error::success();
  }
  void emitProgress(llvm::StringRef line) override {
    progress.push_back(line.str());
  }

  std::vector<std::pair<std::string, RooflineReport>> reports;
  std::vector<std::string> timelines, paretos, progress;
};

TEST(ReportSinkTest, ReportPassHandsReportAndTimelineToItsSink) {
  DialectRegistry registry;
  registerMemWallDialects(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      R"mlir(
module @m {
  func.func @f(%x: tensor<64x1024xbf16>) -> tensor<64x1024xbf16> {
    %0 = memwall.gelu %x : tensor<64x1024xbf16>
    return %0 : tensor<64x1024xbf16>
  }
}
)mlir",
      &context);
  ASSERT_TRUE(module);

  RecordingSink sink;
  RooflineReportOptions options;
  // Paths no test may create: the sink decides, and this one writes nothing.
  options.output = "/nonexistent-memwall-dir/report.json";
  options.timeline = "/nonexistent-memwall-dir/timeline.svg";
  PassManager pm(&context);
  pm.addPass(createRooflineReport(options, sink));
  ASSERT_TRUE(succeeded(pm.run(*module)));

  ASSERT_EQ(sink.reports.size(), 1u);
  EXPECT_EQ(sink.reports[0].first, options.output);
  const RooflineReport &report = sink.reports[0].second;
  EXPECT_EQ(report.modelName, "m");
  ASSERT_EQ(report.ops.size(), 1u);
  EXPECT_EQ(report.ops[0].op, "memwall.gelu");
  ASSERT_TRUE(report.memory.has_value());
  EXPECT_EQ(sink.timelines,
            std::vector<std::string>{options.timeline});
  EXPECT_FALSE(llvm::sys::fs::exists("/nonexistent-memwall-dir"));
}

} // namespace
