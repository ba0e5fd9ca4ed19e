//===- MemoryTimelineSVG.cpp - live bytes per step as a stacked area ------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One column per step of the simulated schedule, stacked by bucket in the
// order of the report (weights at the bottom), the budget as a dashed line,
// the peak marked, and the forward/backward/optimizer phases shaded.
//
//===----------------------------------------------------------------------===//

#include "memwall/Report/Units.h"

#include "memwall/Report/RooflineReport.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace memwall;

namespace {
constexpr double kWidth = 1000, kHeight = 520;
constexpr double kLeft = 90, kRight = 170, kTop = 60, kBottom = 70;
constexpr double kPlotRight = kWidth - kRight, kPlotBottom = kHeight - kBottom;
constexpr const char *kBucketColors[kNumMemoryBuckets] = {
    "#1f77b4", "#d62728", "#9467bd", "#2ca02c", "#8c564b", "#ff7f0e"};
/// Columns drawn at most: longer schedules are binned, keeping each bin's
/// largest step so that the peak survives.
constexpr size_t kMaxColumns = 800;
} // namespace

void memwall::printMemoryTimelineSVG(const RooflineReport &report,
                                     llvm::raw_ostream &os) {
  const MemorySummary &memory = *report.memory;
  const std::vector<MemoryStep> &steps = memory.timeline;
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"11\">\n",
                      static_cast<int>(kWidth), static_cast<int>(kHeight));
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::string title = llvm::formatv("Live device memory per step: {0} on {1}",
                                    report.modelName.empty() ? "?"
                                                             : report.modelName,
                                    report.target.name)
                          .str();
  os << llvm::formatv("<text x=\"{0}\" y=\"24\" font-size=\"15\" "
                      "font-weight=\"bold\">{1}</text>\n",
                      kLeft, escapeXML(title));
  std::string subtitle =
      llvm::formatv("peak {0} at {1}; {2} device(s), ZeRO stage {3}, "
                    "offload {4}",
                    formatSI(memory.peakBytes, "B"), memory.peakAt,
                    memory.devices, memory.zeroStage, memory.offload)
          .str();
  os << llvm::formatv("<text x=\"{0}\" y=\"42\">{1}</text>\n", kLeft,
                      escapeXML(subtitle));

  double top = static_cast<double>(memory.peakBytes);
  if (report.budget)
    top = std::max(top, static_cast<double>(report.budget->budgetBytes));
  top = std::max(top * 1.08, 1.0);
  double plotWidth = kPlotRight - kLeft, plotHeight = kPlotBottom - kTop;
  auto yOf = [&](double bytes) { return kPlotBottom - bytes / top * plotHeight; };

  // Bins of consecutive steps, each drawn as the bin's largest step.
  size_t columns = std::min(steps.size(), kMaxColumns);
  std::vector<size_t> chosen;
  for (size_t c = 0; c < columns; ++c) {
    size_t begin = c * steps.size() / columns;
    size_t end = (c + 1) * steps.size() / columns;
    size_t best = begin;
    for (size_t i = begin; i < end; ++i)
      if (steps[i].total() > steps[best].total())
        best = i;
    chosen.push_back(best);
  }
  double columnWidth = columns ? plotWidth / columns : plotWidth;

  // Phase shading behind the columns.
  for (size_t c = 0; c < columns; ++c) {
    const std::string &phase = steps[chosen[c]].phase;
    if (phase == "forward")
      continue;
    os << llvm::formatv("<rect x=\"{0:f2}\" y=\"{1}\" width=\"{2:f2}\" "
                        "height=\"{3}\" fill=\"{4}\"/>\n",
                        kLeft + c * columnWidth, kTop, columnWidth, plotHeight,
                        phase == "backward" ? "#f3f3f3" : "#e6e6e6");
  }
  for (size_t c = 0; c < columns; ++c) {
    const MemoryStep &step = steps[chosen[c]];
    double base = 0;
    os << "<g><title>"
       << escapeXML(llvm::formatv("step {0}: {1} {2} ({3}), {4}", chosen[c],
                                  step.op, step.loc, step.phase,
                                  formatSI(step.total(), "B"))
                        .str())
       << "</title>";
    for (unsigned b = 0; b < kNumMemoryBuckets; ++b) {
      if (step.bytes[b] <= 0)
        continue;
      double y0 = yOf(base), y1 = yOf(base + step.bytes[b]);
      os << llvm::formatv("<rect x=\"{0:f2}\" y=\"{1:f2}\" width=\"{2:f2}\" "
                          "height=\"{3:f2}\" fill=\"{4}\"/>",
                          kLeft + c * columnWidth, y1, columnWidth + 0.3,
                          y0 - y1, kBucketColors[b]);
      base += step.bytes[b];
    }
    os << "</g>\n";
  }

  // Axes and gridlines in decimal gigabytes (or the best SI unit).
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"black\"/>\n",
                      kLeft, kPlotBottom, kPlotRight);
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                      "stroke=\"black\"/>\n",
                      kLeft, kTop, kPlotBottom);
  for (int tick = 0; tick <= 5; ++tick) {
    double bytes = top / 1.08 * tick / 5;
    double y = yOf(bytes);
    os << llvm::formatv("<line x1=\"{0}\" y1=\"{1:f2}\" x2=\"{2}\" "
                        "y2=\"{1:f2}\" stroke=\"#ccc\" "
                        "stroke-dasharray=\"2,3\"/>\n",
                        kLeft, y, kPlotRight);
    os << llvm::formatv("<text x=\"{0}\" y=\"{1:f2}\" "
                        "text-anchor=\"end\">{2}</text>\n",
                        kLeft - 6, y + 4, escapeXML(formatSI(bytes, "B")));
  }
  os << llvm::formatv("<text x=\"{0:f2}\" y=\"{1}\" text-anchor=\"middle\">"
                      "step (function op order, {2} steps)</text>\n",
                      (kLeft + kPlotRight) / 2, kPlotBottom + 30,
                      steps.size());

  if (report.budget) {
    double y = yOf(static_cast<double>(report.budget->budgetBytes));
    os << llvm::formatv("<line x1=\"{0}\" y1=\"{1:f2}\" x2=\"{2}\" "
                        "y2=\"{1:f2}\" stroke=\"black\" stroke-width=\"2\" "
                        "stroke-dasharray=\"8,4\"/>\n",
                        kLeft, y, kPlotRight);
    os << llvm::formatv("<text x=\"{0}\" y=\"{1:f2}\">budget {2}</text>\n",
                        kPlotRight + 6, y + 4,
                        escapeXML(formatSI(report.budget->budgetBytes, "B")));
  }
  if (!steps.empty()) {
    size_t peakColumn = 0;
    for (size_t c = 0; c < columns; ++c)
      if (chosen[c] == static_cast<size_t>(memory.peakStep))
        peakColumn = c;
    double x = kLeft + (peakColumn + 0.5) * columnWidth;
    double y = yOf(static_cast<double>(memory.peakBytes));
    os << llvm::formatv("<circle cx=\"{0:f2}\" cy=\"{1:f2}\" r=\"4\" "
                        "fill=\"none\" stroke=\"black\"/>\n",
                        x, y);
    os << llvm::formatv("<text x=\"{0:f2}\" y=\"{1:f2}\" "
                        "text-anchor=\"middle\">peak</text>\n",
                        x, y - 8);
  }
  // Legend, top bucket first as in the stack.
  for (unsigned i = 0; i < kNumMemoryBuckets; ++i) {
    unsigned b = kNumMemoryBuckets - 1 - i;
    double y = kTop + 10 + 20 * i;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"12\" "
                        "height=\"12\" fill=\"{2}\"/>\n",
                        kPlotRight + 10, y - 10, kBucketColors[b]);
    os << llvm::formatv(
        "<text x=\"{0}\" y=\"{1}\">{2} {3}</text>\n", kPlotRight + 28, y,
        stringifyMemoryBucket(static_cast<MemoryBucket>(b)),
        escapeXML(formatSI(memory.atPeak[b], "B")));
  }
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">(sizes at the peak; "
                      "grey: backward, darker: optimizer)</text>\n",
                      kLeft, kHeight - 12);
  os << "</svg>\n";
}
