//===- Executor.h - Runs a bundle on the GPU ---------------------*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Loads the PTX modules, allocates the arena and the cuBLASLt workspace,
// uploads the inputs, runs the steps once (a warm-up whose outputs are
// downloaded for --check), then times them. Free of CUDA types so that
// memwall-run builds where the CUDA headers are missing.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_RUNTIME_EXECUTOR_H
#define MEMWALL_RUNTIME_EXECUTOR_H

#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/Manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace memwall::runtime {

/// cuBLASLt's workspace: allocated once, only for bundles with GEMM steps.
constexpr int64_t kGemmWorkspaceBytes = 32 << 20;

/// One step of the isolated pass (--check's per-step gate, docs/runtime.md):
/// the reference values uploaded into the buffers it reads before it runs,
/// and the buffers downloaded after it.
struct StepIsolation {
  struct Upload {
    const Buffer *buffer = nullptr;
    std::vector<uint8_t> bytes; // buffer->bytes of them
  };
  std::vector<Upload> uploads;
  std::vector<const Buffer *> downloads;
};

struct GpuRunOptions {
  std::string bundleDir;
  int iters = 20;
  /// Empty, or one entry per step: after the timed runs, the inputs are
  /// uploaded again and every step runs once more between its uploads and
  /// downloads (GpuRunResult::isolatedOutputs).
  std::vector<StepIsolation> isolatedPass;
};

struct GpuRunResult {
  std::string device;
  std::vector<double> stepTimesS; // median per step, in manifest order
  double totalTimeS = 0;          // median of the whole sequence
  int64_t workspaceBytes = 0;
  /// Free device memory before loading anything minus the least free memory
  /// seen afterwards: the arena, workspace, modules and driver overheads.
  int64_t measuredPeakBytes = 0;
  /// The outputs of the first run, one per manifest output, shaped like their
  /// buffers.
  std::vector<reference::Tensor> outputs;
  /// Per step of GpuRunOptions::isolatedPass, its downloads (buffer dtype and
  /// shape).
  std::vector<std::vector<reference::Tensor>> isolatedOutputs;
};

/// `manifest` must be validated. Fails with NoDevice when there is no
/// driver, cuInit failed or there is no device; with Cuda, CuBLAS, Io or
/// OutOfMemory otherwise, the message naming the step or buffer.
Status runOnGpu(const Manifest &manifest, const std::vector<HostInput> &inputs,
                const GpuRunOptions &options, GpuRunResult &result);

/// Median of `samples` (mean of the middle two for an even count; 0 if
/// empty).
double median(std::vector<double> samples);

} // namespace memwall::runtime

#endif // MEMWALL_RUNTIME_EXECUTOR_H
