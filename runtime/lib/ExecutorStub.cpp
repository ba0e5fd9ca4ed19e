//===- ExecutorStub.cpp - runOnGpu where the CUDA headers were missing ----===//
//
// Built instead of Executor.cpp when CMake finds no CUDA toolkit, so that
// memwall-run still offers --reference-only and reports the missing GPU
// support like a missing driver.
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Executor.h"

namespace memwall::runtime {

Status runOnGpu(const Manifest &, const std::vector<HostInput> &,
                const GpuRunOptions &, GpuRunResult &result) {
  result = GpuRunResult();
  return Status(ErrorCode::NoDevice,
                "memwall-run was built without the CUDA headers (CMake "
                "found no CUDA toolkit)");
}

} // namespace memwall::runtime
