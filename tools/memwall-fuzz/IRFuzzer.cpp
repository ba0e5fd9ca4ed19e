//===- IRFuzzer.cpp - IR through memwall's default pipeline ---------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What `memwall-opt model.mlir [--fuse] [--budget=..] --report=r.json` does
// with a user's file: limits, parse, verify, then memwall-default (precision,
// autodiff, tile-attention, fuse, remat, report) with options picked from a
// hash of the input. The JSON report it writes must parse: an invalid report
// (a bare inf, a NaN) aborts like a crash.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "memwall/Pipelines.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  memwall::fuzz::ParsedModule input = memwall::fuzz::parseInput(data, size);
  if (!input.module)
    return 0;

  uint64_t choice = input.hash;
  memwall::DefaultPipelineOptions options;
  options.fuse = choice & 1;
  static const std::string reportPath =
      memwall::fuzz::scratchDirectory() + "/report.json";
  options.report = reportPath;
  static const char *const budgets[] = {"", "1GB", "40GB", "1MB"};
  options.budget = budgets[(choice >> 1) & 3];
  static const char *const precisions[] = {"", "", "bf16-mixed",
                                           "int8-weights"};
  options.precision = precisions[(choice >> 3) & 3];
  static const char *const solvers[] = {"dp", "greedy", "milp", "dp"};
  options.rematSolver = solvers[(choice >> 5) & 3];
  options.rematTimeLimit = 0.2;
  if ((choice >> 7) & 1) {
    options.devices = 8;
    options.zeroStage = (choice >> 8) & 3;
  }
  PassManager pm(input.context.get());
  memwall::buildDefaultPipeline(pm, options);
  if (succeeded(pm.run(*input.module)))
    memwall::fuzz::requireValidJSONFile(reportPath);
  return 0;
}
