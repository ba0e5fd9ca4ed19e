//===- SVGReport.cpp - the report as a log-log roofline plot --------------===//
//
// A self-contained SVG: the target's memory roof and one compute roof per
// supported precision, the BF16 ridge, and every op with FLOPs as a point at
// (arithmetic intensity, achieved FLOP/s).
//
//===----------------------------------------------------------------------===//

#include "Units.h"

#include "memwall/Report/RooflineReport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace memwall;

namespace {
constexpr double kWidth = 1000, kHeight = 680;
constexpr double kLeft = 105, kRight = 200, kTop = 60, kBottom = 80;
constexpr size_t kMaxLabels = 40;

std::string escapeXML(llvm::StringRef text) {
  std::string escaped;
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
      escaped += c;
    }
  }
  return escaped;
}

/// Maps a positive value on a decade-aligned log axis to pixels.
struct LogAxis {
  double minDecade, maxDecade, pixelStart, pixelEnd;

  static LogAxis covering(double low, double high, double pixelStart,
                          double pixelEnd) {
    double minDecade = std::floor(std::log10(low));
    double maxDecade = std::ceil(std::log10(high));
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
};

bool isContraction(const OpRecord &op) {
  return op.op == "memwall.matmul" || op.op == "memwall.attention";
}

double achievedFlopsPerSecond(const OpRecord &op) {
  return op.estimate.timeSeconds > 0 ? op.flops / op.estimate.timeSeconds : 0;
}
} // namespace

