//===- SVGReport.cpp - the report as a log-log roofline plot --------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A self-contained SVG: the target's memory roof and one compute roof per
// supported precision, the BF16 ridge, and every op with FLOPs as a point at
// (arithmetic intensity, achieved FLOP/s).
//
//===----------------------------------------------------------------------===//

#include "memwall/Report/Units.h"

#include "memwall/Report/RooflineReport.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace memwall;

namespace {
constexpr double kWidth = 1000, kHeight = 700;
constexpr double kLeft = 100, kRight = 210, kTop = 70, kBottom = 95;
constexpr double kPlotRight = kWidth - kRight, kPlotBottom = kHeight - kBottom;
/// Labelling thousands of points makes none of them readable.
constexpr size_t kMaxLabels = 40;
constexpr double kFontSize = 11, kLabelFontSize = 9;
/// Average glyph width of a sans-serif font relative to its size, for
/// estimating how much room a text takes.
constexpr double kCharWidthPerFontSize = 0.6;
constexpr const char *kContractionColor = "#1f77b4";
constexpr const char *kOtherColor = "#ff7f0e";
constexpr const char *kRidgeColor = "#c00";
/// A white outline drawn under text keeps it legible across lines and points.
constexpr const char *kHalo =
    "stroke=\"white\" stroke-width=\"3\" stroke-linejoin=\"round\" "
    "paint-order=\"stroke\"";


/// formatSI without trailing zeros, for labels: "989.4 TFLOP/s",
/// "10 GFLOP/s".
std::string formatCompactSI(double value, const char *unit) {
  std::string text = formatSI(value, unit);
  size_t space = text.find(' ');
  size_t point = text.find('.');
  if (point == std::string::npos || space == std::string::npos ||
      point > space || text.find('e') < space)
    return text;
  size_t end = space;
  while (text[end - 1] == '0')
    --end;
  if (text[end - 1] == '.')
    --end;
  return text.erase(end, space - end);
}

/// The positive, finite values seen so far; the rest cannot go on a log axis.
struct LogRange {
  double low = std::numeric_limits<double>::infinity();
  double high = 0;

  void include(double value) {
    if (value > 0 && std::isfinite(value)) {
      low = std::min(low, value);
      high = std::max(high, value);
    }
  }
  bool empty() const { return high == 0; }
};

/// Maps a positive value on a decade-aligned log axis to pixels.
struct LogAxis {
  int minDecade, maxDecade;
  double pixelStart, pixelEnd;

  static LogAxis covering(const LogRange &range, double fallbackLow,
                          double fallbackHigh, double pixelStart,
                          double pixelEnd) {
    double low = range.empty() ? fallbackLow : range.low;
    double high = range.empty() ? fallbackHigh : range.high;
    int minDecade = static_cast<int>(std::floor(std::log10(low)));
    int maxDecade = static_cast<int>(std::ceil(std::log10(high)));
    if (maxDecade <= minDecade)
      maxDecade = minDecade + 1;
    return {minDecade, maxDecade, pixelStart, pixelEnd};
  }
  double map(double value) const {
    double fraction = (std::log10(value) - minDecade) / (maxDecade - minDecade);
    return pixelStart + fraction * (pixelEnd - pixelStart);
  }
  double min() const { return std::pow(10.0, minDecade); }
  double max() const { return std::pow(10.0, maxDecade); }
  /// Labels every decade, or every other one on a crowded axis.
  int tickStep() const { return maxDecade - minDecade > 10 ? 2 : 1; }
};

/// "1 op", "2 ops".
std::string countOf(size_t count, llvm::StringRef noun) {
  return llvm::formatv("{0} {1}{2}", count, noun, count == 1 ? "" : "s").str();
}

bool isContraction(const OpRecord &op) {
  return op.op == "memwall.matmul" || op.op == "memwall.attention";
}

llvm::StringRef shortName(const OpRecord &op) {
  llvm::StringRef name = op.op;
  name.consume_front("memwall.");
  return name;
}

double achievedFlopsPerSecond(const OpRecord &op) {
  return op.estimate.timeSeconds > 0 ? op.flops / op.estimate.timeSeconds : 0;
}

/// An op is plotted when both coordinates can go on a log axis.
bool isPlottable(const OpRecord &op) {
  double perf = achievedFlopsPerSecond(op);
  return op.flops > 0 && op.estimate.intensity > 0 &&
         std::isfinite(op.estimate.intensity) && perf > 0 &&
         std::isfinite(perf);
}

/// A compute roof; precisions with the same peak share one.
struct ComputeRoof {
  double peak;
  std::string precisions;
};

std::vector<ComputeRoof> getComputeRoofs(const GPUTarget &target) {
  std::vector<ComputeRoof> roofs;
  for (unsigned index = 0; index < kNumMathPrecisions; ++index) {
    double peak = target.peakFlops[index];
    if (!(peak > 0) || !std::isfinite(peak))
      continue;
    llvm::StringRef name = stringifyMathPrecision(MathPrecision(index));
    auto same = llvm::find_if(
        roofs, [&](const ComputeRoof &roof) { return roof.peak == peak; });
    if (same != roofs.end())
      same->precisions += ("/" + name).str();
    else
      roofs.push_back({peak, name.str()});
  }
  return roofs;
}

/// An axis-aligned rectangle of the canvas that a label must not cover.
struct Box {
  double left, top, right, bottom;

