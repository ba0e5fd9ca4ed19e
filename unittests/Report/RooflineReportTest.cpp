//===- RooflineReportTest.cpp - totals, formats and the three renderings --===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The report here is built by hand: a made-up GPU with round numbers and four
// ops whose roofline times are worked out in the comments, so every expected
// value is independent of the code under test.
//
//===----------------------------------------------------------------------===//

#include "memwall/Report/RooflineReport.h"
#include "memwall/Support/CheckedInt.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace memwall;

namespace {
/// 2^53 + 1: the smallest integer a double cannot hold, so a count that went
/// through a double on its way to the JSON would come back changed.
constexpr int64_t kNotADouble = (int64_t(1) << 53) + 1;

GPUTarget makeTarget() {
  GPUTarget target;
  target.name = "test-gpu";
  target.description = "Test GPU <1> & \"co\"";
  // fp32 10 TFLOP/s, bf16 and fp16 100 TFLOP/s; no tf32, fp8 or int8 units.
  target.peakFlops = {10e12, 0, 100e12, 100e12, 0, 0};
  target.memoryBandwidth = 1e12;
  target.memoryCapacityBytes = uint64_t(80) << 30;
  target.l2Bytes = 50 << 20;
  target.sharedMemoryPerSMBytes = 228 << 10;
  target.smCount = 132;
  target.kernelLaunchSeconds = 1e-6;
  target.smArch = "sm_90a";
  // Kernels reach the peaks: the hand computations below stay round.
  target.achievable.memoryBandwidth = 1e12;
  target.achievable.gemmEfficiency = {1, 1, 1};
  target.achievable.attentionEfficiency = 1;
  return target;
}

OpRecord makeOp(unsigned id, const char *op, const char *loc, int64_t flops,
                int64_t bytesRead, int64_t bytesWritten,
                MathPrecision precision, RooflineEstimate estimate) {
  OpRecord record;
  record.id = id;
  record.op = op;
  record.loc = loc;
  record.flops = flops;
  record.bytesRead = bytesRead;
  record.bytesWritten = bytesWritten;
  record.precision = precision;
  record.estimate = estimate;
  return record;
}

constexpr const char *kEscapedLoc = "layers.0.<gelu>&\"'";
constexpr const char *kLongLoc =
    "/a/very/long/directory/name/for/the/model/file.mlir:120:7";

RooflineReport makeReport() {
  RooflineReport report;
  report.target = makeTarget();
  report.modelName = "m<&>";
  report.params = kNotADouble;
  report.paramBytes = 2 * kNotADouble;
  // {intensity, compute s, memory s, launch s, time s, memory-bound}.
  // 2e9 FLOP at 100 TFLOP/s = 20 us; 1e6 B at 1 TB/s = 1 us; + 1 us launch.
  report.ops.push_back(makeOp(0, "memwall.matmul", "a.mlir:1:1", 2000000000,
                              600000, 400000, MathPrecision::BF16,
                              {2000, 20e-6, 1e-6, 1e-6, 21e-6, false}));
  // 1e6 FLOP at 10 TFLOP/s = 0.1 us; 8e6 B = 8 us; + 1 us.
  report.ops.push_back(makeOp(1, "memwall.gelu", kEscapedLoc, 1000000, 4000000,
                              4000000, MathPrecision::FP32,
                              {0.125, 0.1e-6, 8e-6, 1e-6, 9e-6, true}));
  // No FLOPs, 2e6 B = 2 us; + 1 us. Not plotted in the SVG.
  report.ops.push_back(makeOp(2, "memwall.transpose", "layers.0.t", 0, 1000000,
                              1000000, MathPrecision::FP32,
                              {0, 0, 2e-6, 1e-6, 3e-6, true}));
  // 4e8 FLOP at 100 TFLOP/s = 4 us = 4e6 B at 1 TB/s: a tie, memory-bound.
  report.ops.push_back(makeOp(3, "memwall.attention", kLongLoc, 400000000,
                              3000000, 1000000, MathPrecision::BF16,
                              {100, 4e-6, 4e-6, 1e-6, 5e-6, true}));
  return report;
}

std::string renderJSON(const RooflineReport &report) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printRooflineReportJSON(report, os);
  return text;
}

std::string renderText(const RooflineReport &report) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printRooflineReportText(report, os);
  return text;
}

std::string renderSVG(const RooflineReport &report) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printRooflineReportSVG(report, os);
  return text;
}

