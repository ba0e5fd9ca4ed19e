//===- CudaApi.cpp - The CUDA driver and cuBLASLt, loaded at run time -----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/CudaApi.h"

#include <cstdlib>
#include <dlfcn.h>
#include <vector>

namespace memwall::runtime {

namespace {

// Resolves the first of `names` that the library exports into `function`.
template <typename Function>
bool resolve(void *library, Function &function,
             std::initializer_list<const char *> names, std::string &error) {
  for (const char *name : names)
    if (void *symbol = dlsym(library, name)) {
      function = reinterpret_cast<Function>(symbol);
      return true;
    }
  if (error.empty())
    error = std::string("the library has no symbol ") + *names.begin();
  return false;
}

// Names of the codes a missing or broken driver gives, for when the driver
// cannot name them itself (the stub library fails cuGetErrorName too).
const char *fallbackErrorName(CUresult result) {
  switch (result) {
  case CUDA_ERROR_INVALID_VALUE:
    return "CUDA_ERROR_INVALID_VALUE";
  case CUDA_ERROR_OUT_OF_MEMORY:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case CUDA_ERROR_NOT_INITIALIZED:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case CUDA_ERROR_STUB_LIBRARY:
    return "CUDA_ERROR_STUB_LIBRARY";
  case CUDA_ERROR_NO_DEVICE:
    return "CUDA_ERROR_NO_DEVICE";
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
  case CUDA_ERROR_UNKNOWN:
    return "CUDA_ERROR_UNKNOWN";
  default:
    return "CUDA error";
  }
}

} // namespace

Status CudaDriver::load() {
  // RTLD_LOCAL: nothing else in the process should bind to these symbols.
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    return Status(ErrorCode::NoDevice,
                  std::string("cannot load libcuda.so.1") +
                      (reason ? std::string(": ") + reason : std::string()));
  }
  std::string error;
  // Versioned names first: they are what cuda.h's macros call today.
  resolve(library, init, {"cuInit"}, error);
  resolve(library, driverGetVersion, {"cuDriverGetVersion"}, error);
  resolve(library, getErrorName, {"cuGetErrorName"}, error);
  resolve(library, getErrorString, {"cuGetErrorString"}, error);
  resolve(library, deviceGetCount, {"cuDeviceGetCount"}, error);
  resolve(library, deviceGet, {"cuDeviceGet"}, error);
  resolve(library, deviceGetName, {"cuDeviceGetName"}, error);
  resolve(library, deviceGetAttribute, {"cuDeviceGetAttribute"}, error);
  resolve(library, primaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, error);
  resolve(library, primaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2"}, error);
  resolve(library, ctxSetCurrent, {"cuCtxSetCurrent"}, error);
  resolve(library, ctxSynchronize, {"cuCtxSynchronize"}, error);
  resolve(library, memGetInfo, {"cuMemGetInfo_v2"}, error);
  resolve(library, memAlloc, {"cuMemAlloc_v2"}, error);
  resolve(library, memFree, {"cuMemFree_v2"}, error);
  resolve(library, memcpyHtoD, {"cuMemcpyHtoD_v2"}, error);
  resolve(library, memcpyDtoH, {"cuMemcpyDtoH_v2"}, error);
  resolve(library, memsetD8, {"cuMemsetD8_v2"}, error);
  resolve(library, memcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, error);
  resolve(library, moduleLoadDataEx, {"cuModuleLoadDataEx"}, error);
  resolve(library, moduleGetFunction, {"cuModuleGetFunction"}, error);
  resolve(library, moduleUnload, {"cuModuleUnload"}, error);
  resolve(library, funcSetAttribute, {"cuFuncSetAttribute"}, error);
  resolve(library, launchKernel, {"cuLaunchKernel"}, error);
  resolve(library, streamCreate, {"cuStreamCreate"}, error);
  resolve(library, streamDestroy, {"cuStreamDestroy_v2"}, error);
  resolve(library, streamSynchronize, {"cuStreamSynchronize"}, error);
  resolve(library, eventCreate, {"cuEventCreate"}, error);
  resolve(library, eventRecord, {"cuEventRecord"}, error);
  // _v2 appeared in CUDA 12.8; older drivers only have the original, which
  // has the same signature.
  resolve(library, eventElapsedTime,
          {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, error);
  resolve(library, eventDestroy, {"cuEventDestroy_v2"}, error);
  if (!error.empty())
    return Status(ErrorCode::NoDevice, "libcuda.so.1 is too old: " + error);
  std::string optional;
  resolve(library, tensorMapEncodeTiled, {"cuTensorMapEncodeTiled"}, optional);
  resolve(library, streamBeginCapture, {"cuStreamBeginCapture_v2"}, optional);
  resolve(library, streamEndCapture, {"cuStreamEndCapture"}, optional);
  resolve(library, graphInstantiate, {"cuGraphInstantiateWithFlags"}, optional);
  resolve(library, graphLaunch, {"cuGraphLaunch"}, optional);
  resolve(library, graphExecDestroy, {"cuGraphExecDestroy"}, optional);
  resolve(library, graphDestroy, {"cuGraphDestroy"}, optional);
  return Status();
}

std::string CudaDriver::describe(CUresult result) const {
  const char *name = nullptr;
  const char *text = nullptr;
  // Stub and broken drivers may fail these as well; the number still helps.
  if (!getErrorName || getErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (!getErrorString || getErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  std::string description = name ? name : fallbackErrorName(result);
  description += " (" + std::to_string(static_cast<int>(result)) + ")";
  if (text)
    description += std::string(": ") + text;
  else if (result == CUDA_ERROR_STUB_LIBRARY)
    description += ": libcuda.so.1 is the CUDA toolkit's stub, not a driver";
  return description;
}

Status loadPtxModule(CudaDriver &cu, const char *ptx, CUmodule &module) {
  // The JIT fills these with its diagnostics.
  std::vector<char> errorLog(1 << 16, 0), infoLog(1 << 16, 0);
  CUjit_option keys[] = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {
      errorLog.data(), reinterpret_cast<void *>(errorLog.size() - 1),
      infoLog.data(), reinterpret_cast<void *>(infoLog.size() - 1)};
  module = nullptr;
  if (CUresult status = cu.moduleLoadDataEx(&module, ptx, 4, keys, values);
      status != CUDA_SUCCESS) {
    module = nullptr;
    std::string message = "cuModuleLoadDataEx failed: " + cu.describe(status);
    if (errorLog[0])
      message += "\nJIT error log:\n" + std::string(errorLog.data());
    return Status(ErrorCode::Cuda, message);
  }
  return {};
}

Status openFirstDevice(CudaDriver &cu, OpenedDevice &opened) {
  opened = OpenedDevice();
  if (Status error = cu.load(); !error.ok())
    return error;
  if (CUresult status = cu.init(0); status != CUDA_SUCCESS)
    return Status(ErrorCode::NoDevice, "cuInit failed: " + cu.describe(status));
  int count = 0;
  if (CUresult status = cu.deviceGetCount(&count); status != CUDA_SUCCESS)
    return Status(ErrorCode::NoDevice,
                  "cuDeviceGetCount failed: " + cu.describe(status));
  if (count == 0)
    return Status(ErrorCode::NoDevice, "the driver sees no device");
  auto failure = [&](const std::string &what, CUresult status) {
    return Status(ErrorCode::Cuda, what + ": " + cu.describe(status));
  };
  if (CUresult status = cu.deviceGet(&opened.device, 0); status != CUDA_SUCCESS)
    return failure("cuDeviceGet(0)", status);
  char name[256] = {0};
  if (CUresult status = cu.deviceGetName(name, sizeof(name) - 1, opened.device);
      status != CUDA_SUCCESS)
    return failure("cuDeviceGetName", status);
  opened.name = name;
  cu.deviceGetAttribute(&opened.major,
                        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                        opened.device);
  cu.deviceGetAttribute(&opened.minor,
                        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                        opened.device);
  // The primary context is the one cuBLASLt's runtime calls use as well.
  CUcontext context = nullptr;
  if (CUresult status = cu.primaryCtxRetain(&context, opened.device);
      status != CUDA_SUCCESS)
    return failure("cuDevicePrimaryCtxRetain", status);
  opened.context = context;
  if (CUresult status = cu.ctxSetCurrent(context); status != CUDA_SUCCESS)
    return failure("cuCtxSetCurrent", status);
  return {};
}

Status CublasLt::load() {
  std::vector<std::string> candidates = {"libcublasLt.so.13", "libcublasLt.so"};
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(variable); root && *root) {
      candidates.push_back(std::string(root) + "/lib64/libcublasLt.so.13");
      candidates.push_back(std::string(root) + "/lib64/libcublasLt.so");
    }
  candidates.push_back("/usr/local/cuda/lib64/libcublasLt.so.13");
  candidates.push_back("/usr/local/cuda/lib64/libcublasLt.so");
  void *library = nullptr;
  std::string firstReason;
  for (const std::string &candidate : candidates) {
    library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library)
      break;
    if (firstReason.empty())
      if (const char *reason = dlerror())
        firstReason = reason;
  }
  if (!library)
    return Status(ErrorCode::CuBLAS,
                  "cannot load cuBLASLt (libcublasLt.so.13 or "
                  "libcublasLt.so): " +
                      firstReason);
  std::string error;
  resolve(library, create, {"cublasLtCreate"}, error);
  resolve(library, destroy, {"cublasLtDestroy"}, error);
  resolve(library, getVersion, {"cublasLtGetVersion"}, error);
  resolve(library, matmulDescCreate, {"cublasLtMatmulDescCreate"}, error);
  resolve(library, matmulDescDestroy, {"cublasLtMatmulDescDestroy"}, error);
  resolve(library, matmulDescSetAttribute, {"cublasLtMatmulDescSetAttribute"},
          error);
  resolve(library, matrixLayoutCreate, {"cublasLtMatrixLayoutCreate"}, error);
  resolve(library, matrixLayoutDestroy, {"cublasLtMatrixLayoutDestroy"}, error);
  resolve(library, matrixLayoutSetAttribute,
          {"cublasLtMatrixLayoutSetAttribute"}, error);
  resolve(library, preferenceCreate, {"cublasLtMatmulPreferenceCreate"}, error);
  resolve(library, preferenceDestroy, {"cublasLtMatmulPreferenceDestroy"},
          error);
  resolve(library, preferenceSetAttribute,
          {"cublasLtMatmulPreferenceSetAttribute"}, error);
  resolve(library, algoGetHeuristic, {"cublasLtMatmulAlgoGetHeuristic"}, error);
  resolve(library, matmul, {"cublasLtMatmul"}, error);
  if (!error.empty())
    return Status(ErrorCode::CuBLAS, "cuBLASLt is unusable: " + error);
  std::string ignored;
  resolve(library, getStatusName, {"cublasLtGetStatusName"}, ignored);
  return Status();
}

std::string CublasLt::describe(cublasStatus_t status) const {
  std::string description =
      getStatusName ? getStatusName(status) : "cuBLAS status";
  return description + " (" + std::to_string(static_cast<int>(status)) + ")";
}

} // namespace memwall::runtime