  static Box around(double x, double y, double halfSize) {
    return {x - halfSize, y - halfSize, x + halfSize, y + halfSize};
  }
  bool overlaps(const Box &other) const {
    return left < other.right && other.left < right && top < other.bottom &&
           other.top < bottom;
  }
};

/// Several ops at one pixel (the same op in every layer) form one spot.
struct Spot {
  double x, y;
  /// The slowest op of the spot names it.
  const OpRecord *slowest;
  size_t count = 0;
  bool sameOp = true;
};

/// The canvas: plot area, axes and the ops' points.
class RooflinePlot {
public:
  RooflinePlot(const RooflineReport &report, llvm::raw_ostream &os);
  void print();

private:
  void groupPointsIntoSpots();
  void printAxes();
  void printRoofs();
  void printMemoryRoofLabel(double x1, double y1, double x2, double y2);
  void printPoints();
  void printLabels();
  void printLegendAndCaption();
  /// Where `op` is drawn.
  double pointX(const OpRecord &op) const {
    return x.map(op.estimate.intensity);
  }
  double pointY(const OpRecord &op) const {
    return y.map(achievedFlopsPerSecond(op));
  }
  bool isFree(const Box &box) const {
    return llvm::none_of(occupied,
                         [&](const Box &other) { return box.overlaps(other); });
  }
  /// Places `text` next to the point (x, y) where it covers nothing drawn or
  /// labelled so far; returns false when every candidate position does.
  bool placeLabel(double x, double y, llvm::StringRef text);

