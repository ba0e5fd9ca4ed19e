//===- MemWallHostOps.td - bundle steps on buffers ---------*- tablegen -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The host side of a compiled model (memwall-convert-to-gpu's output): the
// steps memwall-run executes in order, on buffers (memrefs) that
// memwall-plan-arena places in one arena. Kernels live in `gpu.module
// @kernels`; the steps name them.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_DIALECT_MEMWALL_IR_MEMWALLHOSTOPS_TD
#define MEMWALL_DIALECT_MEMWALL_IR_MEMWALLHOSTOPS_TD

include "memwall/Dialect/MemWall/IR/MemWallAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

class MemWall_HostOp<string mnemonic, list<Trait> traits = []>
    : Op<MemWall_Dialect, mnemonic, traits>;

// A TMA tensor map (`!nvgpu.tensormap.descriptor`) built on the host by
// `nvgpu.tma.create.descriptor` over a buffer: the bundle records it as a
// tensor map of that buffer, which memwall-run encodes before the launch.
def MemWall_TensorMapDescriptor : Type<
    CPred<"::llvm::isa<::mlir::nvgpu::TensorMapDescriptorType>($_self)">,
    "TMA tensor map descriptor">;

def MemWall_LaunchOp : MemWall_HostOp<"launch"> {
  let summary = "a bundle step that launches a generated kernel";
  let description = [{
    Runs `kernel` (a `gpu.func` of `gpu.module @kernels`, or after lowering
    the PTX function of that name) on `args`, with the launch and predicted
    time memwall-configure-kernels chose. `ops` are the locations of the
    source ops the step implements. An argument is a buffer, or a TMA tensor
    map of a buffer (`nvgpu.tma.create.descriptor` over a ranked view of
    it, cast to an unranked memref) for kernels that load by TMA.

    ```mlir
    memwall.launch @kernels::@kernel0_elementwise(%arg0, %0)
        grid [8, 1, 1] block [256, 1, 1] shared 0
        {ops = ["gelu"], predicted_seconds = 2.0e-06 : f64}
        : memref<16x128xf32>, memref<16x128xf32>
    ```
  }];
  let arguments = (ins SymbolRefAttr:$kernel,
                       Variadic<AnyTypeOf<[AnyStaticShapeMemRef,
                                          MemWall_TensorMapDescriptor]>>:$args,
                       DenseI64ArrayAttr:$grid, DenseI64ArrayAttr:$block,
                       I64Attr:$shared_bytes, StrArrayAttr:$ops,
                       F64Attr:$predicted_seconds);
  let assemblyFormat = [{
    $kernel `(` $args `)` `grid` $grid `block` $block `shared` $shared_bytes
    attr-dict `:` type($args)
  }];
  let extraClassDeclaration = [{
    /// The step's name: the kernel's.
    ::llvm::StringRef getStepName() { return getKernel().getLeafReference(); }
  }];
}

def MemWall_GemmOp : MemWall_HostOp<"gemm", [AttrSizedOperandSegments]> {
  let summary = "a bundle step that runs one cuBLASLt matmul with epilogue";
  let description = [{
    `d = epilogue(op(a) x op(b) + bias) + c` over `config.batch` strided
    batches, as docs/bundle-format.md describes the gemm step.
  }];
  let arguments = (ins StrAttr:$name, AnyStaticShapeMemRef:$a,
                       AnyStaticShapeMemRef:$b,
                       Optional<AnyStaticShapeMemRef>:$c,
                       Optional<AnyStaticShapeMemRef>:$bias,
                       AnyStaticShapeMemRef:$d,
                       MemWall_GemmConfigAttr:$config, StrArrayAttr:$ops,
                       F64Attr:$predicted_seconds);
  let assemblyFormat = [{
    $name `a` `(` $a `:` type($a) `)` `b` `(` $b `:` type($b) `)`
    (`c` `(` $c^ `:` type($c) `)`)? (`bias` `(` $bias^ `:` type($bias) `)`)?
    `d` `(` $d `:` type($d) `)` $config attr-dict
  }];
}

def MemWall_AllReduceOp : MemWall_HostOp<"all_reduce"> {
  let summary = "a bundle step that sums a buffer over a group of devices";
  let description = [{
    `output[i]` = the sum of `input[i]` over the `group_size` devices of
    the group (a `shard.all_reduce` of a per-device program); memwall-run
    runs it through NCCL, one process per device (docs/runtime.md). Group
    size 1 is a copy.

    ```mlir
    memwall.all_reduce "all_reduce3" (%2 : memref<8x256xbf16>)
        -> (%3 : memref<8x256xbf16>) group 2
        {ops = ["h.0.mlp.c_proj"], predicted_seconds = 1.0e-06 : f64}
    ```
  }];
  let arguments = (ins StrAttr:$name, AnyStaticShapeMemRef:$input,
                       AnyStaticShapeMemRef:$output, I64Attr:$group_size,
                       StrArrayAttr:$ops, F64Attr:$predicted_seconds);
  let assemblyFormat = [{
    $name `(` $input `:` type($input) `)` `->` `(` $output `:` type($output)
    `)` `group` $group_size attr-dict
  }];
}

def MemWall_ViewOp : MemWall_HostOp<"view", [Pure, ViewLikeOpInterface]> {
  let summary = "the bytes of a buffer under another shape";
  let description = [{
    Either a reshape (a dense source under another shape with as many
    elements), or the whole buffer a strided source is a window of: a dense
    result of the source's rank whose strides are the source's and whose
    dimensions hold the source's (a KV cache appended in place is viewed at
    its appended length; the cache argument holds its rows at that pitch).
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Value getViewSource() { return getSource(); }
  }];
}

def MemWall_StackViewOp : MemWall_HostOp<"stack_view", [Pure]> {
  let summary = "buffers of one type the arena places side by side, as one";
  let description = [{
    The `n` sources (buffers of one dense type `[d...]`, each a function
    argument or a `memref.alloc`, each at most once) viewed as one buffer
    `[n, d...]` whose outermost stride is the pitch: memwall-plan-arena
    places source `i` at `i` pitches from the start, so a strided-batched
    cuBLASLt call reads the weights of sibling projections (Llama's q, k
    and v) as one operand and writes their products as one result, as
    vLLM's and TensorRT-LLM's merged QKV weights do, without copying.

    ```mlir
    %qkv = memwall.stack_view %wq, %wk, %wv
        : memref<64x64xbf16>, memref<64x64xbf16>, memref<64x64xbf16>
        to memref<3x64x64xbf16, strided<[4096, 64, 1]>>
    ```

    The pitch (elements) is the source's size rounded up to the arena's
    alignment (`MemWallDialect::kArenaAlignment` bytes); the result is dense
    where that is the size itself.
  }];
  let arguments = (ins Variadic<AnyStaticShapeMemRef>:$sources);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = [{
    $sources attr-dict `:` type($sources) `to` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The pitch, in elements, of `count` stacked buffers of `type`
    /// (dense): its size rounded up to the arena's alignment.
    static int64_t getPitch(::mlir::MemRefType type);
    /// The type of `count` stacked buffers of dense `type`.
    static ::mlir::MemRefType getStackedType(::mlir::MemRefType type,
                                             int64_t count);
  }];
}

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLHOSTOPS_TD