size_t countOccurrences(llvm::StringRef text, llvm::StringRef needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != llvm::StringRef::npos;
       at = text.find(needle, at + 1))
    ++count;
  return count;
}

/// Why `xml` is not a well-formed XML document, or "" when it is: one root
/// element, every tag closed in order, attribute values quoted, and text and
/// values free of '<' and of entities other than the predefined ones.
std::string findXMLError(llvm::StringRef xml) {
  auto checkCharacterData = [](llvm::StringRef data) -> std::string {
    if (data.contains('<'))
      return "'<' in character data";
    for (size_t amp = data.find('&'); amp != llvm::StringRef::npos;
         amp = data.find('&', amp + 1)) {
      llvm::StringRef rest = data.drop_front(amp);
      if (!rest.starts_with("&lt;") && !rest.starts_with("&gt;") &&
          !rest.starts_with("&amp;") && !rest.starts_with("&quot;") &&
          !rest.starts_with("&apos;"))
        return ("bad entity at '" + rest.take_front(12) + "'").str();
    }
    return "";
  };
  auto isNameChar = [](char c) {
    return llvm::isAlnum(c) || c == '-' || c == '_' || c == ':' || c == '.';
  };
  std::vector<llvm::StringRef> open;
  bool sawRoot = false;
  llvm::StringRef rest = xml;
  while (!rest.empty()) {
    size_t lt = rest.find('<');
    llvm::StringRef text = rest.take_front(lt);
    if (std::string error = checkCharacterData(text); !error.empty())
      return error;
    if (open.empty() && !text.trim().empty())
      return "text outside the root element";
    if (lt == llvm::StringRef::npos)
      break;
    rest = rest.drop_front(lt + 1);
    if (rest.consume_front("/")) {
      llvm::StringRef name = rest.take_while(isNameChar);
      rest = rest.drop_front(name.size()).ltrim();
      if (open.empty() || open.back() != name || !rest.consume_front(">"))
        return ("unexpected </" + name + ">").str();
      open.pop_back();
      continue;
    }
    llvm::StringRef name = rest.take_while(isNameChar);
    if (name.empty())
      return "tag without a name";
    if (open.empty() && sawRoot)
      return "second root element <" + name.str() + ">";
    sawRoot = true;
    rest = rest.drop_front(name.size());
    while (true) {
      rest = rest.ltrim();
      if (rest.consume_front("/>"))
        break;
      if (rest.consume_front(">")) {
        open.push_back(name);
        break;
      }
      llvm::StringRef attribute = rest.take_while(isNameChar);
      rest = rest.drop_front(attribute.size());
      if (attribute.empty() || !rest.consume_front("=\""))
        return "bad attribute in <" + name.str() + ">";
      size_t quote = rest.find('"');
      if (quote == llvm::StringRef::npos)
        return "unterminated attribute value";
      if (std::string error = checkCharacterData(rest.take_front(quote));
          !error.empty())
        return error;
      rest = rest.drop_front(quote + 1);
    }
  }
  if (!open.empty())
    return ("<" + open.back() + "> is never closed").str();
  return sawRoot ? "" : "no root element";
}

/// The lines of `text` that start with an op's row: its id right-aligned in
/// five columns, then the short op name.
std::vector<llvm::StringRef> findRows(llvm::StringRef text,
                                      llvm::StringRef idAndName) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  std::vector<llvm::StringRef> rows;
  for (llvm::StringRef line : lines)
    if (line.ltrim().starts_with(idAndName))
      rows.push_back(line);
  return rows;
}
} // namespace

//===----------------------------------------------------------------------===//
// The hand-built report agrees with the roofline model the compiler uses.
//===----------------------------------------------------------------------===//

/// The time model's estimate of a CUDA-core kernel of `flops` and `bytes`.
RooflineEstimate modelEstimate(double flops, double bytes,
                               MathPrecision precision,
                               const GPUTarget &target) {
  KernelWork work;
  work.flops = flops;
  work.bytesRead = bytes;
  work.precision = precision;
  return estimateKernelTime(work, target);
}

