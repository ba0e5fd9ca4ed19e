//===- Calibrate.cpp - memwall-run --calibrate ----------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Calibrate.h"

#include "memwall-runtime/Executor.h"
#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/Json.h"
#include "memwall-runtime/Targets.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace memwall::runtime {

const char *const kGemmClassNames[3] = {"large", "small", "skinny"};

const std::vector<GemmShape> &calibrationGemmShapes() {
  // M x N x K, row-major as bundles issue them. Small shapes stay under 2^30
  // multiply-adds (1024^3 is exactly 2^30: large by classifyGemm's rule).
  static const std::vector<GemmShape> shapes = {
      // large
      {8192, 8192, 8192},
      {16384, 4096, 4096},
      {4096, 4096, 4096},
      {2048, 11008, 4096},
      // small
      {1024, 1024, 512},
      {512, 4096, 256},
      {2048, 768, 512},
      // skinny (decode)
      {1, 4096, 4096},
      {16, 11008, 4096},
      {64, 4096, 4096},
  };
  return shapes;
}

namespace {

int classIndex(const char *shapeClass) {
  for (int index = 0; index < 3; ++index)
    if (std::strcmp(shapeClass, kGemmClassNames[index]) == 0)
      return index;
  return 0;
}

// Three regions of the arena, each as large as the grid's largest operand:
// every shape reads A from the first and B from the second and writes D to
// the third. Two random inputs fill the first two.
Status timeGemms(DType dtype, int iters, double peakFlops,
                 std::vector<GemmMeasurement> &measurements) {
  const std::vector<GemmShape> &shapes = calibrationGemmShapes();
  int64_t elements = 0;
  for (const GemmShape &shape : shapes)
    elements = std::max(
        {elements, shape.m * shape.k, shape.k * shape.n, shape.m * shape.n});
  int64_t regionBytes = elements * reference::dtypeBytes(dtype);
  regionBytes = (regionBytes + kBufferAlignment - 1) / kBufferAlignment *
                kBufferAlignment;

  Manifest manifest;
  manifest.arenaBytes = 3 * regionBytes;
  auto addBuffer = [&](const std::string &name, int64_t region,
                       std::vector<int64_t> shape, BufferRole role) {
    Buffer buffer;
    buffer.name = name;
    buffer.offset = region * regionBytes;
    buffer.dtype = dtype;
    buffer.shape = std::move(shape);
    buffer.bytes = reference::dtypeBytes(dtype);
    for (int64_t extent : buffer.shape)
      buffer.bytes *= extent;
    buffer.role = role;
    manifest.buffers.push_back(buffer);
  };
  addBuffer("a", 0, {elements}, BufferRole::Input);
  addBuffer("b", 1, {elements}, BufferRole::Input);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape &shape = shapes[i];
    std::string suffix = std::to_string(i);
    addBuffer("a" + suffix, 0, {shape.m, shape.k}, BufferRole::Intermediate);
    addBuffer("b" + suffix, 1, {shape.k, shape.n}, BufferRole::Intermediate);
    addBuffer("d" + suffix, 2, {shape.m, shape.n}, BufferRole::Intermediate);
    Step step;
    step.kind = StepKind::Gemm;
    step.name = "gemm_" + std::to_string(shape.m) + "x" +
                std::to_string(shape.n) + "x" + std::to_string(shape.k);
    step.gemm.name = step.name;
    step.gemm.a = "a" + suffix;
    step.gemm.b = "b" + suffix;
    step.gemm.d = "d" + suffix;
    step.gemm.m = shape.m;
    step.gemm.n = shape.n;
    step.gemm.k = shape.k;
    step.gemm.dtype = dtype;
    step.gemm.outDtype = dtype;
    manifest.steps.push_back(step);
  }
  for (const char *name : {"a", "b"}) {
    Binding binding;
    binding.name = binding.buffer = binding.value = name;
    manifest.inputs.push_back(binding);
  }

  std::vector<HostInput> inputs;
  if (Status error = makeRandomInputs(manifest, /*seed=*/0, inputs);
      !error.ok())
    return error;
  GpuRunOptions options;
  options.iters = iters;
  GpuRunResult result;
  if (Status error = runOnGpu(manifest, inputs, options, result); !error.ok())
    return error;
  for (size_t i = 0; i < shapes.size(); ++i) {
    GemmMeasurement measurement;
    measurement.shape = shapes[i];
    measurement.dtype = dtype;
    measurement.shapeClass =
        gemmShapeClass(1, shapes[i].m, shapes[i].n, shapes[i].k);
    measurement.timeS = result.stepTimesS[i];
    double flops = 2.0 * static_cast<double>(shapes[i].m) *
                   static_cast<double>(shapes[i].n) *
                   static_cast<double>(shapes[i].k);
    measurement.flopsPerS = flops / measurement.timeS;
    measurement.fractionOfPeak = measurement.flopsPerS / peakFlops;
    measurements.push_back(measurement);
  }
  return {};
}

