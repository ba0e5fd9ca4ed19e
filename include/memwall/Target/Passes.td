//===- Passes.td - memwall codegen passes ------------------*- tablegen -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compile path as passes (docs/codegen.md, "The compile pipeline"):
// memwall-lower-to-bundle runs them in this order.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_TARGET_PASSES_TD
#define MEMWALL_TARGET_PASSES_TD

include "mlir/Pass/PassBase.td"

def ExportReference : Pass<"memwall-export-reference", "mlir::ModuleOp"> {
  let summary = "Keep the model as written: the bundle's reference graph";
  let description = [{
    Records the CPU reference graph of the module's single function (the
    bundle's `reference` section, before tiling and fusion change the ops) as
    `memwall.reference`, and the reference names of its returned values as
    `memwall.output_names`, on the module. Fails on a module that is not one
    function, on totals memwall cannot count, and on ops the reference
    interpreter cannot run.
  }];
}

def ConfigureKernels : Pass<"memwall-configure-kernels", "mlir::func::FuncOp"> {
  let summary = "Choose the kernel, launch and predicted time of every step";
  let description = [{
    Attaches `memwall.kernel_config = #memwall.kernel_config<...>` to every
    op that becomes a step of the bundle: a fusion or a lone elementwise,
    row-reduction or matmul op (what the fusion cost model chose: generated
    kernel and launch, or a cuBLASLt GEMM with its epilogue), a
    `memwall.flash_attention` (the tensor-core kernel, and with split keys
    the combine kernel), a data-movement op (transpose, slice, ...) and a
    reshape (a view, no step). Steps are named in order as the bundle names
    them (`kernel<N>_<family>`, `gemm<N>`). An op codegen cannot run gets one
    error at its location; each distinct message is shown once and repeats
    are counted in one error on the function.
  }];
  let dependentDialects = ["::memwall::MemWallDialect"];
}

def ConvertToGPU : Pass<"memwall-convert-to-gpu", "mlir::ModuleOp"> {
  let summary = "Lower configured ops to GPU kernels and bundle steps";
  let description = [{
    One pattern per kernel family turns each configured op into a `gpu.func`
    of `gpu.module @kernels` (memwall's own thread mappings, docs/codegen.md)
    and a step of the host function on buffers: `memwall.launch`,
    `memwall.gemm` or `memwall.view`, with `memref.alloc` for every buffer a
    step writes (named as the bundle names it, `memwall.buffer`). Tensors
    become memrefs. The generated module's text is kept on the module as
    `memwall.kernels_source` (the bundle's kernels.mlir); a module without
    kernels keeps no gpu.module.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect", "::memwall::MemWallDialect"
  ];
}

def PlanArena : Pass<"memwall-plan-arena", "mlir::func::FuncOp"> {
  let summary = "Place every buffer of the steps in one arena";
  let description = [{
    Computes each buffer's lifetime from the steps that use it (arguments
    and returned values live throughout; a view extends its source's) and
    assigns 256-byte aligned offsets so that buffers live at the same time
    never overlap, largest first (memwall::planArena). Records
    `memwall.offset` on each buffer, `memwall.argument_offsets` and
    `memwall.arena_bytes` on the function.
  }];
}

def SerializeBundle : Pass<"memwall-serialize-bundle", "mlir::ModuleOp"> {
  let summary = "Write the bundle directory memwall-run executes";
  let description = [{
    Reads the lowered module (steps, buffers and their arena offsets, the
    kernels' PTX from `gpu.binary @kernels`, the reference graph) and writes
    manifest.json, kernels.ptx and kernels.mlir to `output`
    (docs/bundle-format.md). The IR is not changed.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"\"",
           "The bundle directory">
  ];
}

def TensorMapParamsToPointers
    : Pass<"memwall-tensor-map-params-to-pointers", "mlir::gpu::GPUModuleOp"> {
  let summary = "Pass kernels' tensor maps as pointers, for the PTX pipeline";
  let description = [{
    Gives every `!nvgpu.tensormap.descriptor` parameter of a `gpu.func` the
    type `!llvm.ptr` (the generic address of the 128-byte CUtensorMap in
    global memory, as NVGPUToNVVM lowers the descriptor type), its uses
    reading it through a `builtin.unrealized_conversion_cast` that
    convert-nvgpu-to-nvvm and reconcile-unrealized-casts fold away:
    convert-gpu-to-nvvm's type converter knows no NVGPU type, so without
    this a kernel with tensor-map parameters does not lower. Kernels
    without them are not changed.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LowerKernelOps
    : Pass<"memwall-lower-kernel-ops", "mlir::gpu::GPUModuleOp"> {
  let summary = "Lower memwall's ops inside kernels for convert-nvgpu-to-nvvm";
  let description = [{
    Rewrites the memwall ops kernel builders use inside a `gpu.func`
    (MemWallKernelOps.td) into LLVM dialect ops behind
    `builtin.unrealized_conversion_cast`s that convert-nvgpu-to-nvvm and
    reconcile-unrealized-casts fold: `memwall.warpgroup_accumulate` becomes
    one `llvm.fadd` per f32 register of the accumulator's struct
    (`!llvm.struct<(struct<(f32 x N/2)> x M/64)>`, NVGPUToNVVM's form of
    `!nvgpu.warpgroup.accumulator<vector<MxNxf32>>`). Kernels without such
    ops are not changed.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ExpandFp8Conversions
    : Pass<"memwall-expand-fp8-conversions", "mlir::gpu::GPUModuleOp"> {
  let summary = "Lower conversions from and to fp8 to integer arithmetic";
  let description = [{
    Rewrites every scalar `arith.extf` from `f8E4M3FN`/`f8E5M2` and every
    scalar `arith.truncf` to them (LLVM has no fp8 type: the LLVM lowering
    carries fp8 values as i8, and arith-to-llvm cannot convert them) into
    i32 arithmetic on the f32 bits:

    - widening: a normal byte's exponent and mantissa become the f32's
      fields (rebiased by an integer add), a subnormal's mantissa is scaled
      by a power of two in f32, the sign is or-ed in; e4m3's NaN (`0x7F`)
      and e5m2's infinities and NaNs stay what they are;
    - narrowing (from f32; a narrower float is widened first, exactly):
      round to nearest even as `cvt.rn.satfinite` does: the f32 bits plus
      the rounding bias, shifted, rebiased and clamped to the largest finite
      code; below the smallest normal, `(|x| + 2^c) - 2^c` rounds to the
      subnormal quantum in f32; NaN gives `0x7F`, infinities the largest
      finite value (as the reference and the simulator define memwall.cast).

    It runs first in the kernels-to-PTX pipeline, so kernels.mlir (which
    memwall-simulate interprets) keeps the conversions, and works on every
    architecture (sm_89's `cvt` to fp8 would need sm_89 or later).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // MEMWALL_TARGET_PASSES_TD
