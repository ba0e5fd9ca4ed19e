//===- BundleSimulator.cpp - run a bundle's steps on the CPU --------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall/Simulator/BundleSimulator.h"
#include "memwall/Simulator/SimtInterpreter.h"

#include "memwall-runtime/Checked.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace memwall;
using namespace memwall::runtime;

namespace {
/// The arena's bytes of `buffer`.
llvm::MutableArrayRef<uint8_t> bytesOf(std::vector<uint8_t> &arena,
                                       const Buffer &buffer) {
  return llvm::MutableArrayRef<uint8_t>(arena.data() + buffer.offset,
                                        buffer.bytes);
}

/// Every element the bytes of `buffer` hold, gaps of a strided buffer
/// included, widened to double (empty for no buffer): a GEMM operand as
/// cuBLASLt addresses it, from its start at its leading dimensions and
/// batch strides (a stack of weights is read a pitch apart).
std::vector<double> decode(const std::vector<uint8_t> &arena,
                           const Buffer *buffer) {
  if (!buffer)
    return {};
  int64_t elements = buffer->bytes / reference::dtypeBytes(buffer->dtype);
  return reference::Tensor::fromBytes(buffer->dtype, {elements},
                                      arena.data() + buffer->offset,
                                      static_cast<size_t>(buffer->bytes))
      .data;
}

/// D = epilogue(op(A) op(B) + C + bias) per batch, in double, rounded once to
/// the dtype as a GEMM with fp32 accumulation would store it (the rounding
/// of the accumulation itself is within the check's tolerance).
std::string runGemm(const Manifest &manifest, const GemmStep &gemm,
                    std::vector<uint8_t> &arena) {
  auto find = [&](const std::string &name) {
    return name.empty() ? nullptr : manifest.findBuffer(name);
  };
  const Buffer *a = find(gemm.a), *b = find(gemm.b), *c = find(gemm.c),
               *bias = find(gemm.bias), *d = find(gemm.d);
  if (!a || !b || !d)
    return "gemm '" + gemm.name + "': missing operand buffer";
  int64_t m = gemm.m, n = gemm.n, k = gemm.k;
  std::vector<double> aValues = decode(arena, a), bValues = decode(arena, b),
                      cValues = decode(arena, c),
                      biasValues = decode(arena, bias);
  std::vector<double> result(m * n), row(n), bBatch(k * n);
  for (int64_t batch = 0; batch < gemm.batch; ++batch) {
    // op(B) as a row-major K x N copy, so that each row of D accumulates
    // along contiguous rows of B (the same sums, in the same order).
    const double *bSource = bValues.data() + batch * gemm.strideB;
    for (int64_t x = 0; x < k; ++x)
      for (int64_t j = 0; j < n; ++j)
        bBatch[x * n + j] =
            gemm.transB ? bSource[j * k + x] : bSource[x * n + j];
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t x = 0; x < k; ++x) {
        double aValue = aValues[batch * gemm.strideA +
                                (gemm.transA ? x * m + i : i * k + x)];
        const double *bRow = bBatch.data() + x * n;
        for (int64_t j = 0; j < n; ++j)
          row[j] += aValue * bRow[j];
      }
      for (int64_t j = 0; j < n; ++j) {
        double sum = row[j];
        if (c)
          sum += cValues[batch * gemm.strideC + i * n + j];
        if (bias)
          sum += biasValues[j];
        switch (gemm.epilogue) {
        case Epilogue::Relu:
        case Epilogue::ReluBias:
          sum = std::max(sum, 0.0);
          break;
        case Epilogue::Gelu:
        case Epilogue::GeluBias:
          sum = 0.5 * sum *
                (1 + std::tanh(std::sqrt(2 / M_PI) *
                               (sum + 0.044715 * sum * sum * sum)));
          break;
        case Epilogue::None:
        case Epilogue::Bias:
          break;
        }
        result[i * n + j] = reference::roundToDType(sum, d->dtype);
      }
    }
    reference::Tensor tile;
    tile.dtype = d->dtype;
    tile.shape = {m * n};
    tile.data = result;
    std::vector<uint8_t> bytes = tile.toBytes();
    int64_t offset =
        d->offset + batch * gemm.strideD * reference::dtypeBytes(d->dtype);
    if (offset + static_cast<int64_t>(bytes.size()) > d->offset + d->bytes)
      return "gemm '" + gemm.name + "': batch " + std::to_string(batch) +
             " writes past buffer '" + d->name + "'";
    std::memcpy(arena.data() + offset, bytes.data(), bytes.size());
  }
  return "";
}
} // namespace

/// The simulator is one device: a group of one copies its input (NCCL's
/// one-rank all-reduce); a larger group needs the other devices' sums.
static std::string runAllReduce(const Manifest &manifest, const Step &step,
                                std::vector<uint8_t> &arena) {
  const AllReduceStep &allReduce = step.allReduce;
  if (allReduce.groupSize != 1)
    return "step '" + step.name +
           "': the simulator runs one device, and "
           "this all-reduce sums over " +
           std::to_string(allReduce.groupSize);
  const Buffer &input = *manifest.findBuffer(allReduce.input);
  const Buffer &output = *manifest.findBuffer(allReduce.output);
  int64_t bytes = allReduce.count * reference::dtypeBytes(allReduce.dtype);
  std::memmove(arena.data() + output.offset, arena.data() + input.offset,
               static_cast<size_t>(bytes));
  return "";
}

