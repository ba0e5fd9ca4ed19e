//===- MemWallInterfaces.td - cost interface ---------------*- tablegen -*-===//

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

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLINTERFACES_TD
