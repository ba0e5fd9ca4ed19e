//===- Bundle.h - Compile a memwall function into a runnable bundle --*- C++
//-*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall IR (fused or not) -> kernel and GEMM steps, generated GPU kernels
// (gpu dialect, our own thread mapping) -> PTX through LLVM's NVPTX backend
// -> a static memory plan in one arena -> the bundle directory memwall-run
// executes (docs/bundle-format.md).
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_TARGET_BUNDLE_H
#define MEMWALL_TARGET_BUNDLE_H

#include "memwall/Hardware/GPUTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

struct BundleBuffer {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  /// "input", "weight", "output" or "intermediate".
  std::string role;
  int64_t offset = 0;
  /// Steps (indices) that define and last use the buffer; inputs are live
  /// from the start and outputs to the end.
  int64_t firstStep = 0, lastStep = 0;
  /// A view of another buffer (a reshape: same bytes; or one source of a
  /// memwall.stack_view: `aliasOffset` bytes into the stack), no
  /// allocation of its own.
  int aliasOf = -1;
  int64_t aliasOffset = 0;
  /// Element strides of a buffer that is not dense row-major (a KV cache
  /// appended in place); empty when dense.
  std::vector<int64_t> strides;
};

/// A kernel argument passed as a TMA tensor map of its buffer (the launch
/// operand is `nvgpu.tma.create.descriptor` over a view of the buffer).
struct BundleTensorMap {
  /// Index into BundleStep::args (which holds the buffer).
  int arg = -1;
  /// Global extents and element strides of the view, outermost first; the
  /// box of one TMA load, outermost first.
  std::vector<int64_t> shape, strides, box;
  /// Manifest names: "none"/"32b"/"64b"/"128b"; "none"/"64b"/"128b"/"256b";
  /// "zero"/"nan"; "none"/"16b"/"32b".
  std::string swizzle = "none", l2Promotion = "none", oobFill = "zero",
              interleave = "none";
};

struct BundleStep {
  std::string kind; // "kernel", "gemm" or "all_reduce"
  std::string name;
  std::vector<std::string> ops;
  double predictedSeconds = 0;
  // kernel
  std::string function;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t sharedBytes = 0;
  std::vector<int> args;
  std::vector<BundleTensorMap> tensorMaps;
  // gemm (row-major, docs/bundle-format.md)
  int a = -1, b = -1, c = -1, bias = -1, d = -1;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0, strideD = 0;
  bool transA = false, transB = false;
  std::string dtype, epilogue = "none";
  /// C and D's type when it is not `dtype` (an f32 accumulator); "" else.
  std::string outDtype;
  // all_reduce: `count` elements of `dtype` from buffer `input` summed over
  // `groupSize` devices into buffer `output`.
  int input = -1, output = -1;
  int64_t count = 0, groupSize = 1;
};

struct Bundle {
  std::string model, target, arch;
  std::vector<BundleBuffer> buffers;
  std::vector<BundleStep> steps;
  /// (name, buffer, reference value) of every argument and result.
  struct Binding {
    std::string name;
    int buffer = -1;
    std::string value;
  };
  std::vector<Binding> inputs, outputs;
  /// The generated gpu.module (for --emit=gpu) and its PTX.
  std::string gpuModuleText, ptx;
  int64_t arenaBytes = 0;
  double predictedSeconds = 0;
  llvm::json::Value reference = nullptr;
};

struct CompileOptions {
  /// Run memwall-fuse first.
  bool fuse = true;
  /// CUDA toolkit root for libdevice (empty: $CUDA_HOME, else
  /// /usr/local/cuda).
  std::string cudaRoot;
  /// Stop after generating the gpu.module (no PTX).
  bool skipPTX = false;
};

/// The CPU reference graph (bundle "reference" section) of `function`'s ops.
/// Fusions are flattened into their ops. Fails (with a diagnostic) on ops
/// outside the memwall dialect. With `stampNames`, every top-level op gets
/// its results' reference names (`memwall.reference_names`), which
/// nameBundleValues gives their buffers.
mlir::FailureOr<llvm::json::Value>
exportReferenceGraph(mlir::func::FuncOp function, bool stampNames = false);

/// The reference names (exportReferenceGraph's) of the values `function`
/// returns, given its exported `reference`.
std::vector<std::string>
referenceOutputNames(mlir::func::FuncOp function,
                     const llvm::json::Value &reference);

/// The bundle names of `function`'s arguments and of the results of its
/// top-level ops: the reference names stamped on an op, else given in
/// program order as reference values are named.
llvm::DenseMap<mlir::Value, std::string>
nameBundleValues(mlir::func::FuncOp function);

/// The buffers of a lowered function (memwall-convert-to-gpu's output), in
/// the bundle's order: its arguments, then every memref.alloc and
/// memwall.view and memwall.stack_view.
llvm::SmallVector<mlir::Value> getBundleBuffers(mlir::func::FuncOp function);

/// The bytes of a buffer (a memref of the bundle).
int64_t getBufferByteSize(mlir::Value buffer);

/// Whether a buffer of `type` is dense row-major: no layout, or a window
/// (memwall.view) with row-major strides at an offset.
bool isDenseBuffer(mlir::MemRefType type);

/// The element offset of a window (memwall.view `strided<[...], offset: k>`)
/// in the buffer it views; 0 for other buffers.
int64_t getWindowOffset(mlir::MemRefType type);

/// The buffer a memwall.launch argument passes: the argument itself, or for
/// a TMA tensor map (`nvgpu.tma.create.descriptor`) the buffer under the
/// views it was built on.
mlir::Value getLaunchBuffer(mlir::Value arg);

/// The tensor map argument `arg` of a launch passes, or std::nullopt when
/// it passes a buffer. Fails (with an error at the descriptor) on a map the
/// bundle cannot describe: not built over `memref.cast` of a ranked view of
/// a buffer with static unit-innermost strides and no offset, or whose box
/// disagrees with its type.
mlir::FailureOr<std::optional<BundleTensorMap>>
getLaunchTensorMap(mlir::Value arg);

/// The bundle of a lowered module: its steps, buffers placed in the arena
/// (memwall-plan-arena), reference graph (memwall-export-reference), and
/// kernels (memwall.kernels_source and, once lowered, gpu.binary @kernels).
mlir::FailureOr<Bundle> readLoweredBundle(mlir::ModuleOp module,
                                          const GPUTarget &target);

/// Assigns arena offsets (256-byte aligned) so that buffers live at the same
/// time never overlap; returns the arena size, or nullopt when an offset or
/// the size does not fit int64. Largest buffers are placed first, each at the
/// lowest offset that fits.
std::optional<int64_t> planArena(std::vector<BundleBuffer> &buffers);

/// Writes `bundle` to the directory `path` (manifest.json, kernels.ptx,
/// kernels.mlir) through a temporary directory beside it, moved into place
/// (runtime::OutputDirectory): a failure leaves no partial bundle. An
/// existing bundle at `path` is replaced; anything else there is refused.
llvm::Error writeBundle(const Bundle &bundle, llvm::StringRef path);

} // namespace memwall

#endif // MEMWALL_TARGET_BUNDLE_H
