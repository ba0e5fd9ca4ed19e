//===- MemWallAttrs.td - memwall attributes and enums ------*- tablegen -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_DIALECT_MEMWALL_IR_MEMWALLATTRS_TD
#define MEMWALL_DIALECT_MEMWALL_IR_MEMWALLATTRS_TD

include "memwall/Dialect/MemWall/IR/MemWallDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums used as op attributes (printed as bare keywords in op syntax).
//===----------------------------------------------------------------------===//

def MemWall_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how gelu evaluates the Gaussian CDF", [
      I32EnumAttrCase<"Erf", 0, "erf">,
      I32EnumAttrCase<"Tanh", 1, "tanh">
    ]> {
  let cppNamespace = "::memwall";
}

def MemWall_ReduceKind : I32EnumAttr<"ReduceKind", "reduction combiner", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Max", 1, "max">,
      I32EnumAttrCase<"Mean", 2, "mean">
    ]> {
  let cppNamespace = "::memwall";
}

def MemWall_LossReduction : I32EnumAttr<"LossReduction",
    "how per-token losses are combined", [
      I32EnumAttrCase<"Mean", 0, "mean">,
      I32EnumAttrCase<"Sum", 1, "sum">,
      I32EnumAttrCase<"None", 2, "none">
    ]> {
  let cppNamespace = "::memwall";
}

def MemWall_ActivationKind : I32EnumAttr<"ActivationKind",
    "pointwise activation whose derivative activation_grad applies", [
      I32EnumAttrCase<"GeluErf", 0, "gelu_erf">,
      I32EnumAttrCase<"GeluTanh", 1, "gelu_tanh">,
      I32EnumAttrCase<"Silu", 2, "silu">,
      I32EnumAttrCase<"Relu", 3, "relu">,
      I32EnumAttrCase<"Tanh", 4, "tanh">
    ]> {
  let cppNamespace = "::memwall";
}

//===----------------------------------------------------------------------===//
// Dialect attributes.
//===----------------------------------------------------------------------===//

def MemWall_FusionKind : I32EnumAttr<"FusionKind", "kind of fused kernel", [
      I32EnumAttrCase<"Elementwise", 0, "elementwise">,
      I32EnumAttrCase<"Reduction", 1, "reduction">,
      I32EnumAttrCase<"MatmulEpilogue", 2, "matmul_epilogue">,
      I32EnumAttrCase<"Gemm", 3, "gemm">,
      I32EnumAttrCase<"Attention", 4, "attention">,
      I32EnumAttrCase<"Rope", 5, "rope">,
      I32EnumAttrCase<"AttentionGrad", 6, "attention_grad">,
      I32EnumAttrCase<"Horizontal", 7, "horizontal">,
      I32EnumAttrCase<"Dequantize", 8, "dequantize">
    ]> {
  let cppNamespace = "::memwall";
}

def MemWall_GemmBackend : I32Enum<"GemmBackend",
    "which kernel runs a matmul (the module's `memwall.gemm`)", [
      I32EnumAttrCase<"Auto", 0, "auto">,
      I32EnumAttrCase<"CuBlasLt", 1, "cublaslt">,
      I32EnumAttrCase<"Generated", 2, "memwall">
    ]> {
  let cppNamespace = "::memwall";
}

def MemWall_ArgKind : I32Enum<"ArgKind", "role of a function argument", [
      I32EnumCase<"Weight", 0, "weight">,
      I32EnumCase<"Input", 1, "input">,
      I32EnumCase<"KVCache", 2, "kv_cache">,
      I32EnumCase<"OptimizerState", 3, "optimizer_state">
    ]> {
  let cppNamespace = "::memwall";
}

def MemWall_ArgKindAttr : EnumAttr<MemWall_Dialect, MemWall_ArgKind, "arg_kind"> {
  let summary = "role of a function argument: weight, input, kv_cache or "
                "optimizer_state (fp32 master weights and Adam moments)";
  let assemblyFormat = "`<` $value `>`";
}