TEST(RooflineReportTest, HandComputedTermsMatchTheTimeModel) {
  // The hand-built times are the plain roofline max(c, m) + launch; the model
  // takes the soft roofline, at most 2^(1/4) x max(c, m) (at a tie).
  RooflineReport report = makeReport();
  for (const OpRecord &op : report.ops) {
    SCOPED_TRACE(op.op);
    RooflineEstimate expected =
        modelEstimate(op.flops, op.bytesRead + op.bytesWritten, op.precision,
                      report.target);
    EXPECT_DOUBLE_EQ(op.estimate.intensity, expected.intensity);
    EXPECT_NEAR(op.estimate.computeSeconds, expected.computeSeconds, 1e-18);
    EXPECT_NEAR(op.estimate.memorySeconds, expected.memorySeconds, 1e-18);
    EXPECT_DOUBLE_EQ(op.estimate.launchSeconds, expected.launchSeconds);
    EXPECT_EQ(op.estimate.memoryBound, expected.memoryBound);
    double roof = std::max(op.estimate.computeSeconds, op.estimate.memorySeconds);
    EXPECT_GE(expected.timeSeconds, op.estimate.timeSeconds - 1e-18);
    EXPECT_LE(expected.timeSeconds,
              std::pow(2.0, 0.25) * roof + op.estimate.launchSeconds + 1e-18);
  }
}

//===----------------------------------------------------------------------===//
// computeTotals
//===----------------------------------------------------------------------===//

TEST(RooflineReportTest, TotalsAreSumsAndTheMemoryShareIsByTime) {
  RooflineTotals totals = makeReport().computeTotals();
  EXPECT_EQ(totals.flops, 2401000000);
  EXPECT_EQ(totals.bytesRead, 8600000);
  EXPECT_EQ(totals.bytesWritten, 6400000);
  // 21 + 9 + 3 + 5 us, of which gelu, transpose and attention are memory-bound.
  EXPECT_NEAR(totals.timeSeconds, 38e-6, 1e-15);
  EXPECT_NEAR(totals.memoryBoundSeconds, 17e-6, 1e-15);
  EXPECT_NEAR(totals.memoryBoundTimeFraction, 17.0 / 38.0, 1e-12);
  EXPECT_EQ(totals.numOps, 4u);
  EXPECT_EQ(totals.numMemoryBoundOps, 3u);
}

TEST(RooflineReportTest, TotalsPastInt64AreUncountableNotWrapped) {
  // Two ops of 2^62 bytes each: the sum used to wrap to -2^63.
  RooflineReport report = makeReport();
  report.ops[0].bytesRead = int64_t(1) << 62;
  report.ops[1].bytesRead = int64_t(1) << 62;
  RooflineTotals totals = report.computeTotals();
  EXPECT_EQ(totals.bytesRead, kUncountable);
  EXPECT_EQ(totals.bytes, kUncountable);
  EXPECT_EQ(totals.flops, 2401000000);
  MemoryStep step;
  step.bytes = {int64_t(1) << 62, int64_t(1) << 62, 0, 0, 0, 0};
  EXPECT_EQ(step.total(), kUncountable);
}

TEST(RooflineReportTest, JSONWritesNonFiniteFiguresAsNull) {
  // llvm::json prints inf and nan bare, which no JSON reader accepts.
  RooflineReport report = makeReport();
  report.ops[0].estimate.timeSeconds = std::numeric_limits<double>::infinity();
  report.ops[1].estimate.intensity = std::numeric_limits<double>::quiet_NaN();
  std::string text = renderJSON(report);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Array *ops = parsed->getAsObject()->getArray("ops");
  ASSERT_TRUE(ops);
  EXPECT_EQ((*ops)[0].getAsObject()->get("time_s")->kind(),
            llvm::json::Value::Null);
  EXPECT_EQ((*ops)[1].getAsObject()->get("intensity")->kind(),
            llvm::json::Value::Null);
  // Counts stay exact integers.
  EXPECT_EQ((*ops)[0].getAsObject()->getInteger("flops"), report.ops[0].flops);
}

TEST(RooflineReportTest, TotalsOfAnEmptyModelAreZero) {
  RooflineTotals totals = RooflineReport().computeTotals();
  EXPECT_EQ(totals.flops, 0);
  EXPECT_EQ(totals.timeSeconds, 0);
  EXPECT_EQ(totals.memoryBoundTimeFraction, 0);
  EXPECT_EQ(totals.numOps, 0u);
}

//===----------------------------------------------------------------------===//
// getReportFormatForPath
//===----------------------------------------------------------------------===//