  const RooflineReport &report;
  const GPUTarget &target;
  llvm::raw_ostream &os;
  std::vector<ComputeRoof> roofs;
  std::vector<const OpRecord *> points;
  /// Slowest first.
  std::vector<Spot> spots;
  bool hasMemoryRoof;
  LogAxis x{0, 1, 0, 0}, y{0, 1, 0, 0};
  /// Points and the texts placed so far.
  std::vector<Box> occupied;
  size_t numLabels = 0;
};

RooflinePlot::RooflinePlot(const RooflineReport &report, llvm::raw_ostream &os)
    : report(report), target(report.target), os(os),
      roofs(getComputeRoofs(report.target)),
      hasMemoryRoof(report.target.memoryBandwidth > 0 &&
                    std::isfinite(report.target.memoryBandwidth)) {
  for (const OpRecord &op : report.ops)
    if (isPlottable(op))
      points.push_back(&op);

  // The axes cover every point and every roof with its ridge, leaving room
  // left of the lowest ridge and below the lowest roof for memory-bound ops.
  LogRange intensities, flopsPerSecond;
  for (const ComputeRoof &roof : roofs) {
    flopsPerSecond.include(roof.peak * 1.3);
    flopsPerSecond.include(roof.peak / 100);
    if (hasMemoryRoof) {
      intensities.include(roof.peak / target.memoryBandwidth / 10);
      intensities.include(roof.peak / target.memoryBandwidth * 4);
    }
  }
  for (const OpRecord *op : points) {
    intensities.include(op->estimate.intensity / 1.5);
    intensities.include(op->estimate.intensity * 1.5);
    flopsPerSecond.include(achievedFlopsPerSecond(*op) / 1.5);
  }
  x = LogAxis::covering(intensities, 0.1, 1000, kLeft, kPlotRight);
  y = LogAxis::covering(flopsPerSecond, 1e9, 1e15, kPlotBottom, kTop);
  groupPointsIntoSpots();
}

void RooflinePlot::groupPointsIntoSpots() {
  llvm::DenseMap<std::pair<long, long>, size_t> spotIndex;
  for (const OpRecord *op : points) {
    double px = pointX(*op), py = pointY(*op);
    std::pair<long, long> key{std::lround(px), std::lround(py)};
    auto [it, inserted] = spotIndex.try_emplace(key, spots.size());
    if (inserted)
      spots.push_back({px, py, op});
    Spot &spot = spots[it->second];
    ++spot.count;
    spot.sameOp &= spot.slowest->op == op->op;
    if (op->estimate.timeSeconds > spot.slowest->estimate.timeSeconds)
      spot.slowest = op;
  }
  // Stable, so equally slow spots keep program order.
  llvm::stable_sort(spots, [](const Spot &a, const Spot &b) {
    return a.slowest->estimate.timeSeconds > b.slowest->estimate.timeSeconds;
  });
  for (const Spot &spot : spots)
    occupied.push_back(Box::around(spot.x, spot.y, 4));
}

void RooflinePlot::print() {
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                      "font-family=\"Helvetica, Arial, sans-serif\" "
                      "font-size=\"{2}\">\n",
                      static_cast<int>(kWidth), static_cast<int>(kHeight),
                      static_cast<int>(kFontSize));
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"28\" font-size=\"16\" font-weight=\"bold\">"
      "Roofline: {1} on {2}</text>\n",
      kLeft, escapeXML(report.modelName.empty() ? "?" : report.modelName),
      escapeXML(target.name));
  std::string subtitle = target.description;
  if (hasMemoryRoof)
    subtitle += (subtitle.empty() ? "" : ", ") +
                formatCompactSI(target.memoryBandwidth, "B/s") + " DRAM";
  os << llvm::formatv("<text x=\"{0}\" y=\"48\" fill=\"#555\">{1}</text>\n",
                      kLeft, escapeXML(subtitle));
  printAxes();
  printRoofs();
  printPoints();
  printLabels();
  printLegendAndCaption();
  os << "</svg>\n";
}

void RooflinePlot::printAxes() {
  os << "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n";
  for (int decade = x.minDecade; decade <= x.maxDecade; ++decade)
    os << llvm::formatv(
        "<line x1=\"{0:f1}\" y1=\"{1}\" x2=\"{0:f1}\" y2=\"{2}\"/>\n",
        x.map(std::pow(10.0, decade)), kTop, kPlotBottom);
  for (int decade = y.minDecade; decade <= y.maxDecade; ++decade)
    os << llvm::formatv(
        "<line x1=\"{0}\" y1=\"{1:f1}\" x2=\"{2}\" y2=\"{1:f1}\"/>\n", kLeft,
        y.map(std::pow(10.0, decade)), kPlotRight);
  os << "</g>\n";

  // Tick labels: 10^n on the intensity axis, SI units on the FLOP/s axis.
  os << "<g fill=\"#333\">\n";
  for (int decade = x.minDecade; decade <= x.maxDecade; decade += x.tickStep())
    os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1}\" text-anchor=\"middle\">"
                        "10<tspan dy=\"-5\" font-size=\"8\">{2}</tspan>"
                        "</text>\n",
                        x.map(std::pow(10.0, decade)), kPlotBottom + 18,
                        decade);
  for (int decade = y.minDecade; decade <= y.maxDecade; decade += y.tickStep())
    os << llvm::formatv("<text x=\"{0}\" y=\"{1:f1}\" text-anchor=\"end\">"
                        "{2}</text>\n",
                        kLeft - 6, y.map(std::pow(10.0, decade)) + 4,
                        formatCompactSI(std::pow(10.0, decade), "FLOP/s"));
  os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1}\" text-anchor=\"middle\" "
                      "font-size=\"13\">arithmetic intensity (FLOP/byte)"
                      "</text>\n",
                      (kLeft + kPlotRight) / 2, kPlotBottom + 42);
  os << llvm::formatv("<text transform=\"translate(18,{0:f1}) rotate(-90)\" "
                      "text-anchor=\"middle\" font-size=\"13\">attainable "
                      "performance (FLOP/s)</text>\n",
                      (kTop + kPlotBottom) / 2);
  os << "</g>\n";
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                      "fill=\"none\" stroke=\"#333\"/>\n",
                      kLeft, kTop, kPlotRight - kLeft, kPlotBottom - kTop);
}

