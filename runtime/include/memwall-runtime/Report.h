//===- Report.h - memwall-run's tables and JSON report ----------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_REPORT_H
#define MEMWALL_RUNTIME_REPORT_H

#include "memwall-runtime/Check.h"
#include "memwall-runtime/Executor.h"
#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/Reference.h"

#include <cstdio>
#include <string>
#include <vector>

namespace memwall::runtime {

struct RunReport {
  std::string bundle;
  const Manifest *manifest = nullptr;
  const GpuRunResult *gpu = nullptr;
  int iters = 0;
  /// --check ran; then `checks` has one entry per output and `stepChecks`
  /// the per-step gate's rows.
  bool checked = false;
  std::vector<OutputCheck> checks;
  std::vector<StepCheck> stepChecks;
};

/// The --report document (docs/runtime.md describes its fields).
std::string reportJson(const RunReport &report);

/// Step, kind, predicted and measured microseconds and their ratio; totals;
/// predicted against measured memory.
void printTimingTable(FILE *out, const RunReport &report);

/// One line per tensor: "output NAME: DTYPE [SHAPE] min=... max=... mean=..."
/// (%.9g; integers and fp8 widen exactly).
void printTensorStats(FILE *out, const std::vector<std::string> &names,
                      const std::vector<reference::Tensor> &tensors);

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_REPORT_H
