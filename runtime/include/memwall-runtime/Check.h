//===- Check.h - The numerics check of a bundle run -------------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The numerics check of a bundle run, shared by memwall-run --check (GPU)
// and memwall-simulate (CPU), docs/runtime.md "Check":
//
//  1. The per-step gate: every step runs once on the reference values of the
//     buffers it reads, and what it writes must be within the tolerance
//     (1e-2 for bf16/f16, 1e-5 for f32) of the reference value of the same
//     name. This judges each kernel on its own, free of the rounding drift
//     of the steps before it.
//  2. End to end: the outputs against the reference graph evaluated in f32.
//     A bf16 graph evaluated with bf16 storage drifts from the f32 result by
//     an ulp per op, and so do the kernels (less: fused steps keep f32
//     intermediates); an output passes when its error against the f32
//     evaluation is at most max(tolerance, 1.5 x the declared-precision
//     reference's own error against it).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_CHECK_H
#define MEMWALL_RUNTIME_CHECK_H

#include "memwall-runtime/Executor.h"
#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/Reference.h"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace memwall::runtime {

/// End to end, an output may be this many times further from the f32
/// evaluation than the declared-precision reference is.
constexpr double kReferenceErrorFactor = 1.5;

/// The reference values a check compares with.
struct CheckReference {
  /// One per manifest output: the graph in its declared precision, and in
  /// f32 (reference::Precision).
  std::vector<reference::Tensor> outputs, f32Outputs;
  /// Every value of the graph in its declared precision (the per-step gate).
  std::map<std::string, reference::Tensor> values;
  /// Every value in f32; only with `keepF32Values` (end-to-end step rows).
  std::map<std::string, reference::Tensor> f32Values;
};

/// Evaluates the reference graph on `inputs` twice, in f32 and in the
/// declared precision.
Status evaluateCheckReference(const Manifest &manifest,
                              const std::vector<HostInput> &inputs,
                              bool keepF32Values, CheckReference &reference);

/// The reference value a step's buffer holds: an output's the value it is
/// bound to; else the buffer's own name when the graph has a value of that
/// name (memwall-export-reference stamps them); an op's first result "x#0"
/// is "x"; a fused group's single result "a+b" is its last op's "b". "" for
/// other results of multi-result fusions and for names the graph does not
/// have.
std::string referenceValueName(const Manifest &manifest,
                               const std::string &buffer);

/// A step's buffer with the reference value of the same elements.
struct StepBuffer {
  const Buffer *buffer = nullptr;
  std::string value;
};

/// Per step, in manifest order: `writes`, the buffers it is the first step
/// to name (except inputs and weights); `reads`, the buffers earlier steps
/// wrote. Only buffers with a reference value of their dtype and number of
/// elements are listed. A buffer a step both reads and writes (in place) is a
/// read.
struct StepBuffers {
  std::vector<StepBuffer> reads, writes;
};
std::vector<StepBuffers> planStepBuffers(const Manifest &manifest);

/// The isolated pass of `plan`: per step, the reference values (`values`,
/// declared precision) to put into its reads, and its writes to read back.
std::vector<StepIsolation>
isolatedPass(const std::vector<StepBuffers> &plan,
             const std::map<std::string, reference::Tensor> &values);

/// One buffer a step wrote, compared with its reference value.
struct StepCheck {
  std::string step, buffer;
  DType dtype = DType::F32;
  reference::Comparison comparison;
};

/// The per-step gate: `written[i][j]` is what step i wrote into
/// `plan[i].writes[j]` when run on reference inputs; each must be within the
/// tolerance of its dtype (`rtol` > 0 replaces it) of the reference value.
/// With `f32Values` (the reference evaluated in f32), as end to end: within
/// max(tolerance, kReferenceErrorFactor x the reference value's own error
/// against the f32 one). A fused kernel keeps its intermediates in f32 where
/// the reference rounds each op's result to the storage dtype, so it may land
/// as far from the reference as the reference is from exact arithmetic.
std::vector<StepCheck> checkIsolatedSteps(
    const Manifest &manifest, const std::vector<StepBuffers> &plan,
    const std::vector<std::vector<reference::Tensor>> &written,
    const std::map<std::string, reference::Tensor> &values, double rtol,
    const std::map<std::string, reference::Tensor> *f32Values = nullptr);

/// One value judged end to end.
struct OutputCheck {
  std::string name;
  DType dtype = DType::F32;
  /// The kernels' value against the f32 evaluation (its `tolerance` is the
  /// dtype's or `rtol`).
  reference::Comparison kernels;
  /// Max relative error of the declared-precision reference against the
  /// f32 evaluation.
  double referenceError = 0;
  /// max(tolerance, kReferenceErrorFactor * referenceError).
  double bound = 0;
  bool passed = false;
};

/// The end-to-end rule for one value: `got` (the kernels', in the storage
/// dtype), `declared` (the reference in the declared precision) and `f32`
/// (the reference in f32) hold the same elements.
OutputCheck checkEndToEnd(const std::string &name, const reference::Tensor &got,
                          const reference::Tensor &declared,
                          const reference::Tensor &f32, double rtol);

/// checkEndToEnd for every output of `manifest`; `got` takes the reference
/// values' shapes (same elements).
std::vector<OutputCheck> checkOutputs(const Manifest &manifest,
                                      std::vector<reference::Tensor> got,
                                      const CheckReference &reference,
                                      double rtol);

bool allPassed(const std::vector<StepCheck> &checks);
bool allPassed(const std::vector<OutputCheck> &checks);

/// What failed, for the one-line error: "1 of 2 isolated steps (first:
/// 'add_0', buffer 't'), 2 of 2 outputs (first: 'sum')"; "" if nothing did.
std::string describeFailures(const std::vector<StepCheck> &steps,
                             const std::vector<OutputCheck> &outputs);

/// Step, buffer, dtype, max abs, max rel, tolerance, PASS/FAIL per row.
void printStepTable(FILE *out, const std::vector<StepCheck> &checks);

/// `title` (the first column: "output"), dtype, the kernels' max abs and
/// max rel error against f32, the reference's, the bound, PASS/FAIL.
void printCheckTable(FILE *out, const std::vector<OutputCheck> &checks,
                     const char *title = "output");

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_CHECK_H