std::string simulator::simulateBundle(const Manifest &manifest,
                                      mlir::ModuleOp kernels,
                                      const std::vector<HostInput> &inputs,
                                      std::vector<reference::Tensor> &outputs,
                                      const StepHook &beforeStep,
                                      const StepHook &afterStep,
                                      const simt::DeviceModel &device) {
  if (std::string message =
          checkHostMemory(manifest.arenaBytes, "simulating the bundle's arena");
      !message.empty())
    return message;
  // Uninitialised device memory: a kernel that reads what no step wrote
  // sees NaNs (0xFF bytes), not zeros.
  std::vector<uint8_t> arena(manifest.arenaBytes, 0xFF);
  // Counters start at zero, as the runtime's zeroed arena holds them.
  for (const Buffer &buffer : manifest.buffers)
    if (buffer.role == BufferRole::Counters)
      std::fill_n(arena.data() + buffer.offset, buffer.bytes, 0);
  for (const HostInput &input : inputs)
    storeToBuffer(*input.buffer, input.tensor,
                  arena.data() + input.buffer->offset);
  for (size_t index = 0; index < manifest.steps.size(); ++index) {
    const Step &step = manifest.steps[index];
    if (beforeStep)
      beforeStep(index, step, arena);
    if (step.kind == StepKind::Gemm || step.kind == StepKind::AllReduce) {
      std::string message = step.kind == StepKind::Gemm
                                ? runGemm(manifest, step.gemm, arena)
                                : runAllReduce(manifest, step, arena);
      if (!message.empty())
        return message;
      if (afterStep)
        afterStep(index, step, arena);
      continue;
    }
    const KernelStep &kernel = step.kernel;
    mlir::gpu::GPUFuncOp func = simt::findKernel(kernels, kernel.function);
    if (!func)
      return "step '" + step.name + "': kernels.mlir has no gpu.func '" +
             kernel.function + "'";
    std::vector<llvm::MutableArrayRef<uint8_t>> args;
    for (const std::string &name : kernel.args)
      args.push_back(bytesOf(arena, *manifest.findBuffer(name)));
    simt::LaunchConfig launch;
    launch.grid = kernel.grid;
    launch.block = kernel.block;
    launch.dynamicSharedBytes = kernel.sharedBytes;
    launch.device = device;
    // A tensor map argument's bytes are its buffer's; the map's view of
    // them is the manifest's (box and swizzle come from the kernel's
    // descriptor type).
    for (const TensorMap &map : kernel.tensorMaps)
      launch.tensorMaps.push_back(
          {static_cast<unsigned>(map.arg), map.shape, map.strides});
    if (llvm::Error error = simt::runKernel(func, launch, args))
      return "step '" + step.name + "': " + llvm::toString(std::move(error));
    if (afterStep)
      afterStep(index, step, arena);
  }
  // Every launch must leave its counters zero for the next run.
  for (const Buffer &buffer : manifest.buffers)
    if (buffer.role == BufferRole::Counters &&
        std::any_of(arena.data() + buffer.offset,
                    arena.data() + buffer.offset + buffer.bytes,
                    [](uint8_t byte) { return byte != 0; }))
      return "buffer '" + buffer.name +
             "' holds counters the kernels left nonzero (the next run would "
             "start from them)";
  outputs.clear();
  for (const Binding &binding : manifest.outputs) {
    const Buffer &buffer = *manifest.findBuffer(binding.buffer);
    outputs.push_back(fromBufferBytes(buffer, arena.data() + buffer.offset));
  }
  return "";
}

std::string simulator::simulateIsolatedPass(
    const Manifest &manifest, mlir::ModuleOp kernels,
    const std::vector<HostInput> &inputs,
    const std::vector<StepIsolation> &pass,
    std::vector<std::vector<reference::Tensor>> &written,
    const StepHook &beforeStep, const simt::DeviceModel &device) {
  written.assign(manifest.steps.size(), {});
  auto upload = [&](size_t index, const Step &step,
                    std::vector<uint8_t> &arena) {
    if (beforeStep)
      beforeStep(index, step, arena);
    for (const StepIsolation::Upload &value : pass[index].uploads)
      std::memcpy(arena.data() + value.buffer->offset, value.bytes.data(),
                  value.bytes.size());
  };
  auto download = [&](size_t index, const Step &, std::vector<uint8_t> &arena) {
    for (const Buffer *buffer : pass[index].downloads)
      written[index].push_back(
          fromBufferBytes(*buffer, arena.data() + buffer->offset));
  };
  std::vector<reference::Tensor> outputs;
  return simulateBundle(manifest, kernels, inputs, outputs, upload, download,
                        device);
}
