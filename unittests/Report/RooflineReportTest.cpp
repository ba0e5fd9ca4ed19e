//===- RooflineReportTest.cpp - totals and the three renderings -----------===//

#include "memwall/Report/RooflineReport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

using namespace memwall;

namespace {
RooflineReport sampleReport() {
  RooflineReport report;
  report.target.name = "round";
  report.target.description = "made up";
  report.target.peakFlops = {10e12, 0, 100e12, 0, 0, 0};
  report.target.memoryBandwidth = 1e12;
  report.target.memoryCapacityBytes = 1 << 30;
  report.target.smCount = 1;
  report.target.kernelLaunchSeconds = 1e-6;
  report.modelName = "m<&>";
  report.params = 1000;
  report.paramBytes = 2000;
  auto add = [&](const char *op, const char *loc, int64_t flops, int64_t read,
                 int64_t written, MathPrecision precision) {
    OpRecord record;
    record.id = report.ops.size();
    record.op = op;
    record.loc = loc;
    record.flops = flops;
    record.bytesRead = read;
    record.bytesWritten = written;
    record.precision = precision;
    record.estimate =
        estimateRoofline(flops, read + written, precision, report.target, true);
    report.ops.push_back(record);
  };
  // 2e9 FLOP at 100 TFLOP/s = 20 us vs 1e6 B at 1 TB/s = 1 us: compute, 21 us.
  add("memwall.matmul", "a.mlir:1:1", 2000000000, 600000, 400000,
      MathPrecision::BF16);
  // 1e6 FLOP at 10 TFLOP/s = 0.1 us vs 8e6 B = 8 us: memory, 9 us.
  add("memwall.gelu", "layers.0.<gelu>&\"", 1000000, 4000000, 4000000,
      MathPrecision::FP32);
  return report;
}
} // namespace

TEST(RooflineReportTest, TotalsAreSumsAndMemoryShareIsByTime) {
  RooflineTotals totals = sampleReport().computeTotals();
  EXPECT_EQ(totals.flops, 2001000000);
  EXPECT_EQ(totals.bytesRead, 4600000);
  EXPECT_EQ(totals.bytesWritten, 4400000);
  EXPECT_NEAR(totals.timeSeconds, 30e-6, 1e-15);
  EXPECT_NEAR(totals.memoryBoundTimeFraction, 9.0 / 30.0, 1e-12);
  EXPECT_EQ(totals.numMemoryBoundOps, 1u);
  EXPECT_EQ(RooflineReport().computeTotals().memoryBoundTimeFraction, 0);
}

TEST(RooflineReportTest, FormatFollowsTheExtension) {
  EXPECT_EQ(getReportFormatForPath("r.json"), ReportFormat::JSON);
  EXPECT_EQ(getReportFormatForPath("dir/r.TXT"), ReportFormat::Text);
  EXPECT_EQ(getReportFormatForPath("r.svg"), ReportFormat::SVG);
  EXPECT_EQ(getReportFormatForPath("-"), ReportFormat::Text);
  EXPECT_EQ(getReportFormatForPath("r.csv"), std::nullopt);
  EXPECT_EQ(getReportFormatForPath("report"), std::nullopt);
}

TEST(RooflineReportTest, JSONCarriesTheDocumentedNames) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printRooflineReportJSON(sampleReport(), os);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object &root = *parsed->getAsObject();
  const llvm::json::Object &target = *root.getObject("target");
  EXPECT_EQ(target.getString("name"), "round");
  EXPECT_EQ(target.getNumber("ridge_flops_per_byte"), 100.0);
  EXPECT_EQ(target.getNumber("hbm_bytes_per_s"), 1e12);
  EXPECT_EQ(target.getInteger("capacity_bytes"), 1 << 30);
  EXPECT_EQ(target.getObject("peak_flops")->getNumber("bf16"), 100e12);
  EXPECT_EQ(root.getObject("model")->getInteger("params"), 1000);
  EXPECT_EQ(root.getObject("model")->getInteger("param_bytes"), 2000);
  const llvm::json::Array &ops = *root.getArray("ops");
  ASSERT_EQ(ops.size(), 2u);
  const llvm::json::Object &gelu = *ops[1].getAsObject();
  EXPECT_EQ(gelu.getInteger("id"), 1);
  EXPECT_EQ(gelu.getString("op"), "memwall.gelu");
  EXPECT_EQ(gelu.getString("loc"), "layers.0.<gelu>&\"");
  EXPECT_EQ(gelu.getInteger("flops"), 1000000);
  EXPECT_EQ(gelu.getInteger("bytes_read"), 4000000);
  EXPECT_EQ(gelu.getInteger("bytes_written"), 4000000);
  EXPECT_EQ(gelu.getNumber("intensity"), 0.125);
  EXPECT_EQ(gelu.getString("bound"), "memory");
  EXPECT_NEAR(*gelu.getNumber("time_s"), 9e-6, 1e-15);
  EXPECT_EQ(ops[0].getAsObject()->getString("bound"), "compute");
  const llvm::json::Object &totals = *root.getObject("totals");
  EXPECT_EQ(totals.getInteger("flops"), 2001000000);
  EXPECT_EQ(totals.getInteger("bytes"), 9000000);
  EXPECT_NEAR(*totals.getNumber("time_s"), 30e-6, 1e-15);
  EXPECT_NEAR(*totals.getNumber("memory_bound_time_fraction"), 0.3, 1e-12);
}

TEST(RooflineReportTest, TextHasARowPerOpAndTheMemoryShare) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printRooflineReportText(sampleReport(), os);
  EXPECT_NE(text.find("matmul"), std::string::npos);
  EXPECT_NE(text.find("a.mlir:1:1"), std::string::npos);
  EXPECT_NE(text.find("2.00 GFLOP"), std::string::npos);
  EXPECT_NE(text.find("21.00 us"), std::string::npos);
  EXPECT_NE(text.find("memory-bound: 1 of 2 ops, 30.0% of predicted time"),
            std::string::npos)
      << text;
}

TEST(RooflineReportTest, SVGEscapesTextAndPlotsEveryOpWithFlops) {
  std::string svg;
  llvm::raw_string_ostream os(svg);
  printRooflineReportSVG(sampleReport(), os);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("m&lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(svg.find("layers.0.&lt;gelu&gt;&amp;&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("<gelu>"), std::string::npos);
  size_t points = 0;
  for (size_t at = svg.find("class=\"op\""); at != std::string::npos;
       at = svg.find("class=\"op\"", at + 1))
    ++points;
  EXPECT_EQ(points, 2u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST(RooflineReportTest, FailedWritesLeaveNoFile) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("report-test", dir));
  std::string missing = (dir + "/no-such-dir/r.json").str();
  llvm::Error error = writeRooflineReport(sampleReport(), missing);
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("cannot write report"),
            std::string::npos);
  std::string badExtension = (dir + "/r.csv").str();
  error = writeRooflineReport(sampleReport(), badExtension);
  ASSERT_TRUE(static_cast<bool>(error));
  llvm::consumeError(std::move(error));
  EXPECT_FALSE(llvm::sys::fs::exists(badExtension));

  std::string good = (dir + "/r.json").str();
  ASSERT_FALSE(static_cast<bool>(writeRooflineReport(sampleReport(), good)));
  auto buffer = llvm::MemoryBuffer::getFile(good);
  ASSERT_TRUE(static_cast<bool>(buffer));
  EXPECT_TRUE(static_cast<bool>(llvm::json::parse((*buffer)->getBuffer())));
  llvm::sys::fs::remove_directories(dir);
}
