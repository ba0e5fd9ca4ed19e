//===- DeviceRates.cpp - Copy bandwidth and launch overhead ---------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The driver-only half of --calibrate (Calibrate.h). Every figure is a median
// of device-event timings after a warm-up (docs/targets.md, "Calibration
// files").
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Calibrate.h"
#include "memwall-runtime/CudaApi.h"
#include "memwall-runtime/Executor.h"

namespace memwall::runtime {

namespace {

// An empty kernel: what is timed is the launch alone. PTX 8.0 for sm_80
// (CUDA 12 drivers and later JIT it for newer GPUs).
constexpr const char *kEmptyKernelPtx = ".version 8.0\n"
                                        ".target sm_80\n"
                                        ".address_size 64\n"
                                        ".visible .entry memwall_empty()\n"
                                        "{\n"
                                        "  ret;\n"
                                        "}\n";

/// Owns the driver objects of one measurement and releases them in reverse
/// order.
class RateSession {
public:
  explicit RateSession(int iters) : iters(iters) {}
  ~RateSession();
  Status run(const std::function<Status(const std::string &)> &onDevice,
             DeviceRates &rates);

private:
  int iters;
  CudaDriver cu;
  OpenedDevice opened;
  CUstream stream = nullptr;
  CUevent start = nullptr, end = nullptr;
  CUdeviceptr source = 0, destination = 0;
  CUmodule module = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec graphExec = nullptr;

