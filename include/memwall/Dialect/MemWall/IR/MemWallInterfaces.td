//===- MemWallInterfaces.td - memwall op interfaces --------*- tablegen -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What an op means to each part of the compiler, implemented next to the
// op: its cost, its vector-Jacobian product, its scalar payload in a kernel,
// the buffer its results alias and its attributes in the reference graph.
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_DIALECT_MEMWALL_IR_MEMWALLINTERFACES_TD
#define MEMWALL_DIALECT_MEMWALL_IR_MEMWALLINTERFACES_TD

include "mlir/IR/OpBase.td"

def MemWall_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::memwall";
  let description = [{
    The work an op does and the DRAM traffic it causes when it runs as its own
    kernel, from its operand and result shapes and element types. The counts
    and their reasoning are documented in docs/cost-model.md.

    Bytes default to "read every operand once, write every result once";
    ops whose traffic differs (a gather reads only the rows it selects, a
    reshape is a view) override them.

    Counts are computed with overflow checks (memwall/Support/CheckedInt.h)
    and are kUncountable (INT64_MAX) when they do not fit int64; the
    interface's verifier rejects such an op, so verified IR never has one.
  }];
  let methods = [
    InterfaceMethod<[{
        Arithmetic operations executed (a fused multiply-add counts as 2).
      }], "int64_t", "getFlops">,
    InterfaceMethod<[{
        Bytes read from DRAM.
      }], "int64_t", "getBytesRead", (ins), [{}], [{
        return ::memwall::detail::sumOperandBytes($_op.getOperation());
      }]>,
    InterfaceMethod<[{
        Bytes written to DRAM.
      }], "int64_t", "getBytesWritten", (ins), [{}], [{
        return ::memwall::detail::sumResultBytes($_op.getOperation());
      }]>,
    InterfaceMethod<[{
        The math unit the FLOPs run on: tensor cores at the operand precision
        for contractions, FP32 CUDA cores for everything else.
      }], "::memwall::MathPrecision", "getMathPrecision", (ins), [{}], [{
        return ::memwall::MathPrecision::FP32;
      }]>,
    InterfaceMethod<[{
        Bytes of device memory the op holds while it runs besides its
        operands and results (an untiled attention's score matrices, a
        chunked loss's logits chunk).
      }], "int64_t", "getWorkspaceBytes", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        False for ops that are pure metadata and launch no kernel.
      }], "bool", "launchesKernel", (ins), [{}], [{ return true; }]>,
    InterfaceMethod<[{
        The op as one kernel on `target` for the time model
        (include/memwall/Hardware/Roofline.h): its FLOPs, its DRAM traffic on
        that target (tiled ops re-read less when their working set stays in
        the target's L2), its precision, and the compute unit that runs it
        (CUDA cores unless the op is a GEMM or fused attention).
      }], "::memwall::KernelWork", "getKernelWork",
      (ins "const ::memwall::GPUTarget &":$target), [{}], [{
        return ::memwall::detail::defaultKernelWork($_op.getOperation());
      }]>
  ];
  // After the op's own verifier (and its body's), which the counts rely on:
  // no tensor, FLOP or byte count of the op overflows int64.
  let verify = [{ return ::memwall::detail::verifyCountable($_op); }];
  let verifyWithRegions = 1;
}

def MemWall_AutodiffOpInterface : OpInterface<"AutodiffOpInterface"> {
  let cppNamespace = "::memwall";
  let description = [{
    The op's vector-Jacobian product (VJP) rule, which `memwall-autodiff`
    calls in reverse op order. The rule reads the gradients of the op's
    results and adds the gradients of its operands through the driver's
    `VJPBuilder`: `needsGradient(operand)` says whether the loss is
    differentiated through an operand (skip building what nobody needs),
    `accumulate(operand, gradient)` adds a gradient to it. Ops without this
    interface, and rules that return `vjp.notDifferentiable(...)`, stop
    autodiff with a diagnostic. The formulas are listed in docs/autodiff.md.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the VJP at the builder's insertion point and location
        (`vjp.getBuilder()`, `vjp.getLoc()`): `resultGradients[i]` is the
        gradient of result `i`, null when that result does not reach the
        loss (at least one is not null). Fails, with a diagnostic, when this instance
        of the op is not differentiable.
      }], "::mlir::LogicalResult", "buildVJP",
      (ins "::memwall::VJPBuilder &":$vjp,
           "::mlir::ValueRange":$resultGradients)>
  ];
}

def MemWall_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface"> {
  let cppNamespace = "::memwall";
  let description = [{
    Ops computed independently per output element from the elements of their
    (broadcast) operands. Fusion groups them into one kernel and codegen
    evaluates each one by its scalar payload, the way TosaToLinalg builds a
    linalg.generic body per op.
  }];
  let methods = [
    InterfaceMethod<[{
        Whether this instance runs as an elementwise kernel (or in one):
        a cast that dequantizes at use runs inside its GEMM instead.
      }], "bool", "isFusibleElementwise", (ins), [{}], [{ return true; }]>,
    InterfaceMethod<[{
        The op on one element: `operands` are scalars of `computeType` (f32
        in memwall's kernels), one per operand, and the result has the same
        type. `index` (an index value) is the element's flat row-major
        position in the result, for ops whose value depends on it (dropout
        keys its mask by it); the others ignore it.
      }], "::mlir::Value", "buildScalarPayload",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$operands, "::mlir::Type":$computeType,
           "::mlir::Value":$index)>
  ];
}

def MemWall_RowReductionOpInterface : OpInterface<"RowReductionOpInterface"> {
  let cppNamespace = "::memwall";
  let description = [{
    Ops that can reduce along the last axis of one input, row by row (the
    reduction kernel template): norms, softmax, reduce.
  }];
  let methods = [
    InterfaceMethod<[{
        Whether this instance reduces over the last axis only.
      }], "bool", "isRowReduction", (ins), [{}], [{ return true; }]>
  ];
}

def MemWall_AliasingOpInterface : OpInterface<"AliasingOpInterface"> {
  let cppNamespace = "::memwall";
  let description = [{
    Ops whose results can reuse an operand's buffer instead of one of their
    own: views (reshape), in-place updates (KV cache append, AdamW) and casts
    that run inside a GEMM. Memory planning maps such a result to the
    operand's buffer.
  }];
  let methods = [
    InterfaceMethod<[{
        The operand whose buffer result `resultNumber` reuses, or null.
      }], "::mlir::Value", "getAliasedOperand", (ins "unsigned":$resultNumber)>
  ];
}

def MemWall_ReferenceAttrsOpInterface
    : OpInterface<"ReferenceAttrsOpInterface"> {
  let cppNamespace = "::memwall";
  let description = [{
    The bundle's reference graph exports an op's inherent attributes as they
    are (a unit attribute as true, an element type by its name). Ops whose
    reference interpreter needs more implement this hook: flags that are
    absent (false), enums by their keyword (an I32EnumAttr is an integer in
    the IR), normalized axes, defaults spelled out, derived values.
  }];
  let methods = [
    InterfaceMethod<[{
        Amends `attrs`, which holds the op's inherent attributes.
      }], "void", "getReferenceAttrs", (ins "::mlir::NamedAttrList &":$attrs)>
  ];
}

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLINTERFACES_TD
