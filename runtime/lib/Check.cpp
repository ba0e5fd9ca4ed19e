//===- Check.cpp - The numerics check of a bundle run ---------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Check.h"

#include <algorithm>
#include <set>

namespace memwall::runtime {

Status evaluateCheckReference(const Manifest &manifest,
                              const std::vector<HostInput> &inputs,
                              bool keepF32Values, CheckReference &reference) {
  // f32 first: the declared values are kept, and both maps at once would
  // double the peak for nothing.
  if (Status error =
          evaluateReference(manifest, inputs, reference.f32Outputs,
                            keepF32Values ? &reference.f32Values : nullptr,
                            reference::Precision::F32);
      !error.ok())
    return error;
  return evaluateReference(manifest, inputs, reference.outputs,
                           &reference.values);
}

std::string referenceValueName(const Manifest &manifest,
                               const std::string &buffer) {
  for (const Binding &output : manifest.outputs)
    if (output.buffer == buffer)
      return output.value;
  // A buffer named as a reference value holds it (memwall-export-reference
  // stamps the names), whatever its name's parts say.
  if (manifest.findValue(buffer))
    return buffer;
  std::string name = buffer;
  if (size_t hash = name.rfind('#'); hash != std::string::npos) {
    if (name.find('+') != std::string::npos || name.substr(hash) != "#0")
      return "";
    name = name.substr(0, hash);
  } else if (size_t plus = name.rfind('+'); plus != std::string::npos) {
    name = name.substr(plus + 1);
  }
  return manifest.findValue(name) ? name : "";
}

namespace {
/// Every buffer a step names, kernel arguments, GEMM or all-reduce operands
/// in order (inputs first: a later one sharing their bytes overwrites them).
std::vector<std::string> buffersOf(const Step &step) {
  if (step.kind == StepKind::Kernel)
    return step.kernel.args;
  if (step.kind == StepKind::AllReduce)
    return {step.allReduce.input, step.allReduce.output};
  std::vector<std::string> names;
  for (const std::string *name : {&step.gemm.a, &step.gemm.b, &step.gemm.c,
                                  &step.gemm.bias, &step.gemm.d})
    if (!name->empty())
      names.push_back(*name);
  return names;
}
} // namespace

std::vector<StepBuffers> planStepBuffers(const Manifest &manifest) {
  std::vector<StepBuffers> plan;
  std::set<std::string> written;
  for (const Step &step : manifest.steps) {
    StepBuffers &buffers = plan.emplace_back();
    std::set<std::string> seen; // a buffer named twice by one step
    std::vector<std::string> names = buffersOf(step);
    // A buffer whose bytes a later-named one shares is what that one (an
    // output written in place over a dying input) overwrites: an input.
    auto overwritten = [&](size_t index) {
      const Buffer *buffer = manifest.findBuffer(names[index]);
      for (size_t later = index + 1; later < names.size(); ++later) {
        const Buffer *other = manifest.findBuffer(names[later]);
        if (other && other != buffer &&
            other->offset < buffer->offset + buffer->bytes &&
            buffer->offset < other->offset + other->bytes)
          return true;
      }
      return false;
    };
    for (size_t index = 0; index < names.size(); ++index) {
      const std::string &name = names[index];
      const Buffer *buffer = manifest.findBuffer(name);
      if (!buffer || buffer->role == BufferRole::Input ||
          buffer->role == BufferRole::Weight || !seen.insert(name).second)
        continue;
      bool read = !written.insert(name).second || overwritten(index);
      std::string value = referenceValueName(manifest, name);
      const reference::ValueInfo *info =
          value.empty() ? nullptr : manifest.findValue(value);
      if (!info || info->dtype != buffer->dtype ||
          numElements(info->shape) != numElements(buffer->shape))
        continue;
      (read ? buffers.reads : buffers.writes).push_back({buffer, value});
    }
  }
  return plan;
}

std::vector<StepIsolation>
isolatedPass(const std::vector<StepBuffers> &plan,
             const std::map<std::string, reference::Tensor> &values) {
  std::vector<StepIsolation> pass;
  for (const StepBuffers &buffers : plan) {
    StepIsolation &step = pass.emplace_back();
    for (const StepBuffer &read : buffers.reads)
      if (auto value = values.find(read.value); value != values.end())
        step.uploads.push_back(
            {read.buffer, toBufferBytes(*read.buffer, value->second)});
    for (const StepBuffer &write : buffers.writes)
      step.downloads.push_back(write.buffer);
  }
  return pass;
}

std::vector<StepCheck> checkIsolatedSteps(
    const Manifest &manifest, const std::vector<StepBuffers> &plan,
    const std::vector<std::vector<reference::Tensor>> &written,
    const std::map<std::string, reference::Tensor> &values, double rtol,
    const std::map<std::string, reference::Tensor> *f32Values) {
  std::vector<StepCheck> checks;
  for (size_t i = 0; i < plan.size() && i < written.size(); ++i)
    for (size_t j = 0; j < plan[i].writes.size() && j < written[i].size();
         ++j) {
      const StepBuffer &write = plan[i].writes[j];
      auto expected = values.find(write.value);
      if (expected == values.end())
        continue;
      reference::Tensor got = written[i][j];
      got.shape = expected->second.shape; // same elements
      StepCheck &check = checks.emplace_back();
      check.step = manifest.steps[i].name;
      check.buffer = write.buffer->name;
      check.dtype = write.buffer->dtype;
      double tolerance = reference::checkTolerance(check.dtype, rtol);
      if (f32Values)
        if (auto f32 = f32Values->find(write.value); f32 != f32Values->end()) {
          reference::Tensor exact = f32->second;
          exact.shape = expected->second.shape;
          tolerance = std::max(
              tolerance,
              kReferenceErrorFactor *
                  reference::compare(expected->second, exact).maxRelError);
        }
      check.comparison = reference::compare(got, expected->second, tolerance);
    }
  return checks;
}

OutputCheck checkEndToEnd(const std::string &name, const reference::Tensor &got,
                          const reference::Tensor &declared,
                          const reference::Tensor &f32, double rtol) {
  OutputCheck check;
  check.name = name;
  check.dtype = got.dtype;
  // The f32 evaluation's own dtype would give f32's tolerance: the storage
  // dtype's is the one that applies.
  double tolerance = reference::checkTolerance(got.dtype, rtol);
  check.kernels = reference::compare(got, f32, tolerance);
  check.kernels.tolerance = tolerance; // 0 for integers, which compare widens
  check.referenceError = reference::compare(declared, f32).maxRelError;
  check.bound =
      std::max(tolerance, kReferenceErrorFactor * check.referenceError);
  // compare() reports NaNs as infinite errors, so this fails on them.
  check.passed = check.kernels.maxRelError <= check.bound;
  check.kernels.passed = check.passed;
  return check;
}

std::vector<OutputCheck> checkOutputs(const Manifest &manifest,
                                      std::vector<reference::Tensor> got,
                                      const CheckReference &reference,
                                      double rtol) {
  std::vector<OutputCheck> checks;
  for (size_t i = 0; i < manifest.outputs.size(); ++i) {
    got[i].shape = reference.outputs[i].shape;
    checks.push_back(checkEndToEnd(manifest.outputs[i].name, got[i],
                                   reference.outputs[i],
                                   reference.f32Outputs[i], rtol));
  }
  return checks;
}

bool allPassed(const std::vector<StepCheck> &checks) {
  return std::all_of(checks.begin(), checks.end(),
                     [](const StepCheck &c) { return c.comparison.passed; });
}

bool allPassed(const std::vector<OutputCheck> &checks) {
  return std::all_of(checks.begin(), checks.end(),
                     [](const OutputCheck &c) { return c.passed; });
}

std::string describeFailures(const std::vector<StepCheck> &steps,
                             const std::vector<OutputCheck> &outputs) {
  auto count = [](size_t failed, size_t total, const char *what) {
    return std::to_string(failed) + " of " + std::to_string(total) + " " +
           what + (total == 1 ? "" : "s");
  };
  std::string text;
  auto firstStep =
      std::find_if(steps.begin(), steps.end(),
                   [](const StepCheck &c) { return !c.comparison.passed; });
  if (firstStep != steps.end())
    text = count(std::count_if(
                     steps.begin(), steps.end(),
                     [](const StepCheck &c) { return !c.comparison.passed; }),
                 steps.size(), "isolated step") +
           " (first: '" + firstStep->step + "', buffer '" + firstStep->buffer +
           "')";
  auto firstOutput =
      std::find_if(outputs.begin(), outputs.end(),
                   [](const OutputCheck &c) { return !c.passed; });
  if (firstOutput != outputs.end())
    text += (text.empty() ? "" : ", ") +
            count(std::count_if(outputs.begin(), outputs.end(),
                                [](const OutputCheck &c) { return !c.passed; }),
                  outputs.size(), "output") +
            " (first: '" + firstOutput->name + "')";
  return text;
}

void printStepTable(FILE *out, const std::vector<StepCheck> &checks) {
  int stepWidth = 4, bufferWidth = 6;
  for (const StepCheck &check : checks) {
    stepWidth = std::max(stepWidth, static_cast<int>(check.step.size()));
    bufferWidth = std::max(bufferWidth, static_cast<int>(check.buffer.size()));
  }
  std::fprintf(out, "isolated steps (each on the reference values of what it "
                    "reads) against the reference (tolerance: at least 1.5 x "
                    "the reference's own error against f32):\n");
  std::fprintf(out, "%-*s  %-*s  %-8s  %12s  %12s  %10s  %s\n", stepWidth,
               "step", bufferWidth, "buffer", "dtype", "max abs", "max rel",
               "tolerance", "result");
  for (const StepCheck &check : checks)
    std::fprintf(out, "%-*s  %-*s  %-8s  %12.4g  %12.4g  %10.3g  %s\n",
                 stepWidth, check.step.c_str(), bufferWidth,
                 check.buffer.c_str(), reference::dtypeName(check.dtype),
                 check.comparison.maxAbsError, check.comparison.maxRelError,
                 check.comparison.tolerance,
                 check.comparison.passed ? "PASS" : "FAIL");
}

void printCheckTable(FILE *out, const std::vector<OutputCheck> &checks,
                     const char *title) {
  int nameWidth = static_cast<int>(std::string(title).size());
  for (const OutputCheck &check : checks)
    nameWidth = std::max(nameWidth, static_cast<int>(check.name.size()));
  std::fprintf(out,
               "end to end against the reference evaluated in f32 (ref rel: "
               "the reference's own error; bound: max(tolerance, %.3g x ref "
               "rel)):\n",
               kReferenceErrorFactor);
  std::fprintf(out, "%-*s  %-8s  %12s  %12s  %12s  %10s  %10s  %s\n", nameWidth,
               title, "dtype", "max abs", "max rel", "ref rel", "tolerance",
               "bound", "result");
  for (const OutputCheck &check : checks)
    std::fprintf(
        out, "%-*s  %-8s  %12.4g  %12.4g  %12.4g  %10.3g  %10.4g  %s\n",
        nameWidth, check.name.c_str(), reference::dtypeName(check.dtype),
        check.kernels.maxAbsError, check.kernels.maxRelError,
        check.referenceError, check.kernels.tolerance, check.bound,
        check.passed ? "PASS" : "FAIL");
}

} // namespace memwall::runtime
