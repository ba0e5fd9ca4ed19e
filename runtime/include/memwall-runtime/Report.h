//===- Report.h - memwall-run's tables and JSON report ----------*- C++ -*-===//

#ifndef MEMWALL_RUNTIME_REPORT_H
#define MEMWALL_RUNTIME_REPORT_H

#include "memwall-runtime/Executor.h"
#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/Reference.h"

#include <cstdio>
#include <string>
#include <vector>

namespace memwall::runtime {

struct OutputCheck {
  std::string name;
  DType dtype = DType::F32;
  reference::Comparison comparison;
};

struct RunReport {
  std::string bundle;
  const Manifest *manifest = nullptr;
  const GpuRunResult *gpu = nullptr;
  int iters = 0;
  bool checked = false; // --check ran; then `checks` has one entry per output
  std::vector<OutputCheck> checks;
};

/// The --report document (docs/runtime.md describes its fields).
std::string reportJson(const RunReport &report);

/// Step, kind, predicted and measured microseconds and their ratio; totals;
/// predicted against measured memory.
void printTimingTable(FILE *out, const RunReport &report);

/// Compares every output with its reference value (docs/bundle-format.md,
/// "Check"); `rtol` > 0 replaces the dtype's tolerance. `got` takes the
/// reference values' shapes (same elements).
std::vector<OutputCheck>
checkOutputs(const Manifest &manifest, std::vector<reference::Tensor> got,
             const std::vector<reference::Tensor> &expected, double rtol);

/// True when every check passed.
bool allPassed(const std::vector<OutputCheck> &checks);

/// Name, dtype, max abs, max rel, tolerance, PASS/FAIL per output.
void printCheckTable(FILE *out, const std::vector<OutputCheck> &checks);

/// One line per tensor: "output NAME: DTYPE [SHAPE] min=... max=... mean=..."
/// (%.9g; integers and fp8 widen exactly).
void printTensorStats(FILE *out, const std::vector<std::string> &names,
                      const std::vector<reference::Tensor> &tensors);

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_REPORT_H
