//===- MemWallDialect.td - memwall dialect definition ------*- tablegen -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_DIALECT_MEMWALL_IR_MEMWALLDIALECT_TD
#define MEMWALL_DIALECT_MEMWALL_IR_MEMWALLDIALECT_TD

include "mlir/IR/OpBase.td"

def MemWall_Dialect : Dialect {
  let name = "memwall";
  let summary = "Transformer operations whose FLOPs and bytes are known";
  let description = [{
    The `memwall` dialect describes transformer training and inference graphs
    at the level of the operations a practitioner reasons about (matmul,
    attention, norms, activations, ...), on statically shaped builtin ranked
    tensors. Every op implements `CostOpInterface`, which gives its FLOPs and
    DRAM bytes from shapes and element types, so analyses can hold the graph
    against the roofline of a GPU.

    Function arguments carry `memwall.kind` (`weight`, `input` or `kv_cache`)
    so analyses can tell parameters, activations and caches apart; a weight
    with the unit `memwall.frozen` is not trained (a LoRA base weight: no
    gradient, no optimizer state).
  }];
  let cppNamespace = "::memwall";
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the function-argument attribute holding an ArgKindAttr.
    static constexpr ::llvm::StringLiteral kArgKindAttrName = "memwall.kind";
    /// Unit attribute of a weight argument that training leaves unchanged.
    static constexpr ::llvm::StringLiteral kFrozenAttrName = "memwall.frozen";
    /// Name of the discardable op attribute holding a CostAttr.
    static constexpr ::llvm::StringLiteral kCostAttrName = "memwall.cost";
    /// Unit attribute memwall-fuse puts on the module it ran on.
    static constexpr ::llvm::StringLiteral kFusedAttrName = "memwall.fused";
    /// On ops memwall-autodiff adds: "backward" or "optimizer". Ops without
    /// it are the forward pass.
    static constexpr ::llvm::StringLiteral kPhaseAttrName = "memwall.phase";
    /// memwall-remat's summary on the module (the report prints it).
    static constexpr ::llvm::StringLiteral kRematAttrName = "memwall.remat";
    /// On an op memwall-remat cloned into the backward.
    static constexpr ::llvm::StringLiteral kRecomputedAttrName =
        "memwall.recomputed";
    /// On a view (reshape, transpose, slice) inside a fusion that the
    /// unfused graph did not run: a copy of a view another kernel computes
    /// too (memwall-fuse copies a view per reader), or attention's output
    /// read back through its heads merge. The cost report's unfused figures
    /// leave it out.
    static constexpr ::llvm::StringLiteral kAddedViewAttrName =
        "memwall.added_view";
    /// On a module: the precision policy memwall-precision applied.
    static constexpr ::llvm::StringLiteral kPrecisionAttrName =
        "memwall.precision";

    // Codegen (docs/codegen.md, "The compile pipeline").
    /// On a step's op: its KernelConfigAttr (memwall-configure-kernels).
    static constexpr ::llvm::StringLiteral kKernelConfigAttrName =
        "memwall.kernel_config";
    /// On the module: the reference graph (JSON text) and the reference
    /// names of the returned values, taken before tiling and fusion.
    static constexpr ::llvm::StringLiteral kReferenceAttrName =
        "memwall.reference";
    static constexpr ::llvm::StringLiteral kOutputNamesAttrName =
        "memwall.output_names";
    /// On an op of the function memwall-export-reference exported: the
    /// reference graph's names of its results, which the bundle's buffers
    /// keep whatever tiling and fusion do to the ops around it.
    static constexpr ::llvm::StringLiteral kReferenceNamesAttrName =
        "memwall.reference_names";
    /// On the module: the generated gpu.module as text, before lowering.
    static constexpr ::llvm::StringLiteral kKernelsSourceAttrName =
        "memwall.kernels_source";
    /// On a kv_cache_append whose cache is a function argument read by
    /// nothing else (memwall-configure-kernels): codegen writes the new
    /// rows into that argument's buffer, which holds the cache at the
    /// appended length's pitch, instead of copying the cache.
    static constexpr ::llvm::StringLiteral kInPlaceAttrName =
        "memwall.in_place";
    /// On a buffer (memref.alloc, memwall.view): its name in the bundle.
    static constexpr ::llvm::StringLiteral kBufferAttrName = "memwall.buffer";
    /// On a buffer (memref.alloc of i32): arrival counters, zero when the
    /// bundle is loaded and after every launch that uses them (a split-K
    /// GEMM's). It lives for the whole bundle; its role is "counters".
    static constexpr ::llvm::StringLiteral kCountersAttrName =
        "memwall.counters";
    /// On a buffer, and per argument on the function: its arena offset.
    static constexpr ::llvm::StringLiteral kOffsetAttrName = "memwall.offset";
    static constexpr ::llvm::StringLiteral kArgumentOffsetsAttrName =
        "memwall.argument_offsets";
    /// On the function: the arena's size (memwall-plan-arena).
    static constexpr ::llvm::StringLiteral kArenaBytesAttrName =
        "memwall.arena_bytes";
    /// Every buffer starts at a multiple of this many bytes of the arena
    /// (the runtime checks it; memwall.stack_view's pitch is one too).
    static constexpr int64_t kArenaAlignment = 256;
  }];
}

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLDIALECT_TD