void RooflinePlot::printRoofs() {
  double maxPeak = 0;
  for (const ComputeRoof &roof : roofs)
    maxPeak = std::max(maxPeak, roof.peak);
  if (!hasMemoryRoof || maxPeak == 0)
    return;
  double bandwidth = target.memoryBandwidth;

  // The memory roof rises from the plot's edge to the highest compute roof.
  double startX = std::max(x.min(), y.min() / bandwidth);
  double endX = std::min(maxPeak / bandwidth, x.max());
  double x1 = x.map(startX), y1 = y.map(startX * bandwidth);
  double x2 = x.map(endX), y2 = y.map(endX * bandwidth);
  os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1:f1}\" x2=\"{2:f1}\" "
                      "y2=\"{3:f1}\" stroke=\"#222\" stroke-width=\"2\"/>\n",
                      x1, y1, x2, y2);
  printMemoryRoofLabel(x1, y1, x2, y2);

  // One flat roof per distinct peak from its own ridge; labels go in the
  // right margin, highest first, pushed apart so close peaks stay readable.
  std::vector<ComputeRoof> byPeak = roofs;
  llvm::sort(byPeak, [](const ComputeRoof &a, const ComputeRoof &b) {
    return a.peak > b.peak;
  });
  double bf16Peak = target.peakFor(MathPrecision::BF16);
  double previousLabelY = -1e9;
  for (const ComputeRoof &roof : byPeak) {
    double roofY = y.map(roof.peak);
    bool isBF16 = roof.peak == bf16Peak;
    os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1:f1}\" x2=\"{2:f1}\" "
                        "y2=\"{1:f1}\" stroke=\"#555\" stroke-width=\"{3}\" "
                        "stroke-dasharray=\"{4}\"/>\n",
                        x.map(roof.peak / bandwidth), roofY, kPlotRight,
                        isBF16 ? 2 : 1.5, isBF16 ? "none" : "6,3");
    double textY = std::max(roofY + 4, previousLabelY + 13);
    previousLabelY = textY;
    os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1:f1}\" fill=\"#333\">{2} "
                        "{3}</text>\n",
                        kPlotRight + 6, textY, escapeXML(roof.precisions),
                        formatCompactSI(roof.peak, "FLOP/s"));
  }

  // The BF16 ridge: where a bf16 matmul turns compute-bound.
  double ridge = target.ridgeFor(MathPrecision::BF16);
  double ridgeX = x.map(ridge), ridgeY = y.map(bf16Peak);
  os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1:f1}\" x2=\"{0:f1}\" "
                      "y2=\"{2}\" stroke=\"{3}\" stroke-width=\"1\" "
                      "stroke-dasharray=\"2,3\"/>\n",
                      ridgeX, ridgeY, kPlotBottom, kRidgeColor);
  os << llvm::formatv("<circle cx=\"{0:f1}\" cy=\"{1:f1}\" r=\"5\" "
                      "fill=\"none\" stroke=\"{2}\" stroke-width=\"2\"/>\n",
                      ridgeX, ridgeY, kRidgeColor);
  std::string ridgeLabel =
      llvm::formatv("bf16 ridge {0:f0} FLOP/byte", ridge).str();
  if (!target.supports(MathPrecision::BF16))
    ridgeLabel += " (no bf16 units: a wider roof)";
  double ridgeLabelRight = ridgeX - 8, ridgeLabelBaseline = ridgeY - 8;
  os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1:f1}\" fill=\"{2}\" {3} "
                      "text-anchor=\"end\">{4}</text>\n",
                      ridgeLabelRight, ridgeLabelBaseline, kRidgeColor, kHalo,
                      ridgeLabel);
  // Op labels keep clear of the label and the circle.
  double ridgeLabelWidth =
      ridgeLabel.size() * kCharWidthPerFontSize * kFontSize;
  occupied.push_back({ridgeLabelRight - ridgeLabelWidth,
                      ridgeLabelBaseline - kFontSize, ridgeLabelRight,
                      ridgeLabelBaseline + 2});
  occupied.push_back(Box::around(ridgeX, ridgeY, 6));
}

