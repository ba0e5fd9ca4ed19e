//===- RematParetoSVG.cpp - recompute overhead across budgets -------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// x: per-device budget (GB), y: predicted recompute overhead as a fraction
// of the step time. The curve is memwall-remat's plan at each budget (a step
// function: monotone non-increasing by construction); the baselines are
// points at their simulated peak; the budget asked for is a dashed line.
//
//===----------------------------------------------------------------------===//

#include "memwall/Report/Units.h"

#include "memwall/Report/RooflineReport.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace memwall;

namespace {
constexpr double kWidth = 860, kHeight = 520;
constexpr double kLeft = 80, kRight = 190, kTop = 60, kBottom = 60;
constexpr double kPlotRight = kWidth - kRight, kPlotBottom = kHeight - kBottom;
constexpr const char *kBaselineColors[] = {"#7f7f7f", "#d62728", "#9467bd",
                                           "#2ca02c", "#8c564b"};
} // namespace

void memwall::printRematParetoSVG(const RematParetoCurve &curve,
                                  llvm::raw_ostream &os) {
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"11\">\n",
                      static_cast<int>(kWidth), static_cast<int>(kHeight));
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"24\" font-size=\"15\" "
      "font-weight=\"bold\">{1}</text>\n",
      kLeft,
      escapeXML("Recompute overhead vs memory budget: " + curve.modelName));
  os << llvm::formatv("<text x=\"{0}\" y=\"42\">predicted by memwall-remat "
                      "(line) and the baselines (points); simulated peaks"
                      "</text>\n",
                      kLeft);
  double xmin = std::numeric_limits<double>::infinity(), xmax = 0, ymax = 0;
  auto extend = [&](double x, double y) {
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    ymax = std::max(ymax, y);
  };
  for (const RematParetoPoint &p : curve.points)
    extend(static_cast<double>(p.budgetBytes), p.overheadFraction);
  for (const RematBaseline &b : curve.baselines)
    extend(static_cast<double>(b.peakBytes), b.overheadFraction);
  if (curve.budgetBytes > 0)
    extend(static_cast<double>(curve.budgetBytes), 0);
  if (!(xmin < xmax))
    xmax = xmin + 1;
  double pad = (xmax - xmin) * 0.05;
  xmin = std::max(0.0, xmin - pad);
  xmax += pad;
  ymax = std::max(ymax * 1.15, 0.01);
  auto X = [&](double bytes) {
    return kLeft + (bytes - xmin) / (xmax - xmin) * (kPlotRight - kLeft);
  };
  auto Y = [&](double fraction) {
    return kPlotBottom - fraction / ymax * (kPlotBottom - kTop);
  };
  // Axes and ticks.
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                      "fill=\"none\" stroke=\"#444\"/>\n",
                      kLeft, kTop, kPlotRight - kLeft, kPlotBottom - kTop);
  for (int t = 0; t <= 5; ++t) {
    double bytes = xmin + (xmax - xmin) * t / 5;
    double fraction = ymax * t / 5;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">"
                        "{2}</text>\n",
                        X(bytes), kPlotBottom + 16, formatSI(bytes, "B"));
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">"
                        "{2:f1}%</text>\n",
                        kLeft - 6, Y(fraction) + 4, 100 * fraction);
  }
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">"
                      "per-device memory budget</text>\n",
                      (kLeft + kPlotRight) / 2, kPlotBottom + 36);
  os << llvm::formatv("<text x=\"18\" y=\"{0}\" transform=\"rotate(-90 18 "
                      "{0})\" text-anchor=\"middle\">recompute overhead (% of "
                      "step time)</text>\n",
                      (kTop + kPlotBottom) / 2);
  // The curve as steps: a plan found at a budget serves every larger one.
  std::string path;
  for (size_t i = 0; i < curve.points.size(); ++i) {
    const RematParetoPoint &p = curve.points[i];
    double x = X(static_cast<double>(p.budgetBytes)), y = Y(p.overheadFraction);
    if (i == 0)
      path += llvm::formatv("M{0:f1},{1:f1}", x, y).str();
    else
      path += llvm::formatv(" H{0:f1} V{1:f1}", x, y).str();
  }
  if (!path.empty())
    os << "<path d=\"" << path
       << "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n";
  for (const RematParetoPoint &p : curve.points)
    os << llvm::formatv("<circle cx=\"{0:f1}\" cy=\"{1:f1}\" r=\"2.5\" "
                        "fill=\"#1f77b4\"><title>budget {2}: peak {3}, "
                        "overhead {4:f2}%</title></circle>\n",
                        X(static_cast<double>(p.budgetBytes)),
                        Y(p.overheadFraction), formatSI(p.budgetBytes, "B"),
                        formatSI(p.peakBytes, "B"), 100 * p.overheadFraction);
  if (curve.budgetBytes > 0) {
    double x = X(static_cast<double>(curve.budgetBytes));
    os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1}\" x2=\"{0:f1}\" "
                        "y2=\"{2}\" stroke=\"#000\" stroke-dasharray=\"5,4\"/>"
                        "\n<text x=\"{0:f1}\" y=\"{3}\" text-anchor=\"middle\">"
                        "budget {4}</text>\n",
                        x, kTop, kPlotBottom, kTop - 6,
                        formatSI(curve.budgetBytes, "B"));
  }
  // Baselines and the legend.
  double legendY = kTop + 10;
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"#1f77b4\" stroke-width=\"2\"/><text x=\"{3}\" "
                      "y=\"{4}\">memwall-remat</text>\n",
                      kPlotRight + 12, legendY, kPlotRight + 32,
                      kPlotRight + 38, legendY + 4);
  for (size_t i = 0; i < curve.baselines.size(); ++i) {
    const RematBaseline &b = curve.baselines[i];
    const char *color = kBaselineColors[i % std::size(kBaselineColors)];
    os << llvm::formatv("<rect x=\"{0:f1}\" y=\"{1:f1}\" width=\"8\" "
                        "height=\"8\" fill=\"{2}\"><title>{3}: peak {4}, "
                        "overhead {5:f2}%</title></rect>\n",
                        X(static_cast<double>(b.peakBytes)) - 4,
                        Y(b.overheadFraction) - 4, color, escapeXML(b.name),
                        formatSI(b.peakBytes, "B"), 100 * b.overheadFraction);
    legendY += 18;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"8\" height=\"8\" "
                        "fill=\"{2}\"/><text x=\"{3}\" y=\"{4}\">{5}</text>\n",
                        kPlotRight + 18, legendY - 4, color, kPlotRight + 38,
                        legendY + 4, escapeXML(b.name));
  }
  os << "</svg>\n";
}
