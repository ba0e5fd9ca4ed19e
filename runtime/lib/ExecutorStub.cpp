//===- ExecutorStub.cpp - runOnGpu where the CUDA headers were missing ----===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Built instead of Executor.cpp when CMake finds no CUDA toolkit, so that
// memwall-run still offers --reference-only and reports the missing GPU
// support like a missing driver.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Calibrate.h"
#include "memwall-runtime/Executor.h"
#include "memwall-runtime/NcclApi.h"

namespace memwall::runtime {

namespace {
Status noCudaHeaders() {
  return Status(ErrorCode::NoDevice,
                "memwall-run was built without the CUDA headers (CMake "
                "found no CUDA toolkit)");
}
} // namespace

Status runOnGpu(const Manifest &manifest, const std::vector<HostInput> &,
                const GpuRunOptions &, GpuRunResult &result) {
  result = GpuRunResult();
  // As the real executor does, before looking for a device.
  RankConfig ranks;
  if (Status error = ranksForBundle(manifest, ranks); !error.ok())
    return error;
  return noCudaHeaders();
}

Status measureDeviceRates(int,
                          const std::function<Status(const std::string &)> &,
                          DeviceRates &rates) {
  rates = DeviceRates();
  return noCudaHeaders();
}

} // namespace memwall::runtime