std::string today() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[16];
  std::strftime(text, sizeof(text), "%Y-%m-%d", &utc);
  return text;
}

// Per class, the median fraction of the peak over the shapes of `dtype`.
void classMedians(const std::vector<GemmMeasurement> &gemms, DType dtype,
                  double (&efficiency)[3]) {
  std::vector<double> samples[3];
  for (const GemmMeasurement &gemm : gemms)
    if (gemm.dtype == dtype)
      samples[classIndex(gemm.shapeClass)].push_back(gemm.fractionOfPeak);
  for (int index = 0; index < 3; ++index)
    efficiency[index] = median(samples[index]);
}

} // namespace

Status calibrate(const CalibrateOptions &options, Calibration &result) {
  result = Calibration();
  result.base = options.base;
  auto chooseBase = [&](const std::string &device) {
    if (result.base.empty())
      result.base = builtinTargetForDevice(device);
    if (result.base.empty())
      return Status(ErrorCode::Unsupported,
                    "'" + device +
                        "' is no built-in target; name the closest with "
                        "--calibrate-base=NAME (" +
                        builtinTargetNames() + ")");
    return Status();
  };
  if (Status error =
          measureDeviceRates(options.iters, chooseBase, result.rates);
      !error.ok())
    return error;
  const BuiltinTargetFigures *base = findBuiltinTarget(result.base);
  result.name = options.name.empty() ? result.base + "-measured" : options.name;
  result.datasheetBandwidth = base->memoryBandwidth;
  result.bf16PeakFlops = base->bf16PeakFlops;
  result.fp16PeakFlops = base->fp16PeakFlops;
  result.copyBytesPerS = 2.0 * static_cast<double>(result.rates.copyBytes) /
                         result.rates.copyTimeS;
  int version = result.rates.driverVersion;
  result.calibration = "memwall-run --calibrate on " + result.rates.device +
                       ", driver " + std::to_string(version / 1000) + "." +
                       std::to_string(version % 1000 / 10) + ", " +
                       (options.date.empty() ? today() : options.date);

  for (auto [dtype, peak] : {std::pair{DType::BF16, result.bf16PeakFlops},
                             std::pair{DType::F16, result.fp16PeakFlops}})
    if (Status error = timeGemms(dtype, options.iters, peak, result.gemms);
        !error.ok())
      return error;
  classMedians(result.gemms, DType::BF16, result.bf16Efficiency);
  classMedians(result.gemms, DType::F16, result.fp16Efficiency);
  return {};
}

std::string checkCalibration(const Calibration &calibration) {
  char text[512];
  if (calibration.copyBytesPerS > calibration.datasheetBandwidth) {
    std::snprintf(text, sizeof(text),
                  "the measured copy bandwidth (%.3g bytes/s) exceeds %s's "
                  "datasheet bandwidth (%.3g bytes/s), which the target "
                  "parser refuses: is '%s' the right base "
                  "(--calibrate-base)?",
                  calibration.copyBytesPerS, calibration.base.c_str(),
                  calibration.datasheetBandwidth, calibration.base.c_str());
    return text;
  }
  for (int index = 0; index < 3; ++index)
    if (!(calibration.bf16Efficiency[index] > 0) ||
        calibration.bf16Efficiency[index] > 1) {
      std::snprintf(text, sizeof(text),
                    "the %s GEMMs reached %.3g of %s's bf16 peak, which the "
                    "target parser refuses (it must be in (0, 1]): is '%s' "
                    "the right base (--calibrate-base)?",
                    kGemmClassNames[index], calibration.bf16Efficiency[index],
                    calibration.base.c_str(), calibration.base.c_str());
      return text;
    }
  return "";
}

std::string calibrationTargetJson(const Calibration &calibration) {
  json::Writer writer;
  writer.beginObject();
  writer.key("name");
  writer.value(calibration.name);
  writer.key("base");
  writer.value(calibration.base);
  writer.key("calibration");
  writer.value(calibration.calibration);
  writer.key("achievable");
  writer.beginObject();
  writer.key("memory_bandwidth_bytes_per_s");
  writer.value(calibration.copyBytesPerS);
  writer.key("gemm_efficiency");
  writer.beginObject();
  for (int index = 0; index < 3; ++index) {
    writer.key(kGemmClassNames[index]);
    writer.value(calibration.bf16Efficiency[index]);
  }
  writer.endObject();
  writer.endObject();
  writer.key("kernel_launch_s");
  writer.value(calibration.rates.kernelLaunchS);
  if (calibration.rates.hasGraphs) {
    writer.key("graph_kernel_launch_s");
    writer.value(calibration.rates.graphKernelLaunchS);
  }
  writer.endObject();
  return writer.str() + "\n";
}

