//===- SimtInterpreter.h - CPU interpreter for GPU kernel IR ----*- C++ -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A lockstep SIMT interpreter for the subset of MLIR GPU-kernel IR that
// memwall's code generator emits (gpu, arith, math, scf, memref, vector,
// nvgpu.ldmatrix / device_async_*, nvvm.mma.sync, and Hopper's
// nvgpu.mbarrier.*, nvgpu.tma.async.load/store and nvgpu.warpgroup.*). It
// lets tests check GPU kernels for correctness on machines without a GPU,
// and it detects shared memory races, divergent collectives, out-of-bounds
// accesses and mbarrier waits that can never complete. Used by
// memwall-simulate and the kernel tests.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_SIMULATOR_SIMTINTERPRETER_H
#define MEMWALL_SIMULATOR_SIMTINTERPRETER_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace memwall::simt {

/// The host half of a `!nvgpu.tensormap.descriptor` kernel argument: what
/// cuTensorMapEncodeTiled receives besides the base pointer, whose bytes are
/// that argument's entry in `args`. The box shape, element type, swizzle and
/// out-of-bounds fill come from the argument's type (its `tensor` memref is
/// the box, outermost dimension first), as in MLIR's nvgpu lowering.
struct TensorMapArg {
  /// Index of the kernel argument this describes.
  unsigned argument = 0;
  /// Global tensor extents, outermost first (memref order; the reverse of
  /// cuTensorMapEncodeTiled's globalDim).
  std::vector<int64_t> globalShape;
  /// Element strides, outermost first; the innermost must be 1 and the others
  /// multiples of 16 bytes. Empty: packed row-major.
  std::vector<int64_t> globalStrides;
};

/// How the simulated device computes where it may differ from exact f32.
struct DeviceModel {
  /// 0: an fp8 wgmma adds each product to the f32 accumulator in turn,
  /// rounding to nearest (exact products, f32 sums). N > 0 emulates tensor
  /// cores that sum an fp8 k32 step at reduced precision, as Hopper's are
  /// reported to (DeepSeek-V3: "around 14 bits"): the accumulator and the 32
  /// products are aligned to the largest one's exponent e and each truncated
  /// toward zero to a multiple of 2^(e - N) before the exact sum is rounded
  /// to f32. A model of the hardware, not a measurement of it.
  int fp8AccumulatorBits = 0;
};

struct LaunchConfig {
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t dynamicSharedBytes = 0;
  /// One entry per tensor-map kernel argument.
  std::vector<TensorMapArg> tensorMaps;
  DeviceModel device;
};

/// Runs `func` (a gpu.func with the `kernel` attribute) once for every block
/// of the grid. `args[i]` is the raw little-endian storage of the i-th kernel
/// argument: a memref in global memory, or the global tensor behind a tensor
/// map (described by `config.tensorMaps`). Shared memory buffers are taken to
/// start 1024-byte aligned, so TMA and wgmma swizzles (functions of the
/// address) follow from buffer offsets. Returns an error naming the op and
/// its location on an unsupported op, an out-of-bounds access, a shared
/// memory race, a divergent warp collective or barrier, or non-uniform loop
/// bounds.
llvm::Error runKernel(mlir::gpu::GPUFuncOp func, const LaunchConfig &config,
                      llvm::ArrayRef<llvm::MutableArrayRef<uint8_t>> args);

/// A context with every dialect the interpreter understands loaded.
std::unique_ptr<mlir::MLIRContext> createContext();

/// Parses `source` into a module, its locations naming `fileName`; returns
/// null (after printing diagnostics to stderr) on failure.
mlir::OwningOpRef<mlir::ModuleOp>
parseModule(mlir::MLIRContext &context, llvm::StringRef source,
            llvm::StringRef fileName = "kernel.mlir");

/// Finds the gpu.func named `name` anywhere in `module`.
mlir::gpu::GPUFuncOp findKernel(mlir::ModuleOp module, llvm::StringRef name);

/// Round-to-nearest-even conversions between f32 and the 16-bit formats.
uint16_t floatToBf16(float value);
float bf16ToFloat(uint16_t bits);
uint16_t floatToF16(float value);
float f16ToFloat(uint16_t bits);

} // namespace memwall::simt

#endif // MEMWALL_SIMULATOR_SIMTINTERPRETER_H
