//===- Report.cpp - memwall-run's tables and JSON report ------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Report.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace memwall::runtime {

double median(std::vector<double> samples) {
  if (samples.empty())
    return 0;
  std::sort(samples.begin(), samples.end());
  size_t middle = samples.size() / 2;
  if (samples.size() % 2)
    return samples[middle];
  return (samples[middle - 1] + samples[middle]) / 2;
}

std::string reportJson(const RunReport &report) {
  const Manifest &manifest = *report.manifest;
  const GpuRunResult &gpu = *report.gpu;
  json::Writer writer;
  writer.beginObject();
  writer.key("bundle");
  writer.value(report.bundle);
  writer.key("device");
  writer.value(gpu.device);
  writer.key("iters");
  writer.value(report.iters);
  writer.key("steps");
  writer.beginArray();
  for (size_t i = 0; i < manifest.steps.size(); ++i) {
    const Step &step = manifest.steps[i];
    writer.beginObject();
    writer.key("name");
    writer.value(step.name);
    writer.key("kind");
    writer.value(stepKindName(step.kind));
    writer.key("ops");
    writer.beginArray();
    for (const std::string &op : step.ops)
      writer.value(op);
    writer.endArray();
    writer.key("predicted_time_s");
    writer.value(step.predictedTimeS);
    writer.key("measured_time_s");
    writer.value(i < gpu.stepTimesS.size() ? gpu.stepTimesS[i] : 0.0);
    writer.endObject();
  }
  writer.endArray();
  writer.key("total");
  writer.beginObject();
  writer.key("predicted_time_s");
  writer.value(manifest.predicted.timeS);
  writer.key("measured_time_s");
  writer.value(gpu.totalTimeS);
  writer.endObject();
  writer.key("memory");
  writer.beginObject();
  writer.key("predicted_peak_bytes");
  writer.value(manifest.predicted.peakBytes);
  writer.key("arena_bytes");
  writer.value(manifest.arenaBytes);
  writer.key("workspace_bytes");
  writer.value(gpu.workspaceBytes);
  writer.key("measured_peak_bytes");
  writer.value(gpu.measuredPeakBytes);
  writer.endObject();
  writer.key("check");
  if (!report.checked) {
    writer.null();
  } else {
    writer.beginObject();
    writer.key("passed");
    writer.value(allPassed(report.checks) && allPassed(report.stepChecks));
    writer.key("outputs");
    writer.beginArray();
    for (const OutputCheck &check : report.checks) {
      writer.beginObject();
      writer.key("name");
      writer.value(check.name);
      writer.key("max_abs_error");
      writer.value(check.kernels.maxAbsError);
      writer.key("max_rel_error");
      writer.value(check.kernels.maxRelError);
      writer.key("reference_rel_error");
      writer.value(check.referenceError);
      writer.key("tolerance");
      writer.value(check.kernels.tolerance);
      writer.key("bound");
      writer.value(check.bound);
      writer.key("passed");
      writer.value(check.passed);
      writer.endObject();
    }
    writer.endArray();
    writer.key("steps");
    writer.beginArray();
    for (const StepCheck &check : report.stepChecks) {
      writer.beginObject();
      writer.key("step");
      writer.value(check.step);
      writer.key("buffer");
      writer.value(check.buffer);
      writer.key("max_abs_error");
      writer.value(check.comparison.maxAbsError);
      writer.key("max_rel_error");
      writer.value(check.comparison.maxRelError);
      writer.key("tolerance");
      writer.value(check.comparison.tolerance);
      writer.key("passed");
      writer.value(check.comparison.passed);
      writer.endObject();
    }
    writer.endArray();
    writer.endObject();
  }
  writer.endObject();
  return writer.str();
}

namespace {

std::string ratioText(double measured, double predicted) {
  if (predicted <= 0)
    return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", measured / predicted);
  return buffer;
}

double mebibytes(int64_t bytes) { return bytes / (1024.0 * 1024.0); }

} // namespace

void printTimingTable(FILE *out, const RunReport &report) {
  const Manifest &manifest = *report.manifest;
  const GpuRunResult &gpu = *report.gpu;
  size_t nameWidth = 4, kindWidth = 6;
  for (const Step &step : manifest.steps) {
    nameWidth = std::max(nameWidth, step.name.size());
    kindWidth = std::max(kindWidth, std::strlen(stepKindName(step.kind)));
  }
  std::fprintf(out, "device: %s, %d timed iterations (median)\n",
               gpu.device.c_str(), report.iters);
  std::fprintf(out, "%-*s  %-*s  %14s  %14s  %9s\n",
               static_cast<int>(nameWidth), "step", static_cast<int>(kindWidth),
               "kind", "predicted us", "measured us", "meas/pred");
  for (size_t i = 0; i < manifest.steps.size(); ++i) {
    const Step &step = manifest.steps[i];
    double measured = i < gpu.stepTimesS.size() ? gpu.stepTimesS[i] : 0;
    std::fprintf(out, "%-*s  %-*s  %14.3f  %14.3f  %9s\n",
                 static_cast<int>(nameWidth), step.name.c_str(),
                 static_cast<int>(kindWidth), stepKindName(step.kind),
                 step.predictedTimeS * 1e6, measured * 1e6,
                 ratioText(measured, step.predictedTimeS).c_str());
  }
  std::fprintf(out, "%-*s  %-*s  %14.3f  %14.3f  %9s\n",
               static_cast<int>(nameWidth), "total",
               static_cast<int>(kindWidth), "", manifest.predicted.timeS * 1e6,
               gpu.totalTimeS * 1e6,
               ratioText(gpu.totalTimeS, manifest.predicted.timeS).c_str());
  std::fprintf(out,
               "memory: predicted peak %lld bytes (%.2f MiB), arena %lld, "
               "workspace %lld, measured peak %lld bytes (%.2f MiB)\n",
               static_cast<long long>(manifest.predicted.peakBytes),
               mebibytes(manifest.predicted.peakBytes),
               static_cast<long long>(manifest.arenaBytes),
               static_cast<long long>(gpu.workspaceBytes),
               static_cast<long long>(gpu.measuredPeakBytes),
               mebibytes(gpu.measuredPeakBytes));
}

void printTensorStats(FILE *out, const std::vector<std::string> &names,
                      const std::vector<reference::Tensor> &tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const reference::Tensor &tensor = tensors[i];
    double low = 0, high = 0, sum = 0;
    if (!tensor.data.empty()) {
      low = high = tensor.data[0];
      for (double element : tensor.data) {
        low = std::min(low, element);
        high = std::max(high, element);
        sum += element;
      }
    }
    double mean = tensor.data.empty() ? 0 : sum / tensor.data.size();
    std::fprintf(out, "output %s: %s %s min=%.9g max=%.9g mean=%.9g\n",
                 names[i].c_str(), reference::dtypeName(tensor.dtype),
                 shapeString(tensor.shape).c_str(), low, high, mean);
  }
}

} // namespace memwall::runtime
