//===- BundleSimulator.h - run a bundle's steps on the CPU ------*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Executes a bundle the way memwall-run does on a GPU, but on the CPU: one
// arena laid out as the manifest says, kernel steps run by the SIMT
// interpreter on the bundle's generated gpu.module (kernels.mlir), GEMM
// steps by a direct loop with cuBLASLt's epilogue semantics. It checks the
// code generator (thread mappings, tensor-core fragments, shared-memory
// synchronisation, arena plan, step wiring) without a GPU; it says nothing
// about speed. docs/runtime.md, "memwall-simulate".
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SIMULATOR_BUNDLESIMULATOR_H
#define MEMWALL_SIMULATOR_BUNDLESIMULATOR_H

#include "memwall/Simulator/SimtInterpreter.h"

#include "memwall-runtime/Executor.h"
#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/Manifest.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>
#include <vector>

namespace memwall::simulator {

/// Runs every step of `manifest` in order. `kernels` holds the gpu.module of
/// the bundle's kernel steps; `inputs` fill the input and weight buffers;
/// `outputs` receive one tensor per manifest output (the buffer's dtype and
/// shape). `beforeStep` and `afterStep`, when set, see (and may change) the
/// arena around every step (`index` in manifest.steps). Returns "" or one
/// message naming the step that failed.
using StepHook = std::function<void(size_t index, const runtime::Step &,
                                    std::vector<uint8_t> &arena)>;

std::string simulateBundle(const runtime::Manifest &manifest,
                           mlir::ModuleOp kernels,
                           const std::vector<runtime::HostInput> &inputs,
                           std::vector<reference::Tensor> &outputs,
                           const StepHook &beforeStep = nullptr,
                           const StepHook &afterStep = nullptr,
                           const simt::DeviceModel &device = {});

/// The isolated pass of a check (runtime::StepIsolation, as memwall-run
/// runs it on the GPU): before step i its uploads go into the arena, after
/// it `written[i]` receives its downloads. `beforeStep` sees every step
/// first (progress).
std::string
simulateIsolatedPass(const runtime::Manifest &manifest, mlir::ModuleOp kernels,
                     const std::vector<runtime::HostInput> &inputs,
                     const std::vector<runtime::StepIsolation> &pass,
                     std::vector<std::vector<reference::Tensor>> &written,
                     const StepHook &beforeStep = nullptr,
                     const simt::DeviceModel &device = {});

} // namespace memwall::simulator

#endif // MEMWALL_SIMULATOR_BUNDLESIMULATOR_H