  Status failure(const std::string &what, CUresult result) const {
    return Status(ErrorCode::Cuda, what + ": " + cu.describe(result));
  }
  /// Median seconds of `enqueue` between two events, over `iters` samples
  /// after one warm-up.
  Status time(const std::string &what, const std::function<CUresult()> &enqueue,
              double &seconds);
  Status measureCopy(DeviceRates &rates);
  Status measureLaunches(DeviceRates &rates);
};

RateSession::~RateSession() {
  if (!cu.init)
    return;
  if (graphExec)
    cu.graphExecDestroy(graphExec);
  if (graph)
    cu.graphDestroy(graph);
  if (module)
    cu.moduleUnload(module);
  for (CUdeviceptr pointer : {source, destination})
    if (pointer)
      cu.memFree(pointer);
  for (CUevent event : {start, end})
    if (event)
      cu.eventDestroy(event);
  if (stream)
    cu.streamDestroy(stream);
  if (opened.context)
    cu.primaryCtxRelease(opened.device);
}

Status RateSession::time(const std::string &what,
                         const std::function<CUresult()> &enqueue,
                         double &seconds) {
  std::vector<double> samples;
  for (int sample = -1; sample < iters; ++sample) {
    CUresult status = cu.eventRecord(start, stream);
    if (status == CUDA_SUCCESS)
      status = enqueue();
    if (status == CUDA_SUCCESS)
      status = cu.eventRecord(end, stream);
    if (status == CUDA_SUCCESS)
      status = cu.streamSynchronize(stream);
    float milliseconds = 0;
    if (status == CUDA_SUCCESS)
      status = cu.eventElapsedTime(&milliseconds, start, end);
    if (status != CUDA_SUCCESS)
      return failure(what, status);
    if (sample >= 0) // the first is the warm-up
      samples.push_back(milliseconds * 1e-3);
  }
  seconds = median(samples);
  if (!(seconds > 0))
    return Status(ErrorCode::Cuda, what + ": the device events measured no "
                                          "time");
  return {};
}

Status RateSession::measureCopy(DeviceRates &rates) {
  rates.copyBytes = kCalibrationCopyBytes;
  size_t bytes = static_cast<size_t>(rates.copyBytes);
  for (CUdeviceptr *pointer : {&source, &destination})
    if (CUresult status = cu.memAlloc(pointer, bytes); status != CUDA_SUCCESS) {
      *pointer = 0;
      return failure("cuMemAlloc of a " + std::to_string(bytes) +
                         "-byte copy buffer",
                     status);
    }
  // Not zeros: a device may move them faster than data.
  if (CUresult status = cu.memsetD8(source, 0x5a, bytes);
      status != CUDA_SUCCESS)
    return failure("cuMemsetD8 of the copy source", status);
  // The memset runs on the legacy stream, which `stream` does not wait for.
  if (CUresult status = cu.ctxSynchronize(); status != CUDA_SUCCESS)
    return failure("cuMemsetD8 of the copy source", status);
  if (Status error = time(
          "the device copy",
          [&] {
            return cu.memcpyDtoDAsync(destination, source, bytes, stream);
          },
          rates.copyTimeS);
      !error.ok())
    return error;
  // Free now: the GEMMs that follow need the memory.
  for (CUdeviceptr *pointer : {&source, &destination}) {
    cu.memFree(*pointer);
    *pointer = 0;
  }
  return {};
}

Status RateSession::measureLaunches(DeviceRates &rates) {
  if (Status error = loadPtxModule(cu, kEmptyKernelPtx, module); !error.ok())
    return error.withPrefix("loading the empty kernel: ");
  CUfunction function = nullptr;
  if (CUresult status =
          cu.moduleGetFunction(&function, module, "memwall_empty");
      status != CUDA_SUCCESS)
    return failure("the empty kernel's function", status);
  auto launchAll = [&] {
    for (int i = 0; i < kCalibrationLaunches; ++i)
      if (CUresult status = cu.launchKernel(function, 1, 1, 1, 1, 1, 1, 0,
                                            stream, nullptr, nullptr);
          status != CUDA_SUCCESS)
        return status;
    return CUDA_SUCCESS;
  };
  double seconds = 0;
  if (Status error = time("launching the empty kernel", launchAll, seconds);
      !error.ok())
    return error;
  rates.kernelLaunchS = seconds / kCalibrationLaunches;

  rates.hasGraphs = cu.hasGraphs();
  if (!rates.hasGraphs)
    return {};
  // The same launches, captured once and replayed.
  if (CUresult status =
          cu.streamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      status != CUDA_SUCCESS)
    return failure("cuStreamBeginCapture", status);
  CUresult launched = launchAll();
  CUresult ended = cu.streamEndCapture(stream, &graph);
  if (launched != CUDA_SUCCESS)
    return failure("capturing the empty kernel's launches", launched);
  if (ended != CUDA_SUCCESS) {
    graph = nullptr;
    return failure("cuStreamEndCapture", ended);
  }
  if (CUresult status = cu.graphInstantiate(&graphExec, graph, 0);
      status != CUDA_SUCCESS) {
    graphExec = nullptr;
    return failure("cuGraphInstantiate", status);
  }
  if (Status error = time(
          "replaying the empty kernel's graph",
          [&] { return cu.graphLaunch(graphExec, stream); }, seconds);
      !error.ok())
    return error;
  rates.graphKernelLaunchS = seconds / kCalibrationLaunches;
  return {};
}

Status
RateSession::run(const std::function<Status(const std::string &)> &onDevice,
                 DeviceRates &rates) {
  if (Status error = openFirstDevice(cu, opened); !error.ok())
    return error;
  rates.device = opened.name;
  rates.major = opened.major;
  rates.minor = opened.minor;
  if (CUresult status = cu.driverGetVersion(&rates.driverVersion);
      status != CUDA_SUCCESS)
    return failure("cuDriverGetVersion", status);
  if (Status error = onDevice(opened.name); !error.ok())
    return error;
  if (CUresult status = cu.streamCreate(&stream, CU_STREAM_NON_BLOCKING);
      status != CUDA_SUCCESS) {
    stream = nullptr;
    return failure("cuStreamCreate", status);
  }
  for (CUevent *event : {&start, &end})
    if (CUresult status = cu.eventCreate(event, CU_EVENT_DEFAULT);
        status != CUDA_SUCCESS) {
      *event = nullptr;
      return failure("cuEventCreate", status);
    }
  if (CUresult status = cu.ctxSynchronize(); status != CUDA_SUCCESS)
    return failure("cuCtxSynchronize", status);
  if (Status error = measureCopy(rates); !error.ok())
    return error;
  return measureLaunches(rates);
}

} // namespace

Status
measureDeviceRates(int iters,
                   const std::function<Status(const std::string &)> &onDevice,
                   DeviceRates &rates) {
  rates = DeviceRates();
  RateSession session(iters);
  return session.run(onDevice, rates);
}

} // namespace memwall::runtime