std::string calibrationReportJson(const Calibration &calibration) {
  const DeviceRates &rates = calibration.rates;
  json::Writer writer;
  writer.beginObject();
  writer.key("device");
  writer.value(rates.device);
  writer.key("compute_capability");
  writer.value(std::to_string(rates.major) + "." + std::to_string(rates.minor));
  writer.key("driver_version");
  writer.value(rates.driverVersion);
  writer.key("base");
  writer.value(calibration.base);
  writer.key("calibration");
  writer.value(calibration.calibration);
  writer.key("datasheet");
  writer.beginObject();
  writer.key("memory_bandwidth_bytes_per_s");
  writer.value(calibration.datasheetBandwidth);
  writer.key("bf16_peak_flops");
  writer.value(calibration.bf16PeakFlops);
  writer.key("f16_peak_flops");
  writer.value(calibration.fp16PeakFlops);
  writer.endObject();
  writer.key("copy");
  writer.beginObject();
  writer.key("bytes");
  writer.value(rates.copyBytes);
  writer.key("time_s");
  writer.value(rates.copyTimeS);
  writer.key("bytes_per_s");
  writer.value(calibration.copyBytesPerS);
  writer.endObject();
  writer.key("launch");
  writer.beginObject();
  writer.key("launches");
  writer.value(kCalibrationLaunches);
  writer.key("kernel_launch_s");
  writer.value(rates.kernelLaunchS);
  writer.key("graph_kernel_launch_s");
  if (rates.hasGraphs)
    writer.value(rates.graphKernelLaunchS);
  else
    writer.null();
  writer.endObject();
  writer.key("gemms");
  writer.beginArray();
  for (const GemmMeasurement &gemm : calibration.gemms) {
    writer.beginObject();
    writer.key("m");
    writer.value(gemm.shape.m);
    writer.key("n");
    writer.value(gemm.shape.n);
    writer.key("k");
    writer.value(gemm.shape.k);
    writer.key("dtype");
    writer.value(reference::dtypeName(gemm.dtype));
    writer.key("class");
    writer.value(gemm.shapeClass);
    writer.key("time_s");
    writer.value(gemm.timeS);
    writer.key("flops_per_s");
    writer.value(gemm.flopsPerS);
    writer.key("fraction_of_peak");
    writer.value(gemm.fractionOfPeak);
    writer.endObject();
  }
  writer.endArray();
  for (auto [key, efficiency] :
       {std::pair{"bf16_gemm_efficiency", &calibration.bf16Efficiency},
        std::pair{"f16_gemm_efficiency", &calibration.fp16Efficiency}}) {
    writer.key(key);
    writer.beginObject();
    for (int index = 0; index < 3; ++index) {
      writer.key(kGemmClassNames[index]);
      writer.value((*efficiency)[index]);
    }
    writer.endObject();
  }
  writer.endObject();
  return writer.str() + "\n";
}

void printCalibrationTable(FILE *out, const Calibration &calibration) {
  const DeviceRates &rates = calibration.rates;
  std::fprintf(out, "device: %s (sm_%d%d), base %s\n", rates.device.c_str(),
               rates.major, rates.minor, calibration.base.c_str());
  std::fprintf(out,
               "copy: %.1f GB/s (%lld-byte device copy, read + write; "
               "datasheet %.1f GB/s)\n",
               calibration.copyBytesPerS * 1e-9,
               static_cast<long long>(rates.copyBytes),
               calibration.datasheetBandwidth * 1e-9);
  std::fprintf(out, "%-8s %-8s %-8s %-5s %12s %10s %8s  %s\n", "M", "N", "K",
               "dtype", "median_us", "TFLOP/s", "of_peak", "class");
  for (const GemmMeasurement &gemm : calibration.gemms)
    std::fprintf(out, "%-8lld %-8lld %-8lld %-5s %12.3f %10.1f %8.3f  %s\n",
                 static_cast<long long>(gemm.shape.m),
                 static_cast<long long>(gemm.shape.n),
                 static_cast<long long>(gemm.shape.k),
                 reference::dtypeName(gemm.dtype), gemm.timeS * 1e6,
                 gemm.flopsPerS * 1e-12, gemm.fractionOfPeak, gemm.shapeClass);
  for (auto [name, efficiency] :
       {std::pair{"bf16", &calibration.bf16Efficiency},
        std::pair{"f16", &calibration.fp16Efficiency}})
    std::fprintf(out,
                 "gemm efficiency %s (median per class): large %.3f "
                 "small %.3f skinny %.3f\n",
                 name, (*efficiency)[0], (*efficiency)[1], (*efficiency)[2]);
  std::fprintf(out, "launch: %.3f us per kernel on a stream",
               rates.kernelLaunchS * 1e6);
  if (rates.hasGraphs)
    std::fprintf(out, ", %.3f us in a CUDA graph (%d launches)\n",
                 rates.graphKernelLaunchS * 1e6, kCalibrationLaunches);
  else
    std::fprintf(out,
                 "; the driver has no stream capture: no graph figure "
                 "(%d launches)\n",
                 kCalibrationLaunches);
}

} // namespace memwall::runtime