void RooflinePlot::printMemoryRoofLabel(double x1, double y1, double x2,
                                        double y2) {
  std::string text = "memory " + formatCompactSI(target.memoryBandwidth, "B/s");
  double length = std::hypot(x2 - x1, y2 - y1);
  if (length == 0)
    return;
  // Unit vectors along the roof and perpendicular to it, above the line:
  // points are never above a roof, only their labels can be.
  double alongX = (x2 - x1) / length, alongY = (y2 - y1) / length;
  double aboveX = alongY, aboveY = -alongX;
  double textLength = text.size() * kCharWidthPerFontSize * kFontSize;
  // Small boxes along the rotated text stand in for its outline.
  auto outline = [&](double startX, double startY) {
    std::vector<Box> boxes;
    for (double along = 0; along <= textLength; along += 8)
      boxes.push_back(Box::around(startX + along * alongX + 10 * aboveX,
                                  startY + along * alongY + 10 * aboveY, 6));
    return boxes;
  };
  // The first position along the roof where the text covers nothing.
  double fraction = 0.2;
  for (double candidate : {0.2, 0.35, 0.5, 0.1, 0.65, 0.05}) {
    std::vector<Box> boxes =
        outline(x1 + candidate * (x2 - x1), y1 + candidate * (y2 - y1));
    if (llvm::all_of(boxes, [&](const Box &box) { return isFree(box); })) {
      fraction = candidate;
      break;
    }
  }
  double startX = x1 + fraction * (x2 - x1), startY = y1 + fraction * (y2 - y1);
  llvm::append_range(occupied, outline(startX, startY));
  double angle = std::atan2(y2 - y1, x2 - x1) * 180 / llvm::numbers::pi;
  os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1:f1}\" dy=\"-6\" fill=\"#222\" "
                      "{2} transform=\"rotate({3:f1} {0:f1} {1:f1})\">{4}"
                      "</text>\n",
                      startX, startY, kHalo, angle, escapeXML(text));
}

void RooflinePlot::printPoints() {
  os << "<g fill-opacity=\"0.75\">\n";
  for (const OpRecord *op : points) {
    std::string tooltip =
        llvm::formatv("#{0} {1} at {2}: {3}, {4}, {5:f2} FLOP/byte, {6}, {7} "
                      "({8}-bound)",
                      op->id, shortName(*op), op->loc,
                      formatSI(op->flops, "FLOP"),
                      formatSI(op->bytesRead + op->bytesWritten, "B"),
                      op->estimate.intensity,
                      formatSI(achievedFlopsPerSecond(*op), "FLOP/s"),
                      formatSI(op->estimate.timeSeconds, "s"),
                      op->estimate.memoryBound ? "memory" : "compute")
            .str();
    os << llvm::formatv("<circle class=\"op\" cx=\"{0:f1}\" cy=\"{1:f1}\" "
                        "r=\"3.5\" fill=\"{2}\"><title>{3}</title></circle>\n",
                        pointX(*op), pointY(*op),
                        isContraction(*op) ? kContractionColor : kOtherColor,
                        escapeXML(tooltip));
  }
  os << "</g>\n";
}

bool RooflinePlot::placeLabel(double pointX, double pointY,
                              llvm::StringRef text) {
  double width = text.size() * kCharWidthPerFontSize * kLabelFontSize;
  // Right of the point, left, above, below, then diagonally: the first
  // position that covers nothing.
  struct Candidate {
    double left, baseline;
  };
  const Candidate candidates[] = {
      {pointX + 6, pointY + 3},         {pointX - 6 - width, pointY + 3},
      {pointX - width / 2, pointY - 7}, {pointX - width / 2, pointY + 14},
      {pointX + 4, pointY - 6},         {pointX + 4, pointY + 13},
      {pointX - 4 - width, pointY - 6}, {pointX - 4 - width, pointY + 13},
  };
  for (const Candidate &candidate : candidates) {
    Box box{candidate.left, candidate.baseline - kLabelFontSize,
            candidate.left + width, candidate.baseline + 2};
    bool inside = box.left >= kLeft && box.right <= kPlotRight &&
                  box.top >= kTop && box.bottom <= kPlotBottom;
    if (!inside || !isFree(box))
      continue;
    occupied.push_back(box);
    os << llvm::formatv(
        "<text class=\"label\" x=\"{0:f1}\" y=\"{1:f1}\">{2}</text>\n",
        box.left, candidate.baseline, escapeXML(text));
    return true;
  }
  return false;
}