void memwall::printRooflineReportSVG(const RooflineReport &report,
                                     llvm::raw_ostream &os) {
  const GPUTarget &target = report.target;
  double bandwidth = target.memoryBandwidth;
  double maxPeak = 0, minPeak = 0;
  for (unsigned index = 0; index < kNumMathPrecisions; ++index) {
    double peak = target.peakFlops[index];
    if (peak <= 0)
      continue;
    maxPeak = std::max(maxPeak, peak);
    minPeak = minPeak == 0 ? peak : std::min(minPeak, peak);
  }
  double ridge = target.ridgeFor(MathPrecision::BF16);

  std::vector<const OpRecord *> points;
  for (const OpRecord &op : report.ops)
    if (op.flops > 0 && op.estimate.intensity > 0 &&
        achievedFlopsPerSecond(op) > 0)
      points.push_back(&op);

  // Axes cover every point, every roof and its ridge.
  double xLow = minPeak / bandwidth / 10, xHigh = maxPeak / bandwidth * 10;
  double yLow = minPeak / 100, yHigh = maxPeak * 2;
  for (const OpRecord *op : points) {
    xLow = std::min(xLow, op->estimate.intensity / 2);
    xHigh = std::max(xHigh, op->estimate.intensity * 2);
    yLow = std::min(yLow, achievedFlopsPerSecond(*op) / 2);
  }
  LogAxis x = LogAxis::covering(xLow, xHigh, kLeft, kWidth - kRight);
  LogAxis y = LogAxis::covering(yLow, yHigh, kHeight - kBottom, kTop);

  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                      "font-family=\"sans-serif\" font-size=\"11\">\n",
                      kWidth, kHeight);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"28\" font-size=\"16\" "
                      "font-weight=\"bold\">Roofline: {1} on {2}</text>\n",
                      kLeft, escapeXML(report.modelName),
                      escapeXML(target.name));

  // Decade gridlines and tick labels.
  os << "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (double decade = x.minDecade; decade <= x.maxDecade; ++decade) {
    double px = x.map(std::pow(10.0, decade));
    os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1}\" x2=\"{0:f1}\" "
                        "y2=\"{2}\"/>\n",
                        px, kTop, kHeight - kBottom);
  }
  for (double decade = y.minDecade; decade <= y.maxDecade; ++decade) {
    double py = y.map(std::pow(10.0, decade));
    os << llvm::formatv("<line x1=\"{0}\" y1=\"{1:f1}\" x2=\"{2}\" "
                        "y2=\"{1:f1}\"/>\n",
                        kLeft, py, kWidth - kRight);
  }
  os << "</g>\n<g fill=\"#333\">\n";
  for (double decade = x.minDecade; decade <= x.maxDecade; ++decade)
    os << llvm::formatv(
        "<text x=\"{0:f1}\" y=\"{1}\" "
        "text-anchor=\"middle\">{2}</text>\n",
        x.map(std::pow(10.0, decade)), kHeight - kBottom + 16,
        escapeXML(llvm::formatv("1e{0}", static_cast<int>(decade)).str()));
  for (double decade = y.minDecade; decade <= y.maxDecade; ++decade)
    os << llvm::formatv("<text x=\"{0}\" y=\"{1:f1}\" "
                        "text-anchor=\"end\">{2}</text>\n",
                        kLeft - 6, y.map(std::pow(10.0, decade)) + 4,
                        escapeXML(formatSI(std::pow(10.0, decade), "FLOP/s")));
  os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1}\" text-anchor=\"middle\" "
                      "font-size=\"13\">arithmetic intensity (FLOP/byte)"
                      "</text>\n",
                      (kLeft + kWidth - kRight) / 2, kHeight - kBottom + 40);
  os << llvm::formatv("<text transform=\"translate(16,{0:f1}) rotate(-90)\" "
                      "text-anchor=\"middle\" font-size=\"13\">attainable "
                      "performance (FLOP/s)</text>\n",
                      (kTop + kHeight - kBottom) / 2);
  os << "</g>\n";
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                      "fill=\"none\" stroke=\"#333\"/>\n",
                      kLeft, kTop, kWidth - kRight - kLeft,
                      kHeight - kBottom - kTop);

  // The memory roof up to the highest compute roof, then one flat roof per
  // precision from its own ridge.
  double memoryEndX = std::min(maxPeak / bandwidth, x.max());
  double memoryStartX = std::max(x.min(), y.min() / bandwidth);
  os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1:f1}\" x2=\"{2:f1}\" "
                      "y2=\"{3:f1}\" stroke=\"#222\" stroke-width=\"2\"/>\n",
                      x.map(memoryStartX), y.map(memoryStartX * bandwidth),
                      x.map(memoryEndX), y.map(memoryEndX * bandwidth));
  os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1:f1}\" fill=\"#222\" "
                      "transform=\"rotate(0)\">{2}</text>\n",
                      x.map(memoryStartX) + 4,
                      y.map(memoryStartX * bandwidth) - 6,
                      escapeXML("memory " + formatSI(bandwidth, "B/s")));
  // One roof per distinct peak; precisions sharing a peak share a label
  // ("bf16/fp16 989.40 TFLOP/s").
  std::vector<std::pair<double, std::string>> roofs;
  for (unsigned index = 0; index < kNumMathPrecisions; ++index) {
    double peak = target.peakFlops[index];
    if (peak <= 0)
      continue;
    llvm::StringRef name = stringifyMathPrecision(MathPrecision(index));
    auto same = llvm::find_if(
        roofs, [&](const auto &roof) { return roof.first == peak; });
    if (same != roofs.end())
      same->second += ("/" + name).str();
    else
      roofs.emplace_back(peak, name.str());
  }
  for (const auto &[peak, names] : roofs) {
    bool isBF16 =
        peak == target.peakFlops[static_cast<unsigned>(MathPrecision::BF16)];
    os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1:f1}\" x2=\"{2:f1}\" "
                        "y2=\"{1:f1}\" stroke=\"#555\" stroke-width=\"1.5\" "
                        "stroke-dasharray=\"{3}\"/>\n",
                        x.map(peak / bandwidth), y.map(peak), x.map(x.max()),
                        isBF16 ? "none" : "6,3");
    os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1:f1}\" fill=\"#333\">"
                        "{2}</text>\n",
                        x.map(x.max()) + 6, y.map(peak) + 4,
                        escapeXML(names + " " + formatSI(peak, "FLOP/s")));
  }
  double ridgePeak = target.peakFor(MathPrecision::BF16);
  os << llvm::formatv("<circle cx=\"{0:f1}\" cy=\"{1:f1}\" r=\"5\" "
                      "fill=\"none\" stroke=\"#c00\" stroke-width=\"2\"/>\n",
                      x.map(ridge), y.map(ridgePeak));
  os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1:f1}\" fill=\"#c00\" "
                      "text-anchor=\"end\">bf16 ridge {2:f0} FLOP/B</text>\n",
                      x.map(ridge) - 8, y.map(ridgePeak) - 8, ridge);

  // Ops: every point drawn, the slowest labelled.
  std::vector<const OpRecord *> bySlowest = points;
  llvm::stable_sort(bySlowest, [](const OpRecord *a, const OpRecord *b) {
    return a->estimate.timeSeconds > b->estimate.timeSeconds;
  });
  bySlowest.resize(std::min(bySlowest.size(), kMaxLabels));
  os << "<g>\n";
  for (const OpRecord *op : points) {
    llvm::StringRef name = op->op;
    name.consume_front("memwall.");
    os << llvm::formatv(
        "<circle class=\"op\" cx=\"{0:f1}\" cy=\"{1:f1}\" r=\"3.5\" "
        "fill=\"{2}\" fill-opacity=\"0.75\"><title>{3}</title></circle>\n",
        x.map(op->estimate.intensity), y.map(achievedFlopsPerSecond(*op)),
        isContraction(*op) ? "#1f77b4" : "#ff7f0e",
        escapeXML(llvm::formatv("#{0} {1} {2}: {3}, {4:f2} FLOP/B, {5}", op->id,
                                name, op->loc, formatSI(op->flops, "FLOP"),
                                op->estimate.intensity,
                                formatSI(op->estimate.timeSeconds, "s"))
                      .str()));
  }
  // Ops of repeated layers land on the same spot: label each spot once,
  // with how many ops it holds, and skip labels that would overlap.
  struct Label {
    double x, y;
  };
  std::vector<Label> placed;
  auto samePoint = [&](const OpRecord *a, const OpRecord *b) {
    return std::fabs(x.map(a->estimate.intensity) -
                     x.map(b->estimate.intensity)) < 1 &&
           std::fabs(y.map(achievedFlopsPerSecond(*a)) -
                     y.map(achievedFlopsPerSecond(*b))) < 1;
  };
  for (const OpRecord *op : bySlowest) {
    double px = x.map(op->estimate.intensity) + 5;
    double py = y.map(achievedFlopsPerSecond(*op)) - 4;
    if (llvm::any_of(placed, [&](const Label &label) {
          return std::fabs(label.x - px) < 60 && std::fabs(label.y - py) < 10;
        }))
      continue;
    placed.push_back({px, py});
    size_t together = llvm::count_if(
        points, [&](const OpRecord *other) { return samePoint(op, other); });
    llvm::StringRef name = op->op;
    name.consume_front("memwall.");
    std::string text = llvm::formatv("{0} {1}", op->id, name).str();
    if (together > 1)
      text += llvm::formatv(" (x{0})", together).str();
    os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1:f1}\" font-size=\"9\" "
                        "fill=\"#444\">{2}</text>\n",
                        px, py, escapeXML(text));
  }
  os << "</g>\n";

  // Legend and caption.
  double legendX = kWidth - kRight + 10, legendY = kHeight - kBottom - 50;
  os << llvm::formatv("<circle cx=\"{0}\" cy=\"{1}\" r=\"4\" fill=\"#1f77b4\"/>"
                      "<text x=\"{2}\" y=\"{3}\">matmul / attention</text>\n"
                      "<circle cx=\"{0}\" cy=\"{4}\" r=\"4\" fill=\"#ff7f0e\"/>"
                      "<text x=\"{2}\" y=\"{5}\">other ops</text>\n",
                      legendX, legendY, legendX + 8, legendY + 4, legendY + 18,
                      legendY + 22);
  size_t unplotted = report.ops.size() - points.size();
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#555\">{2} ops "
                      "plotted (the slowest labelled); {3} ops with no "
                      "FLOPs (data movement, views) not plotted.</text>\n",
                      kLeft, kHeight - 14, points.size(), unplotted);
  os << "</svg>\n";
}