def MemWall_Bound : I32Enum<"Bound", "roofline regime", [
      I32EnumCase<"Memory", 0, "memory">,
      I32EnumCase<"Compute", 1, "compute">
    ]> {
  let cppNamespace = "::memwall";
}

def MemWall_CostAttr : AttrDef<MemWall_Dialect, "Cost"> {
  let mnemonic = "cost";
  let summary = "FLOPs, DRAM bytes and roofline time of one op on a target";
  let description = [{
    Attached by `memwall-annotate-costs` as the `memwall.cost` attribute:

    ```mlir
    #memwall.cost<flops = 2048, bytes_read = 192, bytes_written = 64,
                  intensity = 8.0, bound = memory, time_s = 2.0e-06>
    ```

    `intensity` is flops / (bytes_read + bytes_written); `bound` says which
    roof limits the op on the target; `time_s` is the roofline time including
    the kernel launch cost.
  }];
  let parameters = (ins
    "int64_t":$flops,
    "int64_t":$bytesRead,
    "int64_t":$bytesWritten,
    "::llvm::APFloat":$intensity,
    "::memwall::Bound":$bound,
    "::llvm::APFloat":$timeSeconds
  );
  let builders = [
    AttrBuilder<(ins "int64_t":$flops, "int64_t":$bytesRead,
                     "int64_t":$bytesWritten, "double":$intensity,
                     "::memwall::Bound":$bound, "double":$timeSeconds), [{
      return $_get($_ctxt, flops, bytesRead, bytesWritten,
                   ::llvm::APFloat(intensity), bound,
                   ::llvm::APFloat(timeSeconds));
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Kernel configuration (memwall-configure-kernels).
//===----------------------------------------------------------------------===//

def MemWall_KernelFamily : I32Enum<"KernelFamily", "how codegen runs one step", [
      I32EnumCase<"Elementwise", 0, "elementwise">,
      I32EnumCase<"RowReduction", 1, "row_reduction">,
      I32EnumCase<"Gemm", 2, "gemm">,
      I32EnumCase<"Attention", 3, "attention">,
      I32EnumCase<"Layout", 4, "layout">,
      I32EnumCase<"View", 5, "view">,
      I32EnumCase<"GeneratedGemm", 6, "generated_gemm">,
      I32EnumCase<"Fill", 7, "fill">,
      I32EnumCase<"ColumnReduction", 8, "column_reduction">,
      I32EnumCase<"NormGrad", 9, "norm_grad">,
      I32EnumCase<"Optimizer", 10, "optimizer">,
      I32EnumCase<"EmbeddingGrad", 11, "embedding_grad">,
      I32EnumCase<"CrossEntropy", 12, "cross_entropy">,
      I32EnumCase<"Collective", 13, "collective">,
      I32EnumCase<"Dequantize", 14, "dequantize">
    ]> {
  let cppNamespace = "::memwall";
}

def MemWall_GemmConfigAttr : AttrDef<MemWall_Dialect, "GemmConfig"> {
  let mnemonic = "gemm_config";
  let summary = "the cuBLASLt call of a GEMM step (row-major, docs/bundle-format.md)";
  let parameters = (ins
    "int64_t":$m, "int64_t":$n, "int64_t":$k, "int64_t":$batch,
    "int64_t":$strideA, "int64_t":$strideB, "int64_t":$strideC,
    "int64_t":$strideD, "::mlir::BoolAttr":$transA, "::mlir::BoolAttr":$transB,
    StringRefParameter<"none, bias, relu, gelu, relu_bias or gelu_bias">:$epilogue
  );
  let assemblyFormat = "`<` struct(params) `>`";
}

def MemWall_KernelConfigAttr : AttrDef<MemWall_Dialect, "KernelConfig"> {
  let mnemonic = "kernel_config";
  let summary = "what codegen chose for one step: kernel family, launch, time";
  let description = [{
    Attached by `memwall-configure-kernels` as `memwall.kernel_config` to
    every op that becomes a step of the bundle, and consumed by
    `memwall-convert-to-gpu`:

    ```mlir
    #memwall.kernel_config<family = row_reduction, name = "kernel1_reduction",
        grid = [64, 1, 1], block = [256, 1, 1],
        predictedSeconds = 2.5e-06 : f64>
    ```

    `name` is the step's (and generated kernel's) name; `grid`, `block` and
    `sharedBytes` its launch; `predictedSeconds` the fusion cost model's
    time. A GEMM carries its cuBLASLt call in `gemm`; an attention with split
    keys, or memwall's GEMM with split K, its `splits` (one launch: the last
    block of each tile combines the splits). A reshape (`view`) is no step:
    it names the bytes of its input.
  }];
  let parameters = (ins
    "::memwall::KernelFamily":$family,
    StringRefParameter<"step name">:$name,
    OptionalParameter<"::mlir::DenseI64ArrayAttr">:$grid,
    OptionalParameter<"::mlir::DenseI64ArrayAttr">:$block,
    DefaultValuedParameter<"int64_t", "0">:$sharedBytes,
    OptionalParameter<"::mlir::FloatAttr">:$predictedSeconds,
    DefaultValuedParameter<"int64_t", "1">:$splits,
    OptionalParameter<"::memwall::GemmConfigAttr">:$gemm
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// predicted_seconds, 0 when absent.
    double getPredictedTime() const {
      return getPredictedSeconds() ? getPredictedSeconds().getValueAsDouble()
                                   : 0.0;
    }
  }];
}

def MemWall_TargetAttr : AttrDef<MemWall_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "the GPU target a module is compiled and predicted for";
  let description = [{
    Attached to a module by `memwall-set-target` as the `memwall.target`
    attribute; every memwall pass reads the target from it (through
    `getTargetOf`), so a module carries every figure its predictions and
    kernel choices depend on. The fields are the target file's
    (docs/targets.md), all of them, in this order:

    ```mlir
    module attributes {memwall.target = #memwall.target<"h100-sxm",
        description = "NVIDIA H100 SXM5 80GB", sm_arch = "sm_90a",
        launch_mode = stream, peak_flops = {fp32 = 6.700000e+13, ...},
        memory_bandwidth_bytes_per_s = 3.350000e+12, ...,
        calibration = "", base = "">} { ... }
    ```

    Real-valued figures print so that they parse back bit-identical. A
    built-in target may be written by its name alone:
    `#memwall.target<"h100-sxm">`.
  }];
  // The figures of a GPUTarget; getTarget() and getTargetAttr() in
  // MemWallTarget.h convert between the two.
  let parameters = (ins
    StringRefParameter<"target name">:$name,
    StringRefParameter<"product name">:$description,
    StringRefParameter<"PTX architecture">:$smArch,
    "::memwall::LaunchMode":$launchMode,
    ArrayRefParameter<"::llvm::APFloat", "FLOP/s per MathPrecision">:$peakFlops,
    "::llvm::APFloat":$memoryBandwidth,
    "uint64_t":$memoryCapacityBytes,
    "uint64_t":$l2Bytes,
    "uint64_t":$sharedMemoryPerSMBytes,
    "unsigned":$smCount,
    "::llvm::APFloat":$kernelLaunchSeconds,
    "::llvm::APFloat":$graphKernelLaunchSeconds,
    "::llvm::APFloat":$achievableMemoryBandwidth,
    ArrayRefParameter<"::llvm::APFloat",
                      "GEMM efficiency per GemmShapeClass">:$gemmEfficiency,
    ArrayRefParameter<"::llvm::APFloat",
                      "generated GEMM efficiency per GemmShapeClass">:$generatedGemmEfficiency,
    "::llvm::APFloat":$attentionEfficiency,
    "::llvm::APFloat":$nvlinkBandwidth,
    "::llvm::APFloat":$pcieBandwidth,
    "::llvm::APFloat":$networkBandwidth,
    "unsigned":$gpusPerNode,
    StringRefParameter<"calibration provenance">:$calibration,
    StringRefParameter<"built-in target a file started from">:$baseName
  );
  let extraClassDeclaration = [{
    /// The target these figures describe.
    ::memwall::GPUTarget getTarget() const;
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLATTRS_TD
