//===- CudaApi.h - The CUDA driver and cuBLASLt, loaded at run time -*- C++
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//-*-//
//
// memwall-run must start, and say so clearly, on machines without a GPU, so
// it does not link libcuda or cuBLASLt: it dlopens them and looks up each entry
// point. cuda.h #defines many API names to versioned symbols (cuMemAlloc ->
// cuMemAlloc_v2); decltype(&cuMemAlloc) gives the versioned signature and the
// loader asks dlsym for the versioned name. Only the Executor includes this.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_CUDAAPI_H
#define MEMWALL_RUNTIME_CUDAAPI_H

#include <cublasLt.h>
#include <cuda.h>

#include "memwall-runtime/Status.h"

#include <string>

namespace memwall::runtime {

struct CudaDriver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driverGetVersion = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetName) deviceGetName = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&::cuMemGetInfo) memGetInfo = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuMemcpyHtoD) memcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH) memcpyDtoH = nullptr;
  decltype(&::cuMemsetD8) memsetD8 = nullptr;
  decltype(&::cuMemcpyDtoDAsync) memcpyDtoDAsync = nullptr;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuEventCreate) eventCreate = nullptr;
  decltype(&::cuEventRecord) eventRecord = nullptr;
  decltype(&::cuEventElapsedTime) eventElapsedTime = nullptr;
  decltype(&::cuEventDestroy) eventDestroy = nullptr;
  /// Optional (CUDA 12.0 drivers and later): null when the driver lacks it;
  /// only bundles with TMA tensor maps need it.
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;
  /// Optional (stream capture into CUDA graphs): null when the driver lacks
  /// them; only --calibrate's graph launch measurement needs them.
  decltype(&::cuStreamBeginCapture) streamBeginCapture = nullptr;
  decltype(&::cuStreamEndCapture) streamEndCapture = nullptr;
  decltype(&::cuGraphInstantiate) graphInstantiate = nullptr;
  decltype(&::cuGraphLaunch) graphLaunch = nullptr;
  decltype(&::cuGraphExecDestroy) graphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) graphDestroy = nullptr;

  bool hasGraphs() const {
    return streamBeginCapture && streamEndCapture && graphInstantiate &&
           graphLaunch && graphExecDestroy && graphDestroy;
  }

  /// dlopens libcuda.so.1 and resolves every entry point. Fails with
  /// NoDevice when the library is missing, or too old to have a symbol.
  Status load();
  /// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
  std::string describe(CUresult result) const;
};

/// The first device, with its primary context retained and made current.
struct OpenedDevice {
  CUdevice device = 0;
  CUcontext context = nullptr; // release with primaryCtxRelease(device)
  std::string name;            // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;    // compute capability
};

/// Loads `cu`, initializes it and opens device 0. Fails with NoDevice when
/// there is no driver, cuInit fails or there is no device; with Cuda
/// otherwise. On failure `opened.context` is null.
Status openFirstDevice(CudaDriver &cu, OpenedDevice &opened);

/// JIT-compiles and loads `ptx` into `module` (null on failure). A failure
/// (Cuda) carries the JIT's error log.
Status loadPtxModule(CudaDriver &cu, const char *ptx, CUmodule &module);

struct CublasLt {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtGetVersion) getVersion = nullptr;
  decltype(&::cublasLtGetStatusName) getStatusName = nullptr; // optional
  decltype(&::cublasLtMatmulDescCreate) matmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) matmulDescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) matmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) matrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) matrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) matrixLayoutSetAttribute =
      nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) preferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) preferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preferenceSetAttribute =
      nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) algoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;

  /// dlopens libcublasLt.so.13 (then libcublasLt.so, also under
  /// $CUDA_HOME/lib64 and /usr/local/cuda/lib64). Fails with CuBLAS.
  Status load();
  /// "CUBLAS_STATUS_NOT_SUPPORTED (15)".
  std::string describe(cublasStatus_t status) const;
};

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_CUDAAPI_H