void RooflinePlot::printLabels() {
  // One label per spot, slowest spots first: repeated layers put dozens of
  // ops on one spot, which one label with a count describes better than
  // dozens of overlapping ones.
  os << llvm::formatv("<g font-size=\"{0}\" fill=\"#333\" {1}>\n",
                      static_cast<int>(kLabelFontSize), kHalo);
  for (const Spot &spot : spots) {
    if (numLabels == kMaxLabels)
      break;
    std::string text =
        llvm::formatv("{0} {1}", spot.slowest->id, shortName(*spot.slowest))
            .str();
    if (spot.count > 1)
      text += spot.sameOp ? llvm::formatv(" (x{0})", spot.count).str()
                          : llvm::formatv(" (+{0} more)", spot.count - 1).str();
    if (placeLabel(spot.x, spot.y, text))
      ++numLabels;
  }
  os << "</g>\n";
}

void RooflinePlot::printLegendAndCaption() {
  double legendX = kPlotRight + 12, legendY = kPlotBottom - 62;
  os << "<g fill=\"#333\">\n";
  os << llvm::formatv("<circle cx=\"{0}\" cy=\"{1}\" r=\"4\" fill=\"{2}\"/>"
                      "<text x=\"{3}\" y=\"{4}\">matmul / attention</text>\n",
                      legendX, legendY, kContractionColor, legendX + 9,
                      legendY + 4);
  os << llvm::formatv("<circle cx=\"{0}\" cy=\"{1}\" r=\"4\" fill=\"{2}\"/>"
                      "<text x=\"{3}\" y=\"{4}\">other ops</text>\n",
                      legendX, legendY + 18, kOtherColor, legendX + 9,
                      legendY + 22);
  os << llvm::formatv("<circle cx=\"{0}\" cy=\"{1}\" r=\"4\" fill=\"none\" "
                      "stroke=\"{2}\" stroke-width=\"2\"/>"
                      "<text x=\"{3}\" y=\"{4}\">bf16 ridge point</text>\n",
                      legendX, legendY + 36, kRidgeColor, legendX + 9,
                      legendY + 40);
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"#555\" stroke-width=\"1.5\" "
                      "stroke-dasharray=\"6,3\"/>"
                      "<text x=\"{3}\" y=\"{4}\">compute roofs</text>\n",
                      legendX - 5, legendY + 54, legendX + 5, legendX + 9,
                      legendY + 58);
  os << "</g>\n";

  size_t numWithoutFlops = llvm::count_if(
      report.ops, [](const OpRecord &op) { return op.flops <= 0; });
  size_t numOtherUnplotted =
      report.ops.size() - points.size() - numWithoutFlops;
  std::string caption =
      llvm::formatv("{0} of {1} plotted at (FLOP/byte, FLOP/s achieved "
                    "including launch cost); {2}, slowest spots first; "
                    "(xN) = N ops on one spot.",
                    points.size(), countOf(report.ops.size(), "op"),
                    countOf(numLabels, "label"))
          .str();
  std::string notPlotted =
      llvm::formatv("{0} with 0 FLOPs (data movement, views) not plotted",
                    countOf(numWithoutFlops, "op"))
          .str();
  if (numOtherUnplotted > 0)
    notPlotted += llvm::formatv("; {0} with FLOPs but no DRAM traffic or "
                                "time not plotted",
                                countOf(numOtherUnplotted, "op"))
                      .str();
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#555\">{2}</text>\n",
                      kLeft, kHeight - 28, escapeXML(caption));
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#555\">{2}.</text>\n",
                      kLeft, kHeight - 12, escapeXML(notPlotted));
}
} // namespace

void memwall::printRooflineReportSVG(const RooflineReport &report,
                                     llvm::raw_ostream &os) {
  RooflinePlot(report, os).print();
}

std::string memwall::escapeXML(llvm::StringRef text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '<':
      escaped += "&lt;";
      break;
    case '>':
      escaped += "&gt;";
      break;
    case '&':
      escaped += "&amp;";
      break;
    case '"':
      escaped += "&quot;";
      break;
    case '\'':
      escaped += "&apos;";
      break;
    default:
      // XML 1.0 forbids most control characters even as references.
      bool isControl = static_cast<unsigned char>(c) < 0x20 && c != '\t' &&
                       c != '\n' && c != '\r';
      escaped += isControl ? '?' : c;
    }
  }
  return escaped;
}
