//===- MemWallKernelOps.td - ops inside generated kernels --*- tablegen -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What memwall's kernel builders need inside a `gpu.func` that neither GPU
// nor NVGPU has an op for. Each lowers before convert-nvgpu-to-nvvm
// (memwall-lower-kernel-ops) and is interpreted by memwall-simulate's SIMT
// interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_DIALECT_MEMWALL_IR_MEMWALLKERNELOPS_TD
#define MEMWALL_DIALECT_MEMWALL_IR_MEMWALLKERNELOPS_TD

include "memwall/Dialect/MemWall/IR/MemWallDialect.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class MemWall_KernelOp<string mnemonic, list<Trait> traits = []>
    : Op<MemWall_Dialect, mnemonic, traits>;

def MemWall_WarpgroupAccumulator : Type<
    CPred<"::llvm::isa<::mlir::nvgpu::WarpgroupAccumulatorType>($_self)">,
    "warpgroup MMA accumulator">;

def MemWall_WarpgroupAccumulateOp
    : MemWall_KernelOp<"warpgroup_accumulate",
                       [Pure, SameOperandsAndResultType]> {
  let summary = "adds a wgmma partial sum to a warpgroup's accumulator";
  let description = [{
    `%sum = memwall.warpgroup_accumulate %acc, %partial` adds, register by
    register, the f32 fragments of two warpgroup accumulators of one shape
    on the CUDA cores (FADD, round to nearest). The fp8 GEMM promotes with
    it (CUTLASS's and cuBLASLt's default, DeepSeek-V3's "promotion to CUDA
    cores"): every k-step's wgmma ops accumulate into a zeroed partial whose
    few k32 steps the tensor cores sum at their reduced fp8 accumulation
    precision, and the partial is then added here in full f32. `%partial`'s
    wgmma ops must have completed (`wgmma.wait_group`).

    ```mlir
    %sum = memwall.warpgroup_accumulate %acc, %partial
        : !nvgpu.warpgroup.accumulator<fragmented = vector<64x128xf32>>
    ```

    memwall-lower-kernel-ops lowers it to `llvm.fadd` on the accumulator's
    LLVM struct (convert-nvgpu-to-nvvm's form of the type).
  }];
  let arguments = (ins MemWall_WarpgroupAccumulator:$accumulator,
                       MemWall_WarpgroupAccumulator:$partial);
  let results = (outs MemWall_WarpgroupAccumulator:$result);
  let assemblyFormat = [{
    $accumulator `,` $partial attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLKERNELOPS_TD