TEST(RooflineReportTest, FormatFollowsTheExtension) {
  EXPECT_EQ(getReportFormatForPath("r.json"), ReportFormat::JSON);
  EXPECT_EQ(getReportFormatForPath("dir/R.JSON"), ReportFormat::JSON);
  EXPECT_EQ(getReportFormatForPath("r.txt"), ReportFormat::Text);
  EXPECT_EQ(getReportFormatForPath("dir/r.TXT"), ReportFormat::Text);
  EXPECT_EQ(getReportFormatForPath("r.svg"), ReportFormat::SVG);
  EXPECT_EQ(getReportFormatForPath("a.b/r.Svg"), ReportFormat::SVG);
  EXPECT_EQ(getReportFormatForPath("-"), ReportFormat::Text);
  EXPECT_EQ(getReportFormatForPath("r.csv"), std::nullopt);
  EXPECT_EQ(getReportFormatForPath("report"), std::nullopt);
  EXPECT_EQ(getReportFormatForPath("r.json.bak"), std::nullopt);
  EXPECT_EQ(getReportFormatForPath("dir.json/report"), std::nullopt);
  EXPECT_EQ(getReportFormatForPath(""), std::nullopt);
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

TEST(RooflineReportTest, JSONHasEveryDocumentedField) {
  RooflineReport report = makeReport();
  std::string text = renderJSON(report);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object &root = *parsed->getAsObject();
  EXPECT_EQ(root.getInteger("schema_version"), 1);
  EXPECT_EQ(root.getString("generator"), "memwall");

  const llvm::json::Object *target = root.getObject("target");
  ASSERT_TRUE(target);
  for (const char *key :
       {"name", "description", "ridge_flops_per_byte", "hbm_bytes_per_s",
        "capacity_bytes", "l2_bytes", "shared_memory_per_sm_bytes", "sm_count",
        "kernel_launch_s", "peak_flops", "ridges"})
    EXPECT_TRUE(target->get(key)) << key;
  EXPECT_EQ(target->getString("name"), "test-gpu");
  EXPECT_EQ(target->getString("description"), "Test GPU <1> & \"co\"");
  EXPECT_EQ(target->getNumber("ridge_flops_per_byte"), 100.0);
  EXPECT_EQ(target->getNumber("hbm_bytes_per_s"), 1e12);
  EXPECT_EQ(target->getInteger("capacity_bytes"), int64_t(80) << 30);
  EXPECT_EQ(target->getInteger("l2_bytes"), 50 << 20);
  EXPECT_EQ(target->getInteger("shared_memory_per_sm_bytes"), 228 << 10);
  EXPECT_EQ(target->getInteger("sm_count"), 132);
  EXPECT_EQ(target->getNumber("kernel_launch_s"), 1e-6);
  const llvm::json::Object *peaks = target->getObject("peak_flops");
  const llvm::json::Object *ridges = target->getObject("ridges");
  ASSERT_TRUE(peaks && ridges);
  EXPECT_EQ(peaks->size(), 6u);
  EXPECT_EQ(peaks->getNumber("fp32"), 10e12);
  EXPECT_EQ(peaks->getNumber("tf32"), 0.0);
  EXPECT_EQ(peaks->getNumber("bf16"), 100e12);
  EXPECT_EQ(peaks->getNumber("fp16"), 100e12);
  EXPECT_EQ(peaks->getNumber("fp8"), 0.0);
  EXPECT_EQ(peaks->getNumber("int8"), 0.0);
  // Unsupported precisions report the ridge of the roof they fall back to.
  EXPECT_EQ(ridges->size(), 6u);
  EXPECT_EQ(ridges->getNumber("fp32"), 10.0);
  EXPECT_EQ(ridges->getNumber("tf32"), 10.0);
  EXPECT_EQ(ridges->getNumber("bf16"), 100.0);
  EXPECT_EQ(ridges->getNumber("fp8"), 100.0);

  const llvm::json::Object *model = root.getObject("model");
  ASSERT_TRUE(model);
  EXPECT_EQ(model->getString("name"), "m<&>");
  EXPECT_EQ(model->getInteger("params"), kNotADouble);
  EXPECT_EQ(model->getInteger("param_bytes"), 2 * kNotADouble);

  const llvm::json::Array *ops = root.getArray("ops");
  ASSERT_TRUE(ops);
  ASSERT_EQ(ops->size(), report.ops.size());
  for (const OpRecord &expected : report.ops) {
    SCOPED_TRACE(expected.op);
    const llvm::json::Object &op = *(*ops)[expected.id].getAsObject();
    EXPECT_EQ(op.size(), 14u);
    EXPECT_EQ(op.getInteger("id"), expected.id);
    EXPECT_EQ(op.getString("op"), expected.op);
    EXPECT_EQ(op.getString("loc"), expected.loc);
    EXPECT_EQ(op.getInteger("flops"), expected.flops);
    EXPECT_EQ(op.getInteger("bytes_read"), expected.bytesRead);
    EXPECT_EQ(op.getInteger("bytes_written"), expected.bytesWritten);
    EXPECT_EQ(op.getNumber("intensity"), expected.estimate.intensity);
    EXPECT_EQ(op.getString("precision"),
              stringifyMathPrecision(expected.precision));
    EXPECT_EQ(op.getNumber("compute_time_s"), expected.estimate.computeSeconds);
    EXPECT_EQ(op.getNumber("memory_time_s"), expected.estimate.memorySeconds);
    EXPECT_EQ(op.getNumber("launch_s"), expected.estimate.launchSeconds);
    EXPECT_EQ(op.getString("bound"),
              expected.estimate.memoryBound ? "memory" : "compute");
    EXPECT_EQ(op.getNumber("time_s"), expected.estimate.timeSeconds);
  }
  EXPECT_EQ((*ops)[0].getAsObject()->getString("bound"), "compute");
  EXPECT_EQ((*ops)[0].getAsObject()->getString("precision"), "bf16");
  EXPECT_EQ((*ops)[3].getAsObject()->getString("bound"), "memory");

  const llvm::json::Object *totals = root.getObject("totals");
  ASSERT_TRUE(totals);
  EXPECT_EQ(totals->size(), 9u);
  EXPECT_EQ(totals->getInteger("flops"), 2401000000);
  EXPECT_EQ(totals->getInteger("bytes_read"), 8600000);
  EXPECT_EQ(totals->getInteger("bytes_written"), 6400000);
  EXPECT_EQ(totals->getInteger("bytes"), 15000000);
  EXPECT_NEAR(*totals->getNumber("time_s"), 38e-6, 1e-15);
  EXPECT_NEAR(*totals->getNumber("memory_bound_time_s"), 17e-6, 1e-15);
  EXPECT_NEAR(*totals->getNumber("memory_bound_time_fraction"), 17.0 / 38.0,
              1e-12);
  EXPECT_EQ(totals->getInteger("ops"), 4);
  EXPECT_EQ(totals->getInteger("memory_bound_ops"), 3);
}

TEST(RooflineReportTest, JSONIsIndentedByTwo) {
  std::string text = renderJSON(makeReport());
  EXPECT_TRUE(llvm::StringRef(text).starts_with("{\n  \"schema_version\": 1,"))
      << text;
  EXPECT_NE(text.find("\n    \"name\": \"test-gpu\""), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

TEST(RooflineReportTest, TextHasTheTargetAndModelHeader) {
  std::string text = renderText(makeReport());
  EXPECT_NE(text.find("model:  m<&>, 9007199254740993 parameters (18.01 PB)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("target: test-gpu (Test GPU <1> & \"co\"), 1.00 TB/s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fp32 10.00 TFLOP/s (ridge 10.0)"), std::string::npos);
  EXPECT_NE(text.find("bf16 100.00 TFLOP/s (ridge 100.0)"), std::string::npos);
  // Only the roofs the hardware has.
  EXPECT_EQ(text.find("tf32"), std::string::npos);
  EXPECT_EQ(text.find("int8"), std::string::npos);
}

TEST(RooflineReportTest, TextHasAnAlignedRowPerOp) {
  std::string text = renderText(makeReport());
  std::vector<llvm::StringRef> matmul = findRows(text, "0 matmul ");
  // Once in the table, once among the slowest.
  ASSERT_EQ(matmul.size(), 2u) << text;
  for (const char *cell : {"a.mlir:1:1", "2.00 GFLOP", "1.00 MB", "2000.0",
                           "compute", "21.00 us", "55.3%"})
    EXPECT_TRUE(matmul[0].contains(cell)) << cell << " in\n" << matmul[0].str();
  std::vector<llvm::StringRef> gelu = findRows(text, "1 gelu ");
  ASSERT_EQ(gelu.size(), 2u);
  for (const char *cell : {kEscapedLoc, "1.00 MFLOP", "8.00 MB", "0.1",
                           "memory", "9.00 us", "23.7%"})
    EXPECT_TRUE(gelu[0].contains(cell)) << cell << " in\n" << gelu[0].str();
  std::vector<llvm::StringRef> transpose = findRows(text, "2 transpose ");
  ASSERT_EQ(transpose.size(), 2u);
  EXPECT_TRUE(transpose[0].contains(" 0 FLOP ")) << transpose[0].str();
  // A long location keeps its distinguishing tail.
  std::vector<llvm::StringRef> attention = findRows(text, "3 attention ");
  ASSERT_EQ(attention.size(), 2u);
  EXPECT_TRUE(attention[0].contains(" ...the/model/file.mlir:120:7 "))
      << attention[0].str();
  EXPECT_FALSE(attention[0].contains("/a/very")) << attention[0].str();
  EXPECT_TRUE(attention[0].contains("13.2%")) << attention[0].str();

  // Fixed width: every row ends at the same column.
  for (const std::vector<llvm::StringRef> *rows :
       {&matmul, &gelu, &transpose, &attention})
    for (llvm::StringRef row : *rows)
      EXPECT_EQ(row.size(), matmul[0].size()) << row.str();
}

TEST(RooflineReportTest, TextCutsALongOpNameToItsColumn) {
  RooflineReport report = makeReport();
  std::string text = renderText(report);
  size_t rowWidth = findRows(text, "0 matmul ")[0].size();
  report.ops[1].op = "memwall.a_very_long_fused_op_name";
  text = renderText(report);
  std::vector<llvm::StringRef> rows = findRows(text, "1 a_very_long_f...");
  ASSERT_EQ(rows.size(), 2u) << text;
  EXPECT_EQ(rows[0].size(), rowWidth) << rows[0].str();
}

TEST(RooflineReportTest, TextHasTotalsAndTheSlowestOps) {
  std::string text = renderText(makeReport());
  EXPECT_NE(text.find("totals: 4 ops, 2.40 GFLOP, 15.00 MB moved, 38.00 us "
                      "predicted"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("memory-bound: 3 of 4 ops, 44.7% of predicted time"),
            std::string::npos)
      << text;
  size_t slowest = text.find("slowest ops:");
  ASSERT_NE(slowest, std::string::npos);
  llvm::StringRef tail = llvm::StringRef(text).drop_front(slowest);
  // 21, 9, 5 then 3 us.
  size_t matmul = tail.find("0 matmul"), gelu = tail.find("1 gelu"),
         attention = tail.find("3 attention"),
         transpose = tail.find("2 transpose");
  EXPECT_LT(matmul, gelu);
  EXPECT_LT(gelu, attention);
  EXPECT_LT(attention, transpose);
  EXPECT_NE(transpose, llvm::StringRef::npos);
}

TEST(RooflineReportTest, TextListsAtMostTenSlowestOps) {
  RooflineReport report = makeReport();
  OpRecord gelu = report.ops[1];
  for (unsigned id = 4; id < 30; ++id) {
    gelu.id = id;
    report.ops.push_back(gelu);
  }
  std::string text = renderText(report);
  llvm::StringRef tail =
      llvm::StringRef(text).drop_front(text.find("slowest ops:"));
  EXPECT_EQ(countOccurrences(tail, " gelu "), 9u) << tail.str();
}

//===----------------------------------------------------------------------===//
// SVG
//===----------------------------------------------------------------------===//

TEST(RooflineReportTest, TheXMLCheckerRejectsMalformedXML) {
  EXPECT_EQ(findXMLError("<a b=\"&lt;&amp;\"><c/>x &gt; y</a>\n"), "");
  EXPECT_NE(findXMLError("<a><b></a></b>"), "");
  EXPECT_NE(findXMLError("<a>x & y</a>"), "");
  EXPECT_NE(findXMLError("<a b=\"<\"/>"), "");
  EXPECT_NE(findXMLError("<a b=c/>"), "");
  EXPECT_NE(findXMLError("<a>"), "");
  EXPECT_NE(findXMLError("<a/><b/>"), "");
}

TEST(RooflineReportTest, SVGIsWellFormedAndSelfContained) {
  std::string svg = renderSVG(makeReport());
  EXPECT_EQ(findXMLError(svg), "");
  EXPECT_TRUE(llvm::StringRef(svg).starts_with(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""))
      << svg.substr(0, 200);
  EXPECT_NE(svg.find("viewBox=\"0 0 "), std::string::npos);
  EXPECT_EQ(countOccurrences(svg, "http"), 1u) << "only the namespace";
  for (const char *external : {"href", "url(", "<image", "<script", "@import"})
    EXPECT_EQ(svg.find(external), std::string::npos) << external;
  for (const char *notANumber : {"nan", "inf"})
    EXPECT_EQ(svg.find(notANumber), std::string::npos) << notANumber;
}

TEST(RooflineReportTest, SVGEscapesEveryText) {
  std::string svg = renderSVG(makeReport());
  EXPECT_NE(svg.find("Roofline: m&lt;&amp;&gt; on test-gpu"),
            std::string::npos);
  EXPECT_NE(svg.find("Test GPU &lt;1&gt; &amp; &quot;co&quot;"),
            std::string::npos);
  EXPECT_NE(svg.find("layers.0.&lt;gelu&gt;&amp;&quot;&apos;"),
            std::string::npos);
  EXPECT_EQ(svg.find("<gelu>"), std::string::npos);
  EXPECT_EQ(svg.find("m<&>"), std::string::npos);
}

TEST(RooflineReportTest, SVGDrawsTheRoofsAndTheRidge) {
  std::string svg = renderSVG(makeReport());
  EXPECT_NE(svg.find(">memory 1 TB/s<"), std::string::npos);
  // bf16 and fp16 share a peak, hence a roof.
  EXPECT_NE(svg.find(">bf16/fp16 100 TFLOP/s<"), std::string::npos);
  EXPECT_NE(svg.find(">fp32 10 TFLOP/s<"), std::string::npos);
  EXPECT_EQ(svg.find("tf32"), std::string::npos);
  EXPECT_NE(svg.find(">bf16 ridge 100 FLOP/byte<"), std::string::npos);
  EXPECT_NE(svg.find("arithmetic intensity (FLOP/byte)"), std::string::npos);
  EXPECT_NE(svg.find("attainable performance (FLOP/s)"), std::string::npos);
  // The axes reach the ridge and beyond: 10^2 is a tick.
  EXPECT_NE(svg.find(">10<tspan dy=\"-5\" font-size=\"8\">2</tspan>"),
            std::string::npos);
}

TEST(RooflineReportTest, SVGPlotsEveryOpWithFlopsByKind) {
  std::string svg = renderSVG(makeReport());
  // matmul, gelu and attention; the transpose has no FLOPs.
  EXPECT_EQ(countOccurrences(svg, "class=\"op\""), 3u);
  EXPECT_EQ(countOccurrences(svg, "class=\"op\" cx="), 3u);
  EXPECT_EQ(countOccurrences(svg, "r=\"3.5\" fill=\"#1f77b4\""), 2u);
  EXPECT_EQ(countOccurrences(svg, "r=\"3.5\" fill=\"#ff7f0e\""), 1u);
  EXPECT_NE(svg.find("3 of 4 ops plotted"), std::string::npos);
  EXPECT_NE(svg.find("1 op with 0 FLOPs"), std::string::npos);
  EXPECT_NE(svg.find(">0 matmul<"), std::string::npos);
  EXPECT_NE(svg.find(">matmul / attention<"), std::string::npos);
}

TEST(RooflineReportTest, SVGLabelsAtMostFortyPoints) {
  RooflineReport report;
  report.target = makeTarget();
  // 500 ops spread over four decades of intensity: 500 distinct spots.
  for (unsigned id = 0; id < 500; ++id) {
    double intensity = std::pow(10.0, -1 + 4.0 * id / 500);
    int64_t bytes = 1000000;
    auto flops = static_cast<int64_t>(intensity * bytes);
    report.ops.push_back(makeOp(
        id, "memwall.add", "x", flops, bytes, 0, MathPrecision::FP32,
        modelEstimate(flops, bytes, MathPrecision::FP32, report.target)));
  }
  std::string svg = renderSVG(report);
  EXPECT_EQ(findXMLError(svg), "");
  EXPECT_EQ(countOccurrences(svg, "class=\"op\""), 500u);
  size_t labels = countOccurrences(svg, "class=\"label\"");
  EXPECT_GT(labels, 0u);
  EXPECT_LE(labels, 40u);
  EXPECT_NE(svg.find(llvm::formatv("{0} labels", labels).str()),
            std::string::npos);
}

TEST(RooflineReportTest, SVGOfAnEmptyModelOrBareTargetIsStillWellFormed) {
  // No ops: the roofs alone.
  RooflineReport empty;
  empty.target = makeTarget();
  std::string svg = renderSVG(empty);
  EXPECT_EQ(findXMLError(svg), "");
  EXPECT_NE(svg.find("0 of 0 ops plotted"), std::string::npos);
  // A target with no numbers has no roofs to draw (and no log of zero).
  RooflineReport bare = makeReport();
  bare.target = GPUTarget();
  svg = renderSVG(bare);
  EXPECT_EQ(findXMLError(svg), "");
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// writeRooflineReport
//===----------------------------------------------------------------------===//

namespace {
class WriteReportTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("report-test", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::string pathTo(llvm::StringRef name) const {
    return (dir + "/" + name).str();
  }
  /// The names in the directory: a failed or finished write must leave no
  /// temporary behind.
  std::vector<std::string> listDirectory() const {
    std::vector<std::string> names;
    std::error_code error;
    for (llvm::sys::fs::directory_iterator it(dir, error), end;
         it != end && !error; it.increment(error))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    llvm::sort(names);
    return names;
  }
  static std::string readFile(llvm::StringRef path) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    return buffer ? (*buffer)->getBuffer().str() : "<unreadable>";
  }

  llvm::SmallString<128> dir;
  RooflineReport report = makeReport();
};
} // namespace

TEST_F(WriteReportTest, EachExtensionWritesItsFormat) {
  ASSERT_FALSE(
      static_cast<bool>(writeRooflineReport(report, pathTo("r.json"))));
  ASSERT_FALSE(static_cast<bool>(writeRooflineReport(report, pathTo("r.txt"))));
  ASSERT_FALSE(static_cast<bool>(writeRooflineReport(report, pathTo("r.svg"))));
  EXPECT_EQ(readFile(pathTo("r.json")), renderJSON(report));
  EXPECT_EQ(readFile(pathTo("r.txt")), renderText(report));
  EXPECT_EQ(readFile(pathTo("r.svg")), renderSVG(report));
  EXPECT_EQ(listDirectory(),
            (std::vector<std::string>{"r.json", "r.svg", "r.txt"}));
}

TEST_F(WriteReportTest, RewritingReplacesTheOldReport) {
  ASSERT_FALSE(static_cast<bool>(writeRooflineReport(report, pathTo("r.txt"))));
  report.modelName = "second";
  ASSERT_FALSE(static_cast<bool>(writeRooflineReport(report, pathTo("r.txt"))));
  EXPECT_EQ(readFile(pathTo("r.txt")), renderText(report));
  EXPECT_EQ(listDirectory(), std::vector<std::string>{"r.txt"});
}

TEST_F(WriteReportTest, DashWritesTextToStdout) {
  testing::internal::CaptureStdout();
  llvm::Error error = writeRooflineReport(report, "-");
  llvm::outs().flush();
  std::string captured = testing::internal::GetCapturedStdout();
  ASSERT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
  EXPECT_EQ(captured, renderText(report));
  EXPECT_TRUE(listDirectory().empty());
}

TEST_F(WriteReportTest, AnUnknownExtensionIsAnErrorNamingTheChoices) {
  std::string path = pathTo("r.csv");
  llvm::Error error = writeRooflineReport(report, path);
  ASSERT_TRUE(static_cast<bool>(error));
  std::string message = llvm::toString(std::move(error));
  EXPECT_NE(message.find("'" + path + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(".json, .txt or .svg"), std::string::npos) << message;
  EXPECT_TRUE(listDirectory().empty());
}

TEST_F(WriteReportTest, AnUnwritablePathIsAnErrorAndCreatesNothing) {
  std::string missingDirectory = pathTo("no-such-dir/r.json");
  llvm::Error error = writeRooflineReport(report, missingDirectory);
  ASSERT_TRUE(static_cast<bool>(error));
  std::string message = llvm::toString(std::move(error));
  EXPECT_NE(message.find("cannot write report '" + missingDirectory + "'"),
            std::string::npos)
      << message;
  // The path appears once: the underlying error does not repeat it.
  EXPECT_EQ(countOccurrences(message, missingDirectory), 1u) << message;
  EXPECT_TRUE(listDirectory().empty());

  error = writeRooflineReport(report, "/nonexistent-dir/r.json");
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(llvm::toString(std::move(error))
                .find("cannot write report '/nonexistent-dir/r.json'"),
            std::string::npos);
  EXPECT_FALSE(llvm::sys::fs::exists("/nonexistent-dir"));
}

TEST_F(WriteReportTest, ADirectoryInTheWayIsAnErrorAndLeavesNoTemporary) {
  ASSERT_FALSE(llvm::sys::fs::create_directory(pathTo("taken.svg")));
  llvm::Error error = writeRooflineReport(report, pathTo("taken.svg"));
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("taken.svg"),
            std::string::npos);
  EXPECT_EQ(listDirectory(), std::vector<std::string>{"taken.svg"});
}
