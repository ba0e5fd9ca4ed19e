//===- MemWallDialect.td - memwall dialect definition ------*- tablegen -*-===//

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
    so analyses can tell parameters, activations and caches apart.
  }];
  let cppNamespace = "::memwall";
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the function-argument attribute holding an ArgKindAttr.
    static constexpr ::llvm::StringLiteral kArgKindAttrName = "memwall.kind";
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
    /// On a module: the precision policy memwall-precision applied.
    static constexpr ::llvm::StringLiteral kPrecisionAttrName =
        "memwall.precision";
  }];
}

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLDIALECT_TD
