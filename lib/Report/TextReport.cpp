//===- TextReport.cpp - the report as a readable table --------------------===//

#include "Units.h"

#include "memwall/Report/RooflineReport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace memwall;

std::string memwall::formatSI(double value, const char *unit) {
  static constexpr struct {
    double scale;
    const char *prefix;
  } prefixes[] = {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"},
                  {1e6, "M"},  {1e3, "k"},  {1, ""},     {1e-3, "m"},
                  {1e-6, "u"}, {1e-9, "n"}};
  if (value == 0 || !std::isfinite(value))
    return llvm::formatv("{0} {1}", value, unit).str();
  for (const auto &prefix : prefixes)
    if (std::fabs(value) >= prefix.scale)
      return llvm::formatv("{0:f2} {1}{2}", value / prefix.scale, prefix.prefix,
                           unit)
          .str();
  return llvm::formatv("{0:e2} {1}", value, unit).str();
}

/// Keeps the tail of a long location, where the distinguishing part is.
static std::string fitLocation(llvm::StringRef loc, size_t width) {
  if (loc.size() <= width)
    return loc.str();
  return ("..." + loc.take_back(width - 3)).str();
}

static void printRow(llvm::raw_ostream &os, const OpRecord &op,
                     double totalSeconds) {
  llvm::StringRef name = op.op;
  name.consume_front("memwall.");
  double share =
      totalSeconds > 0 ? 100 * op.estimate.timeSeconds / totalSeconds : 0;
  os << llvm::formatv(
      "{0,5} {1,-16} {2,-28} {3,14} {4,12} {5,10:f1} {6,-8} {7,12} {8,6:f1}%\n",
      op.id, name, fitLocation(op.loc, 28), formatSI(op.flops, "FLOP"),
      formatSI(op.bytesRead + op.bytesWritten, "B"), op.estimate.intensity,
      op.estimate.memoryBound ? "memory" : "compute",
      formatSI(op.estimate.timeSeconds, "s"), share);
}

void memwall::printRooflineReportText(const RooflineReport &report,
                                      llvm::raw_ostream &os) {
  const GPUTarget &target = report.target;
  RooflineTotals totals = report.computeTotals();

  os << "memwall roofline report\n";
  os << "model:  " << (report.modelName.empty() ? "?" : report.modelName)
     << ", " << report.params << " parameters ("
     << formatSI(report.paramBytes, "B") << ")\n";
  os << "target: " << target.name << " (" << target.description << "), "
     << formatSI(target.memoryBandwidth, "B/s") << ", "
     << formatSI(static_cast<double>(target.memoryCapacityBytes), "B")
     << ", launch " << formatSI(target.kernelLaunchSeconds, "s") << "\n";
  os << "peaks:  ";
  for (unsigned index = 0; index < kNumMathPrecisions; ++index) {
    if (!target.supports(MathPrecision(index)))
      continue;
    os << stringifyMathPrecision(MathPrecision(index)) << " "
       << formatSI(target.peakFlops[index], "FLOP/s") << " (ridge "
       << llvm::format("%.1f", target.ridgeFor(MathPrecision(index))) << ")  ";
  }
  os << "\n\n";

  os << llvm::formatv(
      "{0,5} {1,-16} {2,-28} {3,14} {4,12} {5,10} {6,-8} {7,12} {8,7}\n", "id",
      "op", "loc", "flops", "bytes", "FLOP/B", "bound", "time", "share");
  for (const OpRecord &op : report.ops)
    printRow(os, op, totals.timeSeconds);

  os << "\ntotals: " << totals.numOps << " ops, "
     << formatSI(totals.flops, "FLOP") << ", "
     << formatSI(totals.bytesRead + totals.bytesWritten, "B") << " moved, "
     << formatSI(totals.timeSeconds, "s") << " predicted\n";
  os << "memory-bound: " << totals.numMemoryBoundOps << " of " << totals.numOps
     << " ops, " << llvm::format("%.1f", 100 * totals.memoryBoundTimeFraction)
     << "% of predicted time\n";

  std::vector<const OpRecord *> slowest;
  for (const OpRecord &op : report.ops)
    slowest.push_back(&op);
  llvm::stable_sort(slowest, [](const OpRecord *a, const OpRecord *b) {
    return a->estimate.timeSeconds > b->estimate.timeSeconds;
  });
  slowest.resize(std::min<size_t>(slowest.size(), 10));
  if (slowest.empty())
    return;
  os << "\nslowest ops:\n";
  for (const OpRecord *op : slowest)
    printRow(os, *op, totals.timeSeconds);
}
